// run-time-entry-check: the C API of examples/symbolic/symbolic_block.json's folder generated
// without --specialize (its sizes taken at run time), as a program that links it calls it
// (include/symbolic_block.h): the binder writes the sizes of any call in range and refuses one out
// of range naming the symbol; the entry points refuse NULL sizes and sizes whose arithmetic
// overflows before touching a pointer; the workspace grows with the sizes and is 0 for NULL.
// Built and run under host emulation by tests/run_time_sizes.sh. Exits 0 when all hold, 1 naming
// each that does not.
#include <cstdint>
#include <cstdio>
#include <string>

#include "include/symbolic_block.h"

namespace {

int failures = 0;
void check(bool holds, const std::string& what) {
  if (!holds) std::fprintf(stderr, "run-time-entry-check: FAIL %s\n", what.c_str()), ++failures;
}

int bind(int64_t b, int64_t t, int64_t* sizes, char* message, size_t bytes) {
  const int64_t x[] = {b, t, 64};
  return symbolic_block_bind_sizes(x, 3, sizes, message, bytes);
}

}  // namespace

int main() {
  int64_t sizes[2] = {-1, -1};
  char message[512] = "";
  check(bind(3, 7, sizes, message, sizeof message) == THUNDER_GEN_SUCCESS && sizes[0] == 3 && sizes[1] == 7, "B=3, T=7 binds to {3, 7}");
  check(bind(5, 11, sizes, message, sizeof message) == THUNDER_GEN_SUCCESS && sizes[0] == 5 && sizes[1] == 11,
        "B=5, T=11, not the sizes the code was generated at, binds too");
  const int out_of_range = bind(9, 7, sizes, message, sizeof message);
  check(out_of_range == THUNDER_GEN_BAD_SIZES && std::string(message).find("B must be 1 <= B <= 8") != std::string::npos,
        "B=9 is refused naming B's range: " + std::string(message));

  float dummy[1] = {0};
  const float* in = dummy;
  float* out = dummy;
  check(symbolic_block_forward(in, in, in, in, in, in, in, out, out, out, out, nullptr, nullptr, nullptr) == THUNDER_GEN_NULL_POINTER,
        "the forward refuses NULL sizes");
  const int64_t huge[2] = {int64_t(1) << 40, int64_t(1) << 40};
  check(symbolic_block_forward(in, in, in, in, in, in, in, out, out, out, out, huge, nullptr, nullptr) == THUNDER_GEN_BAD_SIZES,
        "the forward refuses sizes whose products overflow (B = T = 2^40)");
  const int64_t past_a_device[2] = {int64_t(1) << 23, int64_t(1) << 23};  // B*T = 2^46 rows: 2^52 elements
  check(symbolic_block_forward(in, in, in, in, in, in, in, out, out, out, out, past_a_device, nullptr, nullptr) == THUNDER_GEN_BAD_SIZES,
        "the forward refuses 2^52 elements, past what a kernel's count may be");

  const int64_t small[2] = {1, 1}, large[2] = {8, 40};
  check(symbolic_block_workspace_bytes(nullptr) == 0, "no workspace for NULL sizes");
  check(symbolic_block_workspace_bytes(small) > 0 && symbolic_block_workspace_bytes(large) > symbolic_block_workspace_bytes(small),
        "the workspace grows with the sizes");
  return failures ? 1 : 0;
}
