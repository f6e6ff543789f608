// Emit CUDA: a fused trace -> one .cu file (kernels, then the host entry point behind
// #ifndef __CUDACC_RTC__). The same text builds with nvcc, NVRTC (kernels only) and g++ under
// host emulation.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/entry_points.h"
#include "ir/trace.h"
#include "schedule/kernel_plan.h"

namespace tg {

struct EmittedKernel {
  std::string name;
  std::vector<std::string> values;  // names of the values it computes (its trace lines)
  std::vector<std::string> reads;   // names of the values it reads from memory
  std::vector<std::string> writes;  // names of the values it writes
  std::string library;              // "cuBLASLt" for a library call, else empty
  std::string same_code_as;         // the kernel whose code this launch runs, when not its own
  std::string view_of;              // a view (no launch): the value whose memory it reads, else empty
};

struct CudaFile {
  std::string text;
  std::vector<EmittedKernel> kernels;
  int64_t temporary_bytes = 0;  // the entry point's temporaries, as laid out in a workspace
  bool calls_library = false;   // it calls cuBLASLt, which then takes a part of the workspace too
};

// `entry` is the host function (its parameters match fused's inputs, then its outputs);
// `file` and `input_file` go in the banner.
CudaFile emit_cuda(const FusedTrace& fused, const EntryPoint& entry, const std::string& file, const std::string& input_file);

// Why the emitter cannot write `kernel`, a fused kernel of `fused` with its plan, or nothing when
// it can. Fusion makes only kernels the emitter writes; a kernel read back from a hand-edited
// listing may be one fusion never makes, and the listing reader reports this at its line.
std::optional<std::string> kernel_emission_problem(const Trace& fused, const Op& kernel, const KernelPlan& plan);

// The C++ type a value is stored as in device memory (tg::PackedBits for a bit-packed mask).
std::string storage_type(const Value& v);

}  // namespace tg
