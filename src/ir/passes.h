// The pipeline's passes, in order (src/driver/pipeline.cpp runs them): the stages a trace goes
// through, by which a listing says what it may hold (kernels only after fusion, the joint trace's
// marks only after autograd) and --emit, --dump-dir and --from-stage name a stage.
#pragma once
#include <string_view>
#include <vector>

namespace tg {

enum class Pass { read, rng, overrides, decompose, dead_code, autograd, partition, epilogue, fuse, kernel_ir, emit };

std::string_view pass_name(Pass pass);  // "dead-code", ...
const std::vector<Pass>& all_passes();

}  // namespace tg
