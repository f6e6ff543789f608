// GEMM epilogues: work that directly follows a matmul and only reads its product is folded into
// the matmul, so cuBLASLt applies it to the accumulator instead of a kernel re-reading the
// product from memory:
//   c = prims.matmul(a, b); d = prims.add(c, broadcast_in_dim(bias, .., [last]))
//       -> d = prims.matmul(a, b, bias=bias)
//   then the prims that lowered torch.nn.functional.gelu(d, approximate='tanh')
//       -> prims.matmul(a, b, bias=bias, epilogue="gelu_tanh")
// A fold happens only where the intermediate (c, or d for GELU) has no other reader and is not
// an output: in training the GELU's input is saved for its gradient, so there only the bias folds.
// Only f32/f16/bf16 products whose b has no batch dims (the shapes of a linear layer) fold.
#pragma once

#include "thunder_gen/ir.h"

namespace tg {

Trace fold_gemm_epilogues(Trace trace);

}  // namespace tg
