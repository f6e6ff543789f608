// misaligned_runs: a generated entry point run twice on the same data under host emulation, with
// every buffer 16-byte aligned (pointwise run loops, a row kernel's runs) and with every buffer one
// element past that (the element-by-element fallbacks). The outputs must be the same bits: both
// ways compute each element the same way, in the same order. Built with UBSan, so a wide access
// taken on a misaligned pointer fails too. Compiled against one generated folder (-I) with
// -DCASE_LAYER_NORM (examples/layer_norm.json, forward and backward), -DCASE_RESIDUAL_SCALE
// (examples/residual_scale.json, forward) or -DCASE_WIDE_ROWS (examples/wide_rows.json, rows of
// 8192 held in registers forward, streamed in runs backward).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "forward.cu"
#if defined(CASE_LAYER_NORM) || defined(CASE_WIDE_ROWS)
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

// A normalization's forward(x, w, b, y) and backward(x, w, y, cotangent, grad_x, grad_w, grad_b)
// over [rows, cols], each run aligned and then misaligned.
template <class Forward, class Backward>
int check_rows(const std::string& name, int64_t rows, int64_t cols, Forward forward, Backward backward) {
  Buffer x(rows * cols, 1), w(cols, 2), b(cols, 3), y(rows * cols, 4), cot(rows * cols, 5);
  Buffer grad_x(rows * cols, 6), grad_w(cols, 7), grad_b(cols, 8);
  for (bool misaligned : {false, true}) {
    forward(x.at(misaligned), w.at(misaligned), b.at(misaligned), y.at(misaligned));
    backward(x.at(misaligned), w.at(misaligned), y.at(misaligned), cot.at(misaligned), grad_x.at(misaligned), grad_w.at(misaligned),
             grad_b.at(misaligned));
  }
  return compare((name + " forward").c_str(), y) + compare((name + " backward: grad_x").c_str(), grad_x) +
         compare((name + " backward: grad_w").c_str(), grad_w) + compare((name + " backward: grad_b").c_str(), grad_b);
}

}  // namespace

int main() {
  int failures = 0;
#if defined(CASE_LAYER_NORM)
  failures += check_rows(
      "layer_norm", 2048, 1024, [](float* x, float* w, float* b, float* y) { layer_norm_forward(x, w, b, y, nullptr, nullptr); },
      [](float* x, float* w, float*, float* cot, float* gx, float* gw, float* gb) { layer_norm_backward(x, w, cot, gx, gw, gb, nullptr, nullptr); });
#elif defined(CASE_RESIDUAL_SCALE)
  const int64_t n = 2048;
  Buffer x(n * n, 1), residual(n * n, 2), gamma(n, 3), s(n, 4), out(n * n, 5);
  for (bool misaligned : {false, true})
    residual_scale_forward(x.at(misaligned), residual.at(misaligned), gamma.at(misaligned), s.at(misaligned), out.at(misaligned), nullptr, nullptr);
  failures += compare("residual_scale forward: t4", out);
#elif defined(CASE_WIDE_ROWS)
  failures += check_rows(
      "wide_rows", 8, 8192, [](float* x, float* w, float* b, float* y) { wide_rows_forward(x, w, b, y, nullptr, nullptr); },
      [](float* x, float* w, float* y, float* cot, float* gx, float* gw, float* gb) { wide_rows_backward(x, w, y, cot, gx, gw, gb, nullptr, nullptr); });
#else
#error "define CASE_LAYER_NORM, CASE_RESIDUAL_SCALE or CASE_WIDE_ROWS"
#endif
  return failures == 0 ? 0 : 1;
}
