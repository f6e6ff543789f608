// sizes-check: sizes_probe_bind_sizes, the size binder of tests/api/sizes_probe.json's folder
// generated at B=3,E=4,T=5,U=2, as a program that links it calls it (include/sizes_probe.h): the
// sizes it binds, and for each way a call's shapes can be wrong the status and the words naming
// the input, the dim, the symbol and its range; a message buffer too small or absent; sizes left
// unwritten on failure; the array form; overflow in the size arithmetic (a sum that overflows
// int64 on the way to a value that fits is not one). Exits 0 when all hold, 1 naming each that
// does not.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "sizes_probe.h"
#include "tg_sizes.h"

namespace {

int failures = 0;
void check(bool holds, const std::string& what) {
  if (!holds) std::fprintf(stderr, "sizes-check: FAIL %s\n", what.c_str()), ++failures;
}

struct Call {
  std::vector<int64_t> x = {3, 5, 4}, y = {5, 4}, m = {6, 2, 2}, w = {7};
  int64_t sizes[4] = {-1, -1, -1, -1};  // B, E, T, U: the header's order
  char message[512] = "";
  int bind() {
    return sizes_probe_bind_sizes(x.data(), int(x.size()), y.data(), int(y.size()), m.data(), int(m.size()), w.data(), int(w.size()), sizes,
                                  message, sizeof message);
  }
};

// The call fails with `status` and says exactly `words`; the sizes are left as they were.
void refused(Call c, int status, const std::string& words) {
  const int got = c.bind();
  check(got == status, "status " + std::to_string(got) + ", expected " + std::to_string(status) + " for: " + words);
  check(c.message == words, "said \"" + std::string(c.message) + "\", expected \"" + words + "\"");
  check(c.sizes[0] == -1 && c.sizes[3] == -1, "sizes untouched after: " + words);
}

void binds_at_the_folders_sizes() {
  Call c;
  check(c.bind() == THUNDER_GEN_SUCCESS && c.message[0] == '\0', "the folder's sizes bind: " + std::string(c.message));
  check(c.sizes[0] == 3 && c.sizes[1] == 4 && c.sizes[2] == 5 && c.sizes[3] == 2, "the bound sizes, in the header's order (B, E, T, U)");
  check(sizes_probe_bind_sizes(c.x.data(), 3, c.y.data(), 2, c.m.data(), 3, c.w.data(), 1, nullptr, nullptr, 0) == THUNDER_GEN_SUCCESS,
        "sizes and message may be NULL");
  const int64_t* dims[] = {c.x.data(), c.y.data(), c.m.data(), c.w.data()};
  const int ranks[] = {3, 2, 3, 1};
  int64_t sizes[4] = {};
  check(sizes_probe_bind_sizes_array(dims, ranks, sizes, nullptr, 0) == THUNDER_GEN_SUCCESS && sizes[2] == 5, "the array form binds the same");
  char words[64];
  check(sizes_probe_bind_sizes_array(nullptr, ranks, sizes, words, sizeof words) == THUNDER_GEN_NULL_POINTER &&
            std::string(words) == "the dims or ranks array is a null pointer",
        "the array form with a NULL array: " + std::string(words));
}

void says_what_is_wrong() {
  Call c;
  c.x = {15, 4};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'x': expected 3 dimensions ([B, T, E]), got 2");
  c = Call();
  c.m.clear();
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'm': expected 3 dimensions ([B*U, E//2, 2]), got 0");
  c = Call();
  c.y = {6, 4};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'y' dim 0 is 6, but T is 5 (input 'x' dim 1): the inputs disagree on T");
  c = Call();
  c.x = {3, 41, 4}, c.y = {41, 4};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'x' dim 1 is 41, but T must be 1 <= T <= 40");
  c = Call();
  c.x = {3, 5, 5}, c.y = {5, 5};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'x' dim 2 is 5, but E must be 2 <= E <= 16, a multiple of 2");
  c = Call();
  c.x = {-4, 5, 4};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'x' dim 0 is -4, but B must be 1 <= B <= 8");
  c = Call();
  c.x = {INT64_MAX, 5, 4};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'x' dim 0 is 9223372036854775807, but B must be 1 <= B <= 8");
  c = Call();
  c.m = {8, 2, 2};
  refused(c, THUNDER_GEN_BAD_SIZES,
          "input 'm' dim 0 is 8, but the trace's size there is B*U = 6 at B=3,U=2 (U as this folder has it: no input dim is one alone)");
  c = Call();
  c.m = {6, 3, 2};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'm' dim 1 is 3, but the trace's size there is E//2 = 2 at E=4");
  c = Call();
  c.m = {6, 2, 3};
  refused(c, THUNDER_GEN_BAD_SIZES, "input 'm' dim 2 is 3, but the trace's size there is 2");
  c = Call();
  c.x = {3, 6, 4}, c.y = {6, 4};
  refused(c, THUNDER_GEN_BAD_SIZES,
          "the inputs are at B=3,E=4,T=6, and this folder runs at B=3,E=4,T=5,U=2 only; generate one for these sizes with --specialize "
          "B=3,E=4,T=6,U=2");
  c = Call();
  c.x = {4, 5, 4}, c.m = {8, 2, 2};  // w's size, 2^62*(B - U) before the min, is past int64 at B=4
  refused(c, THUNDER_GEN_BAD_SIZES,
          "input 'w' dim 0 is 7, but the trace's size there is min(max(4611686018427387904*B - 4611686018427387904*U, 0), 7) = past int64 at "
          "B=4,U=2 (U as this folder has it: no input dim is one alone)");
  c = Call();
  c.w = {6};
  refused(c, THUNDER_GEN_BAD_SIZES,
          "input 'w' dim 0 is 6, but the trace's size there is min(max(4611686018427387904*B - 4611686018427387904*U, 0), 7) = 7 at B=3,U=2 (U as this "
          "folder has it: no input dim is one alone)");
  c = Call();
  check(sizes_probe_bind_sizes(nullptr, 3, c.y.data(), 2, c.m.data(), 3, c.w.data(), 1, nullptr, c.message, sizeof c.message) == THUNDER_GEN_NULL_POINTER,
        "NULL dims of rank 3 are NULL_POINTER");
  check(std::string(c.message) == "input 'x': its dims are a null pointer", "NULL dims said: " + std::string(c.message));
}

void message_buffers() {
  Call c;
  c.x = {3, 41, 4}, c.y = {41, 4};
  char small[12];
  const int status = sizes_probe_bind_sizes(c.x.data(), 3, c.y.data(), 2, c.m.data(), 3, c.w.data(), 1, nullptr, small, sizeof small);
  check(status == THUNDER_GEN_BAD_SIZES && std::string(small) == "input 'x' d", "a message cut to its buffer, NUL-terminated: " + std::string(small));
  check(sizes_probe_bind_sizes(c.x.data(), 3, c.y.data(), 2, c.m.data(), 3, c.w.data(), 1, nullptr, nullptr, 100) == THUNDER_GEN_BAD_SIZES,
        "no message buffer");
  check(std::string(sizes_probe_status_string(THUNDER_GEN_BAD_SIZES)) == "the inputs' sizes do not fit this folder's symbols", "the status in words");
}

void arithmetic() {
  tg::SizeArith a;
  check(a.mul(int64_t(1) << 40, 1 << 20) == int64_t(1) << 60 && !a.overflowed(), "products that fit");
  check(a.narrow(a.mul(a.mul(int64_t(1) << 40, int64_t(1) << 40), 0)) == 0 && !a.overflowed(), "a product past int64 on the way to 0");
  a.narrow(a.mul(int64_t(1) << 40, int64_t(1) << 40));
  check(a.overflowed(), "a size past int64 is an overflow, not a wrapped size");
  tg::SizeArith d;
  check(d.floordiv(-7, 2) == -4 && d.floordiv(7, 2) == 3 && d.floordiv(-8, 2) == -4 && !d.overflowed(), "floor division as Python's //");
  d.floordiv(1, 0);
  check(d.overflowed(), "a divisor of 0 is refused");
}

}  // namespace

int main() {
  binds_at_the_folders_sizes();
  says_what_is_wrong();
  message_buffers();
  arithmetic();
  if (failures == 0) std::printf("sizes-check: the size binder binds, refuses and says why\n");
  return failures ? 1 : 0;
}
