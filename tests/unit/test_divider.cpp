// The runtime's division by a size taken at run time (tg::divider, tg::quot, tg::rem and their
// 32-bit forms) against C++'s own division, at the divisors and dividends where a multiplier's
// rounding would first show: around powers of two, around multiples of the divisor, at the ends of
// each form's range, and at random. Also the threads a row kernel launches with for a row of
// run-time length (tg::row_block).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <vector>

#define TG_HOST_ONLY
#include "tg_runtime.cuh"
#include "tg_host.h"

namespace {

std::vector<int64_t> divisors() {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= 3000; ++d) out.push_back(d);
  for (int s = 12; s < 63; ++s)
    for (int64_t delta : {-3, -1, 0, 1, 3}) out.push_back((int64_t(1) << s) + delta);
  out.push_back(INT64_MAX);
  std::mt19937_64 draw(34);
  for (int k = 0; k < 3000; ++k) out.push_back(int64_t(draw() >> (1 + draw() % 62)) | 1);
  return out;
}

// Dividends near 0, near multiples of d, near 2^31 and 2^63, and random below `limit`.
std::vector<int64_t> dividends(int64_t d, int64_t limit, std::mt19937_64& draw) {
  std::vector<int64_t> out = {0, 1, 2, limit - 1, limit - 2, (limit - 1) / d * d, (limit - 1) / d * d - 1};
  for (int64_t k : {1, 2, 3, 1000}) {
    if (d > (limit - 2) / k) break;
    out.push_back(k * d - 1), out.push_back(k * d), out.push_back(k * d + 1);
  }
  for (int k = 0; k < 40; ++k) out.push_back(int64_t(draw() % uint64_t(limit)));
  const int64_t small = d > limit / 8 ? limit : d * 8;  // (the first quotients)
  for (int k = 0; k < 10; ++k) out.push_back(int64_t(draw() % uint64_t(small)));
  return out;
}

}  // namespace

TEST_CASE("tg::quot and tg::rem divide every int64 dividend >= 0 as / and % do") {
  std::mt19937_64 draw(1);
  for (int64_t d : divisors()) {
    const tg::Divider by = tg::divider(d);
    for (int64_t x : dividends(d, INT64_MAX, draw)) {
      if (x < 0) continue;
      INFO("x = " << x << ", d = " << d);
      REQUIRE(tg::quot(x, by) == x / d);
      REQUIRE(tg::rem(x, by) == x % d);
    }
  }
}

TEST_CASE("tg::quot32 and tg::rem32 divide every dividend below 2^31, by divisors past 2^31 too") {
  std::mt19937_64 draw(2);
  const int64_t limit = int64_t(1) << 31;
  for (int64_t d : divisors()) {
    const tg::Divider by = tg::divider(d);
    for (int64_t x : dividends(d, limit, draw)) {
      if (x < 0 || x >= limit) continue;
      INFO("x = " << x << ", d = " << d);
      REQUIRE(tg::quot32(x, by) == x / d);
      REQUIRE(tg::rem32(x, by) == x % d);
    }
  }
}

TEST_CASE("tg::divider of a size of 0 does not fault (no kernel divides by it)") {
  const tg::Divider zero = tg::divider(0);
  CHECK(zero.divisor == 0);
  CHECK(zero.magic == 0);
}

TEST_CASE("tg::row_block: the smallest power of two from a warp that covers the row, at most the kernel's block") {
  for (int64_t length : {int64_t(0), int64_t(1), int64_t(31), int64_t(32)}) CHECK(tg::row_block(length, 256) == 32);
  CHECK(tg::row_block(33, 256) == 64);
  CHECK(tg::row_block(128, 256) == 128);
  CHECK(tg::row_block(129, 256) == 256);
  CHECK(tg::row_block(int64_t(1) << 40, 256) == 256);
  CHECK(tg::row_block(300, 128) == 128);
}
