#include "compare.h"

#include <algorithm>
#include <cstdio>

namespace tg {

// Set from the rounding unit of each type and the reductions the examples run (sums over up to
// millions of elements in f32 accumulate a few ulps more than one op); fixed, not tuned per test.
Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::f64: return {1e-12, 1e-10};
    case DType::f32: return {1e-5, 1e-5};
    case DType::f16: return {1e-3, 1e-3};
    case DType::bf16: return {1e-2, 1.6e-2};
    default: return {0, 0};
  }
}

std::string Comparison::summary() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "max abs err %.3g, max rel err %.3g, %lld mismatching", max_abs_err, max_rel_err, (long long)mismatches);
  return buf;
}

namespace {

// Integers and bools as 64-bit integers: a double holds int64 values only up to 2^53 exactly.
Comparison compare_exactly(const torch::Tensor& actual, const torch::Tensor& expected) {
  Comparison c;
  const torch::Tensor a = actual.to(torch::kLong).flatten(), e = expected.to(torch::kLong).flatten();
  const torch::Tensor bad = a != e;
  c.mismatches = bad.sum().item<int64_t>();
  c.ok = c.mismatches == 0;
  if (c.ok) return c;
  c.first_mismatch = bad.nonzero().index({0, 0}).item<int64_t>();
  // (the largest difference, in double for the report only)
  c.max_abs_err = (a.masked_select(bad).to(torch::kDouble) - e.masked_select(bad).to(torch::kDouble)).abs().max().item<double>();
  return c;
}

}  // namespace

Comparison compare(const torch::Tensor& actual, const torch::Tensor& expected, DType t) {
  Comparison c;
  if (actual.sizes() != expected.sizes()) {
    c.ok = false;
    c.mismatches = -1;
    return c;
  }
  if (!is_float(t)) return compare_exactly(actual, expected);
  Tolerance tol = tolerance_for(t);
  torch::Tensor a = actual.to(torch::kDouble).flatten(), e = expected.to(torch::kDouble).flatten();
  torch::Tensor both_nan = a.isnan() & e.isnan();
  torch::Tensor same_inf = a.isinf() & e.isinf() & (a == e);
  torch::Tensor diff = (a - e).abs();
  torch::Tensor finite = e.isfinite() & a.isfinite();
  // The relative part is taken against max(|expected|, the tensor's RMS): an element computed by
  // a sum (a GEMM, a reduction, a gradient accumulated over a batch) carries rounding error of
  // the size of its summands, so one that cancels to near zero cannot be held to its own size.
  // A wrong formula still fails: its errors are of the size of the values themselves.
  double rms = finite.any().item<bool>() ? e.masked_select(finite).square().mean().sqrt().item<double>() : 0.0;
  torch::Tensor close = (diff <= tol.atol + tol.rtol * e.abs().clamp_min(rms)) & finite;
  torch::Tensor good = close | both_nan | same_inf;
  torch::Tensor bad = ~good;
  c.mismatches = bad.sum().item<int64_t>();
  c.ok = c.mismatches == 0;
  if (finite.any().item<bool>()) c.max_abs_err = diff.masked_select(finite).max().item<double>();
  // Relative error only where it means something: away from zero, beyond the absolute tolerance.
  torch::Tensor sizable = finite & (e.abs() > std::max(tol.atol, 1e-30));
  if (sizable.any().item<bool>()) c.max_rel_err = (diff.masked_select(sizable) / e.abs().masked_select(sizable)).max().item<double>();
  if (!c.ok) c.first_mismatch = bad.nonzero().index({0, 0}).item<int64_t>();
  return c;
}

}  // namespace tg
