// KernelWriter, partial sums over a row kernel's rows (thunder_gen.partial_sum, see fuse.cpp).
// Block b adds rows b, b + gridDim.x, ... (the launch fixes gridDim.x to the parts) into a row of
// sums it alone uses: in shared memory where they fit (kMaxPartSumBytes), and then copied to row
// b of each `__parts` value, else in that row itself. Shared memory leaves the registers to the
// row: as registers, LayerNorm's two partial sums over rows of 4096 took 150 of them a thread
// (95 without), one block of 256 threads per SM.
#include "codegen/emit_kernel.h"

namespace tg::emit {

bool KernelWriter::part_sums_shared() const {
  int64_t bytes = 0;
  for (const Op* p : part_sums_) bytes += numel(layout_.reduced_shape()) * dtype_bytes(t_.value(p->outs[0]).dtype);
  return bytes <= kMaxPartSumBytes;
}

// Element j of the block's row of the parts (row blockIdx.x of `__parts`).
std::string KernelWriter::part_row_at(const Op* p) const {
  return ident(p->outs[0]) + "[int64_t(blockIdx.x) * " + std::to_string(numel(layout_.reduced_shape())) + " + j]";
}

// Where the block's sum of element j lives.
std::string KernelWriter::part_sum_at(const Op* p) const {
  return part_sums_shared() ? local(Role::shared, p->outs[0]) + "[j]" : part_row_at(p);
}

std::string KernelWriter::over_row_elements(const std::string& statements) const {
  return "  for (int64_t j = threadIdx.x; j < " + std::to_string(numel(layout_.reduced_shape())) + "; j += blockDim.x) {\n" + statements + "  }\n";
}

// Each thread adds each row's value (the same in every thread) in a register of its own. (s_ as
// for the shared sums: a `__parts` value has one or the other, and no trace value is named s_...)
std::string KernelWriter::row_total(const Op* p) const {
  return local(Role::shared, p->outs[0]);
}

std::string KernelWriter::start_part_sums() const {
  std::string code;
  for (const Op* p : row_totals_)
    code += "  " + ctype(t_.value(p->outs[0]).dtype) + " " + row_total(p) + " = 0;  // this block's total over its rows\n";
  if (part_sums_.empty()) return code;
  code += "  // this block's sums over its rows, element by element (rows blockIdx.x, + gridDim.x, ...)\n";
  std::string zero;
  for (const Op* p : part_sums_) {
    const Value& v = t_.value(p->outs[0]);
    if (part_sums_shared()) code += "  __shared__ " + storage_type(v) + " " + local(Role::shared, p->outs[0]) + "[" + std::to_string(numel(layout_.reduced_shape())) + "];\n";
    zero += "    " + part_sum_at(p) + " = 0;\n";
  }
  return code + over_row_elements(zero) + "  __syncthreads();\n";
}

void KernelWriter::add_to_part_sums() {
  for (const Op* p : part_sums_) line(part_sum_at(p) + " += " + value_at(p->arg("a").value, identity_index(layout_.domain.size())) + ";");
}

std::string KernelWriter::store_part_sums() const {
  std::string code;
  if (!row_totals_.empty()) {
    code += "  if (threadIdx.x == 0) {\n";
    for (const Op* p : row_totals_) code += "    " + ident(p->outs[0]) + "[blockIdx.x] = " + row_total(p) + ";\n";
    code += "  }\n";
  }
  if (part_sums_.empty() || !part_sums_shared()) return code;
  std::string copy;
  for (const Op* p : part_sums_) copy += "    " + part_row_at(p) + " = " + part_sum_at(p) + ";\n";
  return code + "  __syncthreads();\n" + over_row_elements(copy);
}

}  // namespace tg::emit
