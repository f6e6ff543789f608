// The CUDA printer: kernels of the kernel IR (kernel_ir.h) as CUDA C++ source, a pure walk of
// the IR. The text is what nvcc, NVRTC and the host emulation (tg_emu.h) all compile.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "codegen/kernel_ir.h"

namespace tg::kir {

std::string print_expr(const Expr& e);
void append_expr(const Expr& e, std::string& out);  // print_expr, appended to `out`
// The statements of `block`, each line after `indent`.
std::string print_block(const Block& block, const std::string& indent);
// The kernel's code: its comment, its element function, its __global__ function.
std::string print_kernel(const Kernel& kernel);

// `d` as a literal of compute type `as`: an integer type's static_cast, true/false, or a float
// literal holding the value the type holds.
std::string number_literal(double d, bool is_integer, int64_t integer, DType as);

// `head`, the items separated by ", ", then `tail`: on one line when that fits in 100 columns
// after `indent`, else one item a line, four columns in from `indent`, so that a diff of the
// generated code shows an added or renamed parameter as one line. (No indent before `head`.)
std::string wrapped_list(std::string_view indent, std::string_view head, const std::vector<std::string>& items, std::string_view tail);

}  // namespace tg::kir
