// The kernel-ir pass: a fused trace's kernels lowered to kernel IR (kernel_ir.h), each distinct
// kernel once, with what the entry point needs to run them decided as data: which kernel each
// op launches and how (its launch geometry), and where each temporary lies in the workspace.
// The emit pass (emit_cuda.h) prints it; `--emit kernel-ir` lists it (print_kernel_ir.h).
#pragma once
#include <map>
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
  std::string elementwise_twin;     // the kernel it launches instead where its runs cannot be (kir::Twin)
  std::string streamed_twin;        // ... where its rows are longer than it holds
  std::string view_of;              // a view (no launch): the value whose memory it reads, else empty
};

// A value the entry point keeps between its kernels: `offset` bytes into its temporaries.
struct Temporary {
  ValueId value;
  std::string name;  // the value's
  Dim offset;        // with its expression, in a folder taking its sizes at run time
};

// The temporaries of an entry point: values written by one kernel and read by a later one that
// are not its arguments, each at a fixed offset (aligned to kTemporaryAlignment), in the caller's
// workspace or allocated for the call.
struct WorkspaceLayout {
  std::vector<Temporary> temporaries;
  Dim bytes = Dim::constant(0);
};
constexpr int64_t kTemporaryAlignment = 256;  // what cuBLASLt and vector accesses want at most

// Where the entry point finds each value: its argument, the argument seen as its storage type
// (bf16 and f16 bits, packed masks: `type name = reinterpret_cast<type>(argument)`), a temporary,
// or the memory of the value a view reads; and the outputs that are a copy of a value (an input
// returned as it is, an output listed twice), whose bytes it copies last.
struct EntryValues {
  struct StorageView {
    std::string type, name, argument;
  };
  std::map<ValueId, std::string> pointer;
  std::vector<StorageView> storage_views;
  std::vector<std::pair<std::string, ValueId>> copies;  // (argument, value)
};

// One step of the entry point: an op of the fused trace. In a distributed trace each collective
// runs on a second stream (tg::Overlap, tg_comm.h) that first waits for the stream's work so far;
// the stream goes on with the steps after it and waits for a collective only before the first
// step that reads its result or a view of it (`joins`), and for every collective before
// returning. Temporaries are never reused within a call, so no later kernel writes what a
// collective still reads.
struct EntryStep {
  size_t op = 0;
  std::vector<int> joins;  // the collectives to wait for first
  int collective = -1;     // >= 0: this step is that collective, on the second stream
};

struct KernelProgram {
  std::vector<kir::Kernel> kernels;  // each distinct kernel's code, in the order first launched
  std::vector<int> kernel_of;        // by op of the fused trace: the kernel it launches, -1 for none
  std::vector<EmittedKernel> ops;    // by op: what it computes, reads and writes
  WorkspaceLayout workspace;
  EntryValues values;
  std::vector<EntryStep> steps;
  int collectives = 0;
  std::vector<int> last_joins;  // the collectives no step waited for: waited for before returning
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
// A library call's or a view's name in the manifest and the listings: <trace>_matmul_<output>.
std::string call_name(const Trace& fused, const Op& call);

}  // namespace tg
