// The time model (src/autograd/time_model.h) applied to what a fused trace launches: each kernel
// and library call gets a predicted time from the bytes it reads and writes, its arithmetic and
// its launch, as a roofline (the larger of memory and arithmetic, plus the launch). `explain` and
// `--emit plan` list them after the plan, forward and backward apart (docs/rematerialization.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/time_model.h"
#include "schedule/kernel_plan.h"

namespace tg {

struct KernelTime {
  std::string name;   // as manifest.json names it: the kernel's function, or the library call's
  std::string kind;   // pointwise, row, column, cuBLASLt, NCCL
  int64_t read_bytes = 0, written_bytes = 0;
  int64_t launch_fs = 0, memory_fs = 0, arithmetic_fs = 0;
  bool priced = true;  // false for communication, which the model does not price
  int64_t predicted_fs() const;  // launch + max(memory, arithmetic)
};

// Every launch of `fused` in order (views launch nothing and are left out), sizes at `at`.
std::vector<KernelTime> predict_kernel_times(const FusedTrace& fused, const SymbolValues& at, const DeviceModel& device);

// The launches' predicted times added up.
int64_t total_fs(const std::vector<KernelTime>& kernels);

// The listing: a table for each pass ("forward", "backward": `backward` null for a trace that
// does not train) and the step's total.
std::string kernel_times_text(const std::vector<KernelTime>& forward, const std::vector<KernelTime>* backward, const DeviceModel& device,
                              const std::string& sizes);

}  // namespace tg
