// Attention's and dropout's op-table rows, built from attention_ops.def: shape rules and lowerings
// (scaled_dot_product_attention's math form, nn.MultiheadAttention's function, dropout), which
// draw from the seed, offset and stream the RNG pass bound to the op.
#include <cmath>

#include "ops/family.h"
#include "ops/torch_ops.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

// scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev], attn_mask=None,
// dropout_p=0.0, is_causal=False, scale=None) -> [..., L, Ev]; the math form.
std::vector<OutType> sdpa_rule(const Trace& t, const Op& op) {
  const Value& q = float_tensor(t, op, 0);
  const Value& k = t.value(op.arg("key").value);
  const Value& v = t.value(op.arg("value").value);
  size_t r = q.shape.size();
  if (r < 2 || k.shape.size() != r || v.shape.size() != r) fail(0, "q, k and v need the same rank, at least 2");
  if (k.dtype != q.dtype || v.dtype != q.dtype) fail(1, "q, k and v need the same dtype");
  // enable_gqa: k and v may have fewer heads (dim -3), each serving a group of q's.
  const bool gqa = op.arg("enable_gqa").boolean && r >= 3 && k.shape[r - 3] != q.shape[r - 3];
  if (gqa && (k.shape[r - 3] == 0 || q.shape[r - 3] % k.shape[r - 3] != 0 || v.shape[r - 3] != k.shape[r - 3]))
    fail(1, "with enable_gqa, k and v need a number of heads (dim -3) dividing q's " + std::to_string(q.shape[r - 3]));
  for (const Value* kv : {&k, &v})
    for (size_t d = 0; d + 2 < r; ++d)
      if (kv->shape[d] != q.shape[d] && !(gqa && d + 3 == r)) fail(kv == &k ? 1 : 2, "batch dims of q, k and v differ");
  if (k.shape[r - 1] != q.shape[r - 1]) fail(1, "k's last dim must equal q's");
  if (v.shape[r - 2] != k.shape[r - 2]) fail(2, "v's sequence dim must equal k's");
  if (op.arg("attn_mask").is_value()) {  // (of the logits' shape, or one that broadcasts to it: a padding mask [N, 1, 1, S])
    const Value& m = t.value(op.arg("attn_mask").value);
    Shape want(q.shape.begin(), q.shape.end() - 1);
    want.push_back(k.shape[r - 2]);
    Shape broadcast = want;
    if (m.shape.size() <= want.size()) broadcast_into(broadcast, m.shape, 3);
    if (m.shape.size() > want.size() || broadcast != want || (m.dtype != DType::b8 && m.dtype != q.dtype))
      fail(3, "attn_mask must be b8 or " + std::string(dtype_name(q.dtype)) + " of shape " + shape_str(want) + " or one that broadcasts to it, not " +
                  std::string(dtype_name(m.dtype)) + shape_str(m.shape));
  }
  if (op.arg("dropout_p").is_number() && (op.arg("dropout_p").as_double() < 0.0 || op.arg("dropout_p").as_double() >= 1.0)) fail(4, "dropout_p must be in [0, 1)");
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  return {{q.dtype, out}};
}

std::vector<OutType> dropout_rule(const Trace& t, const Op& op) {
  double p = op.arg("p").as_double();
  if (op.arg("p").is_number() && (p < 0 || p > 1)) fail(1, "p must be in [0, 1]");
  return like_input_rule(t, op);
}

// A tensor argument of exactly `shape` and `dt`; `required`: null is refused too.
void need_typed(const Trace& t, const Op& op, std::string_view name, const Shape& shape, DType dt, bool required) {
  if (op.arg(name).kind == Arg::Kind::none) {
    if (required) fail(declared_position(op, name), std::string(name) + " is required here");
    return;
  }
  const Value* v = tensor_arg(t, op, declared_position(op, name));
  if (!v || v->shape != shape || v->dtype != dt)
    fail(declared_position(op, name), std::string(name) + " must be " + std::string(dtype_name(dt)) + shape_str(shape));
}

void need_null(const Op& op, std::string_view name, const std::string& why) {
  if (op.arg(name).kind != Arg::Kind::none) fail(declared_position(op, name), why);
}

// The in-projection (packed [3E, E], or q/k/v weights with use_separate_proj_weight, where key and
// value may have their own widths) and the out-projection [E', E].
void check_mha_projections(const Trace& t, const Op& op, const Value& q, const Value& k, const Value& v) {
  const int64_t e = q.shape.back();
  if (op.arg("use_separate_proj_weight").boolean) {
    need_null(op, "in_proj_weight", "in_proj_weight must be null with use_separate_proj_weight (PyTorch would ignore it)");
    need_typed(t, op, "q_proj_weight", {e, e}, q.dtype, true);
    need_typed(t, op, "k_proj_weight", {e, k.shape.back()}, q.dtype, true);
    need_typed(t, op, "v_proj_weight", {e, v.shape.back()}, q.dtype, true);
  } else {
    if (k.shape.back() != e || v.shape != k.shape) fail(declared_position(op, "value"), "key and value need query's embedding dim and one shape (other widths need use_separate_proj_weight)");
    need_typed(t, op, "in_proj_weight", {3 * e, e}, q.dtype, true);
    for (std::string_view name : {"q_proj_weight", "k_proj_weight", "v_proj_weight"})
      need_null(op, name, std::string(name) + " must be null without use_separate_proj_weight (PyTorch would ignore it)");
  }
  need_typed(t, op, "in_proj_bias", {3 * e}, q.dtype, false);
  const Value* out = tensor_arg(t, op, declared_position(op, "out_proj_weight"));
  if (!out || out->shape.size() != 2 || out->shape[1] != e || out->dtype != q.dtype)
    fail(declared_position(op, "out_proj_weight"), "out_proj_weight must be " + std::string(dtype_name(q.dtype)) + "[E', " + std::to_string(e) + "]");
  need_typed(t, op, "out_proj_bias", {out->shape[0]}, q.dtype, false);
}

// attn_mask [L, S] or [N * heads, L, S], key_padding_mask [N, S] (unbatched: [heads, L, S] and
// [S]), each b8 (true: not attended) or query's dtype (added); is_causal needs attn_mask.
void check_mha_masks(const Trace& t, const Op& op, const Value& q, const Value& k) {
  const bool batched = q.shape.size() == 3;
  const int64_t l = q.shape[0], s = k.shape[0], n = batched ? int64_t(q.shape[1]) : 1, heads = op.arg("num_heads").integer;
  auto check = [&](std::string_view name, const std::vector<Shape>& shapes) {
    if (op.arg(name).kind == Arg::Kind::none) return;
    const Value* m = tensor_arg(t, op, declared_position(op, name));
    std::string allowed;
    for (const Shape& shape : shapes) allowed += (allowed.empty() ? "" : " or ") + shape_str(shape);
    if (!m || std::find(shapes.begin(), shapes.end(), m->shape) == shapes.end() || (m->dtype != DType::b8 && m->dtype != q.dtype))
      fail(declared_position(op, name), std::string(name) + " must be b8 or " + std::string(dtype_name(q.dtype)) + ", of shape " + allowed);
  };
  check("attn_mask", {{l, s}, {n * heads, l, s}});
  check("key_padding_mask", {batched ? Shape{n, s} : Shape{s}});
  if (op.arg("is_causal").boolean && op.arg("attn_mask").kind == Arg::Kind::none)
    fail(declared_position(op, "is_causal"), "is_causal needs attn_mask (it is a hint that attn_mask is the causal mask; PyTorch raises without one)");
}

// dropout_p a number in [0, 1); what thunder-gen does not do: bias_k/bias_v, add_zero_attn,
// static_k/static_v.
void refuse_unsupported_mha(const Op& op) {
  need_number_literal(op, "dropout_p");
  const double p = op.arg("dropout_p").as_double();
  if (p < 0.0 || p >= 1.0) fail(declared_position(op, "dropout_p"), "dropout_p must be in [0, 1)");
  need_null(op, "bias_k", "bias_k (add_bias_kv) is not supported");
  need_null(op, "bias_v", "bias_v (add_bias_kv) is not supported");
  if (op.arg("add_zero_attn").boolean) fail(declared_position(op, "add_zero_attn"), "add_zero_attn is not supported");
  need_null(op, "static_k", "static_k is not supported");
  need_null(op, "static_v", "static_v is not supported");
}

// multi_head_attention_forward(query [L, N, E] or unbatched [L, E], key [S, N, kdim], value
// [S, N, vdim], ...) -> attn_output [L, N, E'] and, with need_weights, the attention weights
// [N, L, S] averaged over heads or [N, heads, L, S] (unbatched: without N). Without need_weights
// PyTorch returns None for them, which is no value: the op has one output.
std::vector<OutType> mha_rule(const Trace& t, const Op& op) {
  const Value& q = float_tensor(t, op, declared_position(op, "query"));
  const Value& k = t.value(op.arg("key").value);
  const Value& v = t.value(op.arg("value").value);
  const size_t rank = q.shape.size();
  if (rank != 2 && rank != 3) fail(declared_position(op, "query"), "query must be [L, N, E] or unbatched [L, E], not " + shape_str(q.shape));
  for (std::string_view name : {"key", "value"}) {
    const Value& kv = t.value(op.arg(name).value);
    if (kv.shape.size() != rank || kv.dtype != q.dtype) fail(declared_position(op, name), std::string(name) + " needs query's rank and dtype");
    if (rank == 3 && kv.shape[1] != q.shape[1]) fail(declared_position(op, name), std::string(name) + "'s batch dim differs from query's");
  }
  if (v.shape[0] != k.shape[0]) fail(declared_position(op, "value"), "value's sequence dim differs from key's");
  const int64_t e = q.shape.back(), heads = op.arg("num_heads").integer;
  if (op.arg("embed_dim_to_check").integer != e)
    fail(declared_position(op, "embed_dim_to_check"), "embed_dim_to_check is " + std::to_string(op.arg("embed_dim_to_check").integer) + ", query's embedding dim " + std::to_string(e));
  if (heads <= 0 || e % heads != 0) fail(declared_position(op, "num_heads"), "num_heads must divide the embedding dim " + std::to_string(e));
  check_mha_projections(t, op, q, k, v);
  check_mha_masks(t, op, q, k);
  refuse_unsupported_mha(op);
  Shape out = q.shape;
  out.back() = t.value(op.arg("out_proj_weight").value).shape[0];
  if (!op.arg("need_weights").boolean) return {{q.dtype, out}};
  Shape weights = {q.shape[0], k.shape[0]};
  if (!op.arg("average_attn_weights").boolean) weights.insert(weights.begin(), heads);
  if (rank == 3) weights.insert(weights.begin(), q.shape[1]);
  return {{q.dtype, out}, {q.dtype, weights}};
}

// ---- scaled_dot_product_attention and dropout ----------------------------------------------------

// enable_gqa: k's (v's) heads repeated so each serves its group of consecutive q heads, as
// repeat_interleave(Hq / Hk, dim=-3) makes them: broadcast over a new group dim, then merged.
V repeat_heads(G& g, const Op& op, V kv) {
  const Shape qs = shape_of(g, op.arg("query").value), s = shape_of(g, kv);
  const size_t r = s.size();
  if (!op.arg("enable_gqa").boolean || r < 3 || s[r - 3] == qs[r - 3]) return kv;
  Shape spread = s;
  const Dim kv_heads = s[r - 3];
  const int64_t group = qs[r - 3] / kv_heads;  // (a constant where both head counts are)
  spread.insert(spread.begin() + ptrdiff_t(r - 2), kv_heads.expr() && kv_heads.expr()->is_constant() ? computed_from(qs[r - 3], group) : Dim(group));
  std::vector<int64_t> dims;
  for (size_t d = 0; d < r; ++d) dims.push_back(int64_t(d + 2 < r ? d : d + 1));
  Shape merged = s;
  merged[r - 3] = qs[r - 3];
  return reshape(g, broadcast(g, kv, spread, dims), merged);
}

// Attention logits [..., L, S] where row i sees columns j <= i (is_causal), the rest -inf.
V causal(G& g, V s) {
  const Shape ss = shape_of(g, s);
  const int64_t r = int64_t(ss.size());
  const Dim l = ss[size_t(r - 2)], sl = ss[size_t(r - 1)];
  V rows = call(g, "prims.iota", {Arg::of_dim(l), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V cols = call(g, "prims.iota", {Arg::of_dim(sl), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
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
    const Shape ss = shape_of(g, s), ms = shape_of(g, m);
    if (ms != ss) {  // its dims the logits' last ones
      std::vector<int64_t> dims;
      for (size_t i = 0; i < ms.size(); ++i) dims.push_back(int64_t(ss.size() - ms.size() + i));
      m = broadcast(g, m, ss, dims);
    }
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

// ---- multi_head_attention_forward (nn.MultiheadAttention), as PyTorch's function computes it ----

struct MhaShape {
  Dim l, s, n;  // with their expressions; n is 1 for unbatched inputs
  int64_t heads, head_dim;
};

MhaShape mha_shape_of(G& g, const Op& op) {
  const Shape q = shape_of(g, op.arg("query").value);
  const int64_t heads = op.arg("num_heads").integer;
  return {q[0], shape_of(g, op.arg("key").value)[0], q.size() == 3 ? q[1] : Dim::constant(1), heads, q.back() / heads};
}

// Rows [from, from + n) of a weight or a bias (dim 0), sized by constants where its rows are
// (an embedding size that is a symbol leaves them numbers, which the probes refuse).
V rows_of(G& g, V w, int64_t from, int64_t n) {
  const Shape s = shape_of(g, w);
  auto size = [&](int64_t v) { return s[0].symbolic() ? Dim(v) : Dim::constant(v); };
  Shape start(s.size(), Dim::constant(0)), end = s;
  start[0] = size(from);
  end[0] = size(from + n);
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
  const Dim len = shape_of(g, x)[0];
  return call(g, "prims.transpose", {val(reshape(g, y, {len, m.n, Dim::constant(m.heads), Dim::constant(m.head_dim)})), int_list({1, 2, 0, 3})});
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
  V merged = reshape(g, heads, {m.l, m.n, Dim::constant(m.heads * m.head_dim)});
  V y = linear(g, merged, op.arg("out_proj_weight").value, optional_value(op.arg("out_proj_bias")));
  y = reshape(g, y, output_of(g, op, 0).shape);
  if (!op.arg("need_weights").boolean) return {y};
  V weights = p;
  if (op.arg("average_attn_weights").boolean)
    weights = downcast(g, div(g, val(sum(g, upcast(g, p), {1})), num(double(m.heads))), value_of(g, p).dtype);
  return {y, reshape(g, weights, output_of(g, op, 1).shape)};
}

}  // namespace

#define TG_FAMILY_ROWS attention_op_rows
#define TG_FAMILY "attention_ops"
#define TG_FAMILY_FILE "ops/attention_ops.def"
#include "ops/family_rows.inc"

bool mha_causal_replaces_mask(const Op& op) {
  return op.arg("is_causal").boolean && op.arg("key_padding_mask").kind == Arg::Kind::none && !op.arg("need_weights").boolean;
}

}  // namespace tg
