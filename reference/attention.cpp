// The reference's attention: scaled_dot_product_attention's math form and nn.MultiheadAttention's
// function, written with LibTorch ops (LibTorch 1.13 has no fused SDPA, and its C++
// multi_head_attention_forward differs from PyTorch's Python function, see below). Attention
// dropout draws from the runtime's Philox as the lowering does.
#include <cmath>

#include "evaluate.h"
#include "ops/torch_ops.h"

namespace tg::reference::by_hand {

std::vector<Tensor> t_sdpa(Interpreter& in, const Op& op) {
  Tensor q = in.value(op.arg("query")), k = in.value(op.arg("key")), v = in.value(op.arg("value"));
  if (op.arg("enable_gqa").boolean && q.dim() >= 3 && k.size(-3) != q.size(-3)) {  // enable_gqa, as PyTorch's math form does it
    k = k.repeat_interleave(q.size(-3) / k.size(-3), -3);
    v = v.repeat_interleave(q.size(-3) / v.size(-3), -3);
  }
  const double scale = op.arg("scale").is_number() ? op.arg("scale").as_double() : 1.0 / std::sqrt(double(q.size(-1)));
  Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (op.arg("is_causal").boolean) s = s.masked_fill(torch::ones({q.size(-2), k.size(-2)}, torch::kBool).tril().logical_not(), -INFINITY);
  if (op.arg("attn_mask").is_value()) {
    const Tensor& m = in.value(op.arg("attn_mask"));
    s = m.scalar_type() == torch::kBool ? s.masked_fill(m.logical_not(), -INFINITY) : s + m;
  }
  Tensor p = torch::softmax(s, -1);
  const double dropout_p = op.arg("dropout_p").as_double();
  if (dropout_p > 0.0) p = in.philox_dropout(op, p, dropout_p);
  return {torch::matmul(p, v)};
}

// multi_head_attention_forward as PyTorch's Python function computes it, in LibTorch ops
// (LibTorch 1.13's C++ multi_head_attention_forward differs: it adds a b8 attn_mask as 0/1 and
// takes no 3-D attn_mask, no float key_padding_mask and no is_causal). Attention dropout drops
// the weights, which need_weights returns dropped, as PyTorch does.
std::vector<Tensor> t_mha(Interpreter& in, const Op& op) {
  auto given = [&](std::string_view name) -> c10::optional<Tensor> {
    if (!op.arg(name).is_value()) return c10::nullopt;
    return in.value(op.arg(name));
  };
  const bool batched = in.trace().value(op.arg("query").value).shape.size() == 3;
  auto batch = [&](std::string_view name) { return batched ? *given(name) : given(name)->unsqueeze(1); };
  const Tensor query = batch("query"), key = batch("key"), value = batch("value");
  const int64_t l = query.size(0), n = query.size(1), e = query.size(2), s = key.size(0), heads = op.arg("num_heads").integer;
  const int64_t head_dim = e / heads;
  auto as_float = [&](c10::optional<Tensor> m) -> c10::optional<Tensor> {  // _canonical_mask: b8 true is -inf
    if (!m || m->scalar_type() != torch::kBool) return m;
    return torch::zeros(m->sizes(), query.options()).masked_fill(*m, -INFINITY);
  };
  const bool causal = mha_causal_replaces_mask(op);
  c10::optional<Tensor> mask = causal ? c10::nullopt : as_float(given("attn_mask")), padding = as_float(given("key_padding_mask"));
  std::vector<c10::optional<Tensor>> biases(3);
  if (auto b = given("in_proj_bias")) biases = {b->chunk(3)[0], b->chunk(3)[1], b->chunk(3)[2]};
  constexpr std::string_view kWeights[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
  auto project = [&](size_t which, const Tensor& x) {
    Tensor w = op.arg("use_separate_proj_weight").boolean ? *given(kWeights[which]) : given("in_proj_weight")->chunk(3)[which];
    return torch::linear(x, w, biases[which]).reshape({x.size(0), n * heads, head_dim}).transpose(0, 1);
  };
  const Tensor q = project(0, query), k = project(1, key), v = project(2, value);
  if (mask && mask->dim() == 2) mask = mask->unsqueeze(0);
  if (padding) {
    Tensor p = padding->reshape({n, 1, 1, s}).expand({n, heads, 1, s}).reshape({n * heads, 1, s});
    mask = mask ? *mask + p : p;
  }
  const Tensor q_scaled = q * std::sqrt(1.0 / double(head_dim)), k_t = k.transpose(-2, -1);
  Tensor scores = mask ? torch::baddbmm(*mask, q_scaled, k_t) : torch::bmm(q_scaled, k_t);
  if (causal) scores = scores.masked_fill(torch::ones({l, s}, torch::kBool).tril().logical_not(), -INFINITY);
  Tensor weights = torch::softmax(scores, -1);
  const double dropout_p = op.arg("dropout_p").as_double();
  if (op.arg("training").boolean && dropout_p > 0.0) weights = in.philox_dropout(op, weights, dropout_p);
  Tensor y = torch::bmm(weights, v).transpose(0, 1).reshape({l * n, e});
  y = torch::linear(y, *given("out_proj_weight"), given("out_proj_bias")).view({l, n, -1});
  if (!batched) y = y.squeeze(1);
  if (!op.arg("need_weights").boolean) return {y};
  Tensor w = weights.view({n, heads, l, s});
  if (op.arg("average_attn_weights").boolean) w = w.mean(1);
  return {y, batched ? w : w.squeeze(0)};
}

}  // namespace tg::reference::by_hand
