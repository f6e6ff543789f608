// Emit the rest of the output folder: harness.cpp (the .npy interface), CMakeLists.txt (emu,
// nvcc and nvrtc builds) and manifest.json.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "emit_cuda.h"
#include "partition.h"
#include "thunder_gen/ir.h"

namespace tg {

// `training` is the partition when the trace trains (some input requires grad), else null. The
// entry points are <trace>_forward and <trace>_backward.
std::string emit_harness(const Trace& trace, const Partition* training, const std::string& input_file);
std::string emit_cmake(const Trace& trace, const std::vector<std::string>& cu_files);
// kernels.cu: one NVRTC program #including every generated .cu file.
std::string emit_nvrtc_program(const Trace& trace, const std::vector<std::string>& cu_files);
// manifest.json, in steps, so the part before a file's kernels can be written while that file is
// still being lowered: the constructor writes everything up to the kernels, add_kernels each
// file's kernels in order, finish the rest. `trace` and `training` are read only by the constructor.
class ManifestWriter {
 public:
  ManifestWriter(const Trace& trace, const Partition* training);
  ~ManifestWriter();
  void add_kernels(const std::string& file, const CudaFile& cuda);
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tg
