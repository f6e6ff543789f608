// GEMM epilogues: work that directly follows a matmul and only reads its product is folded into
// the matmul, so cuBLASLt applies it to the accumulator instead of a kernel re-reading the
// product from memory:
//   c = prims.matmul(a, b); d = prims.add(c, broadcast_in_dim(bias, .., [last]))
//       -> d = prims.matmul(a, b, bias=bias)
//   then the prims that lowered torch.nn.functional.gelu(d, approximate='tanh')
//       -> prims.matmul(a, b, bias=bias, epilogue="gelu_tanh")
// A fold happens only where the intermediate (c, or d for GELU) has no other reader and is not
// an output, except that a GELU's input may stay (in training it is saved for the gradient), as
// the matmul's second output:
//       -> (h, d) = prims.matmul(a, b, bias=bias, epilogue="gelu_tanh_aux")
// In the backward, a linear layer's weight gradient and bias gradient read the same g:
//   gw = prims.matmul(transpose(g, [1, 0]), x); gb = prims.sum(g, [0])
//       -> (gw, gb) = prims.matmul(g, x, epilogue="bias_grad", transpose_a=True)
// Only f32/f16/bf16 products whose b has no batch dims (the shapes of a linear layer) fold.
#pragma once

#include "ir/trace.h"

namespace tg {

Trace fold_gemm_epilogues(Trace trace);

}  // namespace tg
