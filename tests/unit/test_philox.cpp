// The runtime's Philox4x32-10 against the known-answer vectors of Random123 (kat_vectors), and the
// element-to-counter mapping the emulator, the GPU and the reference all share.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

#define TG_HOST_ONLY
#include "tg_runtime.cuh"

TEST_CASE("Philox4x32-10 matches the Random123 known answers") {
  const uint32_t zero[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  const uint32_t ones[4] = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
  for (unsigned w = 0; w < 4; ++w) {
    CHECK(tg::philox_word(0, 0, 0, w) == zero[w]);
    CHECK(tg::philox_word(~0ull, ~0ull, ~0ull, w) == ones[w]);
  }
}

TEST_CASE("philox_uniform: element i is word i % 4 of block i / 4, in [0, 1)") {
  for (int64_t i = 0; i < 4096; i += 37) {
    float u = tg::philox_uniform(1234, 99, i);
    CHECK(u >= 0.0f);
    CHECK(u < 1.0f);
    CHECK(u == float(tg::philox_word(1234, 99, uint64_t(i) / 4, unsigned(i % 4)) >> 8) / 16777216.0f);
  }
  CHECK(tg::philox_uniform(1, 0, 5) != tg::philox_uniform(2, 0, 5));  // the seed matters
  CHECK(tg::philox_uniform(1, 0, 5) != tg::philox_uniform(1, 1, 5));  // and the offset
}
