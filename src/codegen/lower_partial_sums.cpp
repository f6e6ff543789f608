// Kernel lowering, partial sums over a row kernel's rows (thunder_gen.partial_sum, see fuse.cpp).
// Block b adds rows b, b + gridDim.x, ... (the launch fixes gridDim.x to the parts) into a row of
// sums it alone uses: in shared memory where they fit (kMaxPartSumBytes, at the longest row a row
// length taken at run time may be), and then copied to row b of each `__parts` value, else in
// that row itself. Shared memory leaves the registers to the
// row: as registers, LayerNorm's two partial sums over rows of 4096 took 150 of them a thread
// (95 without), one block of 256 threads per SM.
#include "codegen/lower_kernel.h"

namespace tg::lower {

bool KernelLowering::part_sums_shared() const {
  int64_t bytes = 0;
  for (const Op* p : part_sums_) bytes += longest_row() * dtype_bytes(t_.value(p->outs[0]).dtype);
  return bytes <= kMaxPartSumBytes;
}

// Element j of the block's row of the parts (row blockIdx.x of `__parts`).
kir::ExprPtr KernelLowering::part_row_at(const Op* p) const {
  const kir::ExprPtr row = kir::binary(index_cast(var("blockIdx.x")), "*", row_length());
  return kir::subscript(global(p->outs[0]), kir::binary(row, "+", var("j")));
}

// Where the block's sum of element j lives.
kir::ExprPtr KernelLowering::part_sum_at(const Op* p) const {
  return part_sums_shared() ? kir::subscript(var(local(Role::shared, p->outs[0])), var("j")) : part_row_at(p);
}

kir::Stmt KernelLowering::over_row_elements(Block statements) const {
  return kir::loop(index_type_, "j", var("threadIdx.x"), row_length(), var("blockDim.x"), std::move(statements));
}

// Each thread adds each row's value (the same in every thread) in a register of its own. (s_ as
// for the shared sums: a `__parts` value has one or the other, and no trace value is named s_...)
std::string KernelLowering::row_total(const Op* p) const { return local(Role::shared, p->outs[0]); }

kir::Block KernelLowering::start_part_sums() const {
  Block code;
  for (const Op* p : row_totals_) {
    kir::Stmt total = kir::decl(ctype(t_.value(p->outs[0]).dtype), row_total(p), kir::integer(0), false);
    total.note = "this block's total over its rows";
    code.push_back(std::move(total));
  }
  if (part_sums_.empty()) return code;
  code.push_back(kir::comment("this block's sums over its rows, element by element (rows blockIdx.x, + gridDim.x, ...)"));
  Block zero;
  for (const Op* p : part_sums_) {
    if (part_sums_shared()) {
      kir::Stmt shared = kir::array(storage_type(t_.value(p->outs[0])), local(Role::shared, p->outs[0]), longest_row());
      shared.is_shared = true;
      code.push_back(std::move(shared));
    }
    zero.push_back(kir::assign(part_sum_at(p), kir::integer(0)));
  }
  code.push_back(over_row_elements(std::move(zero)));
  code.push_back(kir::barrier());
  return code;
}

void KernelLowering::add_to_part_sums() {
  for (const Op* p : part_sums_) {
    const ExprPtr value = value_expr(p->arg("a").value, identity_index(layout_.domain.size()));
    add(kir::assign(part_sum_at(p), value, "+="));
  }
}

kir::Block KernelLowering::store_part_sums() const {
  Block code;
  if (!row_totals_.empty()) {
    Block stores;
    for (const Op* p : row_totals_) stores.push_back(kir::assign(kir::subscript(global(p->outs[0]), var("blockIdx.x")), var(row_total(p))));
    code.push_back(kir::branch(kir::binary(var("threadIdx.x"), "==", kir::integer(0)), std::move(stores)));
  }
  if (part_sums_.empty() || !part_sums_shared()) return code;
  Block copy;
  for (const Op* p : part_sums_) copy.push_back(kir::assign(part_row_at(p), part_sum_at(p)));
  code.push_back(kir::barrier());
  code.push_back(over_row_elements(std::move(copy)));
  return code;
}

}  // namespace tg::lower
