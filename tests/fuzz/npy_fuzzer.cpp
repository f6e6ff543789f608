// libFuzzer target for templates/tg_npy.h, the .npy parser of the harness and thunder-gen-check:
// the input is a whole file's bytes, parsed as several dtypes and shapes a harness might expect
// (and as any shape, as thunder-gen-check reads), and, separately, as a header's text alone.
// Refusals (npy::Error) are the parser's answer to bad input; anything else escaping, a crash, a
// leak or undefined behaviour is a finding.
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Itemplates tests/fuzz/npy_fuzzer.cpp -o npy_fuzzer
//   ./npy_fuzzer -max_total_time=60 tests/fuzz/corpus/npy
//
// The seed corpus (tests/fuzz/corpus/npy/) holds files NumPy 2.4 wrote with np.save and
// numpy.lib.format.write_array (versions 1.0, 2.0, 3.0; f4, b1, u1, i8, f2, u2, f8, a 0-D and an
// empty array; Fortran order, big-endian and structured ones, refused) and a few made by hand
// (double quotes, keys reordered; a duplicate key, (6) for a shape, a 4 GB header length in a
// 14-byte file, version 4.0, trailing and missing data bytes, a bool byte of 2).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "tg_npy.h"

namespace {

namespace npy = tg::npy;

// Parses as `want`; on success reads every data byte (so ASan sees any pointer past the input).
void parse_as(const uint8_t* data, size_t size, const npy::Expected& want) {
  try {
    const npy::Parsed p = npy::parse(data, size, want);
    if (p.data_bytes > size || p.data < data || p.data + p.data_bytes > data + size) std::abort();  // data must lie inside the input
    std::vector<uint8_t> copy(p.data, p.data + p.data_bytes);
    if (want.shape && p.header.shape != *want.shape) std::abort();  // a wrong shape accepted
  } catch (const npy::Error&) {
  }
}

void parse_header_only(const uint8_t* data, size_t size) {
  try {
    const npy::Header h = npy::parse_header(std::string_view(reinterpret_cast<const char*>(data), size));
    for (int64_t d : h.shape)
      if (d < 0) std::abort();  // dimensions are non-negative
  } catch (const npy::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using Shape = std::vector<int64_t>;
  static const npy::Expected expectations[] = {
      {"<f4", Shape{2, 3}}, {"|b1", Shape{3}},      {"|u1", Shape{}},      {"<u2", Shape{3}},
      {"<i8", std::nullopt}, {"<f4", std::nullopt}, {"|b1", std::nullopt}, {"<f8", Shape{0, 3}},
  };
  for (const npy::Expected& want : expectations) parse_as(data, size, want);
  parse_header_only(data, size);
  return 0;
}
