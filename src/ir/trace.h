// The one IR every stage reads and writes: a Trace is a straight-line program over SSA values.
// Values are named by integer ids into Trace::values (never pointers), so passes can copy and
// rewrite traces freely. Ops are bound to their symbol's signature by the reader: Op::args holds
// one entry per parameter of the op-table row, in signature order, defaults filled in.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/dtype.h"
#include "ir/size_expr.h"

namespace tg {

using ValueId = int32_t;
inline constexpr ValueId kNoValue = -1;

// A dimension: its size at the sizes the trace was read at and, in a symbolic trace, what it is
// at every size: an expression over the symbols, or a constant known to be one (docs/
// symbolic-shapes.md). A dim made from a bare integer is unknown: a size that may depend on the
// symbols through arithmetic that did not say. It converts to its size, so code that computes
// with sizes is as it was; arithmetic on that size makes an unknown dim, and add_dims and
// multiply_dims keep an expression only when both operands have one, so a pass that does not
// carry one loses it and never makes it wrong. Dims keep theirs through copies, add_dims,
// multiply_dims, subtract_dims and Arg's integers that are sizes.
class Dim {
 public:
  Dim(int64_t size = 0) : size_(size) {}  // NOLINT: an unknown dim
  // `expr` (a constant one too), which must evaluate to `size` at the trace's sizes.
  Dim(int64_t size, const SizeExpr& expr);
  // ... an expression interned() already (or null).
  Dim(int64_t size, const SizeExpr* interned_expr) : size_(size), expr_(interned_expr) {}
  // A size known to be the same at every size of the symbols.
  static Dim constant(int64_t size);
  operator int64_t() const { return size_; }  // NOLINT
  // What the dim is at every size, when known (a constant expression for a known constant).
  const SizeExpr* expr() const { return expr_; }
  // It has an expression that names a symbol.
  bool symbolic() const { return expr_ && !expr_->is_constant(); }

 private:
  int64_t size_;
  const SizeExpr* expr_ = nullptr;  // interned: one copy of each expression for the run (so a Dim copies as two words)
};
// The one copy of `expr` every Dim and Arg with it points to, kept until the process ends.
const SizeExpr* interned(const SizeExpr& expr);
// An interned expression's text (SizeExpr::text), spelled once per thread: code and comments name
// the same few expressions hundreds of thousands of times.
const std::string& interned_text(const SizeExpr* interned);
// a + b, a - b and a * b with their expressions (kept when both operands have one, and the
// arithmetic on them does not overflow).
Dim add_dims(const Dim& a, const Dim& b);
Dim subtract_dims(const Dim& a, const Dim& b);
Dim multiply_dims(const Dim& a, const Dim& b);
// `size`, computed from `from` alone by arithmetic a Dim does not carry (a split's pieces, a
// convolution's output): a known constant where `from` is one, else unknown.
Dim computed_from(const Dim& from, int64_t size);
// a // divisor (floor, divisor > 0) with its expression where `a` has one (a strided slice's or a
// convolution's output length).
Dim floor_div_dim(const Dim& a, int64_t divisor, const Symbols& symbols);
// (count - 1) * step + 1 with its expression: what `count` positions `step` apart span (a strided
// slice's reach, an interior-padded dim, a convolution's window).
Dim spread_dim(const Dim& count, const Dim& step);

using Shape = std::vector<Dim>;
using NameSet = std::unordered_set<std::string>;  // the value names taken in a trace
int64_t numel(const Shape& shape);
// The element count with its expression: the product of the dims' (of the first `count`).
Dim numel_dim(const Shape& shape, size_t count = size_t(-1));
// A reshape's output dims: where one is unknown and the others and the input's element count are
// known, it is their exact quotient (a reshape keeps the element count); kept only when exact.
void derive_reshaped_dim(Shape& out, const Shape& in, const Symbols& symbols);
// The element count at the sizes `at` (the dims' expressions evaluated there; empty `at`, or a
// dim without one: the size it has), past 2^48 elements cut to 2^48 (a cost, never a buffer size).
int64_t numel_at(const Shape& shape, const SymbolValues& at);
// "B=8, T=40": sizes in name order, for messages and listings.
std::string sizes_text(const SymbolValues& sizes);
// The shape's sizes alone (for code that wants integers: printing, index maps).
std::vector<int64_t> sizes_of(const Shape& shape);


struct Value {
  std::string name;
  bool is_scalar = false;  // a NumberProxy: no shape, passed by value
  DType dtype = DType::f32;
  Shape shape;
  std::string device;
  bool requires_grad = false;
  std::optional<std::pair<double, double>> init_uniform;  // inputs: how a harness draws it (extension)
  bool bit_packed = false;  // a saved b8 mask stored at one bit per element (tg::PackedBits)
};

// The bytes a tensor occupies in device memory as stored: whole 32-bit words when bit-packed.
inline int64_t stored_bytes(const Value& v, bool bit_packed) {
  if (v.is_scalar) return 0;
  int64_t n = 1;
  for (int64_t d : v.shape) n *= d;
  return bit_packed ? (n + 31) / 32 * 4 : n * int64_t(dtype_bytes(v.dtype));
}
inline int64_t stored_bytes(const Value& v) { return stored_bytes(v, v.bit_packed); }
// ... at the sizes `at` (numel_at), and as an expression over the symbols (a constant for a static shape).
int64_t stored_bytes_at(const Value& v, bool bit_packed, const SymbolValues& at);
// (nullopt: some dim is unknown).
std::optional<SizeExpr> stored_bytes_expr(const Value& v, const Symbols& symbols);
// a + b, unknown (nullopt) when either is: a total of such byte counts.
inline std::optional<SizeExpr> add_known(const std::optional<SizeExpr>& a, const std::optional<SizeExpr>& b) {
  return a && b ? std::optional(*a + *b) : std::nullopt;
}

// An argument: a reference to a value, a literal, or a list of either.
struct Arg {
  // opaque: a Python object only a decomposed symbol takes (a slice, Ellipsis, a memory format);
  // `text` spells it as Python would.
  // process_group: a distributed prim's group ({"process_group": {"world_size": N}}); `integer`
  // holds its world size. The rank is never in a trace: it is the communicator's, at run time.
  enum class Kind { none, value, boolean, integer, real, string, dtype, device, list, opaque, process_group };
  Kind kind = Kind::none;
  ValueId value = kNoValue;
  bool boolean = false;
  int64_t integer = 0;
  const SizeExpr* size = nullptr;  // an integer that is a size in a symbolic trace: its expression (interned)
  double real = 0;
  std::string text;  // string, device or opaque literal
  DType dtype = DType::f32;
  std::vector<Arg> items;

  static Arg of_value(ValueId v) { Arg a; a.kind = Kind::value; a.value = v; return a; }
  static Arg of_int(int64_t i) { Arg a; a.kind = Kind::integer; a.integer = i; return a; }
  static Arg of_dim(const Dim& d) { Arg a = of_int(d); a.size = d.expr(); return a; }
  static Arg of_real(double d) { Arg a; a.kind = Kind::real; a.real = d; return a; }
  static Arg of_bool(bool b) { Arg a; a.kind = Kind::boolean; a.boolean = b; return a; }
  static Arg of_dtype(DType t) { Arg a; a.kind = Kind::dtype; a.dtype = t; return a; }
  static Arg of_list(std::vector<Arg> items) { Arg a; a.kind = Kind::list; a.items = std::move(items); return a; }

  bool is_value() const { return kind == Kind::value; }
  bool is_number() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::real; }
  double as_double() const { return kind == Kind::real ? real : kind == Kind::integer ? double(integer) : double(boolean); }
  // A list of integers (shape, dims, permutation...). Only valid after verification.
  std::vector<int64_t> int_list() const;
  // The same as dims, with the expressions of the sizes that have one (shapes: reshape's, full's).
  Shape dim_list() const;
  Dim dim() const { return Dim(integer, size); }
};

struct Op;
struct OpInfo;  // src/ops/op_table.h: the row of the op's symbol

// A sub-program with its own inputs, used for the fwd/bwd bodies of custom-gradient ops.
struct SubTrace {
  std::vector<ValueId> inputs;
  std::vector<Op> ops;
  std::vector<ValueId> outputs;  // kNoValue where a gradient is null
  std::vector<ValueId> saved;    // fwd only: values handed to bwd after its cotangents
};

struct CustomGrad {
  SubTrace fwd;
  SubTrace bwd;
};

struct Op {
  std::string symbol;             // Thunder's symbol id, e.g. "prims.add"
  const OpInfo* info = nullptr;   // op-table row; null for a torch-level symbol lowered via `sub`
  std::vector<Arg> args;          // bound to info's parameters; raw positional args when info is null
  std::vector<std::string> arg_where;  // JSON pointer of a bound argument given by keyword; empty for
                                       // the rest: "<where>/args/<i>"
  std::vector<std::pair<std::string, Arg>> kwargs;  // only when info is null (kept for printing)
  std::vector<ValueId> outs;
  std::vector<std::string> tags;
  std::vector<Op> sub;            // decomposition into ops over the same names
  std::shared_ptr<const CustomGrad> custom;
  std::string where;              // JSON pointer of the op in the input, for diagnostics
  std::string origin;             // prims only: the torch-level symbol they lower or differentiate ("" as read)
  std::string label;              // for kernels: the structural name given by fusion

  // Arguments by position: for code that walks them all (operands, values read).
  const Arg& arg(size_t i) const { return args.at(i); }
  // The argument bound to the parameter `name` of the op's signature (info's params), so a rule
  // says which argument it means and a reordered signature cannot hand it another. A name the
  // signature does not declare, or an op without a signature, is an internal error naming both.
  const Arg& arg(std::string_view name) const;
  // Whether the signature declares `name` and the op binds it (ops that passes build may bind
  // fewer than the signature's parameters: prims.matmul without its epilogue extension).
  bool has_arg(std::string_view name) const;
};

// Calls f(id) for every value an argument refers to, nested lists included.
template <class F>
void for_each_value(const Arg& a, F&& f) {
  if (a.is_value()) f(a.value);
  for (const Arg& item : a.items) for_each_value(item, f);
}
// Calls f(id) for every value an op reads.
template <class F>
void for_each_value(const Op& op, F&& f) {
  for (const Arg& a : op.args) for_each_value(a, f);
}

// Calls f(op) for every op of `ops` and, depth first, of its `sub` decomposition and its custom
// fwd/bwd bodies.
template <class F>
void for_each_nested_op(const std::vector<Op>& ops, F&& f) {
  for (const Op& op : ops) {
    f(op);
    for_each_nested_op(op.sub, f);
    if (op.custom) {
      for_each_nested_op(op.custom->fwd.ops, f);
      for_each_nested_op(op.custom->bwd.ops, f);
    }
  }
}
// The same for editing. Custom bodies are shared between copies of a trace, so each is copied
// before f may change it. With `only_lowered`, the decomposition of an op that has a rule of its
// own is skipped: it is never lowered (the RNG pass must not number the draws in it).
template <class F>
void for_each_nested_op(std::vector<Op>& ops, F&& f, bool only_lowered = false) {
  for (Op& op : ops) {
    f(op);
    if (!only_lowered || !op.info) for_each_nested_op(op.sub, f, only_lowered);
    if (op.custom) {
      auto bodies = std::make_shared<CustomGrad>(*op.custom);
      for_each_nested_op(bodies->fwd.ops, f, only_lowered);
      for_each_nested_op(bodies->bwd.ops, f, only_lowered);
      op.custom = std::move(bodies);
    }
  }
}

// Where an input of a PT2 archive's program came from: its role ("parameter", "buffer",
// "constant", "user_input") and fully qualified name ("layers.0.attn.q_proj.weight"); and where an
// output goes: "user_output" (its name), or "buffer_update" with the buffer's FQN (a BatchNorm's
// running statistics after the step).
struct InputOrigin {
  std::string role, fqn;
};

// The node of a PT2 archive's graph an op was translated from: its ATen target
// ("aten.native_dropout.default") and the module that called it ("layers.0.attn"; "" for the
// top-level module). Overrides select ops by them.
struct NodeOrigin {
  std::string target, module;
};

struct Trace {
  std::string name;
  std::string device = "cuda:0";
  std::string source;
  std::vector<Value> values;
  std::vector<ValueId> inputs;
  std::vector<Op> ops;
  std::vector<ValueId> outputs;
  // Op path -> where its rematerialization policy came from ("--tag X=save", "trace tag"...),
  // for the reasons `explain` and the manifest give. Ops lowered from a call share its path.
  std::map<std::string, std::string> policy_sources;
  // The world size of the process group its distributed prims name (one per trace); 0 when it has
  // none. Its entry points then take a communicator (thunder_gen_comm).
  int64_t world_size = 0;
  // Per input and per output, when the trace was read from a PT2 archive; empty for a JSON trace.
  std::vector<InputOrigin> input_origins, output_origins;
  // Op path -> the archive node it came from, when the trace was read from a PT2 archive.
  std::map<std::string, NodeOrigin> node_origins;
  // The symbols its sizes were declared in (docs/symbolic-shapes.md), and the size each was
  // given (--specialize), at which every shape of this trace was evaluated; both empty for a
  // trace of static shapes.
  Symbols symbols;
  SymbolValues specialized_at;
  // A symbolic trace's inputs' sizes as expressions, by input name (those with a symbol in a
  // size): what a caller's shapes are checked against (the manifest's "sizes").
  std::map<std::string, std::vector<SizeExpr>, std::less<>> input_sizes;
  // The code takes the symbols' sizes at run time (docs/symbolic-shapes.md): the trace's numbers
  // are one probe's (specialized_at); the code, and its comments, use the sizes' expressions.
  bool sizes_at_run_time = false;
  // "B=64, T=128 (1 <= B <= 4096; 16 <= T <= 512)": the sizes this trace is at, and their
  // declarations; "" for a trace of static shapes.
  std::string specialization_text() const;
  // Whether the code takes `count` (elements, rows, bytes) at run time: in a folder taking its sizes
  // at run time, where it depends on them.
  bool taken_at_run_time(const Dim& count) const { return sizes_at_run_time && count.symbolic(); }

  // Everything but the ops: where a pass that builds a new op list starts (copying the ops,
  // decompositions and all, only to drop them cost a tenth of a 10,000-op run).
  Trace without_ops() const {
    Trace t;
    t.name = name;
    t.device = device;
    t.source = source;
    t.values = values;
    t.inputs = inputs;
    t.outputs = outputs;
    t.policy_sources = policy_sources;
    t.world_size = world_size;
    t.input_origins = input_origins;
    t.output_origins = output_origins;
    t.node_origins = node_origins;
    t.symbols = symbols;
    t.specialized_at = specialized_at;
    t.input_sizes = input_sizes;
    t.sizes_at_run_time = sizes_at_run_time;
    return t;
  }

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  Value& value(ValueId id) { return values.at(static_cast<size_t>(id)); }
  ValueId add_value(Value v) {
    values.push_back(std::move(v));
    return static_cast<ValueId>(values.size() - 1);
  }
};

}  // namespace tg
