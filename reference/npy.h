// .npy files <-> LibTorch tensors, for the harness's file interface (bf16 as raw '<u2' bits).
// Reading goes through templates/tg_npy.h, the parser the generated harness uses.
#pragma once
#include <torch/types.h>

#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tg {

// Reads a .npy holding dtype `t` (in storage dtype): exactly that dtype, C order, no bytes missing
// or left over, and, when `shape` is given, exactly that shape (else the file's). Throws
// std::runtime_error naming the file and what is wrong.
torch::Tensor read_npy(const std::string& path, DType t, const std::optional<std::vector<int64_t>>& shape = std::nullopt);
void write_npy(const std::string& path, const torch::Tensor& tensor, DType t);

}  // namespace tg
