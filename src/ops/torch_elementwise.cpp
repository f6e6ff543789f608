#include "ops/torch_elementwise.h"

#include <algorithm>
#include <deque>
#include <string>

#include "ops/op_rows.h"
#include "ops/prim_vocabulary.h"
#include "ops/rule_helpers.h"

namespace tg {

namespace {

using V = ValueId;
using G = GradBuilder;
using namespace vocabulary;
using Form = PromotionOperand::Form;
using namespace op_rows;

bool is_unsigned(DType t) { return t == DType::u8; }

// Within one category: the wider type; u8 with a signed type needs the next signed width up.
DType promote_integers(DType a, DType b) {
  if (is_unsigned(a) != is_unsigned(b)) {
    const DType s = is_unsigned(a) ? b : a;
    return s == DType::i8 ? DType::i16 : s;
  }
  return dtype_bytes(a) >= dtype_bytes(b) ? a : b;
}

// PyTorch's combine_categories: a higher-priority slot keeps its dtype unless a lower one is of a
// higher category (a float number with integer tensors, anything with bools).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || is_float(*higher)) return higher;
  if (*higher == DType::b8 || is_float(*lower)) return promote_types(*higher, *lower);
  return higher;
}

// The dtype a number takes part in promotion with: Python floats as the default float dtype.
DType number_dtype(DType t) { return is_float(t) ? DType::f32 : is_integer(t) ? DType::i64 : t; }

// ---- the call's operands ---------------------------------------------------------------------

// The positions of the operands that promote together (where's condition does not).
std::vector<size_t> promoted_positions(const Op& op) {
  std::vector<size_t> out;
  const size_t operands = op.info->kind == OpKind::where ? 3 : std::count_if(op.info->params.begin(), op.info->params.end(), [](const Param& p) {
    return p.kind == ParamKind::tensor_or_number;
  });
  for (size_t i = op.info->kind == OpKind::where ? 1 : 0; i < operands; ++i) out.push_back(i);
  return out;
}

PromotionOperand operand_of(const Trace& t, const Arg& a) {
  if (a.is_value()) {
    const Value& v = t.value(a.value);
    if (v.is_scalar) return {number_dtype(v.dtype), Form::number};
    return {v.dtype, v.shape.empty() ? Form::zero_dim : Form::tensor};
  }
  return {a.kind == Arg::Kind::real ? DType::f32 : a.kind == Arg::Kind::boolean ? DType::b8 : DType::i64, Form::number};
}

bool is_tensor(const Trace& t, const Arg& a) { return a.is_value() && !t.value(a.value).is_scalar; }

bool is_true_division(const Op& op) { return op.info->kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::none; }

// The dtype the prim computes in: the promoted one, or f32 for true division and float functions
// of integers and bools (torch.exp of an int tensor is f32).
DType compute_dtype(const Trace& t, const Op& op) {
  std::vector<PromotionOperand> operands;
  for (size_t i : promoted_positions(op)) operands.push_back(operand_of(t, op.arg(i)));
  const std::optional<DType> common = result_type(operands);
  if (!common) fail(-1, "needs at least one operand");
  const OpInfo& prim = op_info(op.info->kind);
  if (!is_float(*common) && (prim.accepts == DTypes::floats || is_true_division(op))) return DType::f32;
  if (!dtypes_accept(prim.accepts, *common)) fail(-1, "does not accept dtype " + std::string(dtype_name(*common)));
  return *common;
}

// PyTorch's broadcast of the tensor operands' shapes (aligned at the last dim).
Shape broadcast_shape(const Trace& t, const Op& op) {
  Shape out;
  for (size_t i = 0; i < op.args.size(); ++i)
    if (is_tensor(t, op.arg(i))) broadcast_into(out, t.value(op.arg(i).value).shape, int(i));
  return out;
}

// Whether torch.add's or torch.sub's alpha scales b: given, and not the literal 1 (what Thunder
// records for a plain a + b: multiplying by it would only add an op, and in the backward a kernel
// of its own for the cotangent times 1).
bool scales_b(const Op& op) {
  if (op.info->kind != OpKind::add && op.info->kind != OpKind::sub) return false;
  const Arg& alpha = op.arg("alpha");
  return alpha.kind != Arg::Kind::none && !(alpha.is_number() && alpha.as_double() == 1.0);
}

std::vector<OutType> torch_form_rule(const Trace& t, const Op& op) {
  if (op.info->kind == OpKind::where && !(is_tensor(t, op.arg("pred")) && t.value(op.arg("pred").value).dtype == DType::b8))
    fail(0, "the condition must be a bool tensor");
  const DType computed = compute_dtype(t, op);
  const bool has_alpha = (op.info->kind == OpKind::add || op.info->kind == OpKind::sub) && op.arg("alpha").kind != Arg::Kind::none;
  if (has_alpha && !is_float(computed) && op.arg("alpha").kind == Arg::Kind::real) fail(2, "alpha must not be a float for integer operands");
  if (has_alpha && !is_tensor(t, op.arg("b")) && !op.arg("alpha").is_number()) fail(2, "alpha must be a number literal when the other operand is a number");
  if (has_alpha && op.arg("alpha").kind == Arg::Kind::boolean && computed != DType::b8) fail(2, "alpha may be a bool only for bool operands (as in PyTorch)");
  if (scales_b(op) && op.arg("b").is_value() && !is_tensor(t, op.arg("b")))
    fail(2, "alpha other than 1 with a scalar input as the other operand is not supported (scale it in the trace)");
  if (op.info->kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::string && op.arg("rounding_mode").text != "trunc" && op.arg("rounding_mode").text != "floor")
    fail(2, "rounding_mode must be \"trunc\", \"floor\" or null, not \"" + op.arg("rounding_mode").text + "\"");
  return {{op.info->bool_result ? DType::b8 : computed, broadcast_shape(t, op)}};
}

// ---- lowering --------------------------------------------------------------------------------

// An integer number read by an op computing in integer dtype `dt`, converted to it as PyTorch
// converts a Python int: wrapped into its range (torch.add(i8, 200) adds -56; torch.gt(u8, -1)
// compares with 255).
Arg wrapped_to(const Arg& a, DType dt) {
  if (a.kind != Arg::Kind::integer || !is_integer(dt)) return a;
  const IntRange range = integer_range(dt);
  if (range.min <= a.integer && a.integer <= range.max) return a;
  const uint64_t span = uint64_t(range.max) - uint64_t(range.min) + 1;  // 2^bits, bits < 64
  return Arg::of_int(int64_t((uint64_t(a.integer) - uint64_t(range.min)) % span + uint64_t(range.min)));
}

// An operand as the prim reads it: a tensor converted to `dt` and broadcast to `shape`, a number
// in `dt`'s category (true is 1 for an integer op; an integer wraps into an integer dtype).
Arg prim_operand(G& g, const Arg& a, DType dt, const Shape& shape) {
  const Trace& t = g.trace();
  if (!is_tensor(t, a)) {
    if (a.kind == Arg::Kind::boolean && !is_bool(dt)) return is_float(dt) ? num(double(a.boolean)) : Arg::of_int(a.boolean);
    return wrapped_to(a, dt);
  }
  V v = value_of(g, a.value).dtype == dt ? a.value : convert(g, a.value, dt);
  const Shape& s = shape_of(g, v);
  if (s == shape) return val(v);
  std::vector<int64_t> dims(s.size());
  for (size_t k = 0; k < s.size(); ++k) dims[k] = int64_t(shape.size() - s.size() + k);
  return val(broadcast(g, v, shape, dims));
}

// torch.div with rounding_mode: "trunc" truncates (prims.div already does for integers), "floor"
// rounds down ((a - remainder(a, b)) / b for integers, exact).
V rounded_division(G& g, Arg a, Arg b, DType dt, const std::string& mode) {
  if (mode == "trunc") return is_float(dt) ? unary(g, "prims.trunc", div(g, a, b)) : div(g, a, b);
  if (is_float(dt)) return unary(g, "prims.floor", div(g, a, b));
  return div(g, val(sub(g, a, val(call(g, "prims.remainder", {a, b})))), b);
}

}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b || b == DType::b8) return a;
  if (a == DType::b8) return b;
  if (is_float(a) != is_float(b)) return is_float(a) ? a : b;
  if (!is_float(a)) return promote_integers(a, b);
  if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16)) return DType::f32;
  return dtype_bytes(a) >= dtype_bytes(b) ? a : b;
}

std::optional<DType> result_type(const std::vector<PromotionOperand>& operands) {
  std::optional<DType> slot[3];  // tensors with dims, 0-dim tensors, numbers
  for (const PromotionOperand& o : operands) {
    std::optional<DType>& s = slot[static_cast<int>(o.form)];
    s = s ? promote_types(*s, o.dtype) : o.dtype;
  }
  return combine(slot[0], combine(slot[1], slot[2]));
}

PromotionOperand promotion_operand(const Trace& t, const Arg& a) { return operand_of(t, a); }

Op torch_form_call(std::string_view id, std::vector<Arg> args, std::vector<ValueId> outs) {
  Op call;
  call.info = find_op(id);
  call.symbol = std::string(id);
  call.args = std::move(args);
  call.outs = std::move(outs);
  return call;
}

OpInfo torch_form_of(const OpInfo& prim) {
  static std::deque<std::string> ids;  // (the table holds string_views; these live as long)
  // torch.<name>, or the PyTorch function a declared prim names (torch.special.ndtri).
  ids.push_back(prim.torch_function.empty() ? "torch." + std::string(prim.id.substr(std::string_view("prims.").size())) : std::string(prim.torch_function));
  OpInfo row = prim;
  row.id = ids.back();
  row.fusion = FusionClass::composite;
  row.rule = torch_form_rule;
  row.code = "";
  row.integer_code = {};
  row.discontinuous = false;
  row.summary = "PyTorch's broadcasting and type promotion, lowered to the prim";
  row.grad = {};  // lowered before autograd: the prims' rules
  row.grad_saves = {};
  row.lowering = lower_torch_elementwise;
  for (Param& p : row.params)
    if (p.kind == ParamKind::tensor) p.kind = ParamKind::tensor_or_number;
  if (prim.kind == OpKind::add || prim.kind == OpKind::sub) row.params.push_back(Param{"alpha", ParamKind::optional_number, true, true, Arg{}});
  if (prim.kind == OpKind::div) row.params.push_back(Param{"rounding_mode", ParamKind::optional_string, true, true, Arg{}});
  return row;
}

// b * alpha: an op for a tensor; for a number, the product as PyTorch forms it, exact in int64
// (wrapping) when both are integers, then converted to the op's dtype.
Arg scaled_by_alpha(G& g, const Arg& b, const Arg& alpha, DType dt) {
  if (b.is_value()) return val(mul(g, b, alpha));
  const bool integers = b.kind == Arg::Kind::integer && (alpha.kind == Arg::Kind::integer || alpha.kind == Arg::Kind::boolean);
  if (!integers) return Arg::of_real(b.as_double() * alpha.as_double());
  const int64_t a = alpha.kind == Arg::Kind::integer ? alpha.integer : int64_t(alpha.boolean);
  return wrapped_to(Arg::of_int(int64_t(uint64_t(b.integer) * uint64_t(a))), dt);
}

std::vector<ValueId> lower_torch_elementwise(GradBuilder& g, const Op& op) {
  const Trace& t = g.trace();
  const DType dt = compute_dtype(t, op);
  const Shape shape = t.value(op.outs[0]).shape;
  const std::string_view prim_id = op_info(op.info->kind).id;
  std::vector<Arg> args;
  for (size_t i = 0; i < op.info->params.size() && op.info->params[i].kind == ParamKind::tensor_or_number; ++i)
    args.push_back(op.info->kind == OpKind::where && i == 0 ? prim_operand(g, op.arg("pred"), DType::b8, shape) : prim_operand(g, op.arg(i), dt, shape));
  if (scales_b(op)) args[1] = scaled_by_alpha(g, args[1], op.arg("alpha"), dt);
  if (op.info->kind == OpKind::div && op.arg("rounding_mode").kind != Arg::Kind::none) return {rounded_division(g, args[0], args[1], dt, op.arg("rounding_mode").text)};
  return {call(g, prim_id, std::move(args))};
}

}  // namespace tg
