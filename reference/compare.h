// Comparing generated outputs with the reference: the tolerance table by dtype.
#pragma once
#include <torch/types.h>

#include <string>

#include "ir/dtype.h"

namespace tg {

// |actual - expected| <= atol + rtol * max(|expected|, rms(expected)), elementwise (the RMS floor:
// see compare.cpp); NaN matches NaN, inf matches an equal inf; integers and bools must be equal.
struct Tolerance {
  double atol;
  double rtol;
};
Tolerance tolerance_for(DType t);

struct Comparison {
  bool ok = true;
  double max_abs_err = 0;
  double max_rel_err = 0;  // over elements with |expected| > atol
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;  // flat index
  std::string summary() const;
};

Comparison compare(const torch::Tensor& actual, const torch::Tensor& expected, DType t);

}  // namespace tg
