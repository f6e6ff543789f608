// The runtime's row reductions under emulation: tg::OnlineSumExp (a softmax row's max and sum of
// exp(x - max) in one pass) against the two passes it replaces, on ordinary rows and on the edges
// (infinities, NaN, a row of -inf, an empty row), block-reduced with several block sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "tg_runtime.cuh"

namespace {

// One block per row: each thread combines its strided elements, then the block combines threads.
__global__ void online_max_sum(const float* x, int n, float* max, float* sum) {
  tg::MaxSum<float> acc = tg::OnlineSumExp<float>::init();
  for (int j = threadIdx.x; j < n; j += blockDim.x) acc = tg::OnlineSumExp<float>::combine(acc, tg::OnlineSumExp<float>::of(x[blockIdx.x * n + j]));
  const tg::MaxSum<float> both = tg::block_reduce<tg::OnlineSumExp<float>>(acc);
  if (threadIdx.x == 0) {
    max[blockIdx.x] = both.max;
    sum[blockIdx.x] = tg::OnlineSumExp<float>::sum_of(both);
  }
}

// A row's sum and max through block_reduce2, and through block_reduce one at a time.
__global__ void paired_and_single(const float* x, int n, float* paired, float* single) {
  float sum = 0, max = tg::Max<float>::init();
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    sum = tg::Sum<float>::combine(sum, x[blockIdx.x * n + j]);
    max = tg::Max<float>::combine(max, x[blockIdx.x * n + j]);
  }
  const float sum_alone = tg::block_reduce<tg::Sum<float>>(sum), max_alone = tg::block_reduce<tg::Max<float>>(max);
  tg::block_reduce2<tg::Sum<float>, tg::Max<float>>(sum, max);
  if (threadIdx.x == 0) {
    paired[2 * blockIdx.x] = sum;
    paired[2 * blockIdx.x + 1] = max;
    single[2 * blockIdx.x] = sum_alone;
    single[2 * blockIdx.x + 1] = max_alone;
  }
}

// The two passes, as the generated code computed them before: the max (NaN wins), then the sum.
void two_passes(const float* x, int n, float& max, float& sum) {
  max = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < n; ++j) max = (std::isnan(x[j]) || std::isnan(max)) ? std::numeric_limits<float>::quiet_NaN() : std::fmax(max, x[j]);
  double s = 0;
  for (int j = 0; j < n; ++j) s += std::exp(double(x[j]) - double(max));
  sum = float(s);
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

TEST_CASE("online max and sum of exponentials agree with the two passes, edges included") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const int n = 300;
  // Rows: ordinary values, -inf masking (attention), a +inf, a NaN, all -inf, one finite among -inf.
  std::vector<std::vector<float>> rows(6, std::vector<float>(n));
  for (int j = 0; j < n; ++j) {
    const float v = float((j * 37) % 101) / 10.0f - 5.0f;
    rows[0][j] = v;
    rows[1][j] = j % 3 ? v : -inf;
    rows[2][j] = j == 150 ? inf : v;
    rows[3][j] = j == 7 ? nan : v;
    rows[4][j] = -inf;
    rows[5][j] = j == 299 ? 2.0f : -inf;
  }
  std::vector<float> x;
  for (const auto& r : rows) x.insert(x.end(), r.begin(), r.end());
  for (unsigned block : {32u, 96u, 256u}) {
    std::vector<float> max(rows.size()), sum(rows.size());
    tg_emu::launch(online_max_sum, unsigned(rows.size()), block, x.data(), n, max.data(), sum.data());
    for (size_t r = 0; r < rows.size(); ++r) {
      float expected_max, expected_sum;
      two_passes(rows[r].data(), n, expected_max, expected_sum);
      INFO("row " << r << ", block " << block << ": max " << max[r] << " (expected " << expected_max << "), sum " << sum[r] << " (expected "
                  << expected_sum << ")");
      CHECK(same(max[r], expected_max));
      if (std::isnan(expected_sum) || std::isinf(expected_sum)) CHECK(same(sum[r], expected_sum));
      else CHECK(std::fabs(sum[r] - expected_sum) <= 1e-5f * expected_sum);
    }
  }
  // An empty row: the max is -inf and the sum 0, as the two passes leave them.
  std::vector<float> max(1), sum(1);
  tg_emu::launch(online_max_sum, 1u, 32u, x.data(), 0, max.data(), sum.data());
  CHECK(max[0] == -inf);
  CHECK(sum[0] == 0.0f);
}

TEST_CASE("block_reduce2 gives each value bit for bit what block_reduce gives it alone") {
  const int rows = 5, n = 1000;
  std::vector<float> x(size_t(rows) * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i) * 0.37f) * 1000.0f;  // sums that round
  for (unsigned block : {32u, 96u, 256u, 1024u}) {
    std::vector<float> paired(2 * rows), single(2 * rows);
    tg_emu::launch(paired_and_single, unsigned(rows), block, x.data(), n, paired.data(), single.data());
    INFO("block " << block);
    CHECK(paired == single);
  }
}
