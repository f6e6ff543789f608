// The torch-level elementwise calls' op-table rows, built from torch_pointwise.def: shape rules and
// lowerings.
#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

// addcmul / addcdiv(input, tensor1, tensor2, *, value=1): broadcast and promoted together.
std::vector<OutType> addc_rule(const Trace& t, const Op& op) {
  const DType dt = promoted(t, op, {0, 1, 2});
  if (!is_float(dt)) fail(0, "needs float operands (they promote to " + std::string(dtype_name(dt)) + ")");
  need_number_literal(op, "value");
  return {{dt, broadcast_shapes(t, op, {0, 1, 2})}};
}

// clamp(input, min=None, max=None): bounds are tensors (broadcast) or numbers, promoted as
// PyTorch promotes them.
std::vector<OutType> clamp_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  if (op.arg("min").kind == Arg::Kind::none && op.arg("max").kind == Arg::Kind::none) fail(1, "at least one of min and max must not be null");
  for (size_t i : {size_t(1), size_t(2)})
    if (op.arg(i).is_value() && t.value(op.arg(i).value).is_scalar) fail(int(i), "a scalar input as a bound is not supported (a number literal or a tensor is)");
  const DType dt = promoted(t, op, {0, 1, 2});
  if (is_bool(dt)) fail(0, "does not accept dtype b8");
  if (is_float(dt) && !is_float(a.dtype)) fail(0, "a float bound of an integer tensor is not supported");
  return {{dt, broadcast_shapes(t, op, {0, 1, 2})}};
}

// masked_fill(input, mask, value): mask b8, broadcast with input; value a number or a 0-dim tensor.
std::vector<OutType> masked_fill_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  const Value& mask = t.value(op.arg("mask").value);
  if (mask.dtype != DType::b8) fail(1, "the mask must be b8, not " + std::string(dtype_name(mask.dtype)));
  const Arg& value = op.arg("value");
  if (value.is_value() && t.value(value.value).is_scalar) fail(2, "a scalar input as the value is not supported (a number literal or a 0-dim tensor is)");
  if (value.is_value() && !t.value(value.value).shape.empty()) fail(2, "the value must be a number or a 0-dim tensor, not shape " + shape_str(t.value(value.value).shape));
  if (value.is_value() && is_float(t.value(value.value).dtype) && !is_float(a.dtype)) fail(2, "a float value tensor for an integer input is not supported");
  return {{a.dtype, broadcast_shapes(t, op, {0, 1})}};
}

// ---- lowerings --------------------------------------------------------------------------------

// addcmul / addcdiv: input + (value * tensor1) * tensor2 (or / tensor2), PyTorch's order, in f32
// for 16-bit results.
V lower_addc(G& g, const Op& op) {
  const Value& out = output_of(g, op);
  const DType dt = out.dtype;
  const Shape shape = out.shape;
  auto operand = [&](size_t i) { return upcast(g, operand_as(g, op.arg(i), dt, shape).value); };
  V t1 = operand(1);
  if (op.arg("value").as_double() != 1.0) t1 = mul(g, val(t1), num(op.arg("value").as_double()));
  V scaled = call(g, op.info->kind == OpKind::t_addcmul ? "prims.mul" : "prims.div", {val(t1), val(operand(2))});
  return downcast(g, add(g, val(operand(0)), val(scaled)), dt);
}

// clamp: where(x < min, min, x), then where(x > max, max, x): a bound's tie keeps x (PyTorch's
// gradient goes to x there), and NaN in x stays NaN.
V lower_clamp(G& g, const Op& op) {
  const Value& out = output_of(g, op);
  const DType dt = out.dtype;
  const Shape shape = out.shape;
  V x = operand_as(g, op.arg("input"), dt, shape).value;
  if (op.arg("min").kind != Arg::Kind::none) {
    Arg lo = operand_as(g, op.arg("min"), dt, shape);
    x = where(g, cmp(g, "prims.lt", val(x), lo), lo, val(x));
  }
  if (op.arg("max").kind != Arg::Kind::none) {
    Arg hi = operand_as(g, op.arg("max"), dt, shape);
    x = where(g, cmp(g, "prims.gt", val(x), hi), hi, val(x));
  }
  return x;
}

V lower_masked_fill(G& g, const Op& op) {
  const Value& out = output_of(g, op);
  const Shape shape = out.shape;
  V a = broadcast_to(g, op.arg("input").value, shape);
  V mask = broadcast_to(g, op.arg("mask").value, shape);
  return where(g, mask, operand_as(g, op.arg("value"), out.dtype, shape), val(a));
}

}  // namespace

#define TG_FAMILY_ROWS torch_pointwise_rows
#define TG_FAMILY "torch_pointwise"
#define TG_FAMILY_FILE "ops/torch_pointwise.def"
#include "ops/family_rows.inc"

}  // namespace tg
