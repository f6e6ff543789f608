// The kernel-ir pass: a fused trace's kernels lowered to kernel IR (kernel_ir.h), each distinct
// kernel once, with what the entry point needs to run them decided as data: which kernel each
// op launches and how (its launch geometry), and where each temporary lies in the workspace.
// The emit pass (emit_cuda.h) prints it; `--emit kernel-ir` lists it (print_kernel_ir.h).
#pragma once
#include <string>
#include <vector>

#include "codegen/entry_points.h"
#include "codegen/kernel_ir.h"
#include "ir/trace.h"
#include "schedule/kernel_plan.h"

namespace tg {

// The manifest's account of an op of the fused trace: a kernel, a library call or a view.
struct EmittedKernel {
  std::string name;
  std::vector<std::string> values;  // names of the values it computes (its trace lines)
  std::vector<std::string> reads;   // names of the values it reads from memory
  std::vector<std::string> writes;  // names of the values it writes
  std::string library;              // "cuBLASLt" or "NCCL" for a library call, else empty
  std::string same_code_as;         // the kernel whose code this launch runs, when not its own
  std::string view_of;              // a view (no launch): the value whose memory it reads, else empty
};

// A value the entry point keeps between its kernels: `offset` bytes into its temporaries.
struct Temporary {
  ValueId value;
  std::string name;  // the value's
  int64_t offset;
};

// The temporaries of an entry point: values written by one kernel and read by a later one that
// are not its arguments, each at a fixed offset (aligned to kTemporaryAlignment), in the caller's
// workspace or allocated for the call.
struct WorkspaceLayout {
  std::vector<Temporary> temporaries;
  int64_t bytes = 0;
};
constexpr int64_t kTemporaryAlignment = 256;  // what cuBLASLt and vector accesses want at most

struct KernelProgram {
  std::vector<kir::Kernel> kernels;  // each distinct kernel's code, in the order first launched
  std::vector<int> kernel_of;        // by op of the fused trace: the kernel it launches, -1 for none
  std::vector<EmittedKernel> ops;    // by op: what it computes, reads and writes
  WorkspaceLayout workspace;
};

// `entry` is the host function running `fused` (its parameters are no temporaries).
KernelProgram lower_kernels(const FusedTrace& fused, const EntryPoint& entry);

// Why `kernel`, a fused kernel of `fused` with its plan, cannot be lowered, or nothing when it
// can. Fusion makes only kernels lowering can write; a kernel read back from a hand-edited
// listing may be one fusion never makes, and --from-stage reports this at its line.
std::optional<std::string> kernel_lowering_problem(const Trace& fused, const Op& kernel, const KernelPlan& plan);

// Ops of a fused trace that launch no kernel of their own.
bool is_library_call(const Op& op);  // a matmul (cuBLASLt) or a collective (NCCL)
bool is_view(const Op& op);          // a reshape of a value in memory: the same pointer, another shape

}  // namespace tg
