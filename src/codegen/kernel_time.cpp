#include "codegen/kernel_time.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "codegen/kernel_program.h"
#include "ops/distributed.h"
#include "schedule/fuse.h"

namespace tg {

namespace {

int64_t bytes_of(const Trace& t, ValueId v, const SymbolValues& at) {
  const Value& value = t.value(v);
  return value.is_scalar ? 0 : stored_bytes_at(value, value.bit_packed, at);
}

KernelTime kernel_time(const Trace& t, const Op& kernel, const KernelPlan& plan, const SymbolValues& at, const DeviceModel& device) {
  static const char* kKinds[] = {"pointwise", "row", "column"};
  KernelTime k{.name = kernel.label, .kind = kKinds[int(plan.kind)], .launch_fs = device.launch_fs()};
  // Each operand is read from memory once: a row kernel's later passes over a row (a few KB)
  // find it in L2, and an operand broadcast across the domain is read at its own size.
  std::set<ValueId> read;
  for (const Arg& a : kernel.args)
    if (a.is_value() && read.insert(a.value).second) k.read_bytes += bytes_of(t, a.value, at);
  for (ValueId v : kernel.outs) k.written_bytes += bytes_of(t, v, at);
  for (const Op& op : kernel.sub) k.arithmetic_fs = capped_fs_sum(k.arithmetic_fs, arithmetic_fs(t, op, at, device));
  k.memory_fs = device.move_fs(k.read_bytes + k.written_bytes);
  return k;
}

KernelTime library_time(const Trace& t, const Op& call, const SymbolValues& at, const DeviceModel& device) {
  const bool communication = is_collective(call.info->kind);
  KernelTime k{.name = call_name(t, call), .kind = communication ? "NCCL" : "cuBLASLt", .priced = !communication};
  std::set<ValueId> read;
  for_each_value(call, [&](ValueId v) {
    if (read.insert(v).second) k.read_bytes += bytes_of(t, v, at);
  });
  for (ValueId v : call.outs) k.written_bytes += bytes_of(t, v, at);
  if (!communication) {
    k.launch_fs = device.launch_fs();
    k.memory_fs = device.move_fs(k.read_bytes + k.written_bytes);
    k.arithmetic_fs = arithmetic_fs(t, call, at, device);
  }
  return k;
}

std::string us_text(int64_t fs) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f us", microseconds(fs));
  return text;
}

std::string row_text(const KernelTime& k) {
  char row[160];
  if (!k.priced) {
    std::snprintf(row, sizeof row, "  %12s  %-9s  %12lld  %12lld  %10s  %10s  ", "not priced", k.kind.c_str(), static_cast<long long>(k.read_bytes),
                  static_cast<long long>(k.written_bytes), "-", "-");
  } else {
    std::snprintf(row, sizeof row, "  %12.3f  %-9s  %12lld  %12lld  %10.3f  %10.3f  ", microseconds(k.predicted_fs()), k.kind.c_str(),
                  static_cast<long long>(k.read_bytes), static_cast<long long>(k.written_bytes), microseconds(k.memory_fs),
                  microseconds(k.arithmetic_fs));
  }
  return row + k.name + "\n";
}

void pass_table(std::ostream& out, const char* pass, const std::vector<KernelTime>& kernels) {
  out << pass << ": " << kernels.size() << " launch" << (kernels.size() == 1 ? "" : "es") << ", predicted " << us_text(total_fs(kernels)) << "\n";
  if (kernels.empty()) return;
  out << "  predicted us  kind         read bytes  written bytes  memory us  arith. us  kernel\n";
  for (const KernelTime& k : kernels) out << row_text(k);
}

}  // namespace

int64_t total_fs(const std::vector<KernelTime>& kernels) {
  int64_t fs = 0;
  for (const KernelTime& k : kernels) fs = capped_fs_sum(fs, k.predicted_fs());
  return fs;
}

int64_t KernelTime::predicted_fs() const { return priced ? capped_fs_sum(launch_fs, std::max(memory_fs, arithmetic_fs)) : 0; }

std::vector<KernelTime> predict_kernel_times(const FusedTrace& fused, const SymbolValues& at, const DeviceModel& device) {
  std::vector<KernelTime> out;
  const Trace& t = fused.trace;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const Op& op = t.ops[i];
    if (is_view(op)) continue;
    out.push_back(is_library_call(op) ? library_time(t, op, at, device) : kernel_time(t, op, fused.plan(i), at, device));
  }
  return out;
}

std::string kernel_times_text(const std::vector<KernelTime>& forward, const std::vector<KernelTime>* backward, const DeviceModel& device,
                              const std::string& sizes) {
  std::ostringstream out;
  out << "kernels the plan makes, predicted under the time model (--device-model " << device.name << ": a launch, then the larger of memory at "
      << device.copy_bytes_per_second / 1e9 << " GB/s and arithmetic at the dtype's peak)" << (sizes.empty() ? "" : ", at " + sizes) << "\n";
  pass_table(out, "forward", forward);
  if (backward) {
    pass_table(out, "backward", *backward);
    out << "predicted step: forward " << us_text(total_fs(forward)) << " + backward " << us_text(total_fs(*backward)) << " = "
        << us_text(capped_fs_sum(total_fs(forward), total_fs(*backward))) << "\n";
  }
  auto unpriced = [](const std::vector<KernelTime>& kernels) { return std::any_of(kernels.begin(), kernels.end(), [](const KernelTime& k) { return !k.priced; }); };
  if (unpriced(forward) || (backward && unpriced(*backward))) out << "communication (NCCL) is not priced: the times above leave it out\n";
  return out.str();
}

}  // namespace tg
