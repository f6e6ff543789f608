// The emit pass: a fused trace's kernel program (kernel_program.h) as one .cu file: the kernels,
// printed from their kernel IR, then the host entry point behind #ifndef __CUDACC_RTC__. The same
// text builds with nvcc, NVRTC (kernels only) and g++ under host emulation.
#pragma once
#include <string>
#include <vector>

#include "codegen/entry_points.h"
#include "codegen/kernel_program.h"
#include "ir/trace.h"
#include "schedule/kernel_plan.h"

namespace tg {

struct CudaFile {
  std::string text;
  std::vector<EmittedKernel> kernels;  // by op of the fused trace
  Dim temporary_bytes;  // the entry point's temporaries, as laid out in a workspace (with its expression at run-time sizes)
  bool calls_library = false;   // it calls cuBLASLt, which then takes a part of the workspace too
};

// `entry` is the host function (its parameters match fused's inputs, then its outputs);
// `file` and `input_file` go in the banner.
CudaFile emit_cuda(const FusedTrace& fused, const KernelProgram& program, const EntryPoint& entry, const std::string& file,
                   const std::string& input_file);

}  // namespace tg
