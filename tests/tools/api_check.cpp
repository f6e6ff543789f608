// api-check: the entry points of tests/api/api_probe.json's generated folder, under emulation, as a
// program that links them would call them (include/api_probe.h):
//   - statuses: THUNDER_GEN_SUCCESS; NULL_POINTER for a null input or output; MISALIGNED for a
//     pointer off its element alignment; OUT_OF_MEMORY when temporaries cannot be allocated
//     (TG_EMU_FAIL=alloc) but not with a workspace; GEMM_FAILED when the product fails
//     (TG_EMU_FAIL=gemm); each status has words of its own;
//   - with a workspace of api_probe_workspace_bytes() the forward and the backward allocate nothing,
//     and compute the same bytes as without;
//   - two threads running forward and backward at once, each on its own buffers and workspace,
//     get the single-threaded results.
// Exits 0 when all hold, 1 naming each that does not.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "api_probe.h"
#include "tg_host.h"

namespace {

int failures = 0;
void check(bool holds, const std::string& what) {
  if (!holds) std::fprintf(stderr, "api-check: FAIL %s\n", what.c_str()), ++failures;
}

// One call's buffers, filled deterministically.
struct Buffers {
  std::vector<float> x = std::vector<float>(32), w = std::vector<float>(64), z = std::vector<float>(32), e = std::vector<float>(32);
  std::vector<uint16_t> h = std::vector<uint16_t>(32), zb = std::vector<uint16_t>(32);
  std::vector<float> cot_z = std::vector<float>(32), grad_x = std::vector<float>(32), grad_w = std::vector<float>(64);
  std::vector<uint16_t> cot_zb = std::vector<uint16_t>(32);
  Buffers() {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * float(i % 7) - 0.02f, cot_z[i] = 0.5f - 0.03f * float(i % 5);
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.02f * float(i % 9) - 0.05f;
    for (size_t i = 0; i < h.size(); ++i) h[i] = 0x3f80 + uint16_t(i % 4), cot_zb[i] = 0x3f00;  // bf16 1.0.., 0.5
  }
  int forward(void* workspace, const float* x_in = nullptr) {
    return api_probe_forward(x_in ? x_in : x.data(), w.data(), h.data(), z.data(), zb.data(), e.data(), workspace, nullptr);
  }
  int backward(void* workspace) {
    return api_probe_backward(x.data(), w.data(), e.data(), cot_z.data(), cot_zb.data(), grad_x.data(), grad_w.data(), workspace, nullptr);
  }
  bool same_results(const Buffers& o) const { return z == o.z && zb == o.zb && e == o.e && grad_x == o.grad_x && grad_w == o.grad_w; }
};

void statuses() {
  std::set<std::string> words;
  for (int s = 0; s <= THUNDER_GEN_CUDA_FAILED; ++s) words.insert(api_probe_status_string(s));
  check(words.size() == 8, "each status has words of its own");
  check(std::string(api_probe_status_string(99)) == "unknown status", "an unknown status is said to be one");
  Buffers b;
  check(b.forward(nullptr) == THUNDER_GEN_SUCCESS && b.backward(nullptr) == THUNDER_GEN_SUCCESS, "forward and backward succeed");
  check(api_probe_forward(nullptr, b.w.data(), b.h.data(), b.z.data(), b.zb.data(), b.e.data(), nullptr, nullptr) == THUNDER_GEN_NULL_POINTER,
        "a null input is NULL_POINTER");
  check(api_probe_forward(b.x.data(), b.w.data(), b.h.data(), nullptr, b.zb.data(), b.e.data(), nullptr, nullptr) == THUNDER_GEN_NULL_POINTER,
        "a null output is NULL_POINTER");
  std::vector<char> raw(sizeof(float) * 33);
  check(b.forward(nullptr, reinterpret_cast<const float*>(raw.data() + 1)) == THUNDER_GEN_MISALIGNED, "a float pointer off by one byte is MISALIGNED");
  std::vector<char> raw16(sizeof(uint16_t) * 33);
  check(api_probe_forward(b.x.data(), b.w.data(), reinterpret_cast<const uint16_t*>(raw16.data() + 1), b.z.data(), b.zb.data(), b.e.data(), nullptr,
                          nullptr) == THUNDER_GEN_MISALIGNED,
        "a bf16 pointer off by one byte is MISALIGNED");
  std::vector<unsigned char> workspace(api_probe_workspace_bytes());
  ::setenv("TG_EMU_FAIL", "alloc", 1);
  check(b.forward(nullptr) == THUNDER_GEN_OUT_OF_MEMORY, "temporaries that cannot be allocated are OUT_OF_MEMORY");
  check(b.forward(workspace.data()) == THUNDER_GEN_SUCCESS, "with a workspace nothing needs allocating");
  ::setenv("TG_EMU_FAIL", "gemm", 1);
  check(b.forward(workspace.data()) == THUNDER_GEN_GEMM_FAILED, "a failed product is GEMM_FAILED");
  ::unsetenv("TG_EMU_FAIL");
}

void workspace_allocates_nothing() {
  Buffers plain, with;
  check(plain.forward(nullptr) == 0 && plain.backward(nullptr) == 0, "the calls without a workspace succeed");
  std::vector<unsigned char> workspace(api_probe_workspace_bytes());
  check(!workspace.empty(), "the probe needs a workspace (it has temporaries)");
  const long before = tg::allocations().load();
  check(with.forward(workspace.data()) == 0 && with.backward(workspace.data()) == 0, "the calls with a workspace succeed");
  check(tg::allocations().load() == before, "with a workspace, forward and backward allocate nothing");
  check(plain.same_results(with), "with a workspace, the same results");
}

void two_threads() {
  Buffers reference;
  reference.forward(nullptr), reference.backward(nullptr);
  auto run = [&](bool* same) {
    Buffers b;
    std::vector<unsigned char> workspace(api_probe_workspace_bytes());
    *same = true;
    for (int i = 0; i < 20; ++i) *same = *same && b.forward(workspace.data()) == 0 && b.backward(workspace.data()) == 0 && b.same_results(reference);
  };
  bool first = false, second = false;
  std::thread a(run, &first), b(run, &second);
  a.join(), b.join();
  check(first && second, "two threads at once get the single-threaded results");
}

}  // namespace

int main() {
  statuses();
  workspace_allocates_nothing();
  two_threads();
  if (failures == 0) std::printf("api-check: statuses, workspace and threads behave\n");
  return failures ? 1 : 0;
}
