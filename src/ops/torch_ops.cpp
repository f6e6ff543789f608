#include "ops/torch_ops.h"

#include <cmath>

#include "ops/distributed.h"
#include "ops/prim_vocabulary.h"
#include "ops/torch_elementwise.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace vocabulary;
using Contributions = std::vector<GradContribution>;

bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }
// Thunder computes 16-bit floats in f32 and rounds the result once.
V upcast(G& g, V a) { return is_16bit(value_of(g, a).dtype) ? convert(g, a, DType::f32) : a; }
V downcast(G& g, V a, DType to) { return value_of(g, a).dtype == to ? a : convert(g, a, to); }

int64_t wrapped(int64_t d, size_t rank) { return d < 0 ? d + int64_t(rank) : d; }

// The dims a torch.sum/mean dim argument names (null: all), sorted.
std::vector<int64_t> dims_of(const Arg& dim, size_t rank) {
  std::vector<int64_t> dims;
  if (dim.kind == Arg::Kind::none) {
    for (size_t d = 0; d < rank; ++d) dims.push_back(int64_t(d));
  } else if (dim.kind == Arg::Kind::integer) {
    dims.push_back(wrapped(dim.integer, rank));
  } else {
    for (const Arg& d : dim.items) dims.push_back(wrapped(d.integer, rank));
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

// softmax / log_softmax along `dim` (in f32 for 16-bit inputs), then to the result dtype.
// softmax / log_softmax(a, dim, dtype): with a dtype, PyTorch converts `a` first and computes in
// that dtype, so an f64 result is computed in f64, not widened from an f32 one.
V softmax_like(G& g, const Op& op, bool log) {
  V a = op.arg("a").value;
  if (op.arg("dtype").kind == Arg::Kind::dtype) a = downcast(g, a, op.arg("dtype").dtype);
  a = upcast(g, a);
  Shape shape = shape_of(g, a);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size());
  V m = unreduce(g, call(g, "prims.amax", {val(a), int_list({dim})}), shape, {dim});
  V shifted = sub(g, val(a), val(m));
  V e = unary(g, "prims.exp", shifted);
  V s = unreduce(g, sum(g, e, {dim}), shape, {dim});
  V y = log ? sub(g, val(shifted), val(unary(g, "prims.log", s))) : div(g, val(e), val(s));
  return downcast(g, y, g.trace().value(op.outs[0]).dtype);
}

// sigmoid(a) = 1 / (1 + exp(-a)), computed in a's dtype (already upcast).
V sigmoid_of(G& g, V a) { return unary(g, "prims.reciprocal", add(g, val(unary(g, "prims.exp", neg(g, a))), num(1.0))); }

// The element dtype an op computes its own gradient in, and the output's dtype.
struct Upcast {
  V value;
  DType original;
};
Upcast up(G& g, V v) { return {upcast(g, v), value_of(g, v).dtype}; }

constexpr double kSqrt2OverPi = 0.7978845608028654;   // sqrt(2 / pi)
constexpr double kInvSqrt2 = 0.7071067811865476;       // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.3989422804014327;     // 1 / sqrt(2 pi)

bool gelu_tanh(const Op& op) { return op.arg("approximate").text == "tanh"; }

// ---- layer_norm and rms_norm over the trailing normalized_shape dims ----

struct Norm {
  Shape shape;                   // of the input
  std::vector<int64_t> dims;     // normalized (trailing) dims
  std::vector<int64_t> row_dims; // the others
  double n;                      // elements per row
  bool rms;
  double eps;
};

Norm norm_of(G& g, const Op& op) {
  Norm m;
  m.shape = shape_of(g, op.arg("a").value);
  size_t k = op.arg("normalized_shape").items.size(), r = m.shape.size();
  m.n = 1;
  for (size_t d = 0; d < r; ++d) {
    if (d + k >= r) {
      m.dims.push_back(int64_t(d));
      m.n *= double(m.shape[d]);
    } else {
      m.row_dims.push_back(int64_t(d));
    }
  }
  m.rms = op.info->kind == OpKind::t_rms_norm;
  const Arg& eps = op.arg(m.rms ? 3 : 4);
  if (eps.is_number()) {
    m.eps = eps.as_double();
  } else {  // rms_norm's default: the machine epsilon of the input dtype
    DType t = value_of(g, op.arg("a").value).dtype;
    m.eps = t == DType::f64 ? 2.220446049250313e-16 : t == DType::f16 ? 0.0009765625 : t == DType::bf16 ? 0.0078125 : 1.1920929e-07;
  }
  return m;
}

// The normalized input x-hat (in f32 for 16-bit) and its per-element scale: rstd (layer_norm:
// (a - mean) * rstd) or 1/rms (rms_norm: a * rstd), as broadcast values.
struct Normalized {
  V xhat, rstd;
};
Normalized normalize(G& g, const Norm& m, V a) {
  V centered = a, var;
  if (m.rms) {
    var = div(g, val(sum(g, mul(g, val(a), val(a)), m.dims)), num(m.n));
  } else {
    auto vm = g.emit("prims.var_mean", {val(a), int_list(m.dims), num(0.0)});
    var = vm[0];
    centered = sub(g, val(a), val(unreduce(g, vm[1], m.shape, m.dims)));
  }
  V rstd = unary(g, "prims.rsqrt", add(g, val(unreduce(g, var, m.shape, m.dims)), num(m.eps)));
  return {mul(g, val(centered), val(rstd)), rstd};
}

// ---- cross_entropy and nll_loss with class-index targets ----

struct ClassLoss {
  int64_t n, c;
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
  V classes = call(g, "prims.iota", {Arg::of_int(l.c), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(tt)});
  l.onehot = cmp(g, "prims.eq", val(broadcast(g, classes, s, {1})), val(broadcast(g, target, s, {0})));
  ClassLossArgs args = class_loss_args(op);
  l.valid = cmp(g, "prims.ne", val(target), Arg::of_int(args.ignore_index));
  l.reduction = args.reduction;
  l.smoothing = op.info->kind == OpKind::t_cross_entropy ? op.arg("label_smoothing").as_double() : 0.0;
  if (op.arg("weight").is_value()) l.weight = upcast(g, op.arg("weight").value);
  return l;
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

// ---- lowerings: each appends the prims computing a torch-level op ----------------------------

V lower_relu(G& g, const Op& op) {
  V a = op.arg("a").value;
  return where(g, cmp(g, "prims.gt", val(a), num(0.0)), val(a), num(0.0));
}

V lower_sigmoid(G& g, const Op& op) {
  auto [a, dt] = up(g, op.arg("a").value);
  return downcast(g, sigmoid_of(g, a), dt);
}

V lower_silu(G& g, const Op& op) {
  auto [a, dt] = up(g, op.arg("a").value);
  return downcast(g, mul(g, val(a), val(sigmoid_of(g, a))), dt);
}

// 0.5 a (1 + tanh(sqrt(2 / pi) (a + 0.044715 a^3))), or 0.5 a (1 + erf(a / sqrt 2)).
V lower_gelu(G& g, const Op& op) {
  auto [a, dt] = up(g, op.arg("a").value);
  V inner;
  if (gelu_tanh(op)) {
    V cube = mul(g, val(mul(g, val(a), val(a))), val(a));
    V arg = mul(g, val(add(g, val(a), val(mul(g, val(cube), num(0.044715))))), num(kSqrt2OverPi));
    inner = unary(g, "prims.tanh", arg);
  } else {
    inner = unary(g, "prims.erf", mul(g, val(a), num(kInvSqrt2)));
  }
  V y = mul(g, val(mul(g, val(a), num(0.5))), val(add(g, val(inner), num(1.0))));
  return downcast(g, y, dt);
}

// The optional tensor argument i, or kNoValue.
V optional_value(const Arg& a) { return a.is_value() ? a.value : kNoValue; }

// a @ w^T (+ b over the last dim, unless b is kNoValue).
V linear(G& g, V a, V w, V b) {
  V y = matmul(g, a, call(g, "prims.transpose", {val(w), int_list({1, 0})}));
  if (b != kNoValue) {
    Shape shape = shape_of(g, y);
    y = add(g, val(y), val(broadcast(g, b, shape, {int64_t(shape.size()) - 1})));
  }
  return y;
}

V lower_linear(G& g, const Op& op) { return linear(g, op.arg("a").value, op.arg("w").value, optional_value(op.arg("bias"))); }

// reshape, unsqueeze and the layout-only prims: a reshape to the output's shape.
V reshape_to_output(G& g, const Op& op) {
  return call(g, "prims.reshape", {val(op.arg("a").value), int_list(g.trace().value(op.outs[0]).shape)});
}

V lower_permute(G& g, const Op& op) {
  std::vector<int64_t> perm = op.arg("dims").int_list();
  for (int64_t& d : perm) d = wrapped(d, perm.size());
  return call(g, "prims.transpose", {val(op.arg("a").value), int_list(perm)});
}

// transpose(a, d0, d1): the permutation swapping two dims.
V lower_transpose(G& g, const Op& op) {
  size_t rank = shape_of(g, op.arg("a").value).size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(i);
  std::swap(perm[size_t(wrapped(op.arg("dim0").integer, rank))], perm[size_t(wrapped(op.arg("dim1").integer, rank))]);
  return call(g, "prims.transpose", {val(op.arg("a").value), int_list(perm)});
}

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
    int64_t n = 1;
    for (int64_t d : dims) n *= shape[size_t(d)];
    s = div(g, val(s), num(double(n)));
  }
  s = downcast(g, s, out_dtype);
  return reshape(g, s, g.trace().value(op.outs[0]).shape);  // keepdim: size-1 dims back
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
    V smooth = div(g, val(neg(g, sum(g, per_class, {1}))), num(double(l.c)));
    loss = add(g, val(mul(g, val(loss), num(1.0 - l.smoothing))), val(mul(g, val(smooth), num(l.smoothing))));
  }
  loss = where(g, l.valid, val(loss), num(0.0));
  return downcast(g, reduce_loss(g, l, loss), dt);
}

V lower_cat(G& g, const Op& op) {
  std::vector<Arg> items = op.arg("tensors").items;
  size_t rank = shape_of(g, items[0].value).size();
  return call(g, "prims.cat", {Arg::of_list(items), Arg::of_int(wrapped(op.arg("dim").integer, rank))});
}

// split: one slice along the dim per output, each as long as that output.
std::vector<ValueId> lower_split(G& g, const Op& op) {
  V a = op.arg("a").value;
  Shape shape = shape_of(g, a);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size()), at = 0;
  std::vector<ValueId> pieces;
  for (ValueId out : op.outs) {
    int64_t len = g.trace().value(out).shape[size_t(dim)];
    std::vector<int64_t> start(shape.size(), 0), end = shape;
    start[size_t(dim)] = at;
    end[size_t(dim)] = at + len;
    pieces.push_back(call(g, "prims.slice_prim", {val(a), int_list(start), int_list(end), Arg{}}));
    at += len;
  }
  return pieces;
}

// var(a, dim, unbiased, keepdim, *, correction): correction wins over unbiased; default 1.
V lower_var(G& g, const Op& op) {
  const DType out_dtype = g.trace().value(op.outs[0]).dtype;
  V a = op.arg("a").value;
  Shape shape = shape_of(g, a);
  double correction = op.arg("correction").is_number() ? op.arg("correction").as_double() : op.arg("unbiased").is_number() ? double(op.arg("unbiased").as_double() != 0) : 1.0;
  V acc = upcast(g, a);
  V v = call(g, "prims.var", {val(acc), int_list(dims_of(op.arg("dim"), shape.size())), num(correction)});
  return reshape(g, downcast(g, v, out_dtype), g.trace().value(op.outs[0]).shape);
}

// b8 [ids, num_embeddings]: row i marks the table row id i reads. `skip_padding`: not the
// padding_idx row (it gets no gradient).
V embedding_onehot(G& g, const Op& op, bool skip_padding) {
  V ids = op.arg("a").value;
  const int64_t n = numel(shape_of(g, ids)), rows = shape_of(g, op.arg("weight").value)[0];
  V classes = call(g, "prims.iota", {Arg::of_int(rows), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(value_of(g, ids).dtype)});
  V onehot = cmp(g, "prims.eq", val(broadcast(g, reshape(g, ids, {n}), {n, rows}, {0})), val(broadcast(g, classes, {n, rows}, {1})));
  if (!skip_padding || op.arg("padding_idx").kind == Arg::Kind::none) return onehot;
  const int64_t padding = op.arg("padding_idx").integer < 0 ? op.arg("padding_idx").integer + rows : op.arg("padding_idx").integer;
  return call(g, "prims.bitwise_and", {val(onehot), val(broadcast(g, cmp(g, "prims.ne", val(classes), Arg::of_int(padding)), {n, rows}, {1}))});
}

// One-hot rows times the table: exact (one nonzero term per output); the weight gradient is
// onehot^T @ g, the scatter-add embedding needs (embedding_gradient).
V lower_embedding(G& g, const Op& op) {
  V w = op.arg("weight").value;
  V rows = matmul(g, convert(g, embedding_onehot(g, op, false), value_of(g, w).dtype), w);
  return reshape(g, rows, g.trace().value(op.outs[0]).shape);
}

// enable_gqa: k's (v's) heads repeated so each serves its group of consecutive q heads, as
// repeat_interleave(Hq / Hk, dim=-3) makes them: broadcast over a new group dim, then merged.
V repeat_heads(G& g, const Op& op, V kv) {
  const Shape qs = shape_of(g, op.arg("query").value), s = shape_of(g, kv);
  const size_t r = s.size();
  if (!op.arg("enable_gqa").boolean || r < 3 || s[r - 3] == qs[r - 3]) return kv;
  Shape spread = s;
  spread.insert(spread.begin() + ptrdiff_t(r - 2), qs[r - 3] / s[r - 3]);
  std::vector<int64_t> dims;
  for (size_t d = 0; d < r; ++d) dims.push_back(int64_t(d + 2 < r ? d : d + 1));
  Shape merged = s;
  merged[r - 3] = qs[r - 3];
  return reshape(g, broadcast(g, kv, spread, dims), merged);
}

// Attention logits [..., L, S] where row i sees columns j <= i (is_causal), the rest -inf.
V causal(G& g, V s) {
  const Shape ss = shape_of(g, s);
  const int64_t r = int64_t(ss.size()), l = ss[size_t(r - 2)], sl = ss[size_t(r - 1)];
  V rows = call(g, "prims.iota", {Arg::of_int(l), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V cols = call(g, "prims.iota", {Arg::of_int(sl), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V keep = cmp(g, "prims.ge", val(broadcast(g, rows, {l, sl}, {0})), val(broadcast(g, cols, {l, sl}, {1})));
  return where(g, broadcast(g, keep, ss, {r - 2, r - 1}), val(s), num(-INFINITY));
}

// The attention weights: softmax of the logits over their last dim.
V attention_softmax(G& g, V s) {
  const Shape ss = shape_of(g, s);
  const int64_t last = int64_t(ss.size()) - 1;
  V mx = unreduce(g, call(g, "prims.amax", {val(s), int_list({last})}), ss, {last});
  V e = unary(g, "prims.exp", sub(g, val(s), val(mx)));
  return div(g, val(e), val(unreduce(g, sum(g, e, {last}), ss, {last})));
}

// scaled_dot_product_attention's logits q @ k^T * scale, causal (row i sees columns j <= i) and
// masked by attn_mask (a b8 mask keeps, a float mask adds).
V attention_logits(G& g, const Op& op) {
  V q = op.arg("query").value, k = repeat_heads(g, op, op.arg("key").value);
  const Shape qs = shape_of(g, q);
  size_t r = qs.size();
  double scale = op.arg("scale").is_number() ? op.arg("scale").as_double() : 1.0 / std::sqrt(double(qs[r - 1]));
  V s = mul(g, val(matmul(g, q, transpose_last_two(g, k))), num(scale));
  if (op.arg("is_causal").boolean) s = causal(g, s);
  if (op.arg("attn_mask").is_value()) {
    V m = op.arg("attn_mask").value;
    s = value_of(g, m).dtype == DType::b8 ? where(g, m, val(s), num(-INFINITY)) : add(g, val(s), val(m));
  }
  return s;
}

// Attention weights p dropped with dropout_p, drawn as dropout draws from the seed, offset and
// stream src/lower/rng.cpp bound to the op.
V attention_dropout(G& g, const Op& op, V p, double dropout_p) {
  TG_CHECK(op.arg("seed").kind != Arg::Kind::none, "attention dropout reached lowering without a bound seed");
  V r = call(g, "prims.uniform_philox", {int_list(shape_of(g, p)), num(0.0), num(1.0), device_of(g), Arg::of_dtype(DType::f32), op.arg("seed"),
                                         op.arg("offset"), op.arg("stream")});
  V keep = convert(g, cmp(g, "prims.lt", val(r), num(1.0 - dropout_p)), value_of(g, p).dtype);
  return mul(g, val(mul(g, val(p), val(keep))), num(1.0 / (1.0 - dropout_p)));
}

// softmax(logits) @ v, the weights dropped with dropout_p.
V lower_sdpa(G& g, const Op& op) {
  V p = attention_softmax(g, attention_logits(g, op));
  const double dropout_p = op.arg("dropout_p").as_double();
  if (dropout_p > 0.0) p = attention_dropout(g, op, p, dropout_p);
  return matmul(g, p, repeat_heads(g, op, op.arg("value").value));
}

// Thunder's decomposition: keep where a uniform draw is below 1 - p, scale by 1 / (1 - p). The
// draws come from the seed and offset the RNG pass bound (src/lower/rng.cpp).
V lower_dropout(G& g, const Op& op) {
  V a = op.arg("a").value;
  double p = op.arg("p").as_double();
  DType dt = value_of(g, a).dtype;
  if (!op.arg("training").boolean || p == 0.0) return a;
  if (p == 1.0) return mul(g, val(a), num(0.0));
  TG_CHECK(op.arg("seed").kind != Arg::Kind::none, "dropout reached lowering without a bound seed");
  V r = call(g, "prims.uniform_philox", {int_list(shape_of(g, a)), num(0.0), num(1.0), device_of(g), Arg::of_dtype(DType::f32), op.arg("seed"),
                                         op.arg("offset"), op.arg("stream")});
  V keep = cmp(g, "prims.lt", val(r), num(1.0 - p));
  return mul(g, val(mul(g, val(a), val(convert(g, keep, dt)))), num(1.0 / (1.0 - p)));
}

// layer_norm and rms_norm: x-hat, times the weight, plus the bias (layer_norm).
V lower_norm(G& g, const Op& op) {
  Norm m = norm_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  V y = normalize(g, m, a).xhat;
  if (op.arg("weight").is_value()) y = mul(g, val(y), val(broadcast(g, upcast(g, op.arg("weight").value), m.shape, m.dims)));
  if (!m.rms && op.arg("bias").is_value()) y = add(g, val(y), val(broadcast(g, upcast(g, op.arg("bias").value), m.shape, m.dims)));
  return downcast(g, y, dt);
}

// ---- torch calls real models make (docs/torch-ops.md) ----

// A tensor broadcast to `shape` as PyTorch broadcasts (aligned at the last dim).
V broadcast_to(G& g, V v, const Shape& shape) {
  const Shape s = shape_of(g, v);
  if (s == shape) return v;
  std::vector<int64_t> dims(s.size());
  for (size_t k = 0; k < s.size(); ++k) dims[k] = int64_t(shape.size() - s.size() + k);
  return broadcast(g, v, shape, dims);
}

// A tensor argument converted to `dt` and broadcast to `shape`; a number literal in dt's kind.
Arg operand_as(G& g, const Arg& a, DType dt, const Shape& shape) {
  if (a.is_value()) return val(broadcast_to(g, downcast(g, a.value, dt), shape));
  if (is_float(dt)) return num(a.as_double());
  if (is_bool(dt)) return Arg::of_bool(a.as_double() != 0.0);
  return Arg::of_int(a.kind == Arg::Kind::real ? int64_t(std::trunc(a.real)) : int64_t(a.as_double()));
}

const Value& output_of(G& g, const Op& op, size_t i = 0) { return g.trace().value(op.outs[i]); }

// addmm / baddbmm: beta * input + alpha * (a @ b). With beta 0 input is not read (PyTorch
// ignores its NaNs too), so it gets no gradient.
V lower_addmm(G& g, const Op& op) {
  const bool addmm = op.info->kind == OpKind::t_addmm;
  V y = matmul(g, op.arg(addmm ? "mat1" : "batch1").value, op.arg(addmm ? "mat2" : "batch2").value);
  const double beta = op.arg("beta").as_double(), alpha = op.arg("alpha").as_double();
  if (alpha != 1.0) y = mul(g, val(y), num(alpha));
  if (beta == 0.0) return y;
  V in = broadcast_to(g, op.arg("input").value, shape_of(g, y));
  if (beta != 1.0) in = mul(g, val(in), num(beta));
  return add(g, val(in), val(y));
}

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
  const int64_t d = wrapped(op.arg("dim").integer, shape.size());
  V index = call(g, is_max ? "prims.argmax" : "prims.argmin", {val(a), Arg::of_int(d)});
  V positions = call(g, "prims.iota", {Arg::of_int(shape[size_t(d)]), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V at_index = cmp(g, "prims.eq", val(broadcast(g, positions, shape, {d})), val(unreduce(g, index, shape, {d})));
  const DType dt = value_of(g, a).dtype;
  V values = sum(g, where(g, at_index, val(a), is_float(dt) ? num(0.0) : Arg::of_int(0)), {d});
  const Shape out = output_of(g, op).shape;
  return {reshape(g, values, out), reshape(g, index, out)};
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

// tril keeps column - row <= diagonal, triu column - row >= diagonal; the rest is fill_value (0).
V lower_triangle(G& g, const Op& op) {
  V a = op.arg("input").value;
  const Shape shape = shape_of(g, a);
  const int64_t r = int64_t(shape.size()), rows = shape[size_t(r - 2)], cols = shape[size_t(r - 1)];
  auto positions = [&](int64_t n, int64_t dim) {
    V i = call(g, "prims.iota", {Arg::of_int(n), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
    return broadcast(g, i, {rows, cols}, {dim});
  };
  V offset = sub(g, val(positions(cols, 1)), val(positions(rows, 0)));
  V keep = cmp(g, op.info->kind == OpKind::t_tril ? "prims.le" : "prims.ge", val(offset), op.arg("diagonal"));
  const DType dt = value_of(g, a).dtype;
  Arg fill = op.arg("fill_value").kind == Arg::Kind::none ? Arg::of_int(0) : op.arg("fill_value");
  return where(g, broadcast(g, keep, shape, {r - 2, r - 1}), val(a), operand_as(g, fill, dt, shape));
}

// cumsum: out[.., k, ..] = sum over j <= k of a[.., j, ..], as a copy of a spread over a new dim
// j after k, masked and summed over j (one row reduction; its gradient is the reverse cumulative
// sum, through the prims' rules). In f32 for 16-bit floats, as PyTorch accumulates.
V lower_cumsum(G& g, const Op& op) {
  const DType dt = output_of(g, op).dtype;
  V a = upcast(g, downcast(g, op.arg("input").value, dt));
  const Shape shape = shape_of(g, a);
  if (shape.empty()) return downcast(g, a, dt);
  const int64_t d = wrapped(op.arg("dim").integer, shape.size()), n = shape[size_t(d)];
  Shape spread_shape = shape;
  spread_shape.insert(spread_shape.begin() + d + 1, n);
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < int64_t(shape.size()); ++k) dims.push_back(k < d ? k : k + 1);
  V spread = broadcast(g, a, spread_shape, dims);
  V positions = call(g, "prims.iota", {Arg::of_int(n), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V keep = cmp(g, "prims.le", val(broadcast(g, positions, spread_shape, {d + 1})), val(broadcast(g, positions, spread_shape, {d})));
  V masked = where(g, keep, val(spread), is_float(value_of(g, a).dtype) ? num(0.0) : Arg::of_int(0));
  return downcast(g, call(g, "prims.sum", {val(masked), int_list({d + 1})}), dt);
}

// normalize (p=2): a / max(sqrt(sum(a^2)), eps). A zero norm is 0 without a sqrt of 0, whose
// infinite derivative would make the gradient NaN (PyTorch's norm gives 0 there); a norm below
// eps gets no gradient, as clamp_min's.
V lower_normalize(G& g, const Op& op) {
  auto [a, dt] = up(g, op.arg("input").value);
  const Shape shape = shape_of(g, a);
  const std::vector<int64_t> dims = dims_of(op.arg("dim"), shape.size());
  const double eps = op.arg("eps").as_double();
  V squares = sum(g, mul(g, val(a), val(a)), dims);
  V nonzero = cmp(g, "prims.gt", val(squares), num(0.0));
  V norm = where(g, nonzero, val(unary(g, "prims.sqrt", where(g, nonzero, val(squares), num(1.0)))), num(0.0));
  V denom = where(g, cmp(g, "prims.lt", val(norm), num(eps)), num(eps), val(norm));
  return downcast(g, div(g, val(a), val(unreduce(g, denom, shape, dims))), dt);
}

// ---- multi_head_attention_forward (nn.MultiheadAttention), as PyTorch's function computes it ----

struct MhaShape {
  int64_t l, s, n, heads, head_dim;  // n is 1 for unbatched inputs
};

MhaShape mha_shape_of(G& g, const Op& op) {
  const Shape q = shape_of(g, op.arg("query").value);
  const int64_t heads = op.arg("num_heads").integer;
  return {q[0], shape_of(g, op.arg("key").value)[0], q.size() == 3 ? q[1] : 1, heads, q.back() / heads};
}

// Rows [from, from + n) of a weight or a bias (dim 0).
V rows_of(G& g, V w, int64_t from, int64_t n) {
  const Shape s = shape_of(g, w);
  std::vector<int64_t> start(s.size(), 0), end = s;
  start[0] = from;
  end[0] = from + n;
  return call(g, "prims.slice_prim", {val(w), int_list(start), int_list(end), Arg{}});
}

// The in-projection of query, key or value (which = 0, 1, 2), split into heads: [N, heads, len,
// head_dim]. Its weight is its third of in_proj_weight or its own, its bias its third of
// in_proj_bias.
V mha_in_projection(G& g, const Op& op, const MhaShape& m, size_t which) {
  const int64_t e = m.heads * m.head_dim;
  constexpr std::string_view kInputs[] = {"query", "key", "value"}, kWeights[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
  V x = op.arg(kInputs[which]).value;
  V w = op.arg("use_separate_proj_weight").boolean ? op.arg(kWeights[which]).value
                                                     : rows_of(g, op.arg("in_proj_weight").value, int64_t(which) * e, e);
  V b = op.arg("in_proj_bias").is_value() ? rows_of(g, op.arg("in_proj_bias").value, int64_t(which) * e, e) : kNoValue;
  V y = linear(g, x, w, b);
  const int64_t len = shape_of(g, x)[0];
  return call(g, "prims.transpose", {val(reshape(g, y, {len, m.n, m.heads, m.head_dim})), int_list({1, 2, 0, 3})});
}

// The masks on the logits [N, heads, L, S] as PyTorch's function reads them: a b8 mask's true is
// not attended (-inf), a float mask is added; attn_mask [L, S] or [N * heads, L, S],
// key_padding_mask [N, S]. With is_causal as the only hint (no key_padding_mask, no weights
// wanted), the causal mask replaces attn_mask, as PyTorch hands it to SDPA.
V mha_masked(G& g, const Op& op, const MhaShape& m, V s) {
  if (mha_causal_replaces_mask(op)) return causal(g, s);
  const Shape ss = shape_of(g, s);
  auto apply = [&](V mask) { return value_of(g, mask).dtype == DType::b8 ? where(g, mask, num(-INFINITY), val(s)) : add(g, val(s), val(mask)); };
  if (op.arg("attn_mask").is_value()) {
    V mask = op.arg("attn_mask").value;
    s = apply(shape_of(g, mask).size() == 2 ? broadcast(g, mask, ss, {2, 3}) : reshape(g, mask, ss));
  }
  if (op.arg("key_padding_mask").is_value())
    s = apply(broadcast(g, reshape(g, op.arg("key_padding_mask").value, {m.n, m.s}), ss, {0, 3}));
  return s;
}

// softmax(q k^T / sqrt(head_dim) + masks) v per head (the softmax dropped with dropout_p in
// training), the heads merged back and out-projected; with need_weights also the softmax as
// dropped, averaged over heads (in f32 for 16-bit) or per head.
std::vector<ValueId> lower_mha(G& g, const Op& op) {
  const MhaShape m = mha_shape_of(g, op);
  V q = mha_in_projection(g, op, m, 0), k = mha_in_projection(g, op, m, 1), v = mha_in_projection(g, op, m, 2);
  V s = mul(g, val(matmul(g, q, transpose_last_two(g, k))), num(1.0 / std::sqrt(double(m.head_dim))));
  V p = attention_softmax(g, mha_masked(g, op, m, s));
  const double dropout_p = op.arg("dropout_p").as_double();
  if (op.arg("training").boolean && dropout_p > 0.0) p = attention_dropout(g, op, p, dropout_p);
  V heads = call(g, "prims.transpose", {val(matmul(g, p, v)), int_list({2, 0, 1, 3})});  // [L, N, heads, head_dim]
  V merged = reshape(g, heads, {m.l, m.n, m.heads * m.head_dim});
  V y = linear(g, merged, op.arg("out_proj_weight").value, optional_value(op.arg("out_proj_bias")));
  y = reshape(g, y, output_of(g, op, 0).shape);
  if (!op.arg("need_weights").boolean) return {y};
  V weights = p;
  if (op.arg("average_attn_weights").boolean)
    weights = downcast(g, div(g, val(sum(g, upcast(g, p), {1})), num(double(m.heads))), value_of(g, p).dtype);
  return {y, reshape(g, weights, output_of(g, op, 1).shape)};
}

// A patch convolution (kernel == stride, no padding; op_table.cpp's convolution_rule checks the
// rest): x [B, C, S1..Sn] is cut to whole patches, reshaped to [B, C, O1, K1, .., On, Kn],
// permuted to [B, O1..On, C, K1..Kn] and flattened to one row per patch, which multiplies the
// weight [F, C*K1*..*Kn] transposed; then + bias, and back to [B, F, O1..On]. Its gradient is
// the prims' (matmul, transpose, reshape, slice).
V lower_convolution(G& g, const Op& op) {
  V x = op.arg(0).value, w = op.arg("weight").value;  // x: conv1d/2d's input, prims.convolution's a
  const Shape in = shape_of(g, x), ws = shape_of(g, w), out = output_of(g, op).shape;
  const int64_t n = int64_t(in.size()) - 2;
  Shape whole = in, patches{in[0], in[1]};
  std::vector<int64_t> perm{0}, start(in.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    whole[size_t(k + 2)] = out[size_t(k + 2)] * ws[size_t(k + 2)];
    patches.push_back(out[size_t(k + 2)]);
    patches.push_back(ws[size_t(k + 2)]);
    perm.push_back(2 + 2 * k);  // the patch index along spatial dim k
  }
  perm.push_back(1);
  for (int64_t k = 0; k < n; ++k) perm.push_back(3 + 2 * k);  // the offset inside the patch
  if (whole != in) x = call(g, "prims.slice_prim", {val(x), int_list(start), int_list(whole)});
  V rows = call(g, "prims.transpose", {val(reshape(g, x, patches)), int_list(perm)});
  const int64_t patch_size = numel(ws) / ws[0];
  V y = matmul(g, reshape(g, rows, {numel(out) / ws[0], patch_size}),
               call(g, "prims.transpose", {val(reshape(g, w, {ws[0], patch_size})), int_list({1, 0})}));
  if (op.arg("bias").is_value()) y = add(g, val(y), val(broadcast(g, op.arg("bias").value, shape_of(g, y), {1})));
  Shape channels_last{out[0]};
  for (int64_t k = 0; k < n; ++k) channels_last.push_back(out[size_t(k + 2)]);
  channels_last.push_back(ws[0]);
  std::vector<int64_t> to_channels_first{0, n + 1};
  for (int64_t k = 0; k < n; ++k) to_channels_first.push_back(k + 1);
  return call(g, "prims.transpose", {val(reshape(g, y, channels_last)), int_list(to_channels_first)});
}

// ---- gradient rules of their own -------------------------------------------------------------

// Softmax family: read the output only. d softmax: y * (g - sum(g * y)); d log_softmax:
// g - exp(y) * sum(g).
Contributions softmax_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto [y, dt] = up(g, op.outs[0]);
  V c = upcast(g, cot[0]);
  Shape shape = shape_of(g, y);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size());
  V ga;
  if (op.info->kind == OpKind::t_softmax) {
    V dot = unreduce(g, sum(g, mul(g, val(c), val(y)), {dim}), shape, {dim});
    ga = mul(g, val(y), val(sub(g, val(c), val(dot))));
  } else {
    V total = unreduce(g, sum(g, c, {dim}), shape, {dim});
    ga = sub(g, val(c), val(mul(g, val(unary(g, "prims.exp", y)), val(total))));
  }
  return {{op.arg("a").value, downcast(g, ga, value_of(g, op.arg("a").value).dtype)}};
}

// Reads the output: where(y > 0, g, 0).
Contributions relu_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  return {{op.arg("a").value, where(g, cmp(g, "prims.gt", val(op.outs[0]), num(0.0)), val(cot[0]), num(0.0))}};
}

// Read the output: sigmoid g * y * (1 - y), tanh g * (1 - y^2).
Contributions sigmoid_or_tanh_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto [y, dt] = up(g, op.outs[0]);
  V c = upcast(g, cot[0]);
  V local = op.info->kind == OpKind::t_sigmoid ? mul(g, val(y), one_minus(g, val(y))) : sub(g, num(1.0), val(mul(g, val(y), val(y))));
  return {{op.arg("a").value, downcast(g, mul(g, val(c), val(local)), dt)}};
}

// Reads the input: g * s * (1 + a * (1 - s)), s = sigmoid(a).
Contributions silu_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto [a, dt] = up(g, op.arg("a").value);
  V s = sigmoid_of(g, a);
  V local = mul(g, val(s), val(add(g, val(mul(g, val(a), one_minus(g, val(s)))), num(1.0))));
  return {{op.arg("a").value, downcast(g, mul(g, val(upcast(g, cot[0])), val(local)), dt)}};
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

// Reads the input.
Contributions gelu_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto [a, dt] = up(g, op.arg("a").value);
  V local = gelu_tanh(op) ? gelu_tanh_derivative(g, a) : gelu_erf_derivative(g, a);
  return {{op.arg("a").value, downcast(g, mul(g, val(upcast(g, cot[0])), val(local)), dt)}};
}

// ga = g @ w (no transpose of w); gw = g^T @ a over all rows; gb = sum of g.
Contributions linear_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value, w = op.arg("w").value, c = cot[0];
  Shape as = shape_of(g, a), cs = shape_of(g, c);
  int64_t rows = numel(as) / as.back();
  V c2 = reshape(g, c, {rows, cs.back()}), a2 = reshape(g, a, {rows, as.back()});
  Contributions out = {{a, matmul(g, c, w)}, {w, matmul(g, call(g, "prims.transpose", {val(c2), int_list({1, 0})}), a2)}};
  if (op.arg("bias").is_value()) out.emplace_back(op.arg("bias").value, sum(g, c2, {0}));
  return out;
}

// layer_norm / rms_norm: read the input and the weight, and recompute the row statistics (a
// cheap row reduction the backward fuses) instead of saving them or x-hat:
//   gx = rstd * (g' - mean(g') - xhat * mean(g' * xhat)), g' = g * w  (rms_norm: no mean(g'))
//   gw = sum over rows of g * xhat;  gb = sum over rows of g
Contributions norm_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  Norm m = norm_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  V c = upcast(g, cot[0]);
  Normalized x = normalize(g, m, a);
  const Arg& w = op.arg("weight");
  V gs = w.is_value() ? mul(g, val(c), val(broadcast(g, upcast(g, w.value), m.shape, m.dims))) : c;
  auto row_mean = [&](V v) { return unreduce(g, div(g, val(sum(g, v, m.dims)), num(m.n)), m.shape, m.dims); };
  V inner = sub(g, val(gs), val(mul(g, val(x.xhat), val(row_mean(mul(g, val(gs), val(x.xhat)))))));
  if (!m.rms) inner = sub(g, val(inner), val(row_mean(gs)));
  Contributions out = {{op.arg("a").value, downcast(g, mul(g, val(x.rstd), val(inner)), dt)}};
  if (w.is_value()) out.emplace_back(w.value, downcast(g, sum(g, mul(g, val(c), val(x.xhat)), m.row_dims), dt));
  if (!m.rms && op.arg("bias").is_value()) out.emplace_back(op.arg("bias").value, downcast(g, sum(g, c, m.row_dims), dt));
  return out;
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
  const double k = l.smoothing / double(l.c);
  V total = broadcast(g, sum(g, l.weight, {0}), s, {});
  V coefficient = add(g, val(mul(g, val(wt), num(1.0 - l.smoothing))), val(mul(g, val(total), num(k))));
  V q = add(g, val(mul(g, val(nll_part), num(1.0 - l.smoothing))), val(mul(g, val(broadcast(g, l.weight, s, {1})), num(k))));
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
    V q = l.smoothing > 0 ? add(g, val(mul(g, val(target), num(1.0 - l.smoothing))), num(l.smoothing / double(l.c))) : target;
    ga = mul(g, val(sub(g, val(p), val(q))), val(per_row));
  } else {
    ga = neg(g, mul(g, val(target), val(per_row)));
  }
  return {{op.arg("a").value, downcast(g, ga, dt)}};
}

// Reads the ids: onehot^T @ g, the padding_idx row left out (PyTorch gives it no gradient).
Contributions embedding_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V w = op.arg("weight").value;
  const int64_t dim = shape_of(g, w)[1];
  V c = reshape(g, cot[0], {numel(shape_of(g, cot[0])) / dim, dim});
  V onehot = convert(g, embedding_onehot(g, op, true), value_of(g, w).dtype);
  return {{w, matmul(g, call(g, "prims.transpose", {val(onehot), int_list({1, 0})}), c)}};
}

}  // namespace

std::vector<ValueId> lower_torch_op(GradBuilder& g, const Op& op) {
  switch (op.info->kind) {
    case OpKind::t_softmax: return {softmax_like(g, op, false)};
    case OpKind::t_log_softmax: return {softmax_like(g, op, true)};
    case OpKind::t_relu: return {lower_relu(g, op)};
    case OpKind::t_sigmoid: return {lower_sigmoid(g, op)};
    case OpKind::t_tanh: return {unary(g, "prims.tanh", op.arg("a").value)};
    case OpKind::t_silu: return {lower_silu(g, op)};
    case OpKind::t_gelu: return {lower_gelu(g, op)};
    case OpKind::t_linear:
    case OpKind::t_prim_linear: return {lower_linear(g, op)};
    case OpKind::t_matmul: return {matmul(g, op.arg("a").value, op.arg("b").value)};
    case OpKind::t_reshape:
    case OpKind::t_unsqueeze:
    case OpKind::shallow_copy:
    case OpKind::stride_order: return {reshape_to_output(g, op)};
    case OpKind::t_permute: return {lower_permute(g, op)};
    case OpKind::t_transpose: return {lower_transpose(g, op)};
    case OpKind::t_sum:
    case OpKind::t_mean: return {lower_sum_or_mean(g, op)};
    case OpKind::t_cross_entropy:
    case OpKind::t_nll_loss: return {lower_class_loss(g, op)};
    case OpKind::t_cat: return {lower_cat(g, op)};
    case OpKind::t_split: return lower_split(g, op);
    case OpKind::t_var: return {lower_var(g, op)};
    case OpKind::t_embedding: return {lower_embedding(g, op)};
    case OpKind::t_sdpa: return {lower_sdpa(g, op)};
    case OpKind::t_dropout: return {lower_dropout(g, op)};
    case OpKind::t_addmm:
    case OpKind::t_baddbmm: return {lower_addmm(g, op)};
    case OpKind::t_bmm: return {matmul(g, op.arg("input").value, op.arg("mat2").value)};
    case OpKind::t_addcmul:
    case OpKind::t_addcdiv: return {lower_addc(g, op)};
    case OpKind::t_max:
    case OpKind::t_min: return lower_extremum(g, op);
    case OpKind::t_clamp: return {lower_clamp(g, op)};
    case OpKind::t_masked_fill: return {lower_masked_fill(g, op)};
    case OpKind::t_tril:
    case OpKind::t_triu: return {lower_triangle(g, op)};
    case OpKind::t_cumsum: return {lower_cumsum(g, op)};
    case OpKind::t_normalize: return {lower_normalize(g, op)};
    case OpKind::t_mha: return lower_mha(g, op);
    case OpKind::t_conv1d:
    case OpKind::t_conv2d:
    case OpKind::t_convolution: return {lower_convolution(g, op)};
    case OpKind::t_layer_norm:
    case OpKind::t_rms_norm: return {lower_norm(g, op)};
    case OpKind::t_synchronize: case OpKind::t_wait: case OpKind::t_pack: case OpKind::t_unpack:
    case OpKind::t_pack_for_fsdp: case OpKind::t_unpack_for_fsdp: return lower_distributed_op(g, op);
    default: break;
  }
  throw InternalError("no lowering for " + op.symbol);
}

GradRule torch_gradient(OpKind kind) {
  switch (kind) {
    case OpKind::t_softmax:
    case OpKind::t_log_softmax: return softmax_gradient;
    case OpKind::t_relu: return relu_gradient;
    case OpKind::t_sigmoid:
    case OpKind::t_tanh: return sigmoid_or_tanh_gradient;
    case OpKind::t_silu: return silu_gradient;
    case OpKind::t_gelu: return gelu_gradient;
    case OpKind::t_linear:
    case OpKind::t_prim_linear: return linear_gradient;
    case OpKind::t_layer_norm:
    case OpKind::t_rms_norm: return norm_gradient;
    case OpKind::t_cross_entropy:
    case OpKind::t_nll_loss: return class_loss_gradient;
    case OpKind::t_embedding: return embedding_gradient;
    default:
      return nullptr;  // differentiated through its lowering (shape ops, sums, matmul: the prims' rules)
  }
}

std::string_view torch_gradient_saves(OpKind kind) {
  switch (kind) {
    case OpKind::t_softmax: case OpKind::t_log_softmax: case OpKind::t_relu: case OpKind::t_sigmoid: case OpKind::t_tanh:
      return "output";
    case OpKind::t_silu: case OpKind::t_gelu: case OpKind::t_linear: case OpKind::t_prim_linear: case OpKind::t_layer_norm: case OpKind::t_rms_norm:
    case OpKind::t_cross_entropy: case OpKind::t_nll_loss: case OpKind::t_embedding:
      return "inputs";
    default:
      return "";
  }
}

}  // namespace tg
