// The kernel IR's listing (`--emit kernel-ir`, `--dump-dir`'s NN-kernel-ir.txt): each kernel as
// its lowering decided it, statement by statement, in words rather than CUDA (runs, barriers and
// alignment tests named as such), then which kernel each op launches and the workspace layout.
// For reading and for FileCheck tests of the lowering; it is not read back.
#pragma once
#include <string>

#include "codegen/kernel_program.h"

namespace tg {

std::string print_kernel_program(const KernelProgram& program);

}  // namespace tg
