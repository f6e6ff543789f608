// .npy files <-> LibTorch tensors, for the harness's file interface (bf16 as raw '<u2' bits).
#pragma once
#include <torch/types.h>

#include <string>

#include "thunder_gen/dtype.h"

namespace tg {

// Reads a .npy holding dtype `t` (in storage dtype). Throws std::runtime_error naming the file.
torch::Tensor read_npy(const std::string& path, DType t);
void write_npy(const std::string& path, const torch::Tensor& tensor, DType t);

}  // namespace tg
