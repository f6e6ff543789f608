// run-time-entry-check: the C API of examples/symbolic/symbolic_block.json's folder generated
// without --specialize (its sizes taken at run time), as a program that links it calls it
// (include/symbolic_block.h): the binder writes the sizes of any call in range and refuses one out
// of range naming the symbol; the entry points refuse NULL sizes, sizes outside the symbols'
// declarations and sizes whose arithmetic overflows before touching a pointer; the workspace grows
// with the sizes and is 0 for NULL.
// Built and run under host emulation by tests/run_time_sizes.sh. Exits 0 when all hold, 1 naming
// each that does not.
#include <cstdint>
#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>

#include "include/symbolic_block.h"

namespace {

int failures = 0;
void check(bool holds, const std::string& what) {
  if (!holds) std::fprintf(stderr, "run-time-entry-check: FAIL %s\n", what.c_str()), ++failures;
}

// An entry point called with every tensor at one dummy element, `sizes`, and no workspace or
// stream: its arguments are deduced from its type, so the saved tensors the plan passes between
// the two (their count follows the plan) need not be spelled out.
float dummy_tensor[1] = {0};
template <class T>
T argument(const int64_t* sizes) {
  if constexpr (std::is_same_v<T, const int64_t*>) return sizes;
  else if constexpr (std::is_pointer_v<T> && !std::is_same_v<T, void*> && !std::is_same_v<T, thunder_gen_stream>) return reinterpret_cast<T>(dummy_tensor);
  else return T{};
}
template <class... Args>
int call_entry(int (*entry)(Args...), const int64_t* sizes) {
  return entry(argument<Args>(sizes)...);
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

  check(call_entry(symbolic_block_forward, nullptr) == THUNDER_GEN_NULL_POINTER, "the forward refuses NULL sizes");
  // Sizes a caller wrote itself are checked against the symbols' declarations before any use.
  for (const auto& [b, t, what] : {std::tuple{int64_t(9), int64_t(7), "B=9, past B's max"}, std::tuple{int64_t(0), int64_t(7), "B=0, below B's min"},
                                   std::tuple{int64_t(3), int64_t(41), "T=41, past T's max"},
                                   std::tuple{int64_t(1) << 40, int64_t(1) << 40, "B = T = 2^40, whose products overflow"}}) {
    const int64_t bad[2] = {b, t};
    check(call_entry(symbolic_block_forward, bad) == THUNDER_GEN_BAD_SIZES, std::string("the forward refuses ") + what);
    check(call_entry(symbolic_block_backward, bad) == THUNDER_GEN_BAD_SIZES, std::string("the backward refuses ") + what);
  }

  const int64_t small[2] = {1, 1}, large[2] = {8, 40};
  check(symbolic_block_workspace_bytes(nullptr) == 0, "no workspace for NULL sizes");
  check(symbolic_block_workspace_bytes(small) > 0 && symbolic_block_workspace_bytes(large) > symbolic_block_workspace_bytes(small),
        "the workspace grows with the sizes");
  return failures ? 1 : 0;
}
