// thunder-gen host runtime: memory, streams and kernel launches for the three ways a generated
// file is built (see the generated CMakeLists.txt):
//   TG_MODE emu   g++ only: kernels run on the CPU under tg_emu.h; "device" memory is host memory
//   TG_MODE nvcc  nvcc builds kernels and host code; launches use <<<>>>
//   TG_MODE nvrtc g++ builds host code (TG_NVRTC_HOST); the kernels of both .cu files are one
//                 NVRTC program (kernels.cu), compiled at run time through a cache (tg_nvrtc.h)
//                 or loaded from kernels.cu.cubin compiled ahead, and launched with the driver API
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// TG_GPU: host code built by the host compiler for a GPU build (the harness, in nvcc mode).
#if defined(__CUDACC__) || defined(TG_NVRTC_HOST) || defined(TG_GPU)
#define TG_ON_GPU 1
#include <cuda_runtime.h>
#endif
#if defined(TG_NVRTC_HOST)
#include <cuda.h>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "tg_nvrtc.h"
#endif
#if !defined(TG_ON_GPU)
#include <thread>
#endif

namespace tg {

[[noreturn]] inline void fatal(const char* what, const char* detail) {
  std::fprintf(stderr, "thunder-gen runtime: %s: %s\n", what, detail);
  std::exit(1);
}

#if defined(TG_ON_GPU)
using Stream = cudaStream_t;
#define TG_CUDA_CHECK(expr)                                              \
  do {                                                                   \
    cudaError_t tg_err_ = (expr);                                        \
    if (tg_err_ != cudaSuccess) ::tg::fatal(#expr, cudaGetErrorString(tg_err_)); \
  } while (0)

inline void* device_alloc(size_t bytes, Stream s) {
  void* p = nullptr;
  if (bytes) TG_CUDA_CHECK(cudaMallocAsync(&p, bytes, s));
  return p;
}
inline void device_free(void* p, Stream s) { if (p) TG_CUDA_CHECK(cudaFreeAsync(p, s)); }
inline void copy_to_device(void* dst, const void* src, size_t bytes, Stream s) { TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s)); }
inline void copy_to_host(void* dst, const void* src, size_t bytes, Stream s) { TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s)); }
inline void device_copy(void* dst, const void* src, size_t bytes, Stream s) { TG_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }
inline void synchronize(Stream s) { TG_CUDA_CHECK(cudaStreamSynchronize(s)); }
// Enough resident blocks to fill the device; grid-stride loops cover the rest.
inline unsigned max_blocks() {
  static unsigned blocks = [] {
    int device = 0, sms = 0;
    TG_CUDA_CHECK(cudaGetDevice(&device));
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return unsigned(sms) * 8u;
  }();
  return blocks;
}
#else
using Stream = void*;
inline void* device_alloc(size_t bytes, Stream) {
  void* p = bytes ? std::malloc(bytes) : nullptr;
  if (bytes && !p) fatal("device_alloc", "out of memory");
  return p;
}
inline void device_free(void* p, Stream) { std::free(p); }
inline void copy_to_device(void* dst, const void* src, size_t bytes, Stream) { if (bytes) std::memcpy(dst, src, bytes); }
inline void copy_to_host(void* dst, const void* src, size_t bytes, Stream) { if (bytes) std::memcpy(dst, src, bytes); }
inline void device_copy(void* dst, const void* src, size_t bytes, Stream) { if (bytes) std::memmove(dst, src, bytes); }
inline void synchronize(Stream) {}
// Under emulation every block costs a round of fibers, so a few per CPU thread suffice.
inline unsigned max_blocks() { return 4u * std::max(1u, std::thread::hardware_concurrency()); }
#endif

inline unsigned grid_for(int64_t work_items, unsigned per_block) {
  int64_t blocks = (work_items + per_block - 1) / per_block;
  return unsigned(blocks < int64_t(max_blocks()) ? blocks : int64_t(max_blocks()));
}

#if defined(TG_NVRTC_HOST)
#define TG_CU_CHECK(expr)                                                \
  do {                                                                   \
    CUresult tg_res_ = (expr);                                           \
    if (tg_res_ != CUDA_SUCCESS) {                                       \
      const char* tg_msg_ = "unknown";                                   \
      cuGetErrorString(tg_res_, &tg_msg_);                               \
      ::tg::fatal(#expr, tg_msg_);                                       \
    }                                                                    \
  } while (0)

// The kernels of a trace, all in one NVRTC program (kernels.cu, which includes forward.cu and
// backward.cu): loaded from kernels.cu.cubin next to it when one was compiled ahead, else built
// by tg::nvrtc_build_and_load for the current device, through its cache (tg_nvrtc.h; a cached
// cubin the driver rejects is compiled again). One module serves both files: trace_kernels() below.
class KernelModule {
 public:
  explicit KernelModule(const char* dir) : dir_(dir) {}

  template <class... Args>
  void launch(const char* kernel, unsigned grid, unsigned block, Stream stream, Args... args) {
    void* params[] = {static_cast<void*>(&args)...};
    TG_CU_CHECK(cuLaunchKernel(function(kernel), grid, 1, 1, block, 1, 1, 0, stream, params, nullptr));
  }

 private:
  std::string dir_;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;

  CUfunction function(const char* name) {
    if (!module_) load();
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    CUfunction f;
    TG_CU_CHECK(cuModuleGetFunction(&f, module_, name));
    return functions_[name] = f;
  }

  void load() {
    TG_CUDA_CHECK(cudaFree(nullptr));  // makes the runtime's primary context current
    if (std::ifstream ahead(dir_ + "/kernels.cu.cubin", std::ios::binary); ahead) {
      std::ostringstream image;
      image << ahead.rdbuf();
      TG_CU_CHECK(cuModuleLoadData(&module_, image.str().data()));
      return;
    }
    try {
      report(nvrtc_build_and_load(dir_, "kernels.cu", device_arch(), [this](const std::string& cubin) { return load_module(cubin); }));
    } catch (const std::exception& e) {
      fatal("NVRTC", e.what());
    }
  }

  // Hands `cubin` to the driver: "" when it loaded, else the driver's reason (nvrtc_build_and_load
  // then compiles a cached cubin again).
  std::string load_module(const std::string& cubin) {
    const CUresult result = cuModuleLoadData(&module_, cubin.data());
    if (result == CUDA_SUCCESS) return "";
    module_ = nullptr;
    const char* reason = "unknown error";
    cuGetErrorString(result, &reason);
    return reason;
  }

  static std::string device_arch() {
    int device = 0, major = 0, minor = 0;
    TG_CUDA_CHECK(cudaGetDevice(&device));
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    TG_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return "sm_" + std::to_string(major * 10 + minor);
  }

  static void report(const NvrtcBuild& build) {
    std::fprintf(stderr, "tg: kernels.cu: %s in %.0f ms%s%s\n", build.from_cache ? "read from the NVRTC cache" : "compiled by NVRTC",
                 build.milliseconds, build.cache_file.empty() ? " (not cached)" : build.from_cache ? ": " : ", cached as ",
                 build.cache_file.c_str());
  }
};

inline KernelModule& trace_kernels(const char* dir) {
  static KernelModule module(dir);
  return module;
}
#endif

}  // namespace tg

// TG_LAUNCH(kernel, grid, block, stream, args...): launches a generated kernel in any mode. (::kernel:
// a parameter of the entry point may have the kernel's name.)
#if defined(TG_NVRTC_HOST)
#define TG_LAUNCH(kernel, grid, block, stream, ...) tg_kernels().launch(#kernel, grid, block, stream, __VA_ARGS__)
#elif defined(__CUDACC__)
#define TG_LAUNCH(kernel, grid, block, stream, ...)            \
  do {                                                         \
    ::kernel<<<grid, block, 0, stream>>>(__VA_ARGS__);         \
    TG_CUDA_CHECK(cudaGetLastError());                         \
  } while (0)
#else
#define TG_LAUNCH(kernel, grid, block, stream, ...) tg_emu::launch_named(#kernel, ::kernel, dim3(grid), dim3(block), __VA_ARGS__)
#endif
