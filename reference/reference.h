// The reference interpreter: runs any stage's Trace on LibTorch CPU tensors, op by op, with the
// semantics the generated code promises: 16-bit floats compute in f32 and round only where the
// trace converts explicitly; integer division truncates; reductions over no dims are identities.
#pragma once
#include <torch/torch.h>

#include <vector>

#include "thunder_gen/ir.h"

namespace tg {

// The compute dtype LibTorch holds a value of dtype `t` in (f32 for f16/bf16).
torch::Dtype torch_compute_dtype(DType t);
torch::Dtype torch_storage_dtype(DType t);

// `inputs` in the trace's input order (scalars as 0-d tensors). Returns the outputs in compute
// dtype.
std::vector<torch::Tensor> run_reference(const Trace& trace, const std::vector<torch::Tensor>& inputs);

}  // namespace tg
