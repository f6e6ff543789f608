// KernelWriter, column kernels: a row kernel whose rows are neighbours in memory (the reduced
// dims are not the trailing ones: a weight gradient summing over dim 0).
#include "codegen/emit_kernel.h"

namespace tg::emit {

// The loop over a block's rows: 32 neighbours, thread t on row t % 32. (rows is a multiple of
// 32: every thread of a block runs the same iterations.)
std::string KernelWriter::column_row_loop() {
  return "  for (int64_t row = int64_t(blockIdx.x) * 32 + threadIdx.x % 32; row < rows; row += int64_t(gridDim.x) * 32) {\n";
}

// A thread's elements of its row: every (blockDim.x / 32)-th, from t / 32.
std::string KernelWriter::column_element_loop(const std::string& length) {
  return "for (int64_t j = threadIdx.x / 32; j < " + length + "; j += blockDim.x / 32) {";
}

// The total of a row's accumulator over the threads sharing the row: its 32 parts combined
// in a fixed order through shared memory.
std::string KernelWriter::column_total(const std::string& reducer, const std::string& acc) {
  return "tg::column_reduce<" + reducer + ">(" + acc + ")";
}

// The threads that store the rows' results: one a row.
std::string KernelWriter::column_result_guard() {
  return "if (threadIdx.x < 32) {";
}

}  // namespace tg::emit
