// The torch-level losses' op-table rows, built from torch_losses.def: the shape rule, the lowering
// and the gradient rule of cross_entropy and nll_loss over class-index targets.
#include "ops/family.h"
#include "ops/torch_ops.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// cross_entropy(a [N, C], target [N] class indices, weight=None, size_average=None,
// ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0);
// nll_loss(a, target, weight=None, ignore_index=None, reduction="mean").
std::vector<OutType> class_loss_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  const Value& target = t.value(op.arg("target").value);
  if (a.shape.size() != 2) fail(0, "needs [N, C] scores, has shape " + shape_str(a.shape));
  if (target.dtype != DType::i64 && target.dtype != DType::i32) fail(1, "needs class indices (i64 or i32), not " + std::string(dtype_name(target.dtype)));
  if (target.shape != Shape{a.shape[0]}) fail(1, "needs shape [" + std::to_string(a.shape[0]) + "], has " + shape_str(target.shape));
  if (op.arg("weight").is_value()) {
    const Value& w = t.value(op.arg("weight").value);
    if (w.shape != Shape{a.shape[1]} || w.dtype != a.dtype) fail(2, "class weights must be " + std::string(dtype_name(a.dtype)) + "[" + std::to_string(a.shape[1]) + "]");
  }
  const bool ce = op.info->kind == OpKind::t_cross_entropy;
  if (ce && op.arg("size_average").kind != Arg::Kind::none) fail(3, "the deprecated size_average must be null");
  if (ce && op.arg("reduce").kind != Arg::Kind::none) fail(5, "the deprecated reduce must be null");
  const ClassLossArgs args = class_loss_args(op);
  const std::string& reduction = args.reduction;
  if (reduction != "mean" && reduction != "sum" && reduction != "none") fail(ce ? 6 : 4, "reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"");
  if (ce && (op.arg("label_smoothing").as_double() < 0 || op.arg("label_smoothing").as_double() > 1)) fail(7, "label_smoothing must be in [0, 1]");
  return {{a.dtype, reduction == "none" ? Shape{a.shape[0]} : Shape{}}};
}

// ---- cross_entropy and nll_loss with class-index targets ----

struct ClassLoss {
  Dim n, c;  // rows and classes, with their expressions
  V onehot;  // b8 [N, C]: the target class of each row
  V valid;   // b8 [N]: rows whose target is not ignore_index
  V weight = kNoValue;  // class weights [C] (upcast), or kNoValue
  std::string reduction;
  double smoothing;
};

ClassLoss class_loss_of(G& g, const Op& op) {
  ClassLoss l;
  Shape s = shape_of(g, op.arg("a").value);
  l.n = s[0];
  l.c = s[1];
  V target = op.arg("target").value;
  DType tt = value_of(g, target).dtype;
  V classes = call(g, "prims.iota", {Arg::of_dim(l.c), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(tt)});
  l.onehot = cmp(g, "prims.eq", val(broadcast(g, classes, s, {1})), val(broadcast(g, target, s, {0})));
  ClassLossArgs args = class_loss_args(op);
  l.valid = cmp(g, "prims.ne", val(target), Arg::of_int(args.ignore_index));
  l.reduction = args.reduction;
  l.smoothing = op.info->kind == OpKind::t_cross_entropy ? op.arg("label_smoothing").as_double() : 0.0;
  if (op.arg("weight").is_value()) l.weight = upcast(g, op.arg("weight").value);
  return l;
}

// v * (s / C), s the label smoothing: by that constant where C is one (as a static trace always
// computed it), else v * s / C, dividing by C as a size the kernel reads at run time.
V times_smoothing_share(G& g, V v, const ClassLoss& l) {
  if (!l.c.symbolic()) return mul(g, val(v), num(l.smoothing / double(l.c)));
  return div(g, val(mul(g, val(v), num(l.smoothing))), count(l.c));
}

// Each row's weight, w[target] ([N]; 0 for a target outside [0, C), such as an ignored one).
V target_weights(G& g, const ClassLoss& l) {
  V w = broadcast(g, l.weight, {l.n, l.c}, {1});
  return sum(g, where(g, l.onehot, val(w), num(0.0)), {1});
}

// What "mean" divides by: the rows not ignored, or with class weights the sum of their weights
// (PyTorch's weighted mean).
V mean_divisor(G& g, const ClassLoss& l, DType dt) {
  V counted = l.weight == kNoValue ? convert(g, l.valid, dt) : where(g, l.valid, val(target_weights(g, l)), num(0.0));
  return sum(g, counted, {0});
}

// Per-row losses -> the reduction: "none" as is, "sum", or "mean" over the rows not ignored.
V reduce_loss(G& g, const ClassLoss& l, V per_row) {
  if (l.reduction == "none") return per_row;
  V total = sum(g, per_row, {0});
  if (l.reduction == "sum") return total;
  return div(g, val(total), val(mean_divisor(g, l, value_of(g, per_row).dtype)));
}

// cross_entropy (log_softmax of the logits first) and nll_loss (log-probabilities given).
V lower_class_loss(G& g, const Op& op) {
  ClassLoss l = class_loss_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  V logp = a;  // nll_loss takes log-probabilities
  if (op.info->kind == OpKind::t_cross_entropy) {
    Shape s = shape_of(g, a);
    V shifted = sub(g, val(a), val(unreduce(g, call(g, "prims.amax", {val(a), int_list({1})}), s, {1})));
    V lse = unary(g, "prims.log", sum(g, unary(g, "prims.exp", shifted), {1}));
    logp = sub(g, val(shifted), val(unreduce(g, lse, s, {1})));
  }
  V loss = neg(g, sum(g, where(g, l.onehot, val(logp), num(0.0)), {1}));
  if (l.weight != kNoValue) loss = mul(g, val(loss), val(target_weights(g, l)));
  if (l.smoothing > 0) {  // (1 - s) * nll + s * mean over classes of -log p (weighted: -w_c log p_c)
    V per_class = l.weight == kNoValue ? logp : mul(g, val(logp), val(broadcast(g, l.weight, {l.n, l.c}, {1})));
    V smooth = div(g, val(neg(g, sum(g, per_class, {1}))), count(l.c));
    loss = add(g, val(mul(g, val(loss), num(1.0 - l.smoothing))), val(mul(g, val(smooth), num(l.smoothing))));
  }
  loss = where(g, l.valid, val(loss), num(0.0));
  return downcast(g, reduce_loss(g, l, loss), dt);
}

// The per-row gradient of a weighted class loss, before the row's share of the cotangent, with
// wt = w[target], W = sum of w, p = softmax(a):
//   cross_entropy: p * ((1 - s) wt + (s / C) W) - (1 - s) wt onehot - (s / C) w
//   nll_loss: -wt onehot
V weighted_class_loss_local(G& g, const Op& op, const ClassLoss& l, V a, V target) {
  const Shape s = {l.n, l.c};
  V wt = broadcast(g, target_weights(g, l), s, {0});
  V nll_part = mul(g, val(wt), val(target));
  if (op.info->kind == OpKind::t_nll_loss) return neg(g, nll_part);
  V shifted = sub(g, val(a), val(unreduce(g, call(g, "prims.amax", {val(a), int_list({1})}), s, {1})));
  V e = unary(g, "prims.exp", shifted);
  V p = div(g, val(e), val(unreduce(g, sum(g, e, {1}), s, {1})));
  V total = broadcast(g, sum(g, l.weight, {0}), s, {});
  V coefficient = add(g, val(mul(g, val(wt), num(1.0 - l.smoothing))), val(times_smoothing_share(g, total, l)));
  V q = add(g, val(mul(g, val(nll_part), num(1.0 - l.smoothing))), val(times_smoothing_share(g, broadcast(g, l.weight, s, {1}), l)));
  return sub(g, val(mul(g, val(p), val(coefficient))), val(q));
}

// cross_entropy: (softmax(a) - q) * w_row, q = (1 - s) onehot + s / C, w_row the row's share
// of the cotangent (0 for ignored rows); the softmax is recomputed from the input.
// nll_loss: -onehot * w_row.
Contributions class_loss_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  ClassLoss l = class_loss_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  Shape s = shape_of(g, a);
  V c = upcast(g, cot[0]);
  DType ct = value_of(g, c).dtype;
  V share = l.reduction == "mean" ? div(g, val(c), val(mean_divisor(g, l, ct))) : c;
  V per_row = l.reduction == "none" ? share : broadcast(g, share, {l.n}, {});
  per_row = broadcast(g, where(g, l.valid, val(per_row), num(0.0)), s, {0});
  V target = convert(g, l.onehot, ct);
  V ga;
  if (l.weight != kNoValue) {
    ga = weighted_class_loss_local(g, op, l, a, target);
    ga = mul(g, val(ga), val(per_row));
  } else if (op.info->kind == OpKind::t_cross_entropy) {
    V shifted = sub(g, val(a), val(unreduce(g, call(g, "prims.amax", {val(a), int_list({1})}), s, {1})));
    V e = unary(g, "prims.exp", shifted);
    V p = div(g, val(e), val(unreduce(g, sum(g, e, {1}), s, {1})));
    V q = target;
    if (l.smoothing > 0) {
      V kept = mul(g, val(target), num(1.0 - l.smoothing));
      q = l.c.symbolic() ? add(g, val(kept), val(times_smoothing_share(g, full(g, s, 1.0, ct), l))) : add(g, val(kept), num(l.smoothing / double(l.c)));
    }
    ga = mul(g, val(sub(g, val(p), val(q))), val(per_row));
  } else {
    ga = neg(g, mul(g, val(target), val(per_row)));
  }
  return {{op.arg("a").value, downcast(g, ga, dt)}};
}

}  // namespace

#define TG_FAMILY_ROWS torch_loss_rows
#define TG_FAMILY "torch_losses"
#define TG_FAMILY_FILE "ops/torch_losses.def"
#include "ops/family_rows.inc"

ClassLossArgs class_loss_args(const Op& op) {
  if (op.info->kind == OpKind::t_nll_loss)  // Thunder's ignore_index=None means -1
    return {op.arg("ignore_index").kind == Arg::Kind::none ? -1 : op.arg("ignore_index").integer, op.arg("reduction").text};
  return {op.arg("ignore_index").integer, op.arg("reduction").text};
}

}  // namespace tg
