// A rewrite of lowered kernels: the float sine and cosine of one angle, declared in one block,
// computed together by one tg::sincos (templates/tg_runtime.cuh).
#pragma once
#include "codegen/kernel_ir.h"

namespace tg::kir {

// In every block of k (its body, its element function's and its twin's), where `v = tg::sin(a)`
// and `u = tg::cos(a)` (float, either order) are declared in one block and nothing between them
// may change `a`: `sc_a = tg::sincos(a)` before the first, and v and u read its two members, as
// does every other sine or cosine of `a` there, before the pair closed or after (a backward
// recomputing one). nvcc does not
// merge sinf and cosf of one angle: each reduces the angle on its own.
void share_sine_cosine(Kernel& k);

}  // namespace tg::kir
