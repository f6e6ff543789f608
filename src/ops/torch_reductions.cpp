// The torch-level reductions' op-table rows, built from torch_reductions.def: shape rules and
// lowerings.
#include "ops/family.h"
#include "ops/torch_elementwise.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

// sum / mean(a, dim=None, keepdim=False, *, dtype=None).
std::vector<OutType> torch_reduction_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<bool> reduced(a.shape.size(), op.arg("dim").kind == Arg::Kind::none);
  auto mark = [&](int64_t d) {
    int64_t w = wrap_dim(d, a.shape.size(), 1);
    if (reduced[size_t(w)] && op.arg("dim").kind != Arg::Kind::none) fail(1, "dim " + std::to_string(d) + " appears twice");
    reduced[size_t(w)] = true;
  };
  if (op.arg("dim").kind == Arg::Kind::integer) mark(op.arg("dim").integer);
  if (op.arg("dim").kind == Arg::Kind::list)
    for (const Arg& d : op.arg("dim").items) mark(d.integer);
  DType dt = op.arg("dtype").kind == Arg::Kind::dtype ? op.arg("dtype").dtype : a.dtype;
  if (op.info->kind == OpKind::t_mean && !is_float(dt)) fail(0, "mean needs a float dtype, not " + std::string(dtype_name(dt)));
  if (op.info->kind == OpKind::t_sum && !is_float(dt) && dt != DType::i64) dt = DType::i64;  // torch.sum promotes integers
  Shape out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(a.shape[d]);
    else if (op.arg("keepdim").boolean) out.push_back(Dim::constant(1));
  }
  return {{dt, out}};
}

// var(a, dim=None, unbiased=None, keepdim=False, *, correction=None).
std::vector<OutType> torch_var_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  if (op.arg("unbiased").kind != Arg::Kind::none && op.arg("correction").kind != Arg::Kind::none) fail(4, "give unbiased or correction, not both");
  std::vector<bool> reduced(a.shape.size(), op.arg("dim").kind == Arg::Kind::none);
  if (op.arg("dim").kind == Arg::Kind::integer) reduced[size_t(wrap_dim(op.arg("dim").integer, a.shape.size(), 1))] = true;
  if (op.arg("dim").kind == Arg::Kind::list)
    for (const Arg& d : op.arg("dim").items) reduced[size_t(wrap_dim(d.integer, a.shape.size(), 1))] = true;
  Shape out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(a.shape[d]);
    else if (op.arg("keepdim").boolean) out.push_back(Dim::constant(1));
  }
  return {{a.dtype, out}};
}

// max / min(input, dim=None, keepdim=False, *, other=None): with a tensor `dim` (or `other`),
// elementwise; with no dim, over everything; with an integer dim, (values, indices) along it.
std::vector<OutType> extremum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  const bool tensor_dim = op.arg("dim").is_value(), has_other = op.arg("other").is_value();
  if (tensor_dim && has_other) fail(3, "give other or a tensor dim, not both");
  if (tensor_dim || has_other) {
    if (op.arg("keepdim").boolean) fail(2, "keepdim must be false for the elementwise form");
    const size_t other = tensor_dim ? 1 : 3;
    Op m = torch_form_call(op.info->kind == OpKind::t_max ? "torch.maximum" : "torch.minimum", {op.arg("input"), op.arg(other)}, op.outs);
    try {
      return m.info->rule(t, m);
    } catch (const RuleError& e) {
      throw RuleError{e.arg == 1 ? int(other) : e.arg, e.message};
    }
  }
  if (is_bool(a.dtype)) fail(0, "does not accept dtype b8");
  if (numel(a.shape) == 0) fail(0, "cannot reduce an empty tensor");
  if (op.arg("dim").kind == Arg::Kind::none) {
    if (op.arg("keepdim").boolean) fail(2, "keepdim must be false without a dim");
    return {{a.dtype, {}}};
  }
  if (a.shape.empty()) fail(0, "needs at least one dim to reduce along dim");
  const int64_t d = wrap_dim(op.arg("dim").integer, a.shape.size(), 1);
  Shape out = a.shape;
  if (op.arg("keepdim").boolean) out[size_t(d)] = Dim::constant(1);
  else out.erase(out.begin() + d);
  return {{a.dtype, out}, {DType::i64, out}};
}

// cumsum(input, dim, *, dtype=None): integers and bools sum in i64 unless a dtype is given.
std::vector<OutType> cumsum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  wrap_dim(op.arg("dim").integer, std::max<size_t>(a.shape.size(), 1), 1);
  if (op.arg("dtype").kind == Arg::Kind::dtype) {
    if (is_bool(op.arg("dtype").dtype)) fail(2, "must not be b8");
    return {{op.arg("dtype").dtype, a.shape}};
  }
  return {{is_float(a.dtype) ? a.dtype : DType::i64, a.shape}};
}

// ---- lowerings --------------------------------------------------------------------------------

V lower_sum_or_mean(G& g, const Op& op) {
  const DType out_dtype = g.trace().value(op.outs[0]).dtype;
  V a = op.arg("a").value;
  Shape shape = shape_of(g, a);
  std::vector<int64_t> dims = dims_of(op.arg("dim"), shape.size());
  if (op.arg("dtype").kind == Arg::Kind::dtype) a = downcast(g, a, op.arg("dtype").dtype);
  // Integers and bools are summed in the result's i64 (torch.sum promotes them), not in
  // their own width, where the sum would wrap.
  V acc = is_float(value_of(g, a).dtype) ? upcast(g, a) : downcast(g, a, out_dtype);
  V s = sum(g, acc, dims);
  if (op.info->kind == OpKind::t_mean) {
    s = div(g, val(s), count(reduced_count(shape, dims)));
  }
  s = downcast(g, s, out_dtype);
  return reshape(g, s, shape_of(g, op.outs[0]));  // keepdim: size-1 dims back
}

// var(a, dim, unbiased, keepdim, *, correction): correction wins over unbiased; default 1.
V lower_var(G& g, const Op& op) {
  const DType out_dtype = g.trace().value(op.outs[0]).dtype;
  V a = op.arg("a").value;
  Shape shape = shape_of(g, a);
  double correction = op.arg("correction").is_number() ? op.arg("correction").as_double() : op.arg("unbiased").is_number() ? double(op.arg("unbiased").as_double() != 0) : 1.0;
  V acc = upcast(g, a);
  V v = call(g, "prims.var", {val(acc), int_list(dims_of(op.arg("dim"), shape.size())), num(correction)});
  return reshape(g, downcast(g, v, out_dtype), shape_of(g, op.outs[0]));
}

// max / min: the elementwise form is torch.maximum / torch.minimum's lowering; no dim, amax /
// amin over everything; a dim, the index of the first extreme element and the element at it, so
// the values' gradient goes to that one element (as PyTorch's max.dim's does), not shared among
// ties as amax's is.
std::vector<ValueId> lower_extremum(G& g, const Op& op) {
  const bool is_max = op.info->kind == OpKind::t_max;
  if (op.arg("dim").is_value() || op.arg("other").is_value()) {
    const Arg& other = op.arg("dim").is_value() ? op.arg("dim") : op.arg("other");
    return lower_torch_elementwise(g, torch_form_call(is_max ? "torch.maximum" : "torch.minimum", {op.arg("input"), other}, op.outs));
  }
  V a = op.arg("input").value;
  const Shape shape = shape_of(g, a);
  if (op.arg("dim").kind == Arg::Kind::none) return {call(g, is_max ? "prims.amax" : "prims.amin", {val(a), int_list(dims_of(Arg{}, shape.size()))})};
  const Extremum e = first_extremum(g, a, wrapped(op.arg("dim").integer, shape.size()), is_max);
  const Shape out = output_of(g, op).shape;
  return {reshape(g, e.values, out), reshape(g, e.index, out)};
}

// cumsum: out[.., k, ..] = sum over j <= k of a[.., j, ..], as a copy of a spread over a new dim
// j after k, masked and summed over j (one row reduction; its gradient is the reverse cumulative
// sum, through the prims' rules). In f32 for 16-bit floats, as PyTorch accumulates.
V lower_cumsum(G& g, const Op& op) {
  const DType dt = output_of(g, op).dtype;
  V a = upcast(g, downcast(g, op.arg("input").value, dt));
  const Shape shape = shape_of(g, a);
  if (shape.empty()) return downcast(g, a, dt);
  const int64_t d = wrapped(op.arg("dim").integer, shape.size());
  const Dim n = shape[size_t(d)];  // (with its expression, as the iota and the spread axis keep it)
  Shape spread_shape = shape;
  spread_shape.insert(spread_shape.begin() + d + 1, n);
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < int64_t(shape.size()); ++k) dims.push_back(k < d ? k : k + 1);
  V spread = broadcast(g, a, spread_shape, dims);
  V positions = call(g, "prims.iota", {Arg::of_dim(n), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V keep = cmp(g, "prims.le", val(broadcast(g, positions, spread_shape, {d + 1})), val(broadcast(g, positions, spread_shape, {d})));
  V masked = where(g, keep, val(spread), is_float(value_of(g, a).dtype) ? num(0.0) : Arg::of_int(0));
  return downcast(g, call(g, "prims.sum", {val(masked), int_list({d + 1})}), dt);
}

}  // namespace

#define TG_FAMILY_ROWS torch_reduction_rows
#define TG_FAMILY "torch_reductions"
#define TG_FAMILY_FILE "ops/torch_reductions.def"
#include "ops/family_rows.inc"

}  // namespace tg
