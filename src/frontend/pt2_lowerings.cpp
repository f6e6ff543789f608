#include "frontend/pt2_lowerings.h"

#include <algorithm>

#include "frontend/pt2_lowering_builder.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using Doc = nlohmann::json;
using pt2_lowering::Builder;
using pt2_lowering::dtype_literal;


// A bool operand of a logical op: the input itself, or input != 0.
std::string as_bool(Builder& b, const std::string& name, const Value& v) {
  if (v.dtype == DType::b8) return name;
  return b.op("torch.ne", {{"a", name}, {"b", 0}}, v.shape, DType::b8);
}

std::vector<Doc> logical(Pt2Lowering& node, const char* bitwise) {
  Builder b(node);
  const std::string self = as_bool(b, b.tensor("self"), b.input("self"));
  if (node.args.contains("other")) {
    const std::string other = as_bool(b, b.tensor("other"), b.input("other"));
    b.output(0, bitwise, {{"a", self}, {"b", other}});
  } else {
    b.output(0, bitwise, {{"a", self}});
  }
  return b.take();
}

std::vector<Doc> logical_not(Pt2Lowering& node) {
  Builder b(node);
  const Value& v = b.input("self");
  if (v.dtype == DType::b8) b.output(0, "torch.bitwise_not", {{"a", node.args.at("self")}});
  else b.output(0, "torch.eq", {{"a", node.args.at("self")}, {"b", 0}});
  return b.take();
}

std::vector<Doc> chunk(Pt2Lowering& node) {
  Builder b(node);
  const int64_t chunks = b.integer("chunks"), d = b.dim("dim");
  if (chunks <= 0) b.refuse("chunk into " + std::to_string(chunks) + " pieces");
  const int64_t n = b.input("self").shape.at(size_t(d)), size = std::max<int64_t>((n + chunks - 1) / chunks, 1);
  Doc outs = Doc::array();
  for (const std::string& out : node.outs) {
    const Value& v = node.meta(out);
    outs.push_back({{"name", out}, {"shape", shape_json(v.shape)}, {"dtype", std::string(dtype_name(v.dtype))}});
  }
  return {Doc{{"op", "torch.split"}, {"kwargs", {{"a", node.args.at("self")}, {"split_size_or_sections", size}, {"dim", d}}}, {"out", outs}}};
}

bool has_symbolic_dim(const Shape& shape) {
  return std::any_of(shape.begin(), shape.end(), [](const Dim& d) { return d.symbolic(); });
}

// Sizes as an op's argument: with their expressions in a symbolic trace (a known constant as
// {"size": "2"}), as plain integers in a static one.
Doc sizes_argument(const Shape& sizes, bool symbolic) { return symbolic ? size_list_json(sizes) : Doc(sizes); }

// Where a slice of `length` elements from `start` by `step` ends: one past its last element, with
// the expression that makes (h[:, 1:] over seq ends at seq); `end` as it was given where the
// length has none. (The same length as from the end given, which may lie up to step - 1 further.)
Dim slice_end(const Dim& start, int64_t end, int64_t step, const Dim& length) {
  if (!start.expr() || !length.expr() || int64_t(length) == 0) return Dim(end);
  return add_dims(start, spread_dim(length, Dim::constant(step)));
}

// A slice [start, end) with a step along one dim, as slice_prim over every dim. The dims it keeps
// keep their expressions (starting at a constant 0); the sliced one is `length` (the graph's own
// size for it where it has one, a constant 1 for a row).
std::string slice_along(Builder& b, const Doc& self, const Value& in, int64_t d, const Dim& start, int64_t end, int64_t step, const Dim& length,
                        const std::string& out) {
  Shape starts(in.shape.size(), Dim::constant(0)), ends = in.shape, steps(in.shape.size(), 1);
  starts[size_t(d)] = start, steps[size_t(d)] = step;
  Shape shape = in.shape;
  shape[size_t(d)] = length;
  const bool symbolic = has_symbolic_dim(in.shape);
  ends[size_t(d)] = symbolic ? slice_end(start, end, step, length) : Dim(end);
  return b.op("prims.slice_prim",
              {{"a", self}, {"start_indices", sizes_argument(starts, symbolic)}, {"end_indices", sizes_argument(ends, symbolic)}, {"strides", steps}},
              shape, in.dtype, out);
}

// Where a slice starts along a dim of `n`: a constant where the node gives it as a literal (or not
// at all) that is not negative, or the dim's size is a constant (h[:, 1:] starts at 1 at every
// size: the graph's length for the slice, T - 1, is one the reader refuses where the symbols
// allow T < 1); a negative literal counted from the end of a symbolic dim, n plus it (h[:, -1]
// starts at T - 1; the reader refuses a size that may be negative where the symbols allow a
// shorter dim); else the size alone (a SymInt's value).
Dim slice_start(const Pt2Lowering& node, const char* param, int64_t start, const Dim& n) {
  const Doc& given = node.args.at(param);
  const bool literal = given.is_null() || node.literals.count(param);
  const bool not_negative = given.is_null() || (literal && given.get<int64_t>() >= 0);
  if (literal && (not_negative || (n.expr() && n.expr()->is_constant()))) return Dim::constant(start);
  if (literal && n.expr() && given.get<int64_t>() < 0) return add_dims(n, Dim::constant(given.get<int64_t>()));
  return Dim(start);
}

// A Python slice bound: None is the end it stands for, negatives count from the end, and both
// are clamped to [0, n].
int64_t slice_bound(const Doc& bound, int64_t otherwise, int64_t n) {
  if (bound.is_null()) return otherwise;
  int64_t i = bound.get<int64_t>();
  if (i < 0) i += n;
  return std::clamp<int64_t>(i, 0, n);
}

std::vector<Doc> slice(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  for (const char* bound : {"start", "end"})
    if (!node.args.at(bound).is_null()) b.integer(bound);
  if (in.shape.empty()) b.refuse("slice of a rank-0 tensor");
  const int64_t d = b.dim("dim"), n = in.shape.at(size_t(d)), step = b.integer("step");
  if (step <= 0) b.refuse("slice step " + std::to_string(step) + " (must be positive)");
  const int64_t start = slice_bound(node.args.at("start"), 0, n), end = std::max(start, slice_bound(node.args.at("end"), n, n));
  if (start == 0 && end == n && step == 1) {
    node.aliases[node.outs.at(0)] = b.tensor("self");
    return {};
  }
  slice_along(b, node.args.at("self"), in, d, slice_start(node, "start", start, in.shape.at(size_t(d))), end, step, node.meta(node.outs.at(0)).shape.at(size_t(d)),
              node.outs.at(0));
  return b.take();
}

std::vector<Doc> select(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const int64_t d = b.dim("dim"), n = in.shape.at(size_t(d));
  int64_t index = b.integer("index");
  if (index < -n || index >= n) b.refuse("index " + std::to_string(index) + " is out of range for a dim of " + std::to_string(n));
  if (index < 0) index += n;
  const std::string row = slice_along(b, node.args.at("self"), in, d, slice_start(node, "index", index, in.shape.at(size_t(d))), index + 1, 1, Dim::constant(1), "");
  b.output(0, "torch.reshape", {{"a", row}, {"shape", size_list_json(node.meta(node.outs.at(0)).shape)}});
  return b.take();
}

// unbind(self, dim): each index of dim as its own tensor, that dim removed.
std::vector<Doc> unbind(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  if (in.shape.empty()) b.refuse("unbind of a rank-0 tensor");
  const int64_t d = b.dim("dim");
  if (int64_t(node.outs.size()) != in.shape.at(size_t(d)))
    b.refuse("unbind into " + std::to_string(node.outs.size()) + " outputs of a dim of " + std::to_string(in.shape.at(size_t(d))));
  for (size_t k = 0; k < node.outs.size(); ++k) {
    const std::string row = slice_along(b, node.args.at("self"), in, d, Dim::constant(int64_t(k)), int64_t(k) + 1, 1, Dim::constant(1), "");
    b.output(k, "torch.reshape", {{"a", row}, {"shape", size_list_json(node.meta(node.outs.at(k)).shape)}});
  }
  return b.take();
}

std::vector<Doc> arange(Pt2Lowering& node) {
  Builder b(node);
  auto whole = [&](const char* param, int64_t otherwise) {
    if (!node.args.contains(param)) return otherwise;
    const Doc& v = node.args.at(param);
    if (!v.is_number() || v.get<double>() != double(v.get<int64_t>()))
      b.refuse(std::string("arange with a non-integer ") + param + " (" + v.dump() + ") is not supported");
    return v.get<int64_t>();
  };
  const int64_t start = whole("start", 0), end = whole("end", 0), step = whole("step", 1);
  if (step == 0) b.refuse("arange with step 0");
  const int64_t length = std::max<int64_t>(0, (end - start + step - (step > 0 ? 1 : -1)) / step);
  const Value& out = node.meta(node.outs.at(0));
  const Doc length_arg = out.shape.size() == 1 && out.shape[0].symbolic() ? size_list_json(out.shape)[0] : Doc(length);  // (arange(seq): its expression)
  const Doc start_arg = node.sized.count("start") ? node.sized.at("start") : Doc(start);  // (arange(past, past + seq): from a size)
  b.output(0, "prims.iota", {{"length", length_arg}, {"start", start_arg}, {"step", step}, {"device", {{"device", "cuda:0"}}}, {"dtype", dtype_literal(out.dtype)}});
  return b.take();
}

// embedding(weight, indices, padding_idx): ATen's padding_idx is a row number, from 0, whose
// gradient is skipped; a negative one skips none (F.embedding counts it from the end before it
// calls ATen), so only one from 0 reaches the trace op's.
std::vector<Doc> embedding(Pt2Lowering& node) {
  Builder b(node);
  for (const char* flag : {"scale_grad_by_freq", "sparse"})
    if (b.flag(flag)) b.refuse(std::string("aten.embedding with ") + flag + "=true is not supported");
  const Doc& padding = node.args.at("padding_idx");
  Doc kwargs = {{"a", node.args.at("indices")}, {"weight", node.args.at("weight")}};
  if (node.sized.count("padding_idx")) b.refuse("aten.embedding with a padding_idx that is a size is not supported");
  if (b.integer("padding_idx") >= 0) kwargs["padding_idx"] = padding;
  b.output(0, "torch.nn.functional.embedding", std::move(kwargs));
  return b.take();
}

// The dims a reduction's `dim` names, normalized; [] or None: all of them.
std::vector<int64_t> reduced_dims(Builder& b, const Doc& dims, size_t rank) {
  std::vector<int64_t> out;
  for (const Doc& d : dims.is_array() ? dims : dims.is_null() ? Doc::array() : Doc::array({dims})) {
    if (!d.is_number_integer()) b.refuse("dim must be an integer, not " + d.dump());
    const int64_t i = d.get<int64_t>(), r = int64_t(std::max<size_t>(rank, 1));
    if (i < -r || i >= r) b.refuse("dim " + std::to_string(i) + " is out of range for a rank-" + std::to_string(rank) + " tensor");
    out.push_back(i < 0 ? i + r : i);
  }
  if (out.empty())
    for (size_t i = 0; i < rank; ++i) out.push_back(int64_t(i));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// prims.<reduce> over the dims, then the node's output shape (keepdim) by a reshape.
// The dims of `shape` a reduction over (sorted) `dims` keeps.
Shape kept_dims(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape kept;
  for (size_t i = 0; i < shape.size(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), int64_t(i))) kept.push_back(shape[i]);
  return kept;
}

std::vector<Doc> reduce(const char* prim, const std::string& input, const Value& in, const Doc& dims_arg, Builder& b) {
  const std::vector<int64_t> dims = reduced_dims(b, dims_arg, in.shape.size());
  b.output_reshaped(0, prim, {{"a", input}, {"dims", dims}}, kept_dims(in.shape, dims), in.dtype);
  return b.take();
}

std::vector<Doc> amax(Pt2Lowering& node) {
  Builder b(node);
  return reduce("prims.amax", b.tensor("self"), b.input("self"), node.args.at("dim"), b);
}
std::vector<Doc> amin(Pt2Lowering& node) {
  Builder b(node);
  return reduce("prims.amin", b.tensor("self"), b.input("self"), node.args.at("dim"), b);
}

// any(x, dim) as sum(x != 0 as i64) != 0 (over an empty dim, 0: false, as ATen's), keepdim by a
// reshape; no dim argument (any.default): every dim; an empty list (any.dims): none.
std::vector<Doc> any_dim(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const bool listed = node.args.contains("dim") && node.args.at("dim").is_array();
  if (listed && node.args.at("dim").empty()) {  // (ATen's any.dims reduces no dim then, as amax with dim=[] does not)
    b.output(0, "torch.ne", {{"a", b.tensor("self")}, {"b", 0}});
    return b.take();
  }
  const std::string truth = as_bool(b, b.tensor("self"), in);
  const std::string counted = b.op("prims.convert_element_type", {{"a", truth}, {"dtype", dtype_literal(DType::i64)}}, in.shape, DType::i64);
  const std::vector<int64_t> dims = reduced_dims(b, node.args.contains("dim") ? node.args.at("dim") : Doc(), in.shape.size());
  const Shape kept = kept_dims(in.shape, dims);
  const std::string count = b.op("prims.sum", {{"a", counted}, {"dims", dims}}, kept, DType::i64);
  b.output_reshaped(0, "torch.ne", {{"a", count}, {"b", 0}}, kept, DType::b8);
  return b.take();
}

// A list of sizes the node gives as integer literals (one that names a symbol is refused: the
// code would be specialized to the export's size).
std::vector<int64_t> literal_sizes(Builder& b, const Pt2Lowering& node, const char* param) {
  if (!node.literals.count(param)) b.refuse(std::string(param) + " that depend on a symbolic size are not supported");
  return b.integers(param);
}

// constant_pad_nd(self, pad, value) and pad(self, pad, mode="constant", value): pad holds (lo, hi)
// pairs from the last dim backwards, a negative one cropping; prims.pad takes a (lo, hi, interior)
// triple for every dim.
std::vector<Doc> constant_pad(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  if (node.args.contains("mode") && node.args.at("mode") != Doc{{"str", "constant"}})
    b.refuse("pad mode " + node.args.at("mode").dump() + " is not supported (only \"constant\")");
  const std::vector<int64_t> pad = literal_sizes(b, node, "pad");
  if (pad.size() % 2 != 0 || pad.size() / 2 > in.shape.size())
    b.refuse("pad of " + std::to_string(pad.size()) + " sizes for a rank-" + std::to_string(in.shape.size()) + " tensor (two per padded dim)");
  Doc config = Doc::array();
  for (size_t d = 0; d < in.shape.size(); ++d) {
    const size_t from_end = in.shape.size() - 1 - d;
    const bool padded = from_end < pad.size() / 2;
    const Shape lo_hi_interior = {Dim::constant(padded ? pad[2 * from_end] : 0), Dim::constant(padded ? pad[2 * from_end + 1] : 0), Dim::constant(0)};
    config.push_back(sizes_argument(lo_hi_interior, has_symbolic_dim(in.shape)));
  }
  const Doc& value = node.args.at("value");
  b.output(0, "prims.pad", {{"a", node.args.at("self")}, {"padding_value", value.is_null() ? Doc(0) : value}, {"padding_config", config}});
  return b.take();
}

// repeat(self, repeats): the input (padded with leading dims of 1 to len(repeats)) broadcast into
// [r0, s0, r1, s1, ...], then merged into [r0 * s0, r1 * s1, ...].
std::vector<Doc> repeat(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const std::vector<int64_t> repeats = literal_sizes(b, node, "repeats");
  if (repeats.size() < in.shape.size())
    b.refuse("repeat with " + std::to_string(repeats.size()) + " repeats for a rank-" + std::to_string(in.shape.size()) + " tensor");
  const size_t lead = repeats.size() - in.shape.size();
  Shape spread;
  std::vector<int64_t> kept_dims;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0) b.refuse("repeat " + std::to_string(repeats[d]) + " times");
    spread.push_back(Dim::constant(repeats[d]));
    if (d >= lead) {
      kept_dims.push_back(int64_t(spread.size()));
      spread.push_back(in.shape[d - lead]);
    }
  }
  const std::string broadcast = b.op("prims.broadcast_in_dim", {{"a", node.args.at("self")}, {"shape", size_list_json(spread)}, {"broadcast_dimensions", kept_dims}},
                                     spread, in.dtype);
  b.output(0, "torch.reshape", {{"a", broadcast}, {"shape", size_list_json(node.meta(node.outs.at(0)).shape)}});
  return b.take();
}

// index_select(self, dim, index) of a float tensor: an embedding lookup in self with `dim` moved
// to the front and the other dims merged into rows (its gradient a scatter-add, as embedding's).
std::vector<Doc> index_select(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const int64_t d = in.shape.empty() ? 0 : b.dim("dim");
  if (!is_float(in.dtype)) b.refuse("index_select of a " + std::string(dtype_name(in.dtype)) + " tensor is not supported (float tensors only)");
  if (b.input("index").shape.size() > 1) b.refuse("index_select with an index of rank " + std::to_string(b.input("index").shape.size()));
  std::vector<int64_t> to_front = {d};
  Shape moved = {in.shape.empty() ? Dim::constant(1) : in.shape[size_t(d)]}, rest;
  for (size_t k = 0; k < in.shape.size(); ++k)
    if (int64_t(k) != d) to_front.push_back(int64_t(k)), moved.push_back(in.shape[k]), rest.push_back(in.shape[k]);
  std::string table = b.tensor("self");
  if (d != 0) table = b.op("torch.permute", {{"a", table}, {"dims", to_front}}, moved, in.dtype);
  const Shape rows = {moved[0], numel_dim(rest)};
  if (moved != rows) table = b.op("torch.reshape", {{"a", table}, {"shape", size_list_json(rows)}}, rows, in.dtype);
  const Dim picked = b.input("index").shape.empty() ? Dim::constant(1) : b.input("index").shape[0];
  std::string index = b.tensor("index");
  if (b.input("index").shape.empty()) index = b.op("torch.reshape", {{"a", index}, {"shape", size_list_json({picked})}}, {picked}, b.input("index").dtype);
  const Shape looked_up = {picked, rows[1]};
  std::string out = b.op("torch.nn.functional.embedding", {{"a", index}, {"weight", table}}, looked_up, in.dtype);
  Shape unmerged = {picked};
  unmerged.insert(unmerged.end(), rest.begin(), rest.end());
  if (unmerged != looked_up) out = b.op("torch.reshape", {{"a", out}, {"shape", size_list_json(unmerged)}}, unmerged, in.dtype);
  std::vector<int64_t> back(to_front.size());
  for (size_t k = 0; k < to_front.size(); ++k) back[size_t(to_front[k])] = int64_t(k);
  if (d != 0) out = b.op("torch.permute", {{"a", out}, {"dims", back}}, node.meta(node.outs.at(0)).shape, in.dtype);
  b.output(0, "torch.reshape", {{"a", out}, {"shape", size_list_json(node.meta(node.outs.at(0)).shape)}});
  return b.take();
}

// hardtanh(self, min_val, max_val) and relu6(self) (0 and 6): the bounds where self is at or past
// them, else self, so the gradient flows only strictly between them (as ATen's hardtanh_backward;
// clamp's includes them).
std::vector<Doc> hardtanh(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const bool relu6 = !node.args.contains("min_val");
  const Doc self = node.args.at("self"), lo = relu6 ? Doc(0) : node.args.at("min_val"), hi = relu6 ? Doc(6) : node.args.at("max_val");
  const std::string below = b.op("torch.le", {{"a", self}, {"b", lo}}, in.shape, DType::b8);
  const std::string above = b.op("torch.ge", {{"a", self}, {"b", hi}}, in.shape, DType::b8);
  const std::string upper = b.op("prims.where", {{"pred", above}, {"a", hi}, {"b", self}}, in.shape, in.dtype);
  b.output(0, "prims.where", {{"pred", below}, {"a", lo}, {"b", upper}});
  return b.take();
}

// elu(self, alpha, scale, input_scale): scale * self where self > 0, else
// scale * alpha * expm1(self * input_scale).
std::vector<Doc> elu(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("self");
  const Doc self = node.args.at("self");
  const double alpha = b.number("alpha"), scale = b.number("scale");
  const std::string positive = b.op("torch.gt", {{"a", self}, {"b", 0}}, in.shape, DType::b8);
  // (of self where self <= 0, else 0: where self > 0 the branch is not taken, and its expm1 could
  // overflow into a NaN gradient; a where, not min(self, 0), whose gradient halves at a tie)
  const std::string negative_part = b.op("prims.where", {{"pred", positive}, {"a", 0.0}, {"b", self}}, in.shape, in.dtype);
  const std::string scaled_in = b.op("torch.mul", {{"a", negative_part}, {"b", node.args.at("input_scale")}}, in.shape, in.dtype);
  const std::string curve = b.op("torch.expm1", {{"a", scaled_in}}, in.shape, in.dtype);
  const std::string negative = b.op("torch.mul", {{"a", curve}, {"b", alpha * scale}}, in.shape, in.dtype);
  const std::string linear = b.op("torch.mul", {{"a", self}, {"b", scale}}, in.shape, in.dtype);
  b.output(0, "prims.where", {{"pred", positive}, {"a", linear}, {"b", negative}});
  return b.take();
}

// isnan(self) as self != self; isinf(self) as not finite and not NaN.
std::vector<Doc> isnan(Pt2Lowering& node) {
  Builder b(node);
  b.output(0, "torch.ne", {{"a", node.args.at("self")}, {"b", node.args.at("self")}});
  return b.take();
}
std::vector<Doc> isinf(Pt2Lowering& node) {
  Builder b(node);
  const Shape& shape = b.input("self").shape;
  const std::string finite = b.op("torch.isfinite", {{"a", node.args.at("self")}}, shape, DType::b8);
  const std::string infinite_or_nan = b.op("torch.bitwise_not", {{"a", finite}}, shape, DType::b8);
  const std::string number = b.op("torch.eq", {{"a", node.args.at("self")}, {"b", node.args.at("self")}}, shape, DType::b8);
  b.output(0, "torch.bitwise_and", {{"a", infinite_or_nan}, {"b", number}});
  return b.take();
}

// argmax / argmin(self, dim=None, keepdim): along dim, or over every element flattened.
std::vector<Doc> arg_extreme(Pt2Lowering& node, const char* prim) {
  Builder b(node);
  const Value& in = b.input("self");
  std::string input = b.tensor("self");
  Shape shape = in.shape;
  int64_t d = 0;
  if (node.args.at("dim").is_null()) {
    shape = {numel_dim(in.shape)};
    input = b.op("torch.reshape", {{"a", input}, {"shape", size_list_json(shape)}}, shape, in.dtype);
  } else if (!in.shape.empty()) {
    d = b.dim("dim");
  } else {
    b.refuse(std::string(prim) + " of a rank-0 tensor along a dim");
  }
  Shape kept = shape;
  kept.erase(kept.begin() + d);
  b.output_reshaped(0, prim, {{"a", input}, {"dim", d}}, kept, node.meta(node.outs.at(0)).dtype);
  return b.take();
}

using LoweringFn = std::vector<Doc> (*)(Pt2Lowering&);
const std::map<std::string, LoweringFn>& lowerings() {
  static const std::map<std::string, LoweringFn> table = {
      {"logical_and", [](Pt2Lowering& n) { return logical(n, "torch.bitwise_and"); }},
      {"logical_or", [](Pt2Lowering& n) { return logical(n, "torch.bitwise_or"); }},
      {"logical_not", logical_not},
      {"chunk", chunk},
      {"slice", slice},
      {"select", select},
      {"unbind", unbind},
      {"arange", arange},
      {"embedding", embedding},
      {"amax", amax},
      {"amin", amin},
      {"any_dim", any_dim},
      {"logical_xor", [](Pt2Lowering& n) { return logical(n, "torch.bitwise_xor"); }},
      {"constant_pad", constant_pad},
      {"repeat", repeat},
      {"index_select", index_select},
      {"hardtanh", hardtanh},
      {"elu", elu},
      {"isnan", isnan},
      {"isinf", isinf},
      {"group_norm", pt2_lowering::group_norm},
      {"argmax", [](Pt2Lowering& n) { return arg_extreme(n, "prims.argmax"); }},
      {"argmin", [](Pt2Lowering& n) { return arg_extreme(n, "prims.argmin"); }},
      {"batch_norm", pt2_lowering::batch_norm},
      {"upsample_nearest", pt2_lowering::upsample_nearest},
  };
  return table;
}

}  // namespace

std::vector<Doc> lower_aten(const std::string& lowering, Pt2Lowering& node) {
  auto it = lowerings().find(lowering);
  TG_CHECK(it != lowerings().end(), "aten_ops.def names an unknown lowering " + lowering);
  return it->second(node);
}

bool has_aten_lowering(const std::string& lowering) { return lowerings().count(lowering) > 0; }

}  // namespace tg
