// The reference interpreter: runs any stage's Trace on LibTorch CPU tensors, op by op, with the
// semantics the generated code promises: 16-bit floats compute in f32 and round only where the
// trace converts explicitly; integer division truncates; reductions over no dims are identities.
#pragma once
#include <torch/types.h>

#include <vector>

#include "ir/trace.h"

namespace tg {

// The compute dtype LibTorch holds a value of dtype `t` in (f32 for f16/bf16).
torch::Dtype torch_compute_dtype(DType t);
torch::Dtype torch_storage_dtype(DType t);

// generated: floats compute in their compute dtype (f32 for f16/bf16), as generated code does.
// wide: floats compute in f64 (rounding still happens where the trace converts), so the
// reference's own rounding error is negligible next to the generated code's: the checker's truth.
// op_by_op: as generated, and every op's 16-bit result is rounded to its dtype, as PyTorch's
// eager ops round theirs (its gradients are rounded the same way, op by op).
// eager: every op computes in its values' own dtypes, a 16-bit float's as LibTorch's CPU kernels
// do (in f32 inside, rounded out), so autograd saves the rounded results and computes the
// gradients in 16 bits too, as eager PyTorch does; op_by_op's autograd differentiates the
// unrounded results (a tanh's gradient from its f32 output, not its bf16 one), which made it up to
// 4x closer to the f64 truth than eager is (docs/testing.md). Results in compute dtype.
// In every mode a discontinuous op (OpInfo::discontinuous) reads its 16-bit operands rounded.
enum class Precision { generated, wide, op_by_op, eager };

// What a value of dtype `t` computes in under `precision`.
torch::Dtype compute_dtype(DType t, Precision precision);

// `inputs` in the trace's input order (scalars as 0-d tensors). Returns the outputs in compute
// dtype.
std::vector<torch::Tensor> run_reference(const Trace& trace, const std::vector<torch::Tensor>& inputs, Precision precision = Precision::generated);

// The forward outputs, and LibTorch autograd's gradient of every input that requires grad (in
// input order; zeros where none reaches it) for the given cotangents, one per output (outputs no
// gradient flows through ignore theirs). Custom-gradient ops use their own bwd bodies.
struct ReferenceGradients {
  std::vector<torch::Tensor> outputs;
  std::vector<torch::Tensor> gradients;
};
ReferenceGradients reference_gradients(const Trace& trace, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& cotangents,
                                       Precision precision = Precision::generated);

}  // namespace tg
