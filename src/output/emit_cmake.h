// The files that say how the output folder builds: CMakeLists.txt (emu, nvcc and nvrtc builds)
// and kernels.cu, the NVRTC program.
#pragma once
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tg {

// `cu_files`: the folder's generated .cu files (forward.cu, backward.cu when it trains).
std::string emit_cmake(const Trace& trace, const std::vector<std::string>& cu_files);
// kernels.cu: one NVRTC program #including every generated .cu file.
std::string emit_nvrtc_program(const Trace& trace, const std::vector<std::string>& cu_files);

}  // namespace tg
