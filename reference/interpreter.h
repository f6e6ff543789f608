// The reference interpreter's insides (reference.h is its interface): the Interpreter runs a
// trace's ops over an environment of values held in their compute dtype, each op by the evaluator
// of its kind (evaluators.cpp: from the op's declaration where ATen has the op, else by hand).
#pragma once
#include <torch/types.h>

#include <map>
#include <string_view>
#include <vector>

#include "ops/op_table.h"
#include "reference.h"

namespace tg::reference {

using torch::Tensor;

std::vector<int64_t> to_vec(const Shape& s);

class Interpreter {
 public:
  Interpreter(const Trace& t, Precision p) : t_(t), precision_(p) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  const Trace& trace() const { return t_; }
  // What a value of dtype `t` computes in: see Precision.
  torch::Dtype compute(DType t) const { return compute_dtype(t, precision_); }
  // The value of an argument that is a value.
  const Tensor& value(const Arg& a) const { return env_.at(a.value); }
  // An operand as a tensor of dtype `as`: values from the environment, numbers as 0-d tensors (an
  // integer through int64, exact where a double would round it: 2^53 + 1).
  Tensor operand(const Arg& a, torch::Dtype as) const;
  // A number argument as LibTorch's promotion sees it (a Python scalar).
  torch::Scalar scalar_of(const Arg& a) const;
  // n uniform draws in [0, 1) (f32) from the runtime's own Philox generator
  // (templates/tg_runtime.cuh), element i of the stream given by the op's seed, offset and stream
  // parameters: the draws generated code makes.
  Tensor philox_uniforms(const Op& op, int64_t n) const;
  // x with elements dropped with probability p, scaled by 1 / (1 - p): the mask from the op's
  // Philox draws, as the lowering draws it.
  Tensor philox_dropout(const Op& op, const Tensor& x, double p) const;

  // `x`, a value of dtype `t`, rounded to `t` when that is a 16-bit float (held in f32 or f64).
  static Tensor as_stored(const Tensor& x, DType t);
  // A PyTorch function of tensors (torch.exp, torch.special.ndtri, torch.atan2) called through
  // LibTorch's dispatcher by its ATen name (aten::exp, aten::special_ndtri, aten::atan2): its
  // overload taking the operands as tensors (aten::add.Tensor, aten::pow.Tensor_Tensor), the other
  // arguments at their defaults (add's alpha = 1).
  static Tensor call_aten(std::string_view torch_function, const std::vector<Tensor>& operands);

 private:
  const Trace& t_;
  Precision precision_;
  std::map<ValueId, Tensor> env_;

  void ops(const std::vector<Op>& list);
  void one(const Op& op);
  void custom_forward(const Op& op);
  std::vector<Tensor> run_body(const SubTrace& body, const std::vector<Tensor>& inputs, std::vector<Tensor>* saved);
  struct CustomFunction;
};

// What an op's evaluation gives: its outputs, in order.
using Evaluator = std::vector<Tensor> (*)(Interpreter&, const Op&);
// The evaluator of an op of `kind` (evaluators.cpp).
Evaluator evaluator(OpKind kind);

}  // namespace tg::reference
