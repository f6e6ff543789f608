// The elementwise prims' op-table rows, built from their declarations (unary_float_prims.def,
// unary_prims.def, binary_float_prims.def, binary_exact_prims.def, elementwise_prims.def), with
// their shape rules and gradient rules.
#include <cmath>
#include <limits>

#include "ops/family.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;
using Contributions = std::vector<GradContribution>;

// ---- shape rules ------------------------------------------------------------------------------

// Tensor operands share one shape and dtype; numbers broadcast.
ShapeRule elementwise_rule(bool bool_result) {
  return [bool_result](const Trace& t, const Op& op) -> std::vector<OutType> {
    const Value* first = nullptr;
    for (size_t i = 0; i < op.args.size(); ++i) {
      const Value* v = tensor_arg(t, op, i);
      if (!v) continue;
      if (!dtypes_accept(op.info->accepts, v->dtype))
        fail(int(i), "does not accept dtype " + std::string(dtype_name(v->dtype)));
      if (!first) { first = v; continue; }
      if (v->shape != first->shape)
        fail(int(i), "shape " + shape_str(v->shape) + " does not match " + shape_str(first->shape) +
                         " (elementwise prims need equal shapes; broadcast with prims.broadcast_in_dim)");
      if (v->dtype != first->dtype)
        fail(int(i), "dtype " + std::string(dtype_name(v->dtype)) + " does not match " + std::string(dtype_name(first->dtype)) +
                         " (convert with prims.convert_element_type)");
    }
    if (!first) fail(-1, "needs at least one tensor operand (scalar-only arithmetic is not supported)");
    return {{bool_result ? DType::b8 : first->dtype, first->shape}};
  };
}

std::vector<OutType> where_rule(const Trace& t, const Op& op) {
  const Value* pred = tensor_arg(t, op, 0);
  if (pred && pred->dtype != DType::b8) fail(0, "the condition must be b8, not " + std::string(dtype_name(pred->dtype)));
  const Value* a = tensor_arg(t, op, 1);
  const Value* b = tensor_arg(t, op, 2);
  if (!a && !b) fail(-1, "needs a tensor among its two branches");
  if (a && b && a->dtype != b->dtype) fail(2, "branch dtypes differ: " + std::string(dtype_name(a->dtype)) + " and " + std::string(dtype_name(b->dtype)));
  const Value* like = a ? a : b;
  for (int i = 0; i < 3; ++i)
    if (const Value* v = tensor_arg(t, op, i); v && v->shape != like->shape)
      fail(i, "shape " + shape_str(v->shape) + " does not match " + shape_str(like->shape));
  return {{like->dtype, like->shape}};
}

std::vector<OutType> convert_rule(const Trace& t, const Op& op) {
  return {{op.arg("dtype").dtype, t.value(op.arg("a").value).shape}};
}

// ---- gradient rules ---------------------------------------------------------------------------

// d out / d a = f(a, out): contribution g * f.
using LocalDerivative = std::function<V(G&, const Op&, V a, V out)>;
GradRule unary_rule(LocalDerivative f) {
  return [f](G& g, const Op& op, const std::vector<V>& cot) -> Contributions {
    V a = op.arg("a").value;
    return {{a, mul(g, val(cot[0]), val(f(g, op, a, op.outs[0])))}};
  };
}

// Contributions of both operands of a binary op; number operands get none.
using BinaryDerivatives = std::function<std::pair<V, V>(G&, const Arg& a, const Arg& b, V out, V cot)>;
GradRule binary_rule(BinaryDerivatives f) {
  return [f](G& g, const Op& op, const std::vector<V>& cot) -> Contributions {
    auto [ga, gb] = f(g, op.arg("a"), op.arg("b"), op.outs[0], cot[0]);
    Contributions out;
    if (is_tensor(g, op.arg("a")) && ga != kNoValue) out.emplace_back(op.arg("a").value, ga);
    if (is_tensor(g, op.arg("b")) && gb != kNoValue) out.emplace_back(op.arg("b").value, gb);
    return out;
  };
}

V square(G& g, V x) { return mul(g, val(x), val(x)); }

const double kLn2 = std::log(2.0), kLn10 = std::log(10.0), kTwoOverSqrtPi = 2.0 / std::sqrt(M_PI);

// A unary float prim declared without a gradient rule: differentiating through it is refused.
[[noreturn]] V no_gradient_rule(const Op& op) {
  throw UserError(op.where, op.symbol + " has no gradient rule in thunder-gen, and a value that requires grad flows through it");
}
#define TG_NO_GRADIENT_RULE no_gradient_rule(op)

// maximum's and minimum's contribution to `self`: the cotangent c where self wins the comparison
// `wins` against `other`, half of it at a tie (PyTorch shares ties equally), else 0.
V extremum_share(G& g, std::string_view wins, const Arg& self, const Arg& other, V c) {
  V won = cmp(g, wins, self, other);
  V tie = cmp(g, "prims.eq", self, other);
  V half = mul(g, val(c), num(0.5));
  return where(g, won, val(c), val(where(g, tie, val(half), num(0.0))));
}

Contributions abs_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  return {{a, mul(g, val(cot[0]), val(unary(g, "prims.sign", a)))}};
}

Contributions neg_gradient(G& g, const Op& op, const std::vector<V>& cot) { return {{op.arg("a").value, neg(g, cot[0])}}; }

// where(pred, a, b): the cotangent goes to the branch each element took; a literal predicate
// sends all of it to one branch and zeros to the other.
Contributions where_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  Contributions out;
  V pred = op.arg("pred").is_value() ? op.arg("pred").value : kNoValue;
  auto pick = [&](const Arg& branch, bool when) {
    if (!is_tensor(g, branch)) return;
    V c = pred == kNoValue ? ((op.arg("pred").boolean == when) ? cot[0] : zeros(g, shape_of(g, cot[0]), value_of(g, cot[0]).dtype))
                           : where(g, pred, when ? val(cot[0]) : num(0.0), when ? num(0.0) : val(cot[0]));
    out.emplace_back(branch.value, c);
  };
  pick(op.arg("a"), true);
  pick(op.arg("b"), false);
  return out;
}

// lerp(s, e, w) = s + w (e - s).
Contributions lerp_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  const Arg &s = op.arg("start"), &e = op.arg("end"), &w = op.arg("weight");
  V c = cot[0];
  Contributions out = {{s.value, mul(g, val(c), one_minus(g, w))}, {e.value, mul(g, val(c), w)}};
  if (is_tensor(g, w)) out.emplace_back(w.value, mul(g, val(c), val(sub(g, e, s))));
  return out;
}

// A conversion from an integer or bool carries no gradient.
Contributions convert_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  if (!is_float(value_of(g, a).dtype)) return {};
  return {{a, convert(g, cot[0], value_of(g, a).dtype)}};
}

// ---- rows -------------------------------------------------------------------------------------

enum class ElementwiseResult { operands, boolean };
enum class ElementwiseContinuity { continuous, smooth, kinked, discontinuous };

// A declared elementwise prim of (a) or (a, b): what its family's row gives.
struct Elementwise {
  OpKind kind;
  std::string_view id, code, integer_code;
  DTypes accepts;
  ElementwiseResult result;
  ElementwiseContinuity continuity;
  GradRule grad;
  std::string_view saves, torch;
  std::vector<Domain> domains;
  std::string_view family;
};

OpInfo elementwise_row(Elementwise e, std::vector<Param> params) {
  const bool bool_result = e.result == ElementwiseResult::boolean;
  OpInfo info = row({e.kind, e.id, FusionClass::elementwise, e.accepts, elementwise_rule(bool_result), std::move(e.grad), e.saves, "", "",
                     std::move(params), e.family});
  info.code = e.code;
  info.integer_code = e.integer_code;
  info.bool_result = bool_result;
  info.discontinuous = e.continuity == ElementwiseContinuity::discontinuous;
  info.kinked = e.continuity == ElementwiseContinuity::kinked;
  info.torch_function = e.torch;
  info.domains = std::move(e.domains);
  return info;
}
OpInfo unary_prim(Elementwise e) { return elementwise_row(std::move(e), {p("a", ParamKind::tensor)}); }
OpInfo binary_prim(Elementwise e) {
  return elementwise_row(std::move(e), {p("a", ParamKind::tensor_or_number), p("b", ParamKind::tensor_or_number)});
}

// d(a^b)/da = b * a^(b - 1), but 0 where b is 0 (as ATen's pow_backward_self: 0 * 0^-1 would be
// NaN), whatever the cotangent there.
V pow_base_gradient(G& g, const Arg& a, const Arg& b, V c) {
  if (b.is_number() && b.as_double() == 0.0) return kNoValue;
  const V chained = mul(g, val(c), val(mul(g, b, val(call(g, "prims.pow", {a, plus(g, b, -1.0)})))));
  if (b.is_number()) return chained;
  return where(g, cmp(g, "prims.eq", b, num(0.0)), num(0.0), val(chained));
}

// d(a^b)/db = a^b * log(a), but 0 where a is 0 and b is at least 0 (as ATen's
// pow_backward_exponent: 0 * log(0) would be NaN); a number `a` has its log computed here.
V pow_exponent_gradient(G& g, const Arg& a, const Arg& b, V out, V c) {
  if (a.is_number() && a.as_double() != 0.0) return mul(g, val(c), val(mul(g, val(out), num(std::log(a.as_double())))));
  const V slope = a.is_number() ? mul(g, val(out), num(-std::numeric_limits<double>::infinity())) : mul(g, val(out), val(call(g, "prims.log", {a})));
  const V flat = a.is_number() ? cmp(g, "prims.ge", b, num(0.0)) : call(g, "prims.bitwise_and", {val(cmp(g, "prims.eq", a, num(0.0))), val(cmp(g, "prims.ge", b, num(0.0)))});
  return where(g, flat, num(0.0), val(mul(g, val(c), val(slope))));
}

// (An exact prim that reads floats, a comparison, jumps where they do.)
std::vector<OpInfo> declared_elementwise_rows() {
  return {
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi)                                                                        \
  unary_prim({OpKind::name, "prims." #name, "tg::" #name "({0})", "", DTypes::floats, ElementwiseResult::operands, ElementwiseContinuity::smooth,                \
         unary_rule([]([[maybe_unused]] G& g, [[maybe_unused]] const Op& op, [[maybe_unused]] V a, [[maybe_unused]] V out) -> V { \
           return derivative;                                                                                                       \
         }),                                                                                                                        \
         #saves, torch, {{lo, hi}}, "unary_float_prims"}),
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
#define TG_UNARY(name, torch, code, integer_code, accepts, result, continuity, gradient, saves, reference)                    \
  unary_prim({OpKind::name, "prims." #name, code, integer_code, DTypes::accepts, ElementwiseResult::result, ElementwiseContinuity::continuity, gradient, saves, \
         torch, {}, "unary_prims"}),
#include "ops/unary_prims.def"
#undef TG_UNARY
#define TG_BINARY_FLOAT(name, torch, code, integer_code, accepts, continuity, saves, shared, grad_a, grad_b, a_lo, a_hi, b_lo, b_hi) \
  binary_prim({OpKind::name, "prims." #name, code, integer_code, DTypes::accepts, ElementwiseResult::operands, ElementwiseContinuity::continuity,              \
          binary_rule([]([[maybe_unused]] G& g, [[maybe_unused]] const Arg& a, [[maybe_unused]] const Arg& b,                      \
                         [[maybe_unused]] V out, [[maybe_unused]] V c) {                                                            \
            [[maybe_unused]] const V s = shared;                                                                                    \
            return std::pair{is_tensor(g, a) ? V(grad_a) : kNoValue, is_tensor(g, b) ? V(grad_b) : kNoValue};                     \
          }),                                                                                                                       \
          saves, torch, {{a_lo, a_hi}, {b_lo, b_hi}}, "binary_float_prims"}),
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
#define TG_BINARY_EXACT(name, torch, code, accepts, result, reference)                                                        \
  binary_prim({OpKind::name, "prims." #name, code, "", DTypes::accepts, ElementwiseResult::result,                                           \
          dtypes_accept(DTypes::accepts, DType::f32) ? ElementwiseContinuity::discontinuous : ElementwiseContinuity::continuous, no_gradient, "", torch, {}, \
          "binary_exact_prims"}),
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT
  };
}

#define TG_FAMILY_ROWS other_elementwise_rows
#define TG_FAMILY "elementwise_prims"
#define TG_FAMILY_FILE "ops/elementwise_prims.def"
#include "ops/family_rows.inc"

}  // namespace

std::vector<OpInfo> elementwise_prim_rows() {
  std::vector<OpInfo> rows = declared_elementwise_rows();
  for (OpInfo& r : other_elementwise_rows()) rows.push_back(std::move(r));
  return rows;
}

DType operand_dtype(const Trace& t, const Op& op) {
  size_t first = op.info->kind == OpKind::where ? 1 : 0;  // where's condition is always b8
  for (size_t i = first; i < op.args.size(); ++i)
    if (op.args[i].is_value() && !t.value(op.args[i].value).is_scalar) return t.value(op.args[i].value).dtype;
  return t.value(op.outs[0]).dtype;
}

}  // namespace tg
