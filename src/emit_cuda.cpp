#include "emit_cuda.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <cctype>
#include <set>
#include <sstream>
#include <unordered_map>

#include "fuse.h"
#include "generated_text.h"
#include "index_map.h"
#include "printer.h"
#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {

std::string storage_type(const Value& v) { return v.bit_packed ? "tg::PackedBits" : std::string(storage_ctype(v.dtype)); }

namespace {

constexpr int kPointwiseBlock = 256;
constexpr int kMaxRowBlock = 256;  // (a row too long to sit in registers at this size gets up to 1024)
constexpr int kMaxRowBlockWide = 1024;
constexpr int kMaxCachedPerThread = 16;  // row elements per thread held in registers
constexpr int kColumnBlock = 1024;  // 32 rows x 32 parts
constexpr int64_t kMaxPartSumBytes = 32 * 1024;  // a row kernel's partial sums in shared memory

std::string ctype(DType t) { return std::string(compute_ctype(t)); }

// `d` as a literal of type float (`f32`) or double: the value the type holds (a number past
// float's range is its infinity, one below its smallest, 0 or a subnormal), subnormals in hex
// (NVRTC refuses a decimal literal it must round to one), non-finite values by their bits.
std::string float_literal(double d, bool f32) {
  const double held = f32 ? double(float(d)) : d;
  if (std::isnan(held)) return f32 ? "tg::bits_float(0x7fc00000u)" : "double(tg::bits_float(0x7fc00000u))";
  if (std::isinf(held)) return std::string(held < 0 ? "-" : "") + (f32 ? "TG_INFINITY" : "double(TG_INFINITY)");
  const bool subnormal = held != 0 && std::fabs(held) < (f32 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min());
  char buf[64];
  std::to_chars_result r;
  if (subnormal) r = f32 ? std::to_chars(buf, buf + sizeof buf, float(held), std::chars_format::hex) : std::to_chars(buf, buf + sizeof buf, held, std::chars_format::hex);
  else r = f32 ? std::to_chars(buf, buf + sizeof buf, float(held)) : std::to_chars(buf, buf + sizeof buf, held);
  std::string s(buf, r.ptr);
  if (subnormal) s.insert(s[0] == '-' ? 1 : 0, "0x");
  else if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f32 ? s + "f" : s;
}

// A number literal as code of compute type `as`.
std::string number_code(double d, bool is_integer_literal, int64_t integer, DType as) {
  if (is_bool(as)) return (is_integer_literal ? integer != 0 : d != 0) ? "true" : "false";
  if (is_float(as)) return float_literal(is_integer_literal ? double(integer) : d, as != DType::f64);
  // (The verifier holds a real literal an integer op reads to the integer type's range.)
  std::string v = is_integer_literal ? std::to_string(integer) : std::to_string(int64_t(std::trunc(d)));
  return "static_cast<" + ctype(as) + ">(" + v + (as == DType::i64 ? "ll" : "") + ")";
}

std::string literal_code(const Arg& a, DType as) {
  switch (a.kind) {
    case Arg::Kind::boolean: return number_code(a.boolean, true, a.boolean, as);
    case Arg::Kind::integer: return number_code(double(a.integer), true, a.integer, as);
    case Arg::Kind::real: return number_code(a.real, false, 0, as);
    default: throw InternalError("not a number literal");
  }
}

std::string shape_text(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? " x " : "") + std::to_string(s[i]);
  return out.empty() ? "scalar" : out;
}

// Does `text` contain `word` as a whole identifier (not part of a longer one)?
bool uses_word(const std::string& text, const std::string& word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1))
    if ((at == 0 || !ident(text[at - 1])) && (at + word.size() == text.size() || !ident(text[at + word.size()]))) return true;
  return false;
}

// Declares the loop dims of `dims` that a body uses, d<k> = defs[k] (see loop_dim_definitions).
std::string dim_declarations(const std::string& body, const std::vector<IndexExpr>& defs, const std::vector<int64_t>& dims,
                             const std::string& indent) {
  std::string out;
  for (int64_t d : dims) {
    const std::string var = "d" + std::to_string(d);
    if (uses_word(body, var)) out += indent + "const int64_t " + var + " = " + defs[size_t(d)].text() + ";\n";
  }
  return out;
}

// Sets defs[d] for the loop dims d of `dims`: quotients and remainders of `flat`, their row-major
// linear index over `domain`.
void define_dims(std::vector<IndexExpr>& defs, const IndexExpr& flat, const Shape& domain, const std::vector<int64_t>& dims) {
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const int64_t extent = domain[size_t(dims[k])];
    defs[size_t(dims[k])] = k > 0 ? (flat / stride) % extent : flat / stride;
    stride *= extent;
  }
}

// A kernel loop's index named `name`, over the elements of `dims`.
IndexExpr loop_index(const std::string& name, const Shape& domain, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= domain[size_t(d)];
  return IndexExpr::named(name, 0, std::max<int64_t>(count - 1, 0));
}

std::vector<int64_t> all_dims(const Shape& domain) {
  std::vector<int64_t> all(domain.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
  return all;
}

// What each loop dim d<k> of a kernel is in the kernel's own indices: a quotient and remainder of
// the flat index i (pointwise), or of `row` (a row kernel's outer dims) and `j` (its reduced dims).
std::vector<IndexExpr> loop_dim_definitions(const KernelLayout& layout) {
  std::vector<IndexExpr> defs(layout.domain.size());
  if (!layout.is_row) {
    define_dims(defs, loop_index("i", layout.domain, all_dims(layout.domain)), layout.domain, all_dims(layout.domain));
  } else {
    define_dims(defs, loop_index("row", layout.domain, layout.outer), layout.domain, layout.outer);
    define_dims(defs, loop_index("j", layout.domain, layout.reduced), layout.domain, layout.reduced);
  }
  return defs;
}

// The manifest's account of a kernel: what it computes, reads and writes.
EmittedKernel describe(const Trace& t, const Op& kernel) {
  EmittedKernel info;
  info.name = kernel.label;
  for (const Op& op : kernel.sub)
    for (ValueId v : op.outs) info.values.push_back(t.value(v).name);
  for (const Arg& a : kernel.args) info.reads.push_back(t.value(a.value).name);
  for (ValueId v : kernel.outs) info.writes.push_back(t.value(v).name);
  return info;
}

// Everything a kernel's code depends on but names: its parameters' types in order, then each op
// (symbol, literals, which value each operand is, its results' types), values numbered by first
// appearance. Kernels with equal signatures are the same computation on different buffers, so
// a file emits the code once and launches it for each (a stack of identical transformer blocks
// would otherwise repeat every kernel once per block).
class KernelSignature {
 public:
  explicit KernelSignature(const Trace& t) : t_(t), number_(t.values.size(), -1) {}

  std::string of(const Op& kernel) {
    s_.clear();
    for (const Arg& a : kernel.args) value(a.value);
    s_ += '|';
    for (ValueId v : kernel.outs) value(v);
    for (const Op& op : kernel.sub) {
      s_ += '\n';
      s_ += op.symbol;
      s_ += '(';
      for (const Arg& a : op.args) arg(a);
      s_ += ")->";
      for (ValueId v : op.outs) value(v);
    }
    for (ValueId v : numbered_) number_[size_t(v)] = -1;
    numbered_.clear();
    return s_;
  }

 private:
  const Trace& t_;
  std::vector<int> number_;         // by value id: its number in the kernel at hand, -1 if none yet
  std::vector<ValueId> numbered_;   // the ids numbered so far
  std::string s_;

  void value(ValueId v) {
    int& n = number_[size_t(v)];
    const bool fresh = n < 0;
    if (fresh) {
      n = int(numbered_.size());
      numbered_.push_back(v);
    }
    s_ += '%';
    append_int(s_, n);
    if (!fresh) return;
    const Value& val = t_.value(v);
    s_ += ':';
    append_type(s_, val);
    if (val.bit_packed) s_ += " packed";
  }

  void arg(const Arg& a) {
    s_ += char('A' + int(a.kind));
    switch (a.kind) {
      case Arg::Kind::value: value(a.value); break;
      case Arg::Kind::boolean: s_ += a.boolean ? '1' : '0'; break;
      case Arg::Kind::integer: append_int(s_, a.integer); break;
      case Arg::Kind::real: s_ += print_number(a.real); break;
      case Arg::Kind::dtype: s_ += dtype_name(a.dtype); break;
      case Arg::Kind::string: case Arg::Kind::device: case Arg::Kind::opaque:  // (framed by its length: text can hold any byte)
        append_int(s_, int64_t(a.text.size()));
        s_ += ':';
        s_ += a.text;
        break;
      case Arg::Kind::list:
        for (const Arg& item : a.items) arg(item);
        s_ += ']';
        break;
      case Arg::Kind::none: break;
    }
    s_ += ',';
  }
};

class KernelWriter {
 public:
  // `idents`: the g_<name> identifiers of values by id, filled in as kernels need them ("" until
  // then), so each is made once per trace rather than once per use.
  // hold_row = false: a row kernel reads its row from memory in every pass, even where it could
  // hold it in registers (see holds_row_for_one_pass).
  KernelWriter(const Trace& t, std::vector<std::string>& idents, const Op& kernel, bool hold_row = true)
      : t_(t), idents_(idents), k_(kernel), layout_(kernel_layout(t, kernel)), loop_dims_(loop_dim_definitions(layout_)) {
    for (size_t i = 0; i < k_.sub.size(); ++i) {
      for (ValueId v : k_.sub[i].outs) producer_[v] = &k_.sub[i];
      if (k_.sub[i].info->kind == OpKind::partial_sum)  // by element, or a total of a value per row
        (t_.value(k_.sub[i].arg(0).value).shape == layout_.domain ? part_sums_ : row_totals_).push_back(&k_.sub[i]);
    }
    for (const Arg& a : k_.args) loaded_.insert(a.value);
    lanes_ = run_lanes();
    column_tile_ = column_tile();
    row_block_ = row_block();
    cached_ = hold_row ? row_cache(row_block_) : 0;
    row_run_ = row_run();
    hoist_ = cached_ > 0 && hoisted_words() > 0 && (row_words() + hoisted_words()) * cached_ <= 64 * kMaxRowBlock / row_block_;
    stream_run_ = stream_run();
  }

  std::string write() {
    std::string body = layout_.is_row ? row_body() : pointwise_body();
    std::ostringstream out;
    out << comment_line(k_.label + ": " + (layout_.is_row ? "row reduction over " + shape_text(layout_.domain) + ", reducing dims " + dims_text(layout_.reduced)
                                                         : "pointwise over " + shape_text(layout_.domain)));
    out << comment_line("Implements:");
    for (const Op& op : k_.sub) out << comment_line("  " + print_op(op, t_));
    out << "extern \"C\" __global__ void __launch_bounds__(" << block_size() << ") " << k_.label << "(";
    bool first = true;
    for (const Arg& a : k_.args) {
      const Value& v = t_.value(a.value);
      out << (first ? "" : ", ") << (v.is_scalar ? ctype(v.dtype) + " " : "const " + storage_type(v) + "* __restrict__ ") << ident(a.value);
      first = false;
    }
    for (ValueId id : k_.outs) {
      const Value& v = t_.value(id);
      out << (first ? "" : ", ") << storage_type(v) << "* __restrict__ " << ident(id);
      first = false;
    }
    out << ") {\n" << body << "}\n";
    return out.str();
  }

  // Written with the row in registers, which only one pass read: holding it bought nothing and
  // costs registers (and, read in runs, ptxas may spill merging the aligned and unaligned fills).
  bool holds_row_for_one_pass() const { return cached_ > 0 && passes_over_row_ == 1; }

  int block_size() const {
    if (!layout_.is_row) return kPointwiseBlock;
    if (column_tile_ > 1) return kColumnBlock;
    return row_block_;
  }
  // Threads' worth of work: runs in a pointwise kernel with a run loop (known once written).
  int64_t work_items() const { return layout_.is_row ? numel(layout_.outer_shape()) : (numel(layout_.domain) + lanes_ - 1) / lanes_; }
  // Work items a block takes: a thread each (pointwise), one row, or a column kernel's 32 rows.
  int items_per_block() const { return layout_.is_row ? column_tile_ : block_size(); }
  // Blocks to launch where the problem fixes them (0: from the work items): one per partial sum.
  int64_t fixed_grid() const {
    for (const std::vector<const Op*>* sums : {&part_sums_, &row_totals_})
      if (!sums->empty()) return sums->front()->arg(2).integer;
    return 0;
  }

 private:
  const Trace& t_;
  std::vector<std::string>& idents_;
  const Op& k_;
  KernelLayout layout_;
  std::vector<IndexExpr> loop_dims_;  // d<k> in the kernel's own indices (loop_dim_definitions)
  std::map<ValueId, const Op*> producer_;
  std::set<ValueId> loaded_;
  std::map<ValueId, std::string> reduced_;  // reductions computed so far: their register
  struct Scope {
    ReadMap<std::string> values;  // value at index -> the variable holding it
    std::map<std::string, std::string> index_names;  // index code -> the variable holding it
    std::string code;
    std::string indent;
    std::set<std::string> declared;  // variable names declared in this scope
  };
  std::vector<Scope> scopes_;
  int lanes_ = 1;                   // pointwise: elements per thread in the 16-byte loop
  int column_tile_ = 1;             // row kernels: rows per block (32: a column kernel)
  int row_block_ = 0;               // row kernels: threads per block (one row per block)
  int cached_ = 0;                  // row kernels: row elements per thread held in registers
  int row_run_ = 1;                 // ... held in runs of this many neighbours (row_run)
  int passes_over_row_ = 0;         // loops over the row written so far
  std::vector<const Op*> part_sums_;  // thunder_gen.partial_sum ops: sums over the rows, a part per block
  std::vector<const Op*> row_totals_;  // ... of a value per row (a row kernel's reduced values)
  std::vector<ValueId> row_cached_; // the operands it holds there (c_<name>[k])
  bool hoist_ = false;              // are operands shaped like one row loaded once, before the rows?
  std::vector<ValueId> row_hoisted_;  // those (c_<name>[k]: element j of the thread's k-th)
  int stream_run_ = 1;              // rows not held: elements a thread streams in a run (stream_run)
  bool in_stream_run_ = false;      // writing a streamed pass's per-lane body
  std::vector<ValueId> stream_loads_;  // operands that body reads a run at a time (r_<name>[lane])
  std::vector<ValueId> stream_row_loads_;  // ... of those, the ones shaped like one row (a LayerNorm's weight)
  bool in_run_ = false;             // writing that loop's per-lane body
  struct RunLoad {
    ValueId value;
    IndexExpr start;    // the run's first element, in `run`
    std::string array;  // r_<name>, numbered where one operand is read at several starts
  };
  std::vector<RunLoad> run_loads_;  // operands it loads a run at a time
  std::map<ValueId, std::vector<size_t>> run_loads_of_;  // ... those of each operand
  std::set<std::string> run_arrays_;  // ... their arrays' names
  IndexExpr run_var_;                 // ... its variable `run`
  std::vector<IndexExpr> lane_dims_;  // ... and d<k> in terms of `run` and `lane` there

  // Elements per run: 16 bytes of the widest operand or result that the kernel walks
  // contiguously (shape equal to the domain), so every run access is at most 16 bytes.
  int run_lanes() const {
    if (layout_.is_row) return 1;
    int widest = 0;
    auto consider = [&](ValueId id) {
      const Value& v = t_.value(id);
      if (!v.is_scalar && !v.bit_packed && v.shape == layout_.domain) widest = std::max(widest, dtype_bytes(v.dtype));
    };
    for (const Arg& a : k_.args) consider(a.value);
    for (ValueId v : k_.outs) consider(v);
    // Only packed masks to write (a dropout mask drawn on its own): runs of 4, one Philox block each.
    if (widest == 0 && has_packed_output()) widest = 4;
    if (widest == 0 || widest > 8) return 1;
    int lanes = 16 / widest;
    return numel(layout_.domain) >= lanes ? lanes : 1;
  }

  // A row kernel whose rows are neighbours in memory (the last dim is an outer dim: LayerNorm's
  // weight gradient sums over dim 0) would read with a stride of the row length if a block took
  // one row. A column kernel's block takes 32 neighbouring rows instead: thread t works on row
  // t % 32 of them, so a warp reads 32 neighbouring elements, and on every (blockDim.x / 32)-th
  // element of that row from t / 32 (tg::column_reduce combines the parts).
  int column_tile() const {
    if (!layout_.is_row || layout_.outer.empty() || layout_.outer.back() != int64_t(layout_.domain.size()) - 1) return 1;
    return numel(layout_.outer_shape()) % 32 == 0 ? 32 : 1;
  }

  // A thread's loop over the reduced elements j of its row, around `body`, in the current scope.
  // With the row in registers: a loop over k = 0 .. cached_-1, unrolled, j = cached_element().
  void reduced_loop(const std::string& body) {
    const std::string r = std::to_string(numel(layout_.reduced_shape()));
    const std::string dims = dim_declarations(body, loop_dims_, layout_.reduced, scopes_.back().indent + "  ");
    ++passes_over_row_;
    if (cached_ > 0) {
      line("TG_UNROLL for (int k = 0; k < " + std::to_string(cached_) + "; ++k) {");
      if (uses_word(body + dims, "j")) line("  const int64_t j = " + cached_element() + ";");
    } else {
      line(column_tile_ > 1 ? "for (int64_t j = threadIdx.x / 32; j < " + r + "; j += blockDim.x / 32) {"
                            : "for (int64_t j = threadIdx.x; j < " + r + "; j += blockDim.x) {");
    }
    scopes_.back().code += dims + body;
    line("}");
  }

  // Elements of its row a thread keeps in registers (0: none), so that a row kernel's passes
  // (mean, variance, write ...) read memory once, with `block` threads: when the row splits evenly
  // into at most 16 elements per thread and the operands read along it fit the registers: 64
  // registers' worth at 256 threads, fewer in larger blocks (1024 threads leave 64 a thread in all).
  int row_cache(int block) const {
    if (!layout_.is_row || column_tile_ > 1) return 0;
    const std::string j_form = offset_of_row_element();
    if (j_form.empty()) return 0;
    const int64_t r = numel(layout_.reduced_shape());
    if (r % block != 0 || r / block > kMaxCachedPerThread) return 0;
    return row_words() * (r / block) <= 64 * kMaxRowBlock / block ? int(r / block) : 0;
  }
  // 32-bit registers per cached element (2 for an f64 operand) of the operands shaped like the
  // domain (row_cache), and of those shaped like one row: a LayerNorm's weight and bias, the same
  // for every row, which a thread holding its part of the row loads once for all its rows (hoist_).
  int64_t row_words() const { return operand_words(layout_.domain); }
  int64_t hoisted_words() const { return layout_.outer.empty() ? 0 : operand_words(layout_.reduced_shape()); }
  int64_t operand_words(const Shape& shape) const {
    int64_t words = 0;
    for (const Arg& a : k_.args) {
      const Value& v = t_.value(a.value);
      if (!v.is_scalar && v.shape == shape) words += register_words(v.dtype);
    }
    return words;
  }
  static int64_t register_words(DType t) { return (dtype_bytes(t) + 3) / 4; }
  // Whether `index` reads element j of a value shaped like one row (the reduced dims, in order).
  bool reads_row_element(const Value& val, const Index& index) const {
    if (val.shape != layout_.reduced_shape() || index.size() != layout_.reduced.size()) return false;
    for (size_t i = 0; i < index.size(); ++i)
      if (index[i].kind != IndexComp::Kind::var || index[i].var != int(layout_.reduced[i])) return false;
    return true;
  }
  // Threads per row: the row's length rounded up to a power of two, at most kMaxRowBlock; a row
  // longer than kMaxRowBlock * 16 (LayerNorm over 8192 features) gets the smallest larger block
  // that holds it in registers, where one does, so its passes need not re-read it from memory.
  int row_block() const {
    if (!layout_.is_row || column_tile_ > 1) return 0;
    const int64_t r = numel(layout_.reduced_shape());
    int block = 32;
    while (block < kMaxRowBlock && block < r) block *= 2;
    if (row_cache(block) > 0 || r <= int64_t(block) * kMaxCachedPerThread) return block;
    for (int wide = 2 * block; wide <= kMaxRowBlockWide; wide *= 2)
      if (row_cache(wide) > 0) return wide;
    return block;
  }
  // Neighbouring row elements a thread holds together when its part of the row is in registers:
  // 16 bytes of the widest row-shaped operand or output (fewer where the part does not split so),
  // so that the row is read and written in 16-byte runs. 1: elements a block apart.
  int row_run() const {
    if (cached_ == 0 || has_packed_output()) return 1;
    int run = 16 / std::max(1, widest_along_row());
    while (run > 1 && cached_ % run != 0) run /= 2;
    return run;
  }
  // A row not held in registers is streamed by each pass: thread t takes runs t, t + block, ... of
  // 16 bytes of the widest row-shaped operand or output, read (and written) with one access each
  // where the pointers are aligned, so a thread has whole runs in flight rather than one element.
  // 1 where the row does not split into runs (its length, or rows not contiguous), would leave
  // threads without a run, or a packed mask is written.
  int stream_run() const {
    if (!layout_.is_row || column_tile_ > 1 || cached_ > 0 || has_packed_output() || offset_of_row_element().empty()) return 1;
    const int widest = widest_along_row();
    if (widest == 0 || widest > 8) return 1;
    const int run = 16 / widest;
    // (Every thread of the block takes at least one run: a shorter row keeps its threads busy
    // element by element instead.)
    const int64_t length = numel(layout_.reduced_shape());
    return length % run == 0 && length >= int64_t(run) * block_size() ? run : 1;
  }
  // Bytes of the widest element a run moves: of the operands and outputs shaped like the rows, and
  // of the operands shaped like one row (loaded in runs of the same length), so that no run is
  // wider than 16 bytes. 0 when there are none.
  int widest_along_row() const {
    int widest = 0;
    for (const Arg& a : k_.args) {
      const Value& v = t_.value(a.value);
      const bool one_row = !layout_.outer.empty() && v.shape == layout_.reduced_shape();
      if (!v.is_scalar && !v.bit_packed && (v.shape == layout_.domain || one_row)) widest = std::max(widest, dtype_bytes(v.dtype));
    }
    for (ValueId id : k_.outs)
      if (t_.value(id).shape == layout_.domain) widest = std::max(widest, dtype_bytes(t_.value(id).dtype));
    return widest;
  }
  // j of a thread's k-th cached element: runs of row_run_ neighbours, a block's worth of runs apart.
  std::string cached_element() const {
    const std::string block = std::to_string(block_size());
    if (row_run_ == 1) return "threadIdx.x + k * " + block;
    const std::string run = std::to_string(row_run_);
    if (cached_ == row_run_) return "threadIdx.x * " + run + " + k";  // one run
    return "(k / " + run + ") * " + std::to_string(block_size() * row_run_) + " + threadIdx.x * " + run + " + k % " + run;
  }
  // Code moving each run of a thread's cached elements, inside an `if` on alignment: `statements(at)`
  // for one run whose first element is j and whose place in the thread's arrays is `at` after
  // their name; in a loop over the runs (`run`), or just once where the thread holds one run.
  std::string over_runs(const std::string& indent, const std::function<std::vector<std::string>(const std::string& at)>& statements) const {
    const std::string run_length = std::to_string(row_run_);
    std::string code;
    if (cached_ == row_run_) {
      code += indent + "const int64_t j = threadIdx.x * " + run_length + ";\n";
      for (const std::string& statement : statements("")) code += indent + statement + "\n";
      return code;
    }
    code += indent + "TG_UNROLL for (int run = 0; run < " + std::to_string(cached_ / row_run_) + "; ++run) {\n";
    code += indent + "  const int64_t j = run * " + std::to_string(block_size() * row_run_) + " + threadIdx.x * " + run_length + ";\n";
    for (const std::string& statement : statements(" + run * " + run_length)) code += indent + "  " + statement + "\n";
    return code + indent + "}\n";
  }
  // "tg::aligned16(a) && tg::aligned16(b)" over the pointers of `values` ("" for none).
  std::string all_aligned(const std::vector<ValueId>& values) const {
    std::string test;
    for (ValueId v : values) test += (test.empty() ? "" : " && ") + ("tg::aligned16(" + ident(v) + ")");
    return test;
  }
  std::string if_aligned(const std::vector<ValueId>& values) const { return "if (" + all_aligned(values) + ") {"; }

  // "row * R + j" (or "j"): where a row-shaped operand's element j lies, when rows are contiguous.
  std::string offset_of_row_element() const {
    for (size_t k = 0; k < layout_.reduced.size(); ++k)
      if (layout_.reduced[k] != int64_t(layout_.domain.size() - layout_.reduced.size() + k)) return "";
    return layout_.outer.empty() ? "j" : "row * " + std::to_string(numel(layout_.reduced_shape())) + " + j";
  }

  bool has_packed_output() const {
    for (ValueId v : k_.outs)
      if (t_.value(v).bit_packed) return true;
    return false;
  }

  static std::string dims_text(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
  }

  const std::string& ident(ValueId v) const {
    std::string& id = idents_[size_t(v)];
    if (id.empty()) id = tg::ident(Role::global, t_.value(v).name);
    return id;
  }
  // Value v's identifier in a local role (its run registers, its accumulator, ...).
  std::string local(Role role, ValueId v) const { return tg::ident(role, t_.value(v).name); }

  void line(const std::string& s) { scopes_.back().code += scopes_.back().indent + s + "\n"; }
  void comment(const std::string& text) { scopes_.back().code += comment_line(text, scopes_.back().indent); }
  void push(const std::string& indent) { scopes_.push_back(Scope{{}, {}, "", indent, {}}); }
  std::string pop() {
    std::string code = std::move(scopes_.back().code);
    scopes_.pop_back();
    return code;
  }

  // An index computation of a shape op as a variable, ix_<operand>_i<dim> (or _in_<output> for a
  // guard), declared once per scope.
  std::string name_index(const std::string& code, const char* type, const std::string& hint) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto m = it->index_names.find(code); m != it->index_names.end()) return m->second;
    std::string name = unique_local(tg::ident(Role::index, hint));
    line(std::string("const ") + type + " " + name + " = " + code + ";");
    scopes_.back().index_names[code] = name;
    return name;
  }

  std::string unique_local(const std::string& base) {
    auto taken = [&](const std::string& n) {
      for (const Scope& s : scopes_)
        if (s.declared.count(n)) return true;
      return false;
    };
    std::string name = base;
    for (int k = 1; taken(name); ++k) name = base + "_" + std::to_string(k);
    scopes_.back().declared.insert(name);
    return name;
  }

  // v_<name>, numbered only when a live scope already has that name (the same value at
  // another index); sibling loops reuse the plain name.
  std::string fresh_name(ValueId v) { return unique_local(local(Role::element, v)); }

  bool is_identity(const Index& index) const { return index == identity_index(layout_.domain.size()); }

  // Offset of a tensor element, with the cheap forms for the kernel's own loop index.
  std::string offset(const Value& v, const Index& index) {
    if (v.shape == layout_.domain && is_identity(index)) {
      if (!layout_.is_row) return "i";
      if (std::string row_form = offset_of_row_element(); !row_form.empty()) return row_form;
    }
    if (layout_.is_row && v.shape == layout_.outer_shape() && index == layout_.outer_index()) return "row";
    return offset_expr(v, index).text();
  }

  // The offset as an expression: in the kernel's own indices (i, or row and j) where that needs no
  // division or remainder and the loop dims would (a contiguous reshape read at the kernel's
  // element is i), else over the loop dims, each piece that divides named (ix_<value>_i<k>).
  IndexExpr offset_expr(const Value& v, const Index& index) {
    const IndexExpr at = linear_index(index, v.shape);
    const IndexExpr flat = at.with_dims(loop_dims_);
    if (!flat.has_div_or_mod() && (at.has_div_or_mod() || loop_dims_divide(at))) return flat;
    if (!at.has_div_or_mod()) return at;
    Index named = index;
    for (size_t k = 0; k < named.size(); ++k)
      if (named[k].kind == IndexComp::Kind::expr && named[k].expr.has_div_or_mod())
        named[k] = IndexComp::of_expr(named[k].expr.as_variable(name_index(named[k].expr.text(), "int64_t", v.name + "_i" + std::to_string(k))));
    return linear_index(named, v.shape);
  }
  bool loop_dims_divide(const IndexExpr& e) const {
    for (int d : e.dims())
      if (loop_dims_[size_t(d)].has_div_or_mod()) return true;
    return false;
  }

  // The array holding the run of v that starts at `start`, declared for the run loop.
  const std::string& run_array(ValueId v, const IndexExpr& start) {
    std::vector<size_t>& loads = run_loads_of_[v];
    for (size_t i : loads)
      if (run_loads_[i].start == start) return run_loads_[i].array;
    const std::string base = local(Role::run_in, v);
    std::string name = base;
    for (int k = 2; run_arrays_.count(name); ++k) name = base + "_" + std::to_string(k);
    run_arrays_.insert(name);
    loads.push_back(run_loads_.size());
    run_loads_.push_back({v, start, name});
    return run_loads_.back().array;
  }

  // In a pointwise kernel's run loop: the element of `val` where the run its lanes read at `index`
  // starts, as code in `run`, when lane k reads element start + k and start is a multiple of the
  // run length (so aligned where the pointer is), each element no wider than 16 bytes allow: an
  // operand read at the kernel's own element (i, i + c, a contiguous reshape), or a row of a
  // broadcast whose length is a multiple of the run's.
  std::optional<IndexExpr> run_start(const Value& val, const Index& index) const {
    if (val.bit_packed || lanes_ * dtype_bytes(val.dtype) > 16) return std::nullopt;
    if (val.shape == layout_.domain && is_identity(index)) return run_var_ * lanes_;
    const IndexExpr lane = IndexExpr::named("lane", 0, lanes_ - 1);
    const IndexExpr start = linear_index(index, val.shape).with_dims(lane_dims_) + lane * -1;
    // (Code the lanes compute, a pad's or cat's piece, may differ from lane to lane: only `run` may appear.)
    for (const std::string& name : start.names())
      if (name != "run") return std::nullopt;
    return start.multiple_of(lanes_) ? std::optional<IndexExpr>(start) : std::nullopt;
  }

  // The variable a live scope holds value v at `index` in, if any.
  const std::string* memoized(ValueId v, const Index& index) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (const std::string* var = it->values.find(v, index)) return var;
    return nullptr;
  }

  // Is v computed here by an op that reads its operands at indexes known up front: an elementwise
  // op or a source (at v's own index), or a shape op (at mapped ones)? Not a reduction, nor loaded.
  bool computed_here(ValueId v) const {
    if (loaded_.count(v) || reduced_.count(v)) return false;
    auto p = producer_.find(v);
    if (p == producer_.end()) return false;
    const FusionClass fusion = p->second->info->fusion;
    return fusion == FusionClass::elementwise || fusion == FusionClass::source || fusion == FusionClass::shape;
  }

  // What computing op at `index` reads, in the order compute() reads it: a shape op's mapped reads
  // (naming their index variables now, as compute() would), or the value arguments at `index`.
  std::vector<std::pair<ValueId, Index>> operand_reads(const Op& op, const Index& index) {
    std::vector<std::pair<ValueId, Index>> reads;
    if (op.info->fusion == FusionClass::shape) {
      for (OperandRead& r : shape_op_reads(t_, op, index, index_namer())) reads.emplace_back(r.value, std::move(r.index));
      return reads;
    }
    for (const Arg& a : op.args)
      if (a.is_value()) reads.emplace_back(a.value, index);
    return reads;
  }

  // Computes what v's op at `index` reads before v, and what those read before them, in the order a
  // recursive walk would (each operand's own operands first, in reading order), but with a stack of
  // its own: a kernel may hold a chain of 10,000 ops. value_at(v) then finds them computed.
  void compute_operands_first(ValueId v, const Index& index) {
    struct Frame {
      ValueId value;
      std::vector<std::pair<ValueId, Index>> reads;
      size_t next = 0;
    };
    std::vector<Frame> stack;
    stack.push_back({v, operand_reads(*producer_.at(v), index)});
    std::vector<Index> at = {index};  // the index each frame's value is computed at
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next < frame.reads.size()) {
        const auto [u, u_index] = frame.reads[frame.next++];
        if (memoized(u, u_index)) continue;
        if (!computed_here(u)) {
          value_at(u, u_index);
          continue;
        }
        std::vector<std::pair<ValueId, Index>> reads = operand_reads(*producer_.at(u), u_index);  // (before the push moves frames)
        stack.push_back({u, std::move(reads)});
        at.push_back(u_index);
        continue;
      }
      const ValueId done = frame.value;
      const Index done_at = std::move(at.back());
      stack.pop_back();
      at.pop_back();
      if (!stack.empty()) value_at(done, done_at);  // (v itself is the caller's)
    }
  }

  IndexNamer index_namer() {
    return [this](const std::string& code, const char* type, const std::string& hint) { return name_index(code, type, hint); };
  }

  // The variable holding value v at `index`, emitting the code that computes it if needed.
  std::string value_at(ValueId v, const Index& index) {
    if (const std::string* var = memoized(v, index)) return *var;
    if (computed_here(v)) compute_operands_first(v, index);
    if (auto r = reduced_.find(v); r != reduced_.end()) {
      TG_CHECK(index == layout_.outer_index(), "a reduction read at another row");
      return r->second;
    }
    const Value& val = t_.value(v);
    std::string var;
    if (loaded_.count(v)) {
      if (val.is_scalar) return ident(v);
      if (cached_ > 0 && val.shape == layout_.domain && is_identity(index)) {  // this thread's k-th element of the row
        if (std::find(row_cached_.begin(), row_cached_.end(), v) == row_cached_.end()) row_cached_.push_back(v);
        scopes_.back().values.set(v, index, local(Role::cached, v) + "[k]");
        return local(Role::cached, v) + "[k]";
      }
      // Element j of a value shaped like one row (there being several rows): the same for every row.
      const bool one_row = !layout_.outer.empty() && !val.bit_packed && reads_row_element(val, index);
      // Held, loaded before the rows. (Also c_<name>: one value is not shaped both like the rows
      // and like one row.)
      if (hoist_ && one_row) {
        if (std::find(row_hoisted_.begin(), row_hoisted_.end(), v) == row_hoisted_.end()) row_hoisted_.push_back(v);
        scopes_.back().values.set(v, index, local(Role::cached, v) + "[k]");
        return local(Role::cached, v) + "[k]";
      }
      if (in_stream_run_ && !val.bit_packed && ((val.shape == layout_.domain && is_identity(index)) || one_row)) {  // this lane's of the streamed run
        if (std::find(stream_loads_.begin(), stream_loads_.end(), v) == stream_loads_.end()) {
          stream_loads_.push_back(v);
          if (one_row) stream_row_loads_.push_back(v);
        }
        scopes_.back().values.set(v, index, local(Role::run_in, v) + "[lane]");
        return local(Role::run_in, v) + "[lane]";
      }
      var = fresh_name(v);
      const std::optional<IndexExpr> start = in_run_ ? run_start(val, index) : std::nullopt;
      if (start) {  // this lane's element of the loaded run
        line("const " + ctype(val.dtype) + " " + var + " = " + run_array(v, *start) + "[lane];");
      } else {
        line("const " + ctype(val.dtype) + " " + var + " = tg::load(" + ident(v) + ", " + offset(val, index) + ");");
      }
    } else {
      auto p = producer_.find(v);
      TG_CHECK(p != producer_.end(), "kernel " + k_.label + " needs " + val.name + " but neither computes nor reads it");
      var = compute(*p->second, v, index);
    }
    scopes_.back().values.set(v, index, var);
    return var;
  }

  std::string operand(const Arg& a, const Index& index, DType as) {
    if (a.is_value()) {
      const Value& v = t_.value(a.value);
      std::string var = value_at(a.value, index);
      return v.is_scalar && v.dtype != as ? "static_cast<" + ctype(as) + ">(" + var + ")" : var;
    }
    return literal_code(a, as);
  }

  // An operand of a discontinuous op (a comparison, argmax, floor, ...) of 16-bit type `as`:
  // rounded to `as`, as it is stored and as PyTorch's op-by-op rounding has it, unless it is
  // a tensor of that type loaded from memory (rounded already).
  std::string as_stored(const std::string& code, DType as, const Arg& a) const {
    if (as != DType::bf16 && as != DType::f16) return code;
    if (a.is_value() && loaded_.count(a.value) && !t_.value(a.value).is_scalar && t_.value(a.value).dtype == as) return code;
    return std::string(as == DType::bf16 ? "tg::round_to_bfloat16(" : "tg::round_to_half(") + code + ")";
  }

  static std::string format(std::string_view code, const std::vector<std::string>& operands) {
    std::string out;
    for (size_t i = 0; i < code.size(); ++i) {
      if (code[i] == '{' && i + 2 < code.size() && code[i + 2] == '}') {
        out += operands.at(size_t(code[i + 1] - '0'));
        i += 2;
      } else {
        out += code[i];
      }
    }
    return out;
  }

  std::string compute(const Op& op, ValueId v, const Index& index) {
    const Value& out = t_.value(v);
    std::string expr;
    switch (op.info->fusion) {
      case FusionClass::elementwise: {
        if (op.info->kind == OpKind::convert_element_type) {
          const Value& src = t_.value(op.arg(0).value);
          std::string x = value_at(op.arg(0).value, index);
          if (!is_float(out.dtype)) x = as_stored(x, src.dtype, op.arg(0));  // (truncation jumps at integers)
          if (out.dtype == DType::b8) expr = "(" + x + " != 0)";
          else if (out.dtype == DType::f16) expr = "tg::round_to_half(static_cast<float>(" + x + "))";
          else if (out.dtype == DType::bf16) expr = "tg::round_to_bfloat16(static_cast<float>(" + x + "))";
          else if (ctype(src.dtype) == ctype(out.dtype)) expr = x;
          else expr = "static_cast<" + ctype(out.dtype) + ">(" + x + ")";
          break;
        }
        DType as = operand_dtype(t_, op);
        std::vector<std::string> operands;
        for (size_t i = 0; i < op.args.size(); ++i) {
          DType want = (op.info->kind == OpKind::where && i == 0) ? DType::b8 : as;
          operands.push_back(operand(op.args[i], index, want));
          if (op.info->discontinuous) operands.back() = as_stored(operands.back(), want, op.args[i]);
        }
        const bool wraps = is_integer(as) && !op.info->integer_code.empty();
        expr = format(wraps ? op.info->integer_code : op.info->code, operands);
        break;
      }
      case FusionClass::source:
        if (op.info->kind == OpKind::full) {
          expr = op.arg(1).is_value() ? "static_cast<" + ctype(out.dtype) + ">(" + value_at(op.arg(1).value, index) + ")"
                                      : literal_code(op.arg(1), out.dtype);
        } else if (op.info->kind == OpKind::uniform_philox) {
          // The element's linear position in the drawn tensor picks its Philox counter.
          std::string u = "tg::philox_uniform(static_cast<uint64_t>(" + operand(op.arg(5), index, DType::i64) + "), static_cast<uint64_t>(" +
                          operand(op.arg(6), index, DType::i64) + "), " + offset(out, index) +
                          (op.arg(7).integer ? ", " + std::to_string(op.arg(7).integer) + "ull" : std::string()) + ")";
          std::string lo = operand(op.arg(1), index, DType::f32), hi = operand(op.arg(2), index, DType::f32);
          expr = "static_cast<" + ctype(out.dtype) + ">(" + lo + " + (" + hi + " - " + lo + ") * " + u + ")";
        } else {  // iota
          expr = "static_cast<" + ctype(out.dtype) + ">(" + std::to_string(op.arg(1).integer) + " + " + index.at(0).text() + " * " +
                 std::to_string(op.arg(2).integer) + ")";
        }
        break;
      case FusionClass::shape: {
        std::vector<OperandRead> reads = shape_op_reads(t_, op, index, index_namer());
        if (op.info->kind == OpKind::pad) {
          std::string inner = value_at(reads[0].value, reads[0].index);
          if (reads[0].guard.empty()) return inner;
          expr = "(" + reads[0].guard + ") ? " + inner + " : " + operand(op.arg(1), index, out.dtype);
        } else if (op.info->kind == OpKind::cat) {
          for (size_t r = 0; r + 1 < reads.size(); ++r) expr += reads[r].guard + " ? " + value_at(reads[r].value, reads[r].index) + " : ";
          expr += value_at(reads.back().value, reads.back().index);
        } else {
          return value_at(reads[0].value, reads[0].index);  // a pure index map: no new variable
        }
        break;
      }
      default:
        throw InternalError("kernel " + k_.label + ": cannot compute " + out.name + " (" + op.symbol + ") inline");
    }
    std::string var = fresh_name(v);
    line("const " + ctype(out.dtype) + " " + var + " = " + expr + ";");
    return var;
  }

  // ---- pointwise kernels ----------------------------------------------------------------------

  // One element per iteration: the whole kernel, or what the run loop leaves.
  std::string element_body(const std::string& indent) {
    push(indent);
    for (ValueId v : k_.outs) {
      std::string var = value_at(v, identity_index(layout_.domain.size()));
      line("tg::store(" + ident(v) + ", i, " + var + ");");
    }
    return pop();
  }

  std::string pointwise_body() {
    std::vector<int64_t> all(layout_.domain.size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
    const std::string thread = "int64_t(blockIdx.x) * blockDim.x + threadIdx.x", stride = "int64_t(gridDim.x) * blockDim.x";
    std::string out = "  const int64_t n = " + std::to_string(numel(layout_.domain)) + ";\n";
    std::string runs = lanes_ > 1 ? run_loop(all, thread, stride) : "";
    if (runs.empty()) lanes_ = 1;  // one element per thread: the grid is sized for elements
    std::string element = element_body("    ");
    std::string first = runs.empty() ? thread : "runs * " + std::to_string(lanes_) + " + " + thread;
    out += runs;
    out += "  for (int64_t i = " + first + "; i < n; i += " + stride + ") {\n";
    out += dim_declarations(element, loop_dims_, all, "    ");
    out += element + "  }\n";
    return out;
  }

  // The 16-byte loop: each thread takes a run of lanes_ neighbouring elements, loads each
  // contiguous operand's run with one access, computes the lanes, stores each result's run with
  // one access. Only when all those pointers are 16-byte aligned; "" when nothing would be wide.
  // A packed mask's run is lanes_ bits, which the warp gathers into whole words (no atomics); the
  // loop then covers whole warps' worth of runs only, so every lane of a warp takes part.
  std::string run_loop(const std::vector<int64_t>& all, const std::string& thread, const std::string& stride) {
    in_run_ = true;
    run_loads_.clear();
    run_loads_of_.clear();
    run_arrays_.clear();
    lane_dims_.assign(layout_.domain.size(), IndexExpr());
    run_var_ = IndexExpr::named("run", 0, std::max<int64_t>(numel(layout_.domain) / lanes_ - 1, 0));
    define_dims(lane_dims_, run_var_ * lanes_ + IndexExpr::named("lane", 0, lanes_ - 1), layout_.domain, all);
    push("      ");
    std::vector<ValueId> run_stores, run_bits;
    for (ValueId v : k_.outs) {
      const Value& val = t_.value(v);
      std::string var = value_at(v, identity_index(layout_.domain.size()));
      if (val.bit_packed) {
        line(local(Role::run_bits, v) + " |= unsigned(" + var + ") << lane;");
        run_bits.push_back(v);
      } else {
        line(local(Role::run_out, v) + "[lane] = " + var + ";");
        run_stores.push_back(v);
      }
    }
    std::string lane_body = pop();
    in_run_ = false;
    if (run_loads_.empty() && run_stores.empty() && run_bits.empty()) return "";
    const std::string L = std::to_string(lanes_);
    std::vector<ValueId> wide;  // (each operand once, in the order of first use)
    for (size_t i = 0; i < run_loads_.size(); ++i)
      if (run_loads_of_.at(run_loads_[i].value).front() == i) wide.push_back(run_loads_[i].value);
    wide.insert(wide.end(), run_stores.begin(), run_stores.end());
    const std::string aligned = all_aligned(wide);
    std::string out;
    out += "  // Runs of " + L + " elements, one 16-byte (or narrower) access per operand, when aligned;\n";
    out += "  // the loop after this one takes the rest, or everything.\n";
    if (run_bits.empty()) {
      out += "  const int64_t runs = " + aligned + " ? n / " + L + " : 0;\n";
    } else {
      out += "  // Whole warps of runs only: their lanes gather each mask's bits into words together.\n";
      std::string whole_warps = "n / (32 * " + L + ") * 32";
      out += "  const int64_t runs = " + (aligned.empty() ? whole_warps : aligned + " ? " + whole_warps + " : 0") + ";\n";
    }
    out += "  for (int64_t run = " + thread + "; run < runs; run += " + stride + ") {\n";
    for (ValueId v : run_bits) out += "    unsigned " + local(Role::run_bits, v) + " = 0;\n";
    for (const RunLoad& r : run_loads_) {
      out += "    " + ctype(t_.value(r.value).dtype) + " " + r.array + "[" + L + "];\n";
      out += "    tg::load_run(" + ident(r.value) + ", " + r.start.text() + ", " + r.array + ");\n";
    }
    for (ValueId v : run_stores) out += "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + L + "];\n";
    out += "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) {\n";
    const std::string dims = dim_declarations(lane_body, loop_dims_, all, "      ");
    if (uses_word(dims + lane_body, "i")) out += "      const int64_t i = run * " + L + " + lane;\n";
    out += dims + lane_body + "    }\n";
    for (ValueId v : run_stores) out += "    tg::store_run(" + ident(v) + ", run * " + L + ", " + local(Role::run_out, v) + ");\n";
    for (ValueId v : run_bits)
      out += "    tg::store_run_bits<" + L + ">(" + ident(v) + ", run * " + L + ", " + local(Role::run_bits, v) + ");\n";
    out += "  }\n";
    return out;
  }

  // ---- row kernels ----------------------------------------------------------------------------

  static std::string acc_type(DType t) { return is_float(t) ? ctype(t) : "int64_t"; }

  // One accumulation over the row: acc = combine over j of element(), then a block-wide (or, in a
  // column kernel, column-wide) combine; finish() gets that total's expression and declares the
  // results. Accumulations whose elements need no result still to come share one pass.
  struct Accumulation {
    std::string comment, reducer, acc_type, acc_name;
    std::function<std::string()> element;
    std::function<void(const std::string& total)> finish;
    std::set<ValueId> needs;  // reductions whose results element() reads
    std::function<void()> direct = {};  // set: the result is computed without a pass (see pick_instead_of_sum)
  };
  std::vector<Accumulation> pending_;

  // The reductions of this kernel whose results computing v reads (v itself, if one).
  std::set<ValueId> reductions_needed(ValueId v) {
    std::set<ValueId> out;
    std::vector<ValueId> stack = {v};
    std::set<ValueId> seen;
    while (!stack.empty()) {
      ValueId x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second || loaded_.count(x)) continue;
      auto p = producer_.find(x);
      if (p == producer_.end()) continue;
      if (p->second->info->fusion == FusionClass::reduction) {
        out.insert(x);
        continue;
      }
      for_each_value(*p->second, [&](ValueId a) { stack.push_back(a); });
    }
    return out;
  }

  void reduction(const Op& op) {
    const Value& in = t_.value(op.arg(0).value);
    const std::string comment = print_op(op, t_, false);
    const std::string ct = ctype(in.dtype);
    const ValueId input = op.arg(0).value;
    auto element = [this, input] { return value_at(input, identity_index(layout_.domain.size())); };
    auto declare = [this](ValueId v, const std::string& expr) {
      std::string var = fresh_name(v);
      line("const " + ctype(t_.value(v).dtype) + " " + var + " = " + expr + ";");
      reduced_[v] = var;
    };
    const std::set<ValueId> needs = reductions_needed(input);
    const std::string rlen = std::to_string(numel(layout_.reduced_shape()));
    const ValueId out = op.outs[0];
    if (op.info->kind == OpKind::sum && (join_online_max(op, declare) || pick_instead_of_sum(op))) return;
    switch (op.info->kind) {
      case OpKind::sum:
      case OpKind::prod:
      case OpKind::amax:
      case OpKind::amin: {
        std::string acc = (op.info->kind == OpKind::amax || op.info->kind == OpKind::amin) ? ct : acc_type(in.dtype);
        const char* which = op.info->kind == OpKind::sum ? "Sum" : op.info->kind == OpKind::prod ? "Prod" : op.info->kind == OpKind::amax ? "Max" : "Min";
        pending_.push_back({comment, std::string("tg::") + which + "<" + acc + ">", acc, local(Role::accumulator, out), element,
                            [=](const std::string& total) { declare(out, acc == ct ? total : "static_cast<" + ct + ">(" + total + ")"); }, needs});
        break;
      }
      case OpKind::argmax:
      case OpKind::argmin: {
        std::string reducer = "tg::ArgBest<" + ct + ", " + (op.info->kind == OpKind::argmax ? "true" : "false") + ">";
        pending_.push_back({comment, reducer, "tg::ArgPair<" + ct + ">", local(Role::accumulator, out),
                            [=, this, in_dtype = in.dtype] {
                              return "tg::ArgPair<" + ct + ">{" + as_stored(element(), in_dtype, Arg::of_value(input)) + ", j}";
                            },
                            [=](const std::string& total) { declare(out, total + ".index"); }, needs});
        break;
      }
      case OpKind::var:
      case OpKind::var_mean: {
        // Two passes over the row: the mean, then the squared deviations from it.
        const std::string mean = local(Role::mean, out);
        const ValueId mean_out = op.outs.size() > 1 ? op.outs[1] : kNoValue;
        const Arg correction = op.arg(2);
        auto variance = [=, this] {
          pending_.push_back({comment + " (pass 2: variance)", "tg::Sum<" + ct + ">", ct, local(Role::m2, out),
                              [=] {
                                std::string x = element();
                                return "(" + x + " - " + mean + ") * (" + x + " - " + mean + ")";
                              },
                              [=, this](const std::string& m2) {
                                std::string c = operand(correction, layout_.outer_index(), t_.value(input).dtype);
                                declare(out, m2 + " / (" + ct + "(" + rlen + ") - " + c + ")");
                                if (mean_out != kNoValue) reduced_[mean_out] = mean;
                              },
                              needs});
        };
        pending_.push_back({comment + " (pass 1: mean)", "tg::Sum<" + ct + ">", ct, local(Role::sum, out), element,
                            [=, this](const std::string& sum) {
                              line("const " + ct + " " + mean + " = " + sum + " / " + ct + "(" + rlen + ");");
                              variance();
                            },
                            needs});
        break;
      }
      default:
        throw InternalError("not a reduction: " + op.symbol);
    }
  }

  // The op of this kernel that computes argument a, if it is a `kind` op.
  const Op* made_by(const Arg& a, OpKind kind) const {
    if (!a.is_value()) return nullptr;
    auto p = producer_.find(a.value);
    return p != producer_.end() && p->second->info->kind == kind ? p->second : nullptr;
  }

  // sum(exp(x - broadcast(amax(x)))) after amax(x) in the same row kernel (softmax, log_softmax,
  // cross-entropy): instead of a pass for the max and then one for the sum, one pass computes both
  // (tg::OnlineSumExp), so the row is read and block-reduced once for them. The max is exact as
  // before; the sum rounds differently (rescaled partial sums). `declare` names a result.
  template <class Declare> bool join_online_max(const Op& sum, const Declare& declare) {
    if (column_tile_ > 1) return false;
    const Op* exp = made_by(sum.arg(0), OpKind::exp);
    const Op* sub = exp ? made_by(exp->arg(0), OpKind::sub) : nullptr;
    if (!sub || !sub->arg(0).is_value()) return false;
    const Op* bcast = made_by(sub->arg(1), OpKind::broadcast_in_dim);
    const Op* amax = bcast ? made_by(bcast->arg(0), OpKind::amax) : nullptr;
    if (!amax || !amax->arg(0).is_value() || amax->arg(0).value != sub->arg(0).value || !is_float(t_.value(amax->outs[0]).dtype)) return false;
    const ValueId x = sub->arg(0).value, max = amax->outs[0], total = sum.outs[0];
    const std::string max_acc = local(Role::accumulator, max);
    auto pending = std::find_if(pending_.begin(), pending_.end(), [&](const Accumulation& a) { return a.acc_name == max_acc; });
    if (pending == pending_.end()) return false;  // (another sum took it)
    const std::string ct = ctype(t_.value(x).dtype), reducer = "tg::OnlineSumExp<" + ct + ">";
    pending->comment += ", and " + print_op(sum, t_, false) + " (online: one pass for both)";
    pending->reducer = reducer;
    pending->acc_type = "tg::MaxSum<" + ct + ">";
    pending->element = [this, x, reducer] { return reducer + "::of(" + value_at(x, identity_index(layout_.domain.size())) + ")"; };
    pending->finish = [this, declare, max, total, ct, reducer](const std::string& both) {
      const std::string var = unique_local(local(Role::max_and_sum, max));
      line("const tg::MaxSum<" + ct + "> " + var + " = " + both + ";");
      declare(max, var + ".max");
      declare(total, reducer + "::sum_of(" + var + ")");
    };
    return true;
  }

  // sum(where(iota == t, e, 0)) over the row, t one index per row (cross-entropy's log-probability
  // of the target, as Thunder decomposes it): only element t is not 0, so the sum is e at t, when t
  // is in the row, else 0. Computed directly, a load rather than a pass over the row and a block
  // reduction. (The sum's +0 start would turn a -0 into +0; this keeps the -0.)
  bool pick_instead_of_sum(const Op& sum) {
    if (column_tile_ > 1 || layout_.reduced.size() != 1) return false;
    const int64_t dim = layout_.reduced[0], length = layout_.domain[size_t(dim)];
    const Op* where = made_by(sum.arg(0), OpKind::where);
    if (!where || where->arg(2).is_value() || where->arg(2).as_double() != 0 || !is_float(t_.value(sum.outs[0]).dtype)) return false;
    const Op* eq = made_by(where->arg(0), OpKind::eq);
    if (!eq) return false;
    // One side of eq is iota(length, start=0, step=1) along the reduced dim, the other a per-row
    // value broadcast along it.
    auto is_position = [&](const Arg& a) {
      const Op* b = made_by(a, OpKind::broadcast_in_dim);
      const Op* iota = b ? made_by(b->arg(0), OpKind::iota) : nullptr;
      return iota && b->arg(2).int_list() == std::vector<int64_t>{dim} && iota->arg(0).integer == length && !iota->arg(1).is_value() &&
             iota->arg(1).integer == 0 && !iota->arg(2).is_value() && iota->arg(2).integer == 1;
    };
    auto per_row = [&](const Arg& a) -> ValueId {
      const Op* b = made_by(a, OpKind::broadcast_in_dim);
      if (!b || !b->arg(0).is_value() || b->arg(2).int_list() != layout_.outer) return kNoValue;
      return t_.value(b->arg(0).value).shape == layout_.outer_shape() ? b->arg(0).value : kNoValue;
    };
    ValueId target = kNoValue;
    if (is_position(eq->arg(0))) target = per_row(eq->arg(1));
    else if (is_position(eq->arg(1))) target = per_row(eq->arg(0));
    if (target == kNoValue || !is_integer(t_.value(target).dtype) || !where->arg(1).is_value()) return false;
    const ValueId picked = where->arg(1).value, out = sum.outs[0];
    std::set<ValueId> needs = reductions_needed(picked);
    for (ValueId v : reductions_needed(target)) needs.insert(v);
    Accumulation pick{print_op(sum, t_, false) + " (element " + t_.value(target).name + " of the row: a load, no pass)",
                      /*reducer=*/"", /*acc_type=*/"", /*acc_name=*/"", /*element=*/{}, /*finish=*/{}, needs};
    pick.direct = [=, this] {
      const std::string at = unique_local(local(Role::target, out)), var = fresh_name(out);
      line("const int64_t " + at + " = " + value_at(target, layout_.outer_index()) + ";");
      line(ctype(t_.value(out).dtype) + " " + var + " = 0;");
      line("if (0 <= " + at + " && " + at + " < " + std::to_string(length) + ") {");
      Index index = identity_index(layout_.domain.size());
      index[size_t(dim)] = IndexComp::of_expr(IndexExpr::named(at, 0, length - 1));
      push(scopes_.back().indent + "  ");
      line(var + " = " + value_at(picked, index) + ";");
      const std::string assign = pop();
      scopes_.back().code += assign;
      line("}");
      reduced_[out] = var;
    };
    pending_.push_back(std::move(pick));
    return true;
  }

  // Passes over the row until every reduction is done: each takes every pending accumulation
  // whose inputs are ready, and `stores` (row outputs that need no reduction) ride on the first.
  void reduction_passes(std::vector<ValueId> stores) {
    while (!pending_.empty()) {
      std::vector<Accumulation> pass;
      for (size_t i = 0; i < pending_.size();) {
        bool ready = true;
        for (ValueId v : pending_[i].needs) ready = ready && reduced_.count(v);
        if (ready) {
          pass.push_back(std::move(pending_[i]));
          pending_.erase(pending_.begin() + long(i));
        } else {
          ++i;
        }
      }
      TG_CHECK(!pass.empty(), "kernel " + k_.label + ": reductions wait on each other");
      for (const Accumulation& a : pass)
        if (a.direct) {
          comment(a.comment);
          a.direct();
        }
      std::erase_if(pass, [](const Accumulation& a) { return bool(a.direct); });
      if (pass.empty()) continue;
      for (const Accumulation& a : pass) {
        comment(a.comment);
        line(a.acc_type + " " + a.acc_name + " = " + a.reducer + "::init();");
      }
      if (!stores.empty()) comment("... and write the row's outputs that need no reduction");
      pass_writing(stores, [&] {
        for (const Accumulation& a : pass) {
          std::string e = a.element();
          line(a.acc_name + " = " + a.reducer + "::combine(" + a.acc_name + ", " + e + ");");
        }
      });
      stores.clear();
      // Block-wide: two accumulators at a time share one reduction's barriers (tg::block_reduce2).
      for (size_t i = 0; i < pass.size(); ++i) {
        const Accumulation& a = pass[i];
        if (column_tile_ > 1) {
          a.finish("tg::column_reduce<" + a.reducer + ">(" + a.acc_name + ")");
        } else if (i + 1 < pass.size()) {
          const Accumulation& b = pass[++i];
          line("tg::block_reduce2<" + a.reducer + ", " + b.reducer + ">(" + a.acc_name + ", " + b.acc_name + ");");
          a.finish(a.acc_name);
          b.finish(b.acc_name);
        } else {
          a.finish("tg::block_reduce<" + a.reducer + ">(" + a.acc_name + ")");
        }
      }
    }
    if (!stores.empty()) pass_writing(stores, [] {});  // (no reduction at all)
  }

  void store_row_outputs(const std::vector<ValueId>& outs) {
    const Index full = identity_index(layout_.domain.size());
    for (ValueId v : outs) {
      const Value& val = t_.value(v);
      line("tg::store(" + ident(v) + ", " + offset(val, full) + ", " + value_at(v, full) + ");");
    }
  }

  // With the row in registers in runs, a pass writes row outputs in three steps: arrays for the
  // values before the loop, the values into them in it, and after it each run stored with one
  // access where the outputs are 16-byte aligned, element by element where not.
  void declare_row_output_runs(const std::vector<ValueId>& outs) {
    for (ValueId v : outs) line(ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + std::to_string(cached_) + "];");
  }
  void set_row_output_runs(const std::vector<ValueId>& outs) {
    const Index full = identity_index(layout_.domain.size());
    for (ValueId v : outs) line(local(Role::run_out, v) + "[k] = " + value_at(v, full) + ";");
  }
  void store_row_output_runs(const std::vector<ValueId>& outs) {
    if (outs.empty()) return;
    const std::string run = std::to_string(row_run_);
    line(if_aligned(outs));
    scopes_.back().code += over_runs(scopes_.back().indent + "  ", [&](const std::string& at) {
      std::vector<std::string> stores;
      for (ValueId v : outs) stores.push_back("tg::store_run_from<" + run + ">(" + ident(v) + ", " + offset_of_row_element() + ", " + local(Role::run_out, v) + at + ");");
      return stores;
    });
    line("} else {");
    line("  TG_UNROLL for (int k = 0; k < " + std::to_string(cached_) + "; ++k) {");
    line("    const int64_t j = " + cached_element() + ";");
    for (ValueId v : outs) line("    tg::store(" + ident(v) + ", " + offset_of_row_element() + ", " + local(Role::run_out, v) + "[k]);");
    line("  }");
    line("}");
  }

  // A pass over the row: `body` in the loop, and the row outputs `outs` written (in runs where
  // the row is held in runs).
  void pass_writing(const std::vector<ValueId>& outs, const std::function<void()>& body) {
    if (stream_run_ > 1) {
      stream_pass(outs, body);
      return;
    }
    if (row_run_ > 1) declare_row_output_runs(outs);
    push(scopes_.back().indent + "  ");
    body();
    if (row_run_ > 1) set_row_output_runs(outs);
    else store_row_outputs(outs);
    reduced_loop(pop());
    if (row_run_ > 1) store_row_output_runs(outs);
  }

  // A pass streaming the row in runs (stream_run_): thread t takes runs t, t + block, ... and
  // computes their lanes. Where every pointer it reads or writes along the row is 16-byte
  // aligned, each operand's run is loaded and each output's stored with one access; where not,
  // element by element into the same arrays, so both ways add the same elements in the same order
  // (the same bits).
  void stream_pass(const std::vector<ValueId>& outs, const std::function<void()>& body) {
    const std::string L = std::to_string(stream_run_), indent = scopes_.back().indent;
    const int64_t row_length = numel(layout_.reduced_shape());
    in_stream_run_ = true;
    stream_loads_.clear();
    stream_row_loads_.clear();
    push(indent + "      ");
    body();
    const Index full = identity_index(layout_.domain.size());
    for (ValueId v : outs) line(local(Role::run_out, v) + "[lane] = " + value_at(v, full) + ";");
    const std::string lane_body = pop();
    in_stream_run_ = false;
    ++passes_over_row_;
    // Where v's run starts: element j = run * L of the row (of v itself where v is one row).
    auto first = [&](ValueId v) {
      const bool one_row = layout_.outer.empty() || std::count(stream_row_loads_.begin(), stream_row_loads_.end(), v);
      return one_row ? "run * " + L : "row * " + std::to_string(row_length) + " + run * " + L;
    };
    // As many runs for every thread, and few enough that all of them fit the registers a row held
    // there may take (row_cache): a loop the compiler unrolls, so that each thread has all its
    // loads in flight at once. Else a loop over the runs.
    const int64_t runs = row_length / stream_run_, block = block_size();
    int64_t words = 0;  // 32-bit registers per lane of all the runs loaded
    for (ValueId v : stream_loads_) words += register_words(t_.value(v).dtype);
    const std::string loop = runs % block == 0 && runs / block * stream_run_ * words <= 64 * kMaxRowBlock / block
                                 ? "TG_UNROLL for (int n = 0; n < " + std::to_string(runs / block) + "; ++n) {\n" + indent + "    const int64_t run = threadIdx.x + n * " +
                                       std::to_string(block) + ";\n"
                                 : "for (int64_t run = threadIdx.x; run < " + std::to_string(runs) + "; run += " + std::to_string(block) + ") {\n";
    const std::string dims = dim_declarations(lane_body, loop_dims_, layout_.reduced, indent + "      ");
    auto pass = [&](bool wide) {
      std::string code = indent + "  " + loop;
      for (ValueId v : stream_loads_) {
        code += indent + "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_in, v) + "[" + L + "];\n";
        if (wide) code += indent + "    tg::load_run_to<" + L + ">(" + ident(v) + ", " + first(v) + ", " + local(Role::run_in, v) + ");\n";
        else code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) " + local(Role::run_in, v) + "[lane] = tg::load(" + ident(v) + ", " + first(v) + " + lane);\n";
      }
      for (ValueId v : outs) code += indent + "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + L + "];\n";
      code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) {\n";
      if (uses_word(lane_body + dims, "j")) code += indent + "      const int64_t j = run * " + L + " + lane;\n";
      code += dims + lane_body + indent + "    }\n";
      for (ValueId v : outs) {
        if (wide) code += indent + "    tg::store_run_from<" + L + ">(" + ident(v) + ", " + first(v) + ", " + local(Role::run_out, v) + ");\n";
        else code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) tg::store(" + ident(v) + ", " + first(v) + " + lane, " + local(Role::run_out, v) + "[lane]);\n";
      }
      return code + indent + "  }\n";
    };
    std::vector<ValueId> along = stream_loads_;
    along.insert(along.end(), outs.begin(), outs.end());
    if (along.empty()) {  // (nothing along the row to read or write)
      line("{");
      scopes_.back().code += pass(false);
      line("}");
      return;
    }
    line(if_aligned(along) + "  // runs of " + L + ", one access each");
    scopes_.back().code += pass(true);
    line("} else {  // element by element, in the same order");
    scopes_.back().code += pass(false);
    line("}");
  }

  std::string row_body() {
    push("    ");
    // Outputs shaped like a row are written in a pass: the first, when they need no reduction.
    std::vector<ValueId> row_outs, early_outs, outer_outs;
    for (ValueId v : k_.outs) {
      const Op* p = producer_.count(v) ? producer_.at(v) : nullptr;
      if (p && p->info->kind == OpKind::partial_sum) continue;  // (written after the rows)
      bool is_reduced = p && p->info->fusion == FusionClass::reduction;
      if (is_reduced || t_.value(v).shape != layout_.domain) outer_outs.push_back(v);
      else (reductions_needed(v).empty() ? early_outs : row_outs).push_back(v);
    }
    for (const Op& op : k_.sub)
      if (op.info->fusion == FusionClass::reduction) reduction(op);
    reduction_passes(early_outs);
    if (!row_outs.empty() || !part_sums_.empty()) {
      comment(part_sums_.empty() ? "write the row" : row_outs.empty() ? "add the row to the block's partial sums" : "write the row, and add it to the block's partial sums");
      pass_writing(row_outs, [&] { add_to_part_sums(); });
    }
    if (!outer_outs.empty()) {
      std::vector<std::string> vars;
      for (ValueId v : outer_outs) vars.push_back(value_at(v, layout_.outer_index()));
      line(column_tile_ > 1 ? "if (threadIdx.x < 32) {" : "if (threadIdx.x == 0) {");
      for (size_t i = 0; i < outer_outs.size(); ++i) line("  tg::store(" + ident(outer_outs[i]) + ", row, " + vars[i] + ");");
      line("}");
    }
    for (const Op* p : row_totals_) line(row_total(p) + " += " + value_at(p->arg(0).value, layout_.outer_index()) + ";");
    std::string body = pop();
    if (!row_cached_.empty())
      body = "    // the row, " + std::to_string(cached_) + " elements per thread" + (row_run_ > 1 ? " in runs of " + std::to_string(row_run_) : "") +
             ", read once\n" + fill_registers(row_cached_, Role::cached, offset_of_row_element(), "    ") + body;
    std::string out = "  const int64_t rows = " + std::to_string(numel(layout_.outer_shape())) + ";\n" + start_part_sums();
    if (!row_hoisted_.empty())
      out += "  // operands shaped like a row, the same for every row: this thread's elements, read once\n" +
             fill_registers(row_hoisted_, Role::cached, "j", "  ");
    if (column_tile_ > 1)  // rows is a multiple of 32: every thread of a block runs the same iterations
      out += "  for (int64_t row = int64_t(blockIdx.x) * 32 + threadIdx.x % 32; row < rows; row += int64_t(gridDim.x) * 32) {\n";
    else
      out += "  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {\n";
    // Outer dims come from the row; the reduced ones were declared inside each pass from j.
    out += dim_declarations(body, loop_dims_, layout_.outer, "    ");
    out += body + "  }\n";
    return out + store_part_sums();
  }

  // Declares <role prefix><name>[cached_] for each of `values` and loads this thread's elements j into
  // them from `offset` (an expression in j): in runs where the pointers are 16-byte aligned.
  std::string fill_registers(const std::vector<ValueId>& values, Role role, const std::string& offset,
                             const std::string& indent) const {
    const std::string n = std::to_string(cached_), run = std::to_string(row_run_);
    std::string fill;
    for (ValueId v : values) fill += indent + ctype(t_.value(v).dtype) + " " + local(role, v) + "[" + n + "];\n";
    auto element_by_element = [&](const std::string& in) {
      std::string code = in + "TG_UNROLL for (int k = 0; k < " + n + "; ++k) {\n";
      code += in + "  const int64_t j = " + cached_element() + ";\n";
      for (ValueId v : values) code += in + "  " + local(role, v) + "[k] = tg::load(" + ident(v) + ", " + offset + ");\n";
      return code + in + "}\n";
    };
    if (row_run_ == 1) return fill + element_by_element(indent);
    fill += indent + if_aligned(values) + "\n";
    fill += over_runs(indent + "  ", [&](const std::string& at) {
      std::vector<std::string> loads;
      for (ValueId v : values) loads.push_back("tg::load_run_to<" + run + ">(" + ident(v) + ", " + offset + ", " + local(role, v) + at + ");");
      return loads;
    });
    return fill + indent + "} else {\n" + element_by_element(indent + "  ") + indent + "}\n";
  }

  // ---- partial sums over the rows (thunder_gen.partial_sum, see fuse.cpp) ----------------------
  // Block b adds rows b, b + gridDim.x, ... (the launch fixes gridDim.x to the parts) into a row of
  // sums it alone uses: in shared memory where they fit (kMaxPartSumBytes), and then copied to row
  // b of each `__parts` value, else in that row itself. Shared memory leaves the registers to the
  // row: as registers, LayerNorm's two partial sums over rows of 4096 took 150 of them a thread
  // (95 without), one block of 256 threads per SM.

  bool part_sums_shared() const {
    int64_t bytes = 0;
    for (const Op* p : part_sums_) bytes += numel(layout_.reduced_shape()) * dtype_bytes(t_.value(p->outs[0]).dtype);
    return bytes <= kMaxPartSumBytes;
  }
  // Element j of the block's row of the parts (row blockIdx.x of `__parts`).
  std::string part_row_at(const Op* p) const {
    return ident(p->outs[0]) + "[int64_t(blockIdx.x) * " + std::to_string(numel(layout_.reduced_shape())) + " + j]";
  }
  // Where the block's sum of element j lives.
  std::string part_sum_at(const Op* p) const { return part_sums_shared() ? local(Role::shared, p->outs[0]) + "[j]" : part_row_at(p); }
  std::string over_row_elements(const std::string& statements) const {
    return "  for (int64_t j = threadIdx.x; j < " + std::to_string(numel(layout_.reduced_shape())) + "; j += blockDim.x) {\n" + statements + "  }\n";
  }

  // Each thread adds each row's value (the same in every thread) in a register of its own. (s_ as
  // for the shared sums: a `__parts` value has one or the other, and no trace value is named s_...)
  std::string row_total(const Op* p) const { return local(Role::shared, p->outs[0]); }

  std::string start_part_sums() const {
    std::string code;
    for (const Op* p : row_totals_)
      code += "  " + ctype(t_.value(p->outs[0]).dtype) + " " + row_total(p) + " = 0;  // this block's total over its rows\n";
    if (part_sums_.empty()) return code;
    code += "  // this block's sums over its rows, element by element (rows blockIdx.x, + gridDim.x, ...)\n";
    std::string zero;
    for (const Op* p : part_sums_) {
      const Value& v = t_.value(p->outs[0]);
      if (part_sums_shared()) code += "  __shared__ " + storage_type(v) + " " + local(Role::shared, p->outs[0]) + "[" + std::to_string(numel(layout_.reduced_shape())) + "];\n";
      zero += "    " + part_sum_at(p) + " = 0;\n";
    }
    return code + over_row_elements(zero) + "  __syncthreads();\n";
  }

  void add_to_part_sums() {
    for (const Op* p : part_sums_) line(part_sum_at(p) + " += " + value_at(p->arg(0).value, identity_index(layout_.domain.size())) + ";");
  }

  std::string store_part_sums() const {
    std::string code;
    if (!row_totals_.empty()) {
      code += "  if (threadIdx.x == 0) {\n";
      for (const Op* p : row_totals_) code += "    " + ident(p->outs[0]) + "[blockIdx.x] = " + row_total(p) + ";\n";
      code += "  }\n";
    }
    if (part_sums_.empty() || !part_sums_shared()) return code;
    std::string copy;
    for (const Op* p : part_sums_) copy += "    " + part_row_at(p) + " = " + part_sum_at(p) + ";\n";
    return code + "  __syncthreads();\n" + over_row_elements(copy);
  }
};

bool is_library_call(const Op& op) { return op.info->fusion == FusionClass::library; }
// A reshape between the kernels of a fused trace reads its input's memory with another shape:
// no launch, the same pointer (fuse.cpp places one only for a value already in memory).
bool is_view(const Op& op) { return op.info->kind == OpKind::reshape; }

// tg::GemmShape{batch, m, n, k, b_batched} of a matmul. A b without batch dims is shared by every
// batch, which then folds into m: one larger GEMM.
// transpose_a / transpose_b mean a is stored [k, m] (a 2-D a) and b [n, k] (a 2-D b, shared).
std::string gemm_shape(const Trace& t, const Op& op) {
  const Shape& a = t.value(op.arg(0).value).shape;
  const Shape& b = t.value(op.arg(1).value).shape;
  const bool transpose_a = op.args.size() > 4 && op.arg(4).boolean, transpose_b = op.args.size() > 5 && op.arg(5).boolean;
  int64_t m = transpose_a ? a.back() : a[a.size() - 2], k = transpose_a ? a[0] : a.back(), n = transpose_b ? b[0] : b.back();
  int64_t batch = numel(a) / (m * k);
  bool b_batched = b.size() > 2;
  if (!b_batched) {
    m *= batch;
    batch = 1;
  }
  std::string s = "tg::GemmShape{" + std::to_string(batch) + ", " + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) +
                  ", " + (b_batched ? "true" : "false");
  if (transpose_a || transpose_b) s += std::string(", ") + (transpose_a ? "true" : "false") + ", " + (transpose_b ? "true" : "false");
  return s + "}";
}

// The trailing epilogue arguments of tg::matmul: the bias pointer, the epilogue and its second
// output (the GELU's input, or the bias gradient), as far as they are not the defaults.
std::string gemm_epilogue(const Op& op, const std::map<ValueId, std::string>& pointer) {
  const bool bias = op.args.size() > 2 && op.arg(2).is_value();
  const std::string epilogue = op.args.size() > 3 ? op.arg(3).text : "none";
  std::string s;
  if (bias || epilogue != "none") s += ", " + (bias ? pointer.at(op.arg(2).value) : std::string("nullptr"));
  if (epilogue != "none") s += ", tg::Epilogue::" + epilogue;
  if (op.outs.size() > 1) s += ", " + pointer.at(op.outs[1]);
  return s;
}

// The entry point's parameters as the .cu defines them: as the header declares them (the .cu
// includes the header, so the compiler holds them to it), then the workspace and the stream.
std::string definition_params(const EntryPoint& entry) {
  std::string s;
  for (const EntryParam& p : entry.params) s += p.c_type + " " + p.name + ", ";
  return s + "void* workspace, thunder_gen_stream handle";
}

// Bytes each temporary starts at: cuBLASLt and vector accesses want 256-byte alignment at most.
constexpr int64_t kTemporaryAlignment = 256;
int64_t aligned(int64_t bytes) { return (bytes + kTemporaryAlignment - 1) / kTemporaryAlignment * kTemporaryAlignment; }

}  // namespace

CudaFile emit_cuda(const Trace& fused, const EntryPoint& entry, const std::string& file, const std::string& input_file) {
  CudaFile result;
  std::ostringstream out;
  out << comment_line(file + ": generated by thunder-gen " + THUNDER_GEN_VERSION + " from " + input_file + " (trace \"" + fused.name +
                      "\"). Do not edit.");
  size_t library_calls = 0, views = 0;
  for (const Op& op : fused.ops) {
    library_calls += is_library_call(op);
    views += is_view(op);
  }
  const size_t kernels = fused.ops.size() - library_calls - views;
  out << "// " << kernels << " kernel" << (kernels == 1 ? "" : "s");
  if (library_calls) out << " and " << library_calls << " cuBLASLt call" << (library_calls == 1 ? "" : "s");
  out << "; host entry point: " << entry.name << "() (declared in " << entry.header << ").\n";
  out << "// nvcc builds all of it; NVRTC compiles the kernels (the host part is behind __CUDACC_RTC__);\n";
  out << "// g++ runs it on the CPU through tg_emu.h (see the generated CMakeLists.txt).\n";
  out << "#include \"tg_runtime.cuh\"\n\n";
  out << "#if !defined(TG_NVRTC_HOST)\n\n";
  struct Launch {
    std::string kernel;  // the kernel function: its own, or an earlier one with the same code
    int block = 0;
    int64_t items = 0;
    int items_per_block = 0;
    int64_t grid = 0;  // blocks, where the kernel fixes them (else tg::grid_for(items, items_per_block))
  };
  std::vector<Launch> launch;
  std::vector<std::string> idents(fused.values.size());
  std::unordered_map<std::string, size_t> code_of;  // kernel signature -> the launch that emitted it
  KernelSignature signature(fused);
  for (const Op& k : fused.ops) {
    if (is_view(k) || is_library_call(k)) {  // no kernel of its own: a view or a cuBLASLt call
      launch.push_back({});
      EmittedKernel info;
      const std::string& result_name = fused.value(k.outs[0]).name;
      info.name = fused.name + (is_view(k) ? "_view_" : "_matmul_") + result_name;
      if (is_view(k)) info.view_of = fused.value(k.arg(0).value).name;
      else info.library = "cuBLASLt";
      for (ValueId v : k.outs) info.values.push_back(fused.value(v).name);
      for_each_value(k, [&](ValueId v) { info.reads.push_back(fused.value(v).name); });
      info.writes = info.values;
      result.kernels.push_back(std::move(info));
      continue;
    }
    EmittedKernel info = describe(fused, k);
    auto [first, fresh] = code_of.try_emplace(signature.of(k), launch.size());
    if (fresh) {
      KernelWriter writer(fused, idents, k);
      std::string text = writer.write();
      if (writer.holds_row_for_one_pass()) text = KernelWriter(fused, idents, k, /*hold_row=*/false).write();
      out << text << "\n";
      launch.push_back({k.label, writer.block_size(), writer.work_items(), writer.items_per_block(), writer.fixed_grid()});
    } else {
      launch.push_back(launch[first->second]);
      info.same_code_as = launch.back().kernel;
    }
    result.kernels.push_back(std::move(info));
  }
  out << "#endif  // !TG_NVRTC_HOST\n\n";

  // Host entry point.
  out << "#ifndef __CUDACC_RTC__\n#include \"tg_host.h\"\n#include " << cpp_string(entry.header) << "\n";
  if (library_calls) out << "#include \"tg_gemm.h\"\n";
  out << "\n";
  out << "#if defined(TG_NVRTC_HOST)\n";
  out << "static tg::KernelModule& tg_kernels() { return tg::trace_kernels(TG_KERNEL_DIR); }  // kernels.cu: every kernel of the trace\n";
  out << "#endif\n\n";
  // The arguments: the kernels take them by value id; an output that is a copy (of an input, or of
  // an output listed before) gets its bytes last.
  std::map<ValueId, std::string> pointer;
  std::vector<std::pair<std::string, ValueId>> copies;
  for (const EntryParam& p : entry.params)
    if (!pointer.try_emplace(p.value, p.name).second) copies.emplace_back(p.name, p.value);
  out << "// What each argument is: " << entry.header << ". Device pointers; runs asynchronously on the stream; returns a\n"
      << "// tg::Status (0: success). With a workspace of <trace>_workspace_bytes() bytes it allocates nothing.\n";
  out << "extern \"C\" int " << entry.name << "(" << definition_params(entry) << ") {\n";
  out << "  const tg::Stream stream = tg::stream_of(handle);\n";
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    if (!v.is_scalar)
      out << "  TG_TRY(tg::check_pointer(" << p.name << ", alignof(" << storage_type(v) << "), " << numel(v.shape) << "));\n";
  }
  // Arguments whose C type is not the kernels' storage type (bf16 and f16 bits, packed masks).
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    if (v.is_scalar || pointer.at(p.value) != p.name || c_param_type(v, p.writes) == (p.writes ? "" : "const ") + storage_type(v) + "*") continue;
    const std::string type = (p.writes ? "" : "const ") + storage_type(v) + "*", view = ident(Role::storage_view, p.name.substr(2));
    out << "  " << type << " " << view << " = reinterpret_cast<" << type << ">(" << p.name << ");\n";
    pointer[p.value] = view;
  }
  // Values written by one kernel and read by a later one, that are not arguments, live in
  // temporaries at fixed offsets: in the caller's workspace, or allocated for the call.
  std::vector<std::pair<ValueId, int64_t>> temporaries;  // (value, offset)
  for (const Op& k : fused.ops)
    for (ValueId v : k.outs)
      if (is_view(k)) {
        pointer[v] = pointer.at(k.arg(0).value);
      } else if (!pointer.count(v)) {
        pointer[v] = ident(Role::global, fused.value(v).name);
        temporaries.emplace_back(v, result.temporary_bytes);
        result.temporary_bytes += aligned(stored_bytes(fused.value(v)));
      }
  result.calls_library = library_calls > 0;
  if (!temporaries.empty()) {
    out << "  tg::Memory memory(workspace, " << result.temporary_bytes << ", stream);  // the temporaries\n";
    out << "  TG_TRY(memory.status());\n";
  }
  for (const auto& [v, offset] : temporaries)
    out << "  " << storage_type(fused.value(v)) << "* " << pointer[v] << " = memory.at<" << storage_type(fused.value(v)) << ">(" << offset << ");\n";
  const std::string gemm_space = temporaries.empty() ? "tg::Memory::Span{workspace, tg::kGemmWorkspaceBytes}"
                                                     : "memory.gemm_space(" + std::to_string(result.temporary_bytes) + ", tg::kGemmWorkspaceBytes)";
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    const Op& k = fused.ops[i];
    if (is_view(k)) {
      out << comment_line(print_op(k, fused) + "  (a view: " + pointer.at(k.outs[0]) + " read as " + print_type(fused.value(k.outs[0])) + ")", "  ");
      continue;
    }
    if (is_library_call(k)) {
      out << comment_line(print_op(k, fused), "  ");
      out << "  TG_TRY(tg::matmul(" << pointer.at(k.arg(0).value) << ", " << pointer.at(k.arg(1).value) << ", " << pointer.at(k.outs[0]) << ", "
          << gemm_shape(fused, k) << ", stream, " << gemm_space << gemm_epilogue(k, pointer) << "));\n";
      continue;
    }
    const auto& [kernel, block, items, per_block, grid] = launch[i];
    std::string args;
    for (const Arg& a : k.args) args += ", " + pointer.at(a.value);
    for (ValueId v : k.outs) args += ", " + pointer.at(v);
    if (items == 0) {
      out << comment_line(k.label + ": nothing to compute (empty)", "  ");
      continue;
    }
    if (kernel != k.label) out << comment_line(k.label + ": the same code as " + kernel, "  ");
    const std::string blocks = grid > 0 ? std::to_string(grid) : "tg::grid_for(" + std::to_string(items) + ", " + std::to_string(per_block) + ")";
    out << "  TG_TRY(TG_LAUNCH(" << kernel << ", " << blocks << ", " << block << ", stream" << args << "));\n";
  }
  // Outputs not written by a kernel: inputs returned as they are, or an output listed twice.
  for (const auto& [name, v] : copies)
    out << "  TG_TRY(tg::copy_on_device(" << name << ", " << pointer.at(v) << ", " << stored_bytes(fused.value(v)) << ", stream));\n";
  out << "  return tg::kOk;\n";
  out << "}\n#endif  // __CUDACC_RTC__\n";
  result.text = out.str();
  return result;
}

}  // namespace tg
