// KernelWriter: the kernel's frame (its signature, loop dims and launch shape), the names it
// declares, and values: each computed once per symbolic index, loaded or computed by its op.
#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>

#include "codegen/emit_kernel.h"
#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg::emit {

namespace {

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

// A kernel loop's index named `name`, over the elements of `dims`.
IndexExpr loop_index(const std::string& name, const Shape& domain, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= domain[size_t(d)];
  return IndexExpr::named(name, 0, std::max<int64_t>(count - 1, 0));
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

}  // namespace

std::vector<int64_t> all_dims(const Shape& domain) {
  std::vector<int64_t> all(domain.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
  return all;
}

std::string wrapped_list(std::string_view indent, std::string_view head, const std::vector<std::string>& items, std::string_view tail) {
  constexpr size_t kColumns = 100;
  std::string line(head);
  for (size_t i = 0; i < items.size(); ++i) line += (i ? ", " : "") + items[i];
  line += tail;
  if (indent.size() + line.size() <= kColumns || items.size() < 2) return line;
  std::string out(head);
  for (size_t i = 0; i < items.size(); ++i) out += "\n" + std::string(indent) + "    " + items[i] + (i + 1 < items.size() ? "," : "");
  return out + std::string(tail);
}

bool uses_word(const std::string& text, const std::string& word) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1))
    if ((at == 0 || !ident(text[at - 1])) && (at + word.size() == text.size() || !ident(text[at + word.size()]))) return true;
  return false;
}

std::string dim_declarations(const std::string& body, const std::vector<IndexExpr>& defs, const std::vector<int64_t>& dims,
                             const std::string& indent) {
  std::string out;
  for (int64_t d : dims) {
    const std::string var = "d" + std::to_string(d);
    if (uses_word(body, var)) out += indent + "const int64_t " + var + " = " + defs[size_t(d)].text() + ";\n";
  }
  return out;
}

void define_dims(std::vector<IndexExpr>& defs, const IndexExpr& flat, const Shape& domain, const std::vector<int64_t>& dims) {
  int64_t stride = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const int64_t extent = domain[size_t(dims[k])];
    defs[size_t(dims[k])] = k > 0 ? (flat / stride) % extent : flat / stride;
    stride *= extent;
  }
}

KernelWriter::KernelWriter(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan)
    : t_(t), idents_(idents), k_(kernel), plan_(plan), layout_(kernel_layout(t, kernel)), loop_dims_(loop_dim_definitions(layout_)) {
  for (size_t i = 0; i < k_.sub.size(); ++i) {
    for (ValueId v : k_.sub[i].outs) producer_[v] = &k_.sub[i];
    if (k_.sub[i].info->kind == OpKind::partial_sum)  // by element, or a total of a value per row
      (t_.value(k_.sub[i].arg("a").value).shape == layout_.domain ? part_sums_ : row_totals_).push_back(&k_.sub[i]);
  }
  for (const Arg& a : k_.args) loaded_.insert(a.value);
  lanes_ = plan_.lanes;
  column_tile_ = plan_.kind == KernelPlan::Kind::column ? 32 : 1;
  cached_ = plan_.held;
  row_run_ = plan_.held_run;
  hoist_ = plan_.hoisted;
  stream_run_ = plan_.stream_run;
}

std::string KernelWriter::write() {
  std::string body = layout_.is_row ? row_body() : pointwise_body();
  std::ostringstream out;
  out << comment_line(k_.label + ": " + description());
  out << comment_line("Implements:");
  // Each line says where it came from: an op of the trace by its place (/ops/3); the ops lowering
  // or differentiating a torch-level call under that call, once.
  std::string call;
  for (const Op& op : k_.sub) {
    if (op.origin.empty()) {
      call.clear();
      out << comment_line("  " + print_op(op, t_) + (op.where.empty() ? "" : "  (" + op.where + ")"));
      continue;
    }
    const std::string this_call = op.origin + (op.where.empty() ? "" : " at " + op.where);
    if (this_call != call) out << comment_line("  " + (call = this_call) + ":");
    out << comment_line("    " + print_op(op, t_));
  }
  out << element_function_;
  std::vector<std::string> params;
  for (const Arg& a : k_.args) params.push_back(parameter(a.value, false));
  for (ValueId id : k_.outs) params.push_back(parameter(id, true));
  const std::string head = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block_size()) + ") " + k_.label + "(";
  out << wrapped_list("", head, params, ") {") << "\n" << body << "}\n";
  return out.str();
}

// What the kernel does, by its kind.
std::string KernelWriter::description() const {
  if (!layout_.is_row) return "pointwise over " + shape_text(layout_.domain);
  const std::string kind = column_tile_ > 1 ? "column reduction over " : "row reduction over ";
  return kind + shape_text(layout_.domain) + ", reducing dims " + dims_text(layout_.reduced);
}

// The kernel's parameter for v: a scalar by value, a tensor by its pointer (an output's writable).
std::string KernelWriter::parameter(ValueId v, bool output) const {
  const Value& val = t_.value(v);
  if (output) return storage_type(val) + "* __restrict__ " + ident(v);
  return (val.is_scalar ? ctype(val.dtype) + " " : "const " + storage_type(val) + "* __restrict__ ") + ident(v);
}

int KernelWriter::block_size() const {
  return plan_.block;
}

int64_t KernelWriter::work_items() const {
  return layout_.is_row ? numel(layout_.outer_shape()) : (numel(layout_.domain) + lanes_ - 1) / lanes_;
}

int KernelWriter::items_per_block() const {
  return layout_.is_row ? column_tile_ : block_size();
}

int64_t KernelWriter::fixed_grid() const {
  for (const std::vector<const Op*>* sums : {&part_sums_, &row_totals_})
    if (!sums->empty()) return sums->front()->arg("parts").integer;
  return 0;
}

bool KernelWriter::has_packed_output() const {
  for (ValueId v : k_.outs)
    if (t_.value(v).bit_packed) return true;
  return false;
}

// "tg::aligned16(a) && tg::aligned16(b)" over the pointers of `values` ("" for none).
std::string KernelWriter::all_aligned(const std::vector<ValueId>& values) const {
  std::string test;
  for (ValueId v : values) test += (test.empty() ? "" : " && ") + ("tg::aligned16(" + ident(v) + ")");
  return test;
}

std::string KernelWriter::if_aligned(const std::vector<ValueId>& values) const {
  return "if (" + all_aligned(values) + ") {";
}

std::string KernelWriter::dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

const std::string& KernelWriter::ident(ValueId v) const {
  std::string& id = idents_[size_t(v)];
  if (id.empty()) id = tg::ident(Role::global, t_.value(v).name);
  return id;
}

// Value v's identifier in a local role (its run registers, its accumulator, ...).
std::string KernelWriter::local(Role role, ValueId v) const {
  return tg::ident(role, t_.value(v).name);
}

void KernelWriter::line(const std::string& s) {
  scopes_.back().code += scopes_.back().indent + s + "\n";
}

void KernelWriter::comment(const std::string& text) {
  scopes_.back().code += comment_line(text, scopes_.back().indent);
}

void KernelWriter::push(const std::string& indent) {
  scopes_.push_back(Scope{{}, {}, "", indent, {}});
}

std::string KernelWriter::pop() {
  std::string code = std::move(scopes_.back().code);
  scopes_.pop_back();
  return code;
}

// An index computation of a shape op as a variable, ix_<operand>_i<dim> (or _in_<output> for a
// guard), declared once per scope.
std::string KernelWriter::name_index(const std::string& code, const char* type, const std::string& hint) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto m = it->index_names.find(code); m != it->index_names.end()) return m->second;
  std::string name = unique_local(tg::ident(Role::index, hint));
  line(std::string("const ") + type + " " + name + " = " + code + ";");
  scopes_.back().index_names[code] = name;
  return name;
}

std::string KernelWriter::unique_local(const std::string& base) {
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
std::string KernelWriter::fresh_name(ValueId v) {
  return unique_local(local(Role::element, v));
}

IndexNamer KernelWriter::index_namer() {
  return [this](const std::string& code, const char* type, const std::string& hint) { return name_index(code, type, hint); };
}

bool KernelWriter::is_identity(const Index& index) const {
  return index == identity_index(layout_.domain.size());
}

// Offset of a tensor element, with the cheap forms for the kernel's own loop index.
std::string KernelWriter::offset(const Value& v, const Index& index) {
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
IndexExpr KernelWriter::offset_expr(const Value& v, const Index& index) {
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

bool KernelWriter::loop_dims_divide(const IndexExpr& e) const {
  for (int d : e.dims())
    if (loop_dims_[size_t(d)].has_div_or_mod()) return true;
  return false;
}

// The variable a live scope holds value v at `index` in, if any.
const std::string* KernelWriter::memoized(ValueId v, const Index& index) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (const std::string* var = it->values.find(v, index)) return var;
  return nullptr;
}

// Is v computed here by an op that reads its operands at indexes known up front: an elementwise
// op or a source (at v's own index), or a shape op (at mapped ones)? Not a reduction, nor loaded.
bool KernelWriter::computed_here(ValueId v) const {
  if (loaded_.count(v) || reduced_.count(v)) return false;
  auto p = producer_.find(v);
  if (p == producer_.end()) return false;
  const FusionClass fusion = p->second->info->fusion;
  return fusion == FusionClass::elementwise || fusion == FusionClass::source || fusion == FusionClass::shape;
}

// What computing op at `index` reads, in the order compute() reads it: a shape op's mapped reads
// (naming their index variables now, as compute() would), or the value arguments at `index`.
std::vector<std::pair<ValueId, Index>> KernelWriter::operand_reads(const Op& op, const Index& index) {
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
void KernelWriter::compute_operands_first(ValueId v, const Index& index) {
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

// The variable holding value v at `index`, emitting the code that computes it if needed.
std::string KernelWriter::value_at(ValueId v, const Index& index) {
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
    const std::optional<IndexExpr> start = in_run_ ? run_start(val, index) : std::nullopt;
    if (start) {  // this lane's element of the loaded run: a parameter of the element function
      var = run_load(v, *start, index);
    } else {
      var = fresh_name(v);
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

std::string KernelWriter::operand(const Arg& a, const Index& index, DType as) {
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
std::string KernelWriter::as_stored(const std::string& code, DType as, const Arg& a) const {
  if (as != DType::bf16 && as != DType::f16) return code;
  if (a.is_value() && loaded_.count(a.value) && !t_.value(a.value).is_scalar && t_.value(a.value).dtype == as) return code;
  return std::string(as == DType::bf16 ? "tg::round_to_bfloat16(" : "tg::round_to_half(") + code + ")";
}

std::string KernelWriter::format(std::string_view code, const std::vector<std::string>& operands) {
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

std::string KernelWriter::compute(const Op& op, ValueId v, const Index& index) {
  const Value& out = t_.value(v);
  std::string expr;
  switch (op.info->fusion) {
    case FusionClass::elementwise: {
      if (op.info->kind == OpKind::convert_element_type) {
        const Value& src = t_.value(op.arg("a").value);
        std::string x = value_at(op.arg("a").value, index);
        x = as_stored(x, src.dtype, op.arg("a"));  // rounding rule 4 (docs/design-notes.md, "Rounding")
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
        expr = op.arg("fill_value").is_value() ? "static_cast<" + ctype(out.dtype) + ">(" + value_at(op.arg("fill_value").value, index) + ")"
                                    : literal_code(op.arg("fill_value"), out.dtype);
      } else if (op.info->kind == OpKind::uniform_philox) {
        // The element's linear position in the drawn tensor picks its Philox counter.
        std::string u = "tg::philox_uniform(static_cast<uint64_t>(" + operand(op.arg("seed"), index, DType::i64) + "), static_cast<uint64_t>(" +
                        operand(op.arg("offset"), index, DType::i64) + "), " + offset(out, index) +
                        (op.arg("stream").integer ? ", " + std::to_string(op.arg("stream").integer) + "ull" : std::string()) + ")";
        std::string lo = operand(op.arg("minval"), index, DType::f32), hi = operand(op.arg("maxval"), index, DType::f32);
        expr = "static_cast<" + ctype(out.dtype) + ">(" + lo + " + (" + hi + " - " + lo + ") * " + u + ")";
      } else {  // iota
        expr = "static_cast<" + ctype(out.dtype) + ">(" + std::to_string(op.arg("start").integer) + " + " + index.at(0).text() + " * " +
               std::to_string(op.arg("step").integer) + ")";
      }
      break;
    case FusionClass::shape: {
      std::vector<OperandRead> reads = shape_op_reads(t_, op, index, index_namer());
      if (op.info->kind == OpKind::pad) {
        std::string inner = value_at(reads[0].value, reads[0].index);
        if (reads[0].guard.empty()) return inner;
        expr = "(" + reads[0].guard + ") ? " + inner + " : " + operand(op.arg("padding_value"), index, out.dtype);
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

}  // namespace tg::emit
