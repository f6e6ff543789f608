// examples/consumer: a program using a trace that its build generates (thunder_gen_add_trace in
// CMakeLists.txt), through the trace's public header alone: the forward, then the backward, in a
// workspace the program owns, each status checked.
//   consumer DATA_DIR OUT_DIR
// reads x, ln_w, ln_b, w, b and cotangent_y (float32 .npy files) from DATA_DIR, and writes the
// output y and the gradients grad_ln_w, grad_ln_b, grad_w and grad_b to OUT_DIR (made if missing),
// as .npy files.
// Built with MODE emu (the default) the entry points take host memory; with nvcc or nvrtc
// (CONSUMER_ON_GPU), device memory, copied to and from with the CUDA runtime.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy_f32.h"
#include "tiny_mlp.h"  // written by thunder-gen when the project is built
#ifdef CONSUMER_ON_GPU
#include <cuda_runtime.h>
#endif

namespace {

// The shapes the trace declares (tiny_mlp.json; the header documents them by each argument).
const std::vector<int64_t> kX = {8, 32}, kRow = {32}, kW = {16, 32}, kBias = {16}, kY = {8, 16}, kRows = {8};

#ifdef CONSUMER_ON_GPU
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif

// Memory the entry points can use: device memory on a GPU, 256-byte aligned host memory under
// emulation (the kernels read 16-byte runs; the workspace's temporaries sit at 256-byte offsets).
class Buffer {
 public:
  explicit Buffer(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
#ifdef CONSUMER_ON_GPU
    cuda_check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
#else
    ptr_ = ::operator new(bytes, std::align_val_t(256));
#endif
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (!ptr_) return;
#ifdef CONSUMER_ON_GPU
    cudaFree(ptr_);
#else
    ::operator delete(ptr_, std::align_val_t(256));
#endif
  }
  float* floats() { return static_cast<float*>(ptr_); }
  void* raw() { return ptr_; }
  void upload(const std::vector<float>& host) {
#ifdef CONSUMER_ON_GPU
    cuda_check(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
#else
    std::copy(host.begin(), host.end(), floats());
#endif
  }
  std::vector<float> download() const {
    std::vector<float> host(bytes_ / sizeof(float));
#ifdef CONSUMER_ON_GPU
    cuda_check(cudaMemcpy(host.data(), ptr_, bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
#else
    std::copy(static_cast<const float*>(ptr_), static_cast<const float*>(ptr_) + host.size(), host.begin());
#endif
    return host;
  }

 private:
  size_t bytes_;
  void* ptr_ = nullptr;
};

size_t elements(const std::vector<int64_t>& shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  return n;
}

// A buffer holding DIR/<name>.npy, which must have `shape`.
struct Tensor {
  Tensor(const std::vector<int64_t>& shape_) : shape(shape_), memory(elements(shape_) * sizeof(float)) {}
  Tensor(const std::string& dir, const std::string& name, const std::vector<int64_t>& shape_) : Tensor(shape_) {
    memory.upload(npy::read_f32(dir + "/" + name + ".npy", shape).data);
  }
  void save(const std::string& dir, const std::string& name) const { npy::write_f32(dir + "/" + name + ".npy", shape, memory.download()); }
  std::vector<int64_t> shape;
  Buffer memory;
};

void check(int status, const char* entry_point) {
  if (status != THUNDER_GEN_SUCCESS) throw std::runtime_error(std::string(entry_point) + ": " + tiny_mlp_status_string(status));
}

int run(const std::string& data, const std::string& out) {
  Tensor x(data, "x", kX), ln_w(data, "ln_w", kRow), ln_b(data, "ln_b", kRow), w(data, "w", kW), b(data, "b", kBias);
  Tensor cotangent_y(data, "cotangent_y", kY);
  Tensor y(kY), grad_ln_w(kRow), grad_ln_b(kRow), grad_w(kW), grad_b(kBias);
  // What the forward saves for the backward beyond inputs (the header lists each: here the
  // layer norm's row statistics and the linear layer's output, which thunder-gen chose to keep).
  Tensor h_var(kRows), h_mean(kRows), a(kY);
  // One workspace serves both entry points: with it they allocate nothing.
  Buffer workspace(tiny_mlp_workspace_bytes());
  thunder_gen_stream stream = nullptr;  // the default stream (under emulation: the only one)
  check(tiny_mlp_forward(x.memory.floats(), ln_w.memory.floats(), ln_b.memory.floats(), w.memory.floats(), b.memory.floats(), y.memory.floats(),
                         h_var.memory.floats(), h_mean.memory.floats(), a.memory.floats(), workspace.raw(), stream),
        "tiny_mlp_forward");
  check(tiny_mlp_backward(x.memory.floats(), ln_w.memory.floats(), ln_b.memory.floats(), w.memory.floats(), h_var.memory.floats(),
                          h_mean.memory.floats(), a.memory.floats(), cotangent_y.memory.floats(), grad_ln_w.memory.floats(),
                          grad_ln_b.memory.floats(), grad_w.memory.floats(), grad_b.memory.floats(), workspace.raw(), stream),
        "tiny_mlp_backward");
  std::filesystem::create_directories(out);
  y.save(out, "y");
  grad_ln_w.save(out, "grad_ln_w");
  grad_ln_b.save(out, "grad_ln_b");
  grad_w.save(out, "grad_w");
  grad_b.save(out, "grad_b");
  double sum = 0;
  for (float v : y.memory.download()) sum += v;
  std::printf("tiny_mlp: forward and backward ran (workspace %zu bytes); sum of y %.6f; wrote %s/{y,grad_ln_w,grad_ln_b,grad_w,grad_b}.npy\n",
              tiny_mlp_workspace_bytes(), sum, out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer DATA_DIR OUT_DIR\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
