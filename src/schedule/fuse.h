// Fuse: groups a prims-only trace into kernels. The result is a trace of thunder_gen.kernel ops,
// each holding in `sub` the ops it computes, reading its args from memory and writing its outs,
// and of library calls (prims.matmul) as they are.
//
// Rules (see docs/design-notes.md):
// - Elementwise, shape and source ops are never written out on their own account; they are
//   computed inside every kernel that needs them (recomputation is cheaper than memory traffic),
//   unless they are a trace output or already written by an earlier kernel, which then is read.
// - A reduction and everything it reads through such ops form a row kernel: one block per output
//   row. Further reductions over the same rows, and outputs shaped like a row or like the reduced
//   value, join it when every read of its reductions hits the row being computed (softmax,
//   layer_norm and var_mean become one kernel each). A float sum over its rows (weight
//   gradients), or over all rows of a value per row (a loss's mean), joins it as partial sums, a
//   part per block, that a small kernel after it adds up.
// - Trace outputs of the same shape share a pointwise kernel, so a chain with several outputs
//   reads each input once.
// - A library call (matmul) stays an op of its own between the kernels; its operands are written
//   to memory by the kernels before it.
// A value joins the most recent compatible kernel that runs after everything it reads.
#pragma once
#include <vector>

#include "ir/trace.h"
#include "schedule/index_map.h"
#include "schedule/kernel_plan.h"

namespace tg {

// The fuse pass: the kernels, planned (src/schedule/kernel_plan.h).
FusedTrace fuse(Trace trace);

// How a kernel op iterates, as fusion built it.
struct KernelLayout {
  bool is_row = false;             // a row kernel (has reductions) rather than a pointwise one
  Shape domain;                    // pointwise: the output shape; row: the reductions' input shape
  std::vector<int64_t> reduced;    // row kernels: the reduced dims of `domain`
  std::vector<int64_t> outer;      // row kernels: the other dims
  Shape outer_shape() const;
  Shape reduced_shape() const;
  Index outer_index() const;       // the index of the row being computed, in a reduced value
  bool rows_contiguous() const;    // row kernels: the reduced dims are the trailing ones, in order
};
KernelLayout kernel_layout(const Trace& t, const Op& kernel);

}  // namespace tg
