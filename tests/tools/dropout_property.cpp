// dropout-property DIR P: checks a dropout run's files in DIR (x.npy, the output t<N>.npy named by
// --output, cotangent_<output>.npy, grad_x.npy, all f32) against dropout's defining property:
// every output element is either 0 or x / (1 - p), and the gradient is g / (1 - p) exactly where
// the output kept x and 0 where it dropped it: the same mask forward and backward. Also checks the
// kept fraction is 1 - p within 6 standard deviations. Independent of LibTorch and of Philox.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "tg_npy.h"

namespace {

// An f32 .npy file's elements, read by the harness's own strict parser (templates/tg_npy.h).
std::vector<float> read_f32_npy(const std::string& path) {
  std::vector<float> data;
  tg::npy::read_file(path, tg::npy::Expected{"<f4", std::nullopt}, [&](const tg::npy::Header&, size_t bytes) {
    data.resize(bytes / sizeof(float));
    return static_cast<void*>(data.data());
  });
  return data;
}

bool close(float a, double b) { return std::fabs(double(a) - b) <= 1e-6 * std::fabs(b) + 1e-30; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: dropout-property DIR OUTPUT_NAME P\n");
    return 2;
  }
  const std::string dir = argv[1], out = argv[2];
  const double p = std::stod(argv[3]), scale = 1.0 / (1.0 - p);
  try {
    std::vector<float> x = read_f32_npy(dir + "/x.npy"), y = read_f32_npy(dir + "/" + out + ".npy");
    std::vector<float> g = read_f32_npy(dir + "/cotangent_" + out + ".npy"), gx = read_f32_npy(dir + "/grad_x.npy");
    if (x.empty() || y.size() != x.size() || g.size() != x.size() || gx.size() != x.size()) throw std::runtime_error("sizes differ");
    size_t kept = 0, bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == 0.0f) continue;  // kept or dropped, the output is 0: the mask is not visible
      bool keeps = y[i] != 0.0f;
      bool ok = keeps ? close(y[i], x[i] * scale) && close(gx[i], g[i] * scale) : gx[i] == 0.0f;
      kept += keeps;
      if (!ok && bad++ < 5)
        std::printf("element %zu: x %.9g, output %.9g, cotangent %.9g, gradient %.9g: not a dropout of one mask\n", i, x[i], y[i], g[i], gx[i]);
    }
    double n = double(x.size()), expected = n * (1.0 - p), sigma = std::sqrt(n * p * (1.0 - p));
    bool fraction_ok = std::fabs(double(kept) - expected) <= 6.0 * sigma;
    std::printf("dropout p=%g: %zu of %zu kept (expected %.0f +- %.0f): %s; %zu elements violate the property\n", p, kept, x.size(), expected,
                sigma, fraction_ok ? "ok" : "WRONG", bad);
    return bad == 0 && fraction_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dropout-property: %s\n", e.what());
    return 1;
  }
}
