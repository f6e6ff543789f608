// Torch-level elementwise calls (torch.add, torch.exp, torch.eq, torch.where, ...) that a trace
// carries without a decomposition: hand-written traces, and tools that record the call only.
// Every elementwise prim `prims.<name>` has the torch-level form `torch.<name>` (op_table.cpp makes
// its row from the prim's own), which takes tensors, 0-dim tensors and numbers, broadcasts them
// and promotes their dtypes as PyTorch does, and is lowered here to conversions, broadcasts and
// the prim. Gradients are the prims'.
#pragma once
#include <optional>
#include <vector>

#include "ops/op_table.h"

namespace tg {

// An operand of a call, as type promotion sees it: a tensor with dims, a 0-dim tensor, or a
// number (a literal or a scalar value: Python's int, float or bool).
struct PromotionOperand {
  enum class Form { tensor, zero_dim, number };
  DType dtype;
  Form form;
};

// torch.promote_types over thunder-gen's dtypes.
DType promote_types(DType a, DType b);

// torch.result_type: the dtype a call computes in before any op-specific rule (true division and
// float functions of integers compute in f32; comparisons return bool). nullopt: no operands.
std::optional<DType> result_type(const std::vector<PromotionOperand>& operands);

// How an argument (a tensor, a scalar value or a number literal) takes part in promotion.
PromotionOperand promotion_operand(const Trace& t, const Arg& a);

// The row of `torch.<name>` made from the row of the elementwise prim `prims.<name>`.
OpInfo torch_form_of(const OpInfo& prim);

// A torch-level elementwise call `id` (torch.maximum, ...) over `args`, defining `outs`: what
// another torch-level op amounts to in one of its forms (torch.max(a, b)). Not yet typed.
Op torch_form_call(std::string_view id, std::vector<Arg> args, std::vector<ValueId> outs);

// Lowers a torch-level elementwise call to prims (decomposition); returns its outputs.
std::vector<ValueId> lower_torch_elementwise(GradBuilder& g, const Op& op);

}  // namespace tg
