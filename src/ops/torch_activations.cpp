// The torch-level activations' op-table rows, built from torch_activations.def: how an activation
// row becomes a lowering and a gradient rule, and the pieces its expressions use.
#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

constexpr double kSqrt2OverPi = 0.7978845608028654;   // sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.7071067811865476;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;     // 1 / sqrt(2 pi)

// ---- relu: in the operand's dtype, its rule masks the cotangent by the output ------------------

V lower_relu(G& g, const Op& op) {
  V a = op.arg("a").value;
  return where(g, cmp(g, "prims.gt", val(a), num(0.0)), val(a), num(0.0));
}

// Reads the output: where(y > 0, g, 0).
Contributions relu_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  return {{op.arg("a").value, where(g, cmp(g, "prims.gt", val(op.outs[0]), num(0.0)), val(cot[0]), num(0.0))}};
}

// ---- what the activation rows are made of -------------------------------------------------------

// torch_activations.def's `compute` and `continuity` columns.
enum class ActivationCompute { in_f32, as_is };
enum class ActivationContinuity { smooth, kinked };

// The operand as the activation computes with it, and the dtype its result is rounded to.
Upcast activation_operand(G& g, const Op& op, ActivationCompute compute) {
  const V a = op.arg("a").value;
  return compute == ActivationCompute::in_f32 ? up(g, a) : Upcast{a, value_of(g, a).dtype};
}

// The rule of an activation with a derivative f(x, y): the cotangent times f, in f32 for 16-bit
// dtypes, rounded once. What it reads decides what it upcasts, and in which order: the output
// and the cotangent before f, or the input, f, then the cotangent.
using Derivative = V (*)(G&, const Op&, V x, V y);
Contributions activation_gradient(G& g, const Op& op, const std::vector<V>& cot, Derivative f) {
  if (op.info->grad_saves == "output") {
    auto [y, dt] = up(g, op.outs[0]);
    V c = upcast(g, cot[0]);
    V local = f(g, op, kNoValue, y);
    return {{op.arg("a").value, downcast(g, mul(g, val(c), val(local)), dt)}};
  }
  auto [x, dt] = up(g, op.arg("a").value);
  V local = f(g, op, x, kNoValue);
  return {{op.arg("a").value, downcast(g, mul(g, val(upcast(g, cot[0])), val(local)), dt)}};
}

// Reads the input: s * (1 + x * (1 - s)), s = sigmoid(x).
V silu_derivative(G& g, V x) {
  V s = sigmoid_of(g, x);
  return mul(g, val(s), val(add(g, val(mul(g, val(x), one_minus(g, val(s)))), num(1.0))));
}

bool gelu_tanh(const Op& op) { return op.arg("approximate").text == "tanh"; }

std::vector<OutType> gelu_rule(const Trace& t, const Op& op) {
  const std::string& mode = op.arg("approximate").text;
  if (mode != "none" && mode != "tanh") fail(1, "approximate must be \"none\" or \"tanh\", not \"" + mode + "\"");
  return like_input_rule(t, op);
}

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), or 0.5 x (1 + erf(x / sqrt 2)).
V gelu_value(G& g, const Op& op, V x) {
  V inner;
  if (gelu_tanh(op)) {
    V cube = mul(g, val(mul(g, val(x), val(x))), val(x));
    V arg = mul(g, val(add(g, val(x), val(mul(g, val(cube), num(0.044715))))), num(kSqrt2OverPi));
    inner = unary(g, "prims.tanh", arg);
  } else {
    inner = unary(g, "prims.erf", mul(g, val(x), num(kInvSqrt2)));
  }
  return mul(g, val(mul(g, val(x), num(0.5))), val(add(g, val(inner), num(1.0))));
}

// y = 0.5 a (1 + tanh(u)), u = k (a + 0.044715 a^3):
// dy/da = 0.5 (1 + tanh(u)) + 0.5 a (1 - tanh(u)^2) k (1 + 3 * 0.044715 a^2)
V gelu_tanh_derivative(G& g, V a) {
  V a2 = mul(g, val(a), val(a));
  V u = mul(g, val(add(g, val(a), val(mul(g, val(mul(g, val(a2), val(a))), num(0.044715))))), num(kSqrt2OverPi));
  V th = unary(g, "prims.tanh", u);
  V du = mul(g, val(add(g, val(mul(g, val(a2), num(3 * 0.044715))), num(1.0))), num(kSqrt2OverPi));
  V left = mul(g, val(add(g, val(th), num(1.0))), num(0.5));
  V right = mul(g, val(mul(g, val(mul(g, val(a), num(0.5))), val(sub(g, num(1.0), val(mul(g, val(th), val(th))))))), val(du));
  return add(g, val(left), val(right));
}

// dy/da = Phi(a) + a phi(a) = 0.5 (1 + erf(a / sqrt 2)) + a exp(-a^2 / 2) / sqrt(2 pi)
V gelu_erf_derivative(G& g, V a) {
  V cdf = mul(g, val(add(g, val(unary(g, "prims.erf", mul(g, val(a), num(kInvSqrt2)))), num(1.0))), num(0.5));
  V pdf = mul(g, val(unary(g, "prims.exp", mul(g, val(mul(g, val(a), val(a))), num(-0.5)))), num(kInvSqrt2Pi));
  return add(g, val(cdf), val(mul(g, val(a), val(pdf))));
}

V gelu_derivative(G& g, const Op& op, V x) { return gelu_tanh(op) ? gelu_tanh_derivative(g, x) : gelu_erf_derivative(g, x); }

OpInfo activation_row(Declared d, Lowering lowering, ActivationContinuity continuity, Domain domain) {
  OpInfo info = row(std::move(d));
  info.lowering = lowering;
  info.kinked = continuity == ActivationContinuity::kinked;
  info.domains = {domain};
  return info;
}

}  // namespace

// The derivative column: derivative(expression) or through_lowering.
#define TG_DERIVATIVE_derivative(expression)                                                                              \
  GradRule([](G& g, const Op& op, const std::vector<V>& cot) {                                                            \
    return activation_gradient(g, op, cot, []([[maybe_unused]] G& g, [[maybe_unused]] const Op& op, [[maybe_unused]] V x, \
                                              [[maybe_unused]] V y) -> V { return expression; });                         \
  })
#define TG_DERIVATIVE_through_lowering GradRule()

std::vector<OpInfo> torch_activation_rows() {
  using enum ParamKind;
  constexpr std::string_view kFamily = "torch_activations";
  return {
#define TG_COMPOSITE TG_COMPOSITE_ROW
#define TG_ACTIVATION(name, id, rule, compute, continuity, value, derivative, saves, aten, lo, hi, ...)                     \
  activation_row({OpKind::name, id, FusionClass::composite, DTypes::floats, rule, TG_DERIVATIVE_##derivative, saves,          \
                  TG_ATEN_##aten, "", {__VA_ARGS__}, kFamily},                                                                \
                 [](G& g, [[maybe_unused]] const Op& op) -> std::vector<V> {                                                 \
                   const auto [x, dt] = activation_operand(g, op, ActivationCompute::compute);                                         \
                   return {downcast(g, value, dt)};                                                                           \
                 },                                                                                                           \
                 ActivationContinuity::continuity, Domain{lo, hi}),
#include "ops/torch_activations.def"
#undef TG_COMPOSITE
#undef TG_ACTIVATION
  };
}

}  // namespace tg
