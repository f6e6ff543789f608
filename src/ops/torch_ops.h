// Facts about torch-level calls that code outside their family reads (the LibTorch reference, other
// families' lowerings): how Thunder's class losses place their arguments, and when
// multi_head_attention_forward's is_causal replaces its mask. The calls themselves are declared in
// src/ops/torch_*.def, attention_ops.def, matmul_ops.def and convolution_ops.def.
#pragma once
#include <string>

#include "ops/op_table.h"

namespace tg {

// Thunder's class losses keep ignore_index and reduction at different positions:
// cross_entropy(a, target, weight, size_average, ignore_index, reduce, reduction, label_smoothing)
// and nll_loss(a, target, weight, ignore_index, reduction).
struct ClassLossArgs {
  int64_t ignore_index;
  std::string reduction;
};
ClassLossArgs class_loss_args(const Op& op);

// PyTorch's reading of is_causal there: a hint that attn_mask is the causal mask, which replaces
// the mask only without key_padding_mask and need_weights (then SDPA's is_causal is used).
bool mha_causal_replaces_mask(const Op& op);

}  // namespace tg
