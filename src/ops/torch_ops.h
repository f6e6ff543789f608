// Torch-level ops with rows of their own in the op table (FusionClass::composite): how each is
// lowered to prims, and, where it saves less or fuses better than differentiating that lowering,
// its own gradient rule (softmax and tanh read their output; linear reads w without transposing
// it). Composite ops survive decompose on the training path so autograd can apply these rules;
// autograd then lowers their forward. Ops without a rule here are differentiated through their
// lowering (shape ops, sums and matmul: the prims' rules are already what one would write).
#pragma once
#include <string_view>
#include <vector>

#include "ops/op_table.h"

namespace tg {

// Appends the prims computing `op` (a composite row) and returns its outputs.
std::vector<ValueId> lower_torch_op(GradBuilder& g, const Op& op);

GradRule torch_gradient(OpKind kind);
std::string_view torch_gradient_saves(OpKind kind);

}  // namespace tg
