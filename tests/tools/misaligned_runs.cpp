// misaligned_runs: a generated entry point run twice on the same data under host emulation, with
// every buffer 16-byte aligned (pointwise run loops, a row kernel's runs) and with every buffer one
// element past that (the element-by-element fallbacks). The outputs must be the same bits: both
// ways compute each element the same way, in the same order. Built with UBSan, so a wide access
// taken on a misaligned pointer fails too. Compiled against one generated folder (-I) with
// -DCASE_LAYER_NORM (examples/layer_norm.json, forward and backward) or -DCASE_RESIDUAL_SCALE
// (examples/residual_scale.json, forward).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forward.cu"
#if defined(CASE_LAYER_NORM)
#include "backward.cu"
#endif

namespace {

// A float buffer at two places: its first element 16-byte aligned, or one element past that;
// both hold the same draws.
class Buffer {
 public:
  Buffer(int64_t n, uint32_t seed) : storage_(2 * size_t(n) + 16), n_(n) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    aligned_ = storage_.data() + (16 - address % 16) % 16 / sizeof(float);
    misaligned_ = aligned_ + (n + 3) / 4 * 4 + 4 + 1;  // the next 16-byte boundary after it, plus one
    std::mt19937 draw(seed);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    for (int64_t i = 0; i < n; ++i) aligned_[i] = misaligned_[i] = uniform(draw);
  }
  float* at(bool misaligned) { return misaligned ? misaligned_ : aligned_; }
  // The n elements at either place, as bytes.
  std::string contents(bool misaligned) { return std::string(reinterpret_cast<const char*>(at(misaligned)), size_t(n_) * sizeof(float)); }

 private:
  std::vector<float> storage_;
  int64_t n_;
  float* aligned_;
  float* misaligned_;
};

int compare(const char* name, Buffer& out) {
  if (out.contents(false) == out.contents(true)) {
    std::printf("%s: aligned and misaligned runs give the same bits\n", name);
    return 0;
  }
  std::printf("%s: FAILED: the misaligned run differs\n", name);
  return 1;
}

}  // namespace

int main() {
  int failures = 0;
#if defined(CASE_LAYER_NORM)
  const int64_t rows = 2048, cols = 1024;
  Buffer x(rows * cols, 1), w(cols, 2), b(cols, 3), y(rows * cols, 4), cot(rows * cols, 5);
  Buffer grad_x(rows * cols, 6), grad_w(cols, 7), grad_b(cols, 8);
  for (bool misaligned : {false, true}) {
    layer_norm_forward(x.at(misaligned), w.at(misaligned), b.at(misaligned), y.at(misaligned), nullptr);
    layer_norm_backward(x.at(misaligned), w.at(misaligned), cot.at(misaligned), grad_x.at(misaligned), grad_w.at(misaligned),
                        grad_b.at(misaligned), nullptr);
  }
  failures += compare("layer_norm forward: t13", y);
  failures += compare("layer_norm backward: grad_x", grad_x);
  failures += compare("layer_norm backward: grad_w", grad_w);
  failures += compare("layer_norm backward: grad_b", grad_b);
#elif defined(CASE_RESIDUAL_SCALE)
  const int64_t n = 2048;
  Buffer x(n * n, 1), residual(n * n, 2), gamma(n, 3), s(n, 4), out(n * n, 5);
  for (bool misaligned : {false, true})
    residual_scale_forward(x.at(misaligned), residual.at(misaligned), gamma.at(misaligned), s.at(misaligned), out.at(misaligned), nullptr);
  failures += compare("residual_scale forward: t4", out);
#else
#error "define CASE_LAYER_NORM or CASE_RESIDUAL_SCALE"
#endif
  return failures == 0 ? 0 : 1;
}
