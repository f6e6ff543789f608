// The evaluators the declarations name for the ops LibTorch has (evaluators.cpp's table holds one
// per kind): an elementwise prim's (or its torch form's) call of the PyTorch function it declares,
// on operands prepared as generated code reads them, and the call of an op's declared ATen op.
#pragma once
#include <string_view>
#include <vector>

#include "interpreter.h"

namespace tg::reference {

// The operands of an elementwise op, or a torch form of one, as LibTorch computes with them: in
// the dtype they compute in (the torch form's by LibTorch's own type promotion, checked against the
// dtype the trace declares), a torch form's tensors broadcast to the result, a discontinuous or
// kinked op's 16-bit operands rounded to their dtype.
class Operands {
 public:
  Operands(Interpreter& in, const Op& op);
  Tensor at(size_t i) const;
  bool floating() const { return is_float(dtype); }
  DType dtype;  // the dtype they compute in

 private:
  Interpreter& in_;
  const Op& op_;
  bool torch_form_;
};

// TG_UNARY_FLOAT and unary_prims.def's `aten`: the declared PyTorch function of the operand.
std::vector<Tensor> unary_aten(Interpreter& in, const Op& op);
// unary_prims.def's `integers_unchanged`: the function of a float, an integer as it is.
std::vector<Tensor> unary_integers_unchanged(Interpreter& in, const Op& op);
// TG_BINARY_FLOAT: the declared function of the two operands (torch.add's and torch.sub's alpha,
// torch.div's rounding_mode; prims.div truncating integers, as C++ divides them).
std::vector<Tensor> binary_float(Interpreter& in, const Op& op);

// binary_exact_prims.def's `reference` column: how LibTorch computes the prim of `torch_function`
// on a and b, `bits`-bit integers for the shifts.
namespace exact {
using Function = Tensor (*)(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits);
Tensor aten(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits);
Tensor shift_left(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits);
Tensor shift_right(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits);
}  // namespace exact
template <exact::Function F>
std::vector<Tensor> binary_exact(Interpreter& in, const Op& op) {
  const Operands a(in, op);
  return {F(op.info->torch_function, a.at(0), a.at(1), 8 * int64_t(dtype_bytes(a.dtype)))};
}

// aten("name.overload(params)"): the ATen op called with those parameters' arguments, in order,
// each as its schema argument's type wants it, the others at ATen's defaults. An elementwise op's
// operands are prepared as Operands prepares them.
std::vector<Tensor> aten_call(Interpreter& in, const Op& op);

}  // namespace tg::reference
