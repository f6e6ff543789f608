#include "frontend/listing_reader.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "frontend/listing_arguments.h"
#include "frontend/listing_cursor.h"
#include "frontend/overrides.h"
#include "frontend/reader.h"
#include "ops/op_table.h"
#include "ops/verify.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {
namespace {

using namespace listing;

// The listing's lines read in order into a Trace: the signature and the inputs' types, the ops
// with their decompositions or kernel bodies (what each pass's listing may hold, checked), the
// return; then the verifier, its messages at the lines of the ops.
class ListingReader {
 public:
  ListingReader(std::string_view text, const std::string& file, Pass after) : file_(file), after_(after) {
    for (size_t start = 0; start <= text.size();) {
      const size_t end = std::min(text.find('\n', start), text.size());
      lines_.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    where_of_line_.resize(lines_.size() + 1);
  }

  ListingTrace read() {
    skip_blank_and_heading();
    read_signature();
    t_.ops = read_ops(0, nullptr);
    if (after_ == Pass::autograd && (!saw_backward_ || !saw_cotangent_))
      fail_at(next_ < lines_.size() ? next_ : def_line_, "a joint listing marks its cotangent inputs (\"cotangent\") and its backward part (\"# backward\"): this one does not");
    read_return();
    check_joint_marks();
    verify_read();
    ListingTrace out{std::move(t_), std::nullopt, std::move(kernels_)};
    if (saw_backward_) out.joint = JointMarks{forward_inputs_, forward_ops_};
    return out;
  }

 private:
  const std::string& file_;
  Pass after_;
  std::vector<std::string_view> lines_;
  size_t next_ = 0;  // the index of the next line to read (its number is next_ + 1)
  Trace t_;
  ValueIds ids_;  // every value read so far, by name
  std::vector<std::string> where_of_line_;        // each op's provenance, by line number
  std::unordered_map<size_t, std::string> plan_text_of_line_;  // a kernel's "# plan:" text, by the kernel's line
  std::vector<ListedKernel> kernels_;
  bool saw_backward_ = false, saw_cotangent_ = false;
  std::unordered_set<std::string> labels_;  // the kernels' labels so far: each names one kernel function
  size_t forward_inputs_ = 0, forward_ops_ = 0;
  size_t def_line_ = 0;  // the index of the "def" line
  // A joint listing's cotangent inputs, until the backward part starts, with their lines: autograd
  // makes them after every forward value, and fusion orders a kernel's arguments by value.
  std::vector<std::pair<Value, size_t>> cotangents_;
  Call call_{t_, ids_};  // reads each op's arguments

  // The line number an op read here was on (its `where` until verify_read).
  static size_t line_of(const Op& op) { return std::stoul(op.where.substr(1)); }

  Cursor line(size_t index) const { return Cursor(lines_[index], file_, index + 1); }
  [[noreturn]] void fail_at(size_t index, const std::string& message) const {
    throw UserError(file_, std::to_string(index + 1), message);
  }

  // Blank lines, then the "# forward" or "# backward" heading a training trace's listing has.
  void skip_blank_and_heading() {
    while (next_ < lines_.size() && lines_[next_].empty()) ++next_;
    if (next_ < lines_.size() && (lines_[next_] == "# forward" || lines_[next_] == "# backward")) ++next_;
  }

  void read_signature() {
    if (next_ == lines_.size()) fail_at(next_ ? next_ - 1 : 0, "the listing holds no trace");
    def_line_ = next_;
    Cursor c = line(next_);
    if (!c.at("def "))
      c.fail("expected \"def <name>(<inputs>):\": a listing --emit or --dump-dir printed (after the partition: --dump-dir's "
             "NN-partition-forward.txt or -backward.txt; --emit plan prints the plan, not a trace)");
    c.expect("def ");
    t_.name = c.identifier("the trace's name");
    c.expect("(");
    std::vector<std::string> names;
    while (!c.eat("):")) {
      if (!names.empty()) c.expect(", ");
      names.push_back(c.identifier("an input's name"));
    }
    if (!c.done()) c.fail("unexpected text after the signature");
    ++next_;
    for (const std::string& name : names)
      if (std::optional<ValueId> id = read_input(name)) t_.inputs.push_back(*id);
    while (next_ < lines_.size() && lines_[next_].starts_with("  # specialized at ")) read_specialization();
  }

  //   # specialized at T = 10 (2 <= T <= 512, a multiple of 2)   (a symbol of a symbolic trace)
  void read_specialization() {
    Cursor c = line(next_);
    c.expect("  # specialized at ");
    SymbolDecl decl;
    decl.name = c.identifier("a symbol's name");
    c.expect(" = ");
    const int64_t size = c.integer("the symbol's size");
    c.expect(" (");
    decl.min = c.integer("its least size");
    c.expect(" <= " + decl.name + " <= ");
    decl.max = c.integer("its largest size");
    if (c.eat(", a multiple of ")) decl.multiple_of = c.integer("what its sizes are multiples of");
    c.expect(")");
    if (!c.done()) c.fail("unexpected text after the symbol's range");
    try {
      t_.symbols.declare(decl);
    } catch (const SizeExprError& e) {
      c.fail(e.what());
    }
    if (!decl.allows(size)) c.fail(decl.name + " = " + std::to_string(size) + " is outside " + decl.range_text());
    t_.specialized_at[decl.name] = size;
    ++next_;
  }

  //   # x: f32[8, 32] requires_grad       (an input's type line; "packed", "cotangent" after)
  // A cotangent is defined where the backward part starts (take_backward_mark), as autograd made it.
  std::optional<ValueId> read_input(const std::string& name) {
    if (next_ == lines_.size()) fail_at(next_ - 1, "expected the type line of input \"" + name + "\"");
    Cursor c = line(next_);
    c.expect("  # ");
    if (c.identifier("an input's name") != name) c.fail("expected the type line of input \"" + name + "\" (one per input, in order)");
    c.expect(": ");
    Value v = read_type(c, name);
    bool cotangent = false;
    while (!c.done()) {
      c.expect(" ");
      const std::string flag = c.identifier("requires_grad, packed or cotangent");
      if (flag == "requires_grad" && is_float(v.dtype) && !v.is_scalar) v.requires_grad = true;
      else if (flag == "packed" && v.dtype == DType::b8 && !v.is_scalar) v.bit_packed = true;
      else if (flag == "cotangent") cotangent = true;
      else c.fail("\"" + flag + "\" does not apply here (requires_grad: a float tensor; packed: a b8 tensor; cotangent: a joint trace's input)");
    }
    if (!cotangent && saw_cotangent_) c.fail("the cotangents come after every other input");
    if (cotangent && after_ != Pass::autograd) c.fail("cotangent inputs are the joint trace's: read with --from-stage autograd");
    if (cotangent && !saw_cotangent_) forward_inputs_ = t_.inputs.size();
    saw_cotangent_ = saw_cotangent_ || cotangent;
    if (cotangent) {
      cotangents_.emplace_back(std::move(v), next_++);
      return std::nullopt;
    }
    return define(std::move(v), next_++);
  }

  // "f32[8, 32]" or "f64 scalar" (i64, f64 or b8), after the name.
  Value read_type(Cursor& c, const std::string& name) {
    Value v;
    v.name = name;
    v.device = t_.device;
    const std::string dtype = c.identifier("a dtype");
    const std::optional<DType> parsed = parse_dtype(dtype);
    if (!parsed) c.fail("unknown dtype \"" + dtype + "\" (expected one of b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64)");
    v.dtype = *parsed;
    if (c.eat(" scalar")) {
      if (v.dtype != DType::i64 && v.dtype != DType::f64 && v.dtype != DType::b8) c.fail("a scalar is i64, f64 or b8");
      v.is_scalar = true;
      return v;
    }
    c.expect("[");
    int64_t elements = 1;
    while (!c.eat("]")) {
      if (!v.shape.empty()) c.expect(", ");
      if (c.at("-")) c.fail("negative dimension");
      const int64_t d = c.integer("a dimension");
      if (d > 0 && elements > (int64_t(1) << 48) / d) c.fail("the shape has more than 2^48 elements");
      elements *= d;
      v.shape.push_back(d);
    }
    return v;
  }

  // A new value, or the one of that name read before (an op's output that its decomposition
  // defines, or a value a kernel computes that another kernel computes again), which must be
  // declared the same; the verifier decides whether it may be defined there.
  ValueId define(Value v, size_t index) {
    if (!is_identifier(v.name)) fail_at(index, "\"" + v.name + "\" is not an identifier");
    auto [it, fresh] = ids_.try_emplace(v.name, ValueId(t_.values.size()));
    if (fresh) return t_.add_value(std::move(v));
    const Value& before = t_.value(it->second);
    if (before.is_scalar != v.is_scalar || before.dtype != v.dtype || before.shape != v.shape || before.bit_packed != v.bit_packed)
      fail_at(index, "\"" + v.name + "\" is declared " + print_type(v) + " here and " + print_type(before) + " before");
    return it->second;
  }

  // The depth of a line under the ops ("  " then a "  # " per level) and its text after that.
  static std::pair<int, std::string_view> nesting(std::string_view text) {
    if (text.substr(0, 2) != "  ") return {-1, text};
    text.remove_prefix(2);
    int depth = 0;
    while (text.substr(0, 4) == "  # ") {
      text.remove_prefix(4);
      ++depth;
    }
    return {depth, text};
  }

  // The ops at `depth` (0: the trace's; deeper: the decomposition or kernel body of `parent`).
  std::vector<Op> read_ops(int depth, Op* parent) {
    if (depth > kMaxNesting) fail_at(next_, "decompositions nest deeper than " + std::to_string(kMaxNesting) + " levels");
    std::vector<Op> ops;
    while (next_ < lines_.size()) {
      const auto [d, text] = nesting(lines_[next_]);
      if (d < depth || (d == 0 && text.substr(0, 7) == "return ")) break;
      if (d > depth) fail_at(next_, "a decomposition line (\"  # \" once more than its op) with no op above it");
      if (text.substr(0, 6) == "plan: " && depth > 0) {
        take_plan(parent, ops.empty(), text.substr(6));
        continue;
      }
      if (text == "# backward" && depth == 0) {
        take_backward_mark(ops.size());
        continue;
      }
      if (text.substr(0, 2) == "# ") fail_at(next_, "a custom-gradient body (# fwd/# bwd) or other comment: not read back from listings");
      ops.push_back(read_op(text, depth));
      ops.back().sub = read_ops(depth + 1, &ops.back());
      check_body(ops.back(), parent);
    }
    return ops;
  }

  // "plan: pointwise block=256 lanes=4" under a kernel: kept, by the kernel's line, for its plan.
  void take_plan(Op* kernel, bool first_in_body, std::string_view plan) {
    if (!kernel || kernel->info != &op_info(OpKind::fused_kernel) || !first_in_body || plan_text_of_line_.count(line_of(*kernel)))
      fail_at(next_, "a \"# plan:\" line belongs right under a kernel's line, once");
    plan_text_of_line_.emplace(line_of(*kernel), std::string(plan));
    ++next_;
  }

  void take_backward_mark(size_t forward_ops) {
    if (after_ != Pass::autograd) fail_at(next_, "\"# backward\" marks a joint trace's backward part: read with --from-stage autograd");
    if (saw_backward_) fail_at(next_, "a second \"# backward\" line");
    saw_backward_ = true;
    forward_ops_ = forward_ops;
    for (auto& [v, line] : cotangents_) t_.inputs.push_back(define(std::move(v), line));
    ++next_;
  }

  Op read_op(std::string_view text, int depth) {
    Cursor c(text, file_, next_ + 1, lines_[next_].size() - text.size());
    Op op;
    std::vector<std::string> outs = read_outs(c);
    c.expect(" = ");
    op.symbol = c.identifier("a symbol id such as prims.add", true);
    if (c.eat("[")) {
      op.label = c.identifier("a kernel's label");
      if (!labels_.insert(op.label).second) c.fail("a second kernel labelled " + op.label + " (a label names the kernel's function)");
      c.expect("]");
    }
    op.info = op.symbol == "thunder_gen.kernel" ? &op_info(OpKind::fused_kernel)
              : op.symbol == "thunder_gen.partial_sum" ? &op_info(OpKind::partial_sum)
                                                         : find_op(op.symbol);
    check_allowed(c, op, depth);
    call_.read(c, op);
    c.expect("  # ");
    read_out_types(c, op, outs);
    read_tags_and_provenance(c, op);
    op.where = "@" + std::to_string(next_ + 1);  // for the verifier's messages, until verify_read
    ++next_;
    return op;
  }

  static std::vector<std::string> read_outs(Cursor& c) {
    std::vector<std::string> outs;
    if (!c.eat("(")) return {c.identifier("an output's name")};
    while (!c.eat(")")) {
      if (!outs.empty()) c.expect(", ");
      outs.push_back(c.identifier("an output's name"));
    }
    if (outs.empty()) c.fail("an op must define at least one value");
    return outs;
  }

  // What each pass's listing holds: kernels only after fusion (and then only kernels, library
  // calls and views at the top), prims only from autograd on; custom-gradient ops not at all.
  void check_allowed(Cursor& c, const Op& op, int depth) const {
    const bool fused = after_ >= Pass::fuse;
    if (op.symbol == kCustomGradOp) c.fail("custom-gradient ops (their fwd and bwd bodies) are not read back from listings");
    if (!op.info) {
      if (after_ >= Pass::autograd) c.fail("unknown op \"" + op.symbol + "\": after autograd a trace holds only ops with rules");
      return;
    }
    const FusionClass f = op.info->fusion;
    if ((f == FusionClass::kernel || f == FusionClass::partial) && !fused) c.fail(op.symbol + " appears only in fused listings");
    if (f == FusionClass::kernel && depth > 0) c.fail("a kernel inside another op");
    if (f == FusionClass::composite && after_ >= Pass::autograd) c.fail(op.symbol + " is lowered to prims by autograd's pass");
    if (fused && depth == 0 && f != FusionClass::kernel && f != FusionClass::library && f != FusionClass::shape)
      c.fail(op.symbol + " outside a kernel: a fused trace's ops are kernels, library calls and views");
  }

  // A kernel's body: prims a kernel computes; a partial sum only directly in a kernel.
  void check_body(const Op& op, const Op* parent) const {
    const size_t at = line_of(op) - 1;
    const bool in_kernel = parent && parent->info == &op_info(OpKind::fused_kernel);
    const FusionClass f = op.info ? op.info->fusion : FusionClass::composite;
    const bool computable = f == FusionClass::elementwise || f == FusionClass::shape || f == FusionClass::source || f == FusionClass::reduction;
    if (in_kernel && !(computable || f == FusionClass::partial)) fail_at(at, op.symbol + " cannot be computed inside a kernel");
    if (!in_kernel && f == FusionClass::partial) fail_at(at, "thunder_gen.partial_sum belongs in a kernel's body");
    if (in_kernel && !op.sub.empty()) fail_at(at, "an op in a kernel's body has no decomposition");
    if (op.info == &op_info(OpKind::fused_kernel)) check_kernel_reads(op, at);
  }

  // A kernel's body reads the kernel's arguments and what the body computed before, nothing else;
  // partial sums are over a row kernel's rows, so only a kernel with a reduction has them.
  void check_kernel_reads(const Op& kernel, size_t at) const {
    if (kernel.sub.empty()) fail_at(at, "a kernel with no body");
    auto has = [&](FusionClass f) { return std::any_of(kernel.sub.begin(), kernel.sub.end(), [&](const Op& op) { return op.info->fusion == f; }); };
    if (has(FusionClass::partial) && !has(FusionClass::reduction)) fail_at(at, "partial sums are a row kernel's: this kernel has no reduction");
    std::unordered_set<ValueId> readable;
    for (const Arg& a : kernel.args) readable.insert(a.value);
    for (const Op& op : kernel.sub) {
      for_each_value(op, [&](ValueId v) {
        if (!readable.count(v)) fail_at(line_of(op) - 1, "the kernel's body reads \"" + t_.value(v).name + "\", which is not among its arguments");
      });
      readable.insert(op.outs.begin(), op.outs.end());
    }
  }

  // "t2: f32[8], t3: b8[8] packed": one type per output, in order.
  void read_out_types(Cursor& c, Op& op, const std::vector<std::string>& outs) {
    for (size_t i = 0; i < outs.size(); ++i) {
      if (i) c.expect(", ");
      if (c.identifier("an output's name") != outs[i]) c.fail("expected the type of \"" + outs[i] + "\" (one per output, in order)");
      c.expect(": ");
      Value v = read_type(c, outs[i]);
      if (c.eat(" packed")) {
        if (v.dtype != DType::b8 || v.is_scalar) c.fail("only a b8 tensor is stored packed");
        v.bit_packed = true;
      }
      op.outs.push_back(define(std::move(v), next_));
    }
  }

  // "  tags: recompute" and "  (torch.nn.functional.gelu at /ops/3)" after the types.
  void read_tags_and_provenance(Cursor& c, Op& op) {
    if (c.eat("  tags:")) {
      while (c.eat(" ")) op.tags.push_back(c.identifier("a tag"));
      try {
        check_op_tags(op.tags, "");
      } catch (const UserError& e) {
        c.fail(e.what());
      }
    }
    if (c.eat("  (")) {
      std::string_view text = c.rest();
      if (text.empty() || text.back() != ')') c.fail("expected the op's provenance: (<where>), (<call>) or (<call> at <where>)");
      text.remove_suffix(1);
      const size_t at = text.find(" at ");
      std::string_view where = at == std::string_view::npos ? (text.substr(0, 1) == "/" ? text : "") : text.substr(at + 4);
      std::string_view origin = at == std::string_view::npos ? (text.substr(0, 1) == "/" ? "" : text) : text.substr(0, at);
      if (where.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_/~.-") != std::string_view::npos ||
          (!where.empty() && where[0] != '/'))
        c.fail("\"" + std::string(where) + "\" is not a JSON pointer such as /ops/3");
      if (!origin.empty() && origin.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") != std::string_view::npos)
        c.fail("\"" + std::string(origin) + "\" is not a symbol id");
      op.origin = std::string(origin);
      where_of_line_[next_ + 1] = std::string(where);
      c.skip_to_end();
    }
    if (!c.done()) c.fail("unexpected text after the op");
  }

  void read_return() {
    if (next_ == lines_.size()) fail_at(next_ - 1, "expected \"  return (<outputs>)\" at the end of the trace");
    Cursor c = line(next_);
    c.expect("  return (");
    while (!c.eat(")")) {
      if (!t_.outputs.empty()) c.expect(", ");
      t_.outputs.push_back(value_named(c, ids_, c.identifier("an output's name")));
      if (t_.outputs.size() == 1 && c.eat(",)")) break;
    }
    if (!c.done()) c.fail("unexpected text after the return");
    for (size_t i = ++next_; i < lines_.size(); ++i)
      if (!lines_[i].empty())
        fail_at(i, "text after the trace's return: --from-stage reads one trace (a training trace's forward and backward listings are two: "
                   "--dump-dir writes each to its own file)");
  }

  void check_joint_marks() const {
    if (after_ != Pass::autograd) return;
    if (t_.inputs.size() - forward_inputs_ > t_.outputs.size()) fail_at(next_ - 1, "a joint trace returns its forward outputs, one per cotangent, first");
  }

  // Each kernel with its line and the plan its "# plan:" line asks for (planned by the caller).
  void list_kernels() {
    for (size_t i = 0; i < t_.ops.size(); ++i) {
      if (t_.ops[i].info != &op_info(OpKind::fused_kernel)) continue;
      const auto asked = plan_text_of_line_.find(line_of(t_.ops[i]));
      kernels_.push_back({i, line_of(t_.ops[i]), asked == plan_text_of_line_.end() ? std::nullopt : std::optional(asked->second)});
    }
  }

  // The verifier's checks (definitions before uses, each op's types against its rule), its
  // messages at the line of the op (each op's `where` is "@<line>" until then).
  void verify_read() {
    try {
      verify(t_);
    } catch (const UserError& e) {
      const std::string& where = e.where;
      if (where.rfind("@", 0) == 0) throw UserError(file_, where.substr(1, where.find('/') - 1), e.what());
      throw UserError(file_, std::to_string(where.rfind("/outputs", 0) == 0 ? next_ : def_line_ + 1), e.what());
    }
    list_kernels();
    for_each_nested_op(t_.ops, [&](Op& op) { op.where = where_of_line_[line_of(op)]; });
  }
};

}  // namespace

ListingTrace read_listing(std::string_view text, const std::string& file, Pass after) {
  if (after == Pass::emit) throw UserError(file, "", "the CUDA source is the last stage: no pass runs after it");
  if (after == Pass::kernel_ir)
    throw UserError(file, "", "the kernel IR's listing is for reading and is not read back: resume from the fused listing (--from-stage fuse)");
  return ListingReader(text, file, after).read();
}

ListingTrace read_listing_file(const std::string& path, Pass after) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return read_listing(text.str(), path, after);
}

}  // namespace tg
