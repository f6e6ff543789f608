// The reductions' op-table rows, built from reduction_prims.def, with their shape rule and gradient
// rules, and the dims a reduction reduces.
#include <algorithm>
#include <numeric>

#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;
using Contributions = std::vector<GradContribution>;

// reduction_prims.def's `result` column.
enum class ReductionResult { same, index };

// A reduction with no value for an empty dim (all but sum and prod, as PyTorch's) refuses one, and
// in a folder taking its sizes at run time one that may be empty at some size in range.
void refuse_empty(const Trace& t, const Dim& n, int64_t d) {
  if (n == 0) throw RuleError{1, "cannot reduce over the empty dim " + std::to_string(d), true};
  if (t.sizes_at_run_time && n.symbolic() && !provably_positive(*n.expr(), t.symbols))
    throw RuleError{1, "cannot reduce over dim " + std::to_string(d) + ", of size " + n.expr()->text() +
                           ", which may be 0 at some sizes the symbols allow; raise their min, or name the sizes with --specialize", true};
}

// `outputs` results of the operand's dtype over the dims not reduced, or i64 positions.
ShapeRule reduction_rule(int outputs, ReductionResult result) {
  return [outputs, result](const Trace& t, const Op& op) -> std::vector<OutType> {
    const Value& a = t.value(op.arg("a").value);
    std::vector<int64_t> dims = reduction_dims(t, op);
    if (op.info->kind != OpKind::sum && op.info->kind != OpKind::prod)
      for (int64_t d : dims) refuse_empty(t, a.shape[size_t(d)], d);
    if (!dtypes_accept(op.info->accepts, a.dtype)) fail(0, "does not accept dtype " + std::string(dtype_name(a.dtype)));
    Shape shape = reduced_shape(a.shape, dims);
    std::vector<OutType> out(outputs, OutType{result == ReductionResult::index ? DType::i64 : a.dtype, shape});
    return out;
  };
}

// ---- gradient rules ---------------------------------------------------------------------------

Contributions sum_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  return {{a, unreduce(g, cot[0], shape_of(g, a), reduction_dims(g.trace(), op))}};
}

Contributions prod_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  // d prod / d a_i = prod / a_i (undefined where a_i is zero; see docs/design-notes.md).
  V a = op.arg("a").value;
  auto dims = reduction_dims(g.trace(), op);
  V scaled = mul(g, val(cot[0]), val(op.outs[0]));
  return {{a, div(g, val(unreduce(g, scaled, shape_of(g, a), dims)), val(a))}};
}

// amax/amin share the gradient among the extreme elements.
Contributions extreme_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& shape = shape_of(g, a);
  auto dims = reduction_dims(g.trace(), op);
  V hit = cmp(g, "prims.eq", val(a), val(unreduce(g, op.outs[0], shape, dims)));
  V count = sum(g, convert(g, hit, value_of(g, a).dtype), dims);
  V share = div(g, val(cot[0]), val(count));
  return {{a, where(g, hit, val(unreduce(g, share, shape, dims)), num(0.0))}};
}

Contributions variance_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  // var = sum((a - mean)^2) / (n - correction): d var / d a = 2 (a - mean) / (n - correction).
  V a = op.arg("a").value;
  const Shape& shape = shape_of(g, a);
  auto dims = reduction_dims(g.trace(), op);
  const Dim n = reduced_count(shape, dims);
  V mean = op.info->kind == OpKind::var_mean ? op.outs[1] : div(g, val(sum(g, a, dims)), count(n));
  V centered = sub(g, val(a), val(unreduce(g, mean, shape, dims)));
  V total = kNoValue;
  if (cot[0] != kNoValue) {
    // n - correction; a scalar correction, or a symbolic n, needs a tensor to subtract from.
    const Arg& correction = op.arg("correction");
    Arg denominator = correction.is_number() && !n.symbolic() ? num(double(n) - correction.as_double())
                                                             : val(sub(g, val(full(g, shape_of(g, cot[0]), count(n), value_of(g, cot[0]).dtype)), correction));
    V scale = div(g, val(mul(g, val(cot[0]), num(2.0))), denominator);
    total = mul(g, val(centered), val(unreduce(g, scale, shape, dims)));
  }
  if (op.info->kind == OpKind::var_mean && cot.size() > 1 && cot[1] != kNoValue) {
    V from_mean = unreduce(g, div(g, val(cot[1]), count(n)), shape, dims);
    total = total == kNoValue ? from_mean : add(g, val(total), val(from_mean));
  }
  if (total == kNoValue) return {};
  return {{a, total}};
}

OpInfo reduction_row(Declared d, int outputs, ReductionResult result) {
  d.rule = reduction_rule(outputs, result);
  OpInfo info = row(std::move(d));
  info.discontinuous = result == ReductionResult::index;  // a position jumps
  return info;
}

}  // namespace

std::vector<OpInfo> reduction_prim_rows() {
  using enum ParamKind;
  return {
#define TG_REDUCTION(name, id, accepts, outputs, result, gradient, saves, aten, ...)                                                \
  reduction_row({OpKind::name, id, FusionClass::reduction, DTypes::accepts, nullptr, gradient, saves, TG_ATEN_##aten, "", {__VA_ARGS__}, \
                 "reduction_prims"},                                                                                                  \
                outputs, ReductionResult::result),
#include "ops/reduction_prims.def"
#undef TG_REDUCTION
  };
}

std::vector<int64_t> reduction_dims(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<int64_t> dims;
  if (!op.has_arg("dims")) {  // argmax, argmin: one dim, or all
    if (op.arg("dim").kind == Arg::Kind::none) {
      dims.resize(a.shape.size());
      std::iota(dims.begin(), dims.end(), 0);
    } else {
      dims.push_back(wrap_dim(op.arg("dim").integer, a.shape.size(), 1));
    }
  } else {
    for (int64_t d : op.arg("dims").int_list()) {
      int64_t w = wrap_dim(d, a.shape.size(), 1);
      if (std::count(dims.begin(), dims.end(), w)) fail(1, "dim " + std::to_string(w) + " listed twice");
      dims.push_back(w);
    }
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

}  // namespace tg
