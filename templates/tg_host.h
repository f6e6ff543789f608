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
#include <mutex>
#include <sstream>
#include <vector>

#include "tg_nvrtc.h"
#endif
#if !defined(TG_ON_GPU)
#include <atomic>
#include <thread>
#endif

namespace tg {

// For the harness and tools only: entry points never end the process, they return a Status.
[[noreturn]] inline void fatal(const char* what, const char* detail) {
  std::fprintf(stderr, "thunder-gen runtime: %s: %s\n", what, detail);
  std::exit(1);
}

// What an entry point returns: the public header's THUNDER_GEN_* values (emit_header).
enum Status : int {
  kOk = 0,
  kNullPointer = 1,   // a pointer to elements was null
  kMisaligned = 2,    // a pointer not aligned to its element type
  kOutOfMemory = 3,   // temporaries could not be allocated (no workspace given)
  kLaunchFailed = 4,  // a kernel launch failed
  kGemmFailed = 5,    // a cuBLASLt call failed (or the emulation's GEMM was made to fail)
  kNvrtcFailed = 6,   // the kernels could not be compiled or loaded (nvrtc mode)
  kCudaFailed = 7,    // another CUDA runtime or driver call failed
  kBadSizes = 9,      // the inputs' shapes do not fit the folder's symbols (<trace>_bind_sizes, tg_sizes.h)
};
inline const char* status_string(int status) {
  switch (status) {
    case kOk: return "success";
    case kNullPointer: return "a pointer argument to elements is null";
    case kMisaligned: return "a pointer argument is not aligned to its element type";
    case kOutOfMemory: return "out of device memory for temporaries (pass a workspace)";
    case kLaunchFailed: return "a kernel launch failed";
    case kGemmFailed: return "a cuBLASLt matrix product failed";
    case kNvrtcFailed: return "the kernels could not be compiled or loaded (NVRTC)";
    case kCudaFailed: return "a CUDA runtime or driver call failed";
    case 8: return "a collective failed (NCCL, or another rank stopped)";  // tg_comm.h's kCommFailed
    case kBadSizes: return "the inputs' sizes do not fit this folder's symbols";
  }
  return "unknown status";
}
// In generated entry points: return the status of `expr` unless it is kOk.
#define TG_TRY(expr)                                  \
  do {                                                \
    if (const int tg_status_ = (expr)) return tg_status_; \
  } while (0)

// kOk, or why `p` cannot be an argument holding `elements` elements aligned to `align` bytes.
inline int check_pointer(const void* p, size_t align, int64_t elements) {
  if (elements == 0) return kOk;
  if (!p) return kNullPointer;
  return reinterpret_cast<uintptr_t>(p) % align ? kMisaligned : kOk;
}

// Whether a count a kernel takes at run time is one it may take: at most 2^46 elements (more than a
// device holds: the bound its index arithmetic was simplified under), and not below 0.
inline bool count_fits(int64_t count) { return count >= 0 && count <= (int64_t(1) << 46); }

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
// What entry points use: statuses, not fatal().
inline int status_of(cudaError_t e) { return e == cudaSuccess ? kOk : e == cudaErrorMemoryAllocation ? kOutOfMemory : kCudaFailed; }
inline int allocate(void** p, size_t bytes, Stream s) {
  *p = nullptr;
  return bytes ? status_of(cudaMallocAsync(p, bytes, s)) : kOk;
}
inline void release(void* p, Stream s) { if (p) cudaFreeAsync(p, s); }
inline int copy_on_device(void* dst, const void* src, size_t bytes, Stream s) {
  return bytes ? status_of(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)) : kOk;
}
inline int launch_status(cudaError_t e) { return e == cudaSuccess ? kOk : kLaunchFailed; }
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

// Emulation only: allocations entry points made (a workspace makes none), and failures a test can
// ask for: TG_EMU_FAIL=alloc (every allocation of temporaries fails) or gemm (every GEMM).
inline std::atomic<long>& allocations() {
  static std::atomic<long> count{0};
  return count;
}
inline bool emulated_failure(const char* what) {
  const char* failing = std::getenv("TG_EMU_FAIL");
  return failing && std::strcmp(failing, what) == 0;
}
inline int allocate(void** p, size_t bytes, Stream) {
  *p = nullptr;
  if (!bytes) return kOk;
  ++allocations();
  if (emulated_failure("alloc")) return kOutOfMemory;
  *p = std::malloc(bytes);
  return *p ? kOk : kOutOfMemory;
}
inline void release(void* p, Stream) { std::free(p); }
inline int copy_on_device(void* dst, const void* src, size_t bytes, Stream) {
  if (bytes) std::memmove(dst, src, bytes);
  return kOk;
}

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

// The stream an entry point got (the header's thunder_gen_stream, cudaStream_t's type): the
// emulation ignores it.
template <class Handle> Stream stream_of(Handle handle) { return reinterpret_cast<Stream>(handle); }

// The temporaries of one entry-point call, at offsets the generator fixed: in the caller's
// workspace, or in one allocation made now and freed, in stream order, when the call returns.
class Memory {
 public:
  Memory(void* workspace, size_t bytes, Stream stream) : stream_(stream), base_(static_cast<char*>(workspace)) {
    if (workspace || bytes == 0) return;
    void* p = nullptr;
    status_ = allocate(&p, bytes, stream);
    base_ = static_cast<char*>(p);
    owned_ = true;
  }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  ~Memory() {
    if (owned_) release(base_, stream_);
  }
  int status() const { return status_; }
  template <class T> T* at(size_t offset) const { return reinterpret_cast<T*>(base_ + offset); }
  // The part of a caller's workspace past the temporaries that cuBLASLt may use ({} without one:
  // it uses a workspace of its own, allocated once).
  struct Span {
    void* data = nullptr;
    size_t bytes = 0;
  };
  Span gemm_space(size_t offset, size_t bytes) const { return owned_ || !base_ ? Span{} : Span{base_ + offset, bytes}; }

 private:
  Stream stream_;
  char* base_ = nullptr;
  bool owned_ = false;
  int status_ = kOk;
};

// The workspace cuBLASLt gets for a file's matrix products: none under emulation.
#if defined(TG_ON_GPU)
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;
#else
constexpr size_t kGemmWorkspaceBytes = 0;
#endif

inline unsigned grid_for(int64_t work_items, unsigned per_block) {
  int64_t blocks = (work_items + per_block - 1) / per_block;
  return unsigned(blocks < int64_t(max_blocks()) ? blocks : int64_t(max_blocks()));
}

// Threads for a block taking one row of `row_length` elements, one element a thread at a time:
// the smallest power of two from a warp (32) that covers the row, at most `most`, so that no warp
// of a short row's block is idle.
inline unsigned row_block(int64_t row_length, unsigned most) {
  unsigned block = 32;
  while (block < most && int64_t(block) < row_length) block *= 2;
  return block;
}

#if defined(TG_NVRTC_HOST)

// The kernels of a trace, all in one NVRTC program (kernels.cu, which includes forward.cu and
// backward.cu): loaded from kernels.cu.cubin next to it when one was compiled ahead, else built
// by tg::nvrtc_build_and_load for the current device, through its cache (tg_nvrtc.h; a cached
// cubin the driver rejects is compiled again). One module serves both files: trace_kernels() below.
class KernelModule {
 public:
  explicit KernelModule(const char* dir) : dir_(dir) {}

  // kOk, or why `kernel` could not be launched: its module did not load (kNvrtcFailed; error()
  // says why), or the launch failed.
  template <class... Args>
  int launch(const char* kernel, unsigned grid, unsigned block, Stream stream, Args... args) {
    CUfunction f = nullptr;
    if (const int status = function(kernel, &f)) return status;
    void* params[] = {static_cast<void*>(&args)...};
    return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, nullptr) == CUDA_SUCCESS ? kOk : kLaunchFailed;
  }

  // Why the module did not load, when it did not.
  std::string error() {
    std::lock_guard<std::mutex> guard(lock_);
    return error_;
  }

 private:
  std::string dir_;
  std::mutex lock_;  // entry points may run on several threads at once
  CUmodule module_ = nullptr;
  std::string error_;
  std::map<std::string, CUfunction> functions_;

  int function(const char* name, CUfunction* f) {
    std::lock_guard<std::mutex> guard(lock_);
    if (!module_ && !load()) return kNvrtcFailed;
    auto it = functions_.find(name);
    if (it == functions_.end()) {
      if (cuModuleGetFunction(f, module_, name) != CUDA_SUCCESS) return error_ = std::string("no kernel ") + name, kNvrtcFailed;
      it = functions_.emplace(name, *f).first;
    }
    *f = it->second;
    return kOk;
  }

  // Loads the module once; false (error_ says why) when it cannot.
  bool load() {
    if (cudaFree(nullptr) != cudaSuccess) return error_ = "no CUDA context", false;  // (makes the primary context current)
    if (std::ifstream ahead(dir_ + "/kernels.cu.cubin", std::ios::binary); ahead) {
      std::ostringstream image;
      image << ahead.rdbuf();
      if (cuModuleLoadData(&module_, image.str().data()) == CUDA_SUCCESS) return true;
      module_ = nullptr;
      return error_ = "the driver rejected " + dir_ + "/kernels.cu.cubin", false;
    }
    try {
      std::string arch;
      if (!device_arch(&arch)) return error_ = "cannot read the device's compute capability", false;
      report(nvrtc_build_and_load(dir_, "kernels.cu", arch, [this](const std::string& cubin) { return load_module(cubin); }));
      return true;
    } catch (const std::exception& e) {
      module_ = nullptr;
      return error_ = e.what(), false;
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

  static bool device_arch(std::string* arch) {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
      return false;
    *arch = "sm_" + std::to_string(major * 10 + minor);
    return true;
  }

  // Entry points print nothing; TG_NVRTC_VERBOSE=1 says where the kernels came from.
  static void report(const NvrtcBuild& build) {
    const char* verbose = std::getenv("TG_NVRTC_VERBOSE");
    if (!verbose || std::strcmp(verbose, "1") != 0) return;
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

// TG_LAUNCH(kernel, grid, block, stream, args...): launches a generated kernel in any mode; its
// value is the launch's Status. (::kernel: a parameter of the entry point may have its name.)
#if defined(TG_NVRTC_HOST)
#define TG_LAUNCH(kernel, grid, block, stream, ...) tg_kernels().launch(#kernel, grid, block, stream, __VA_ARGS__)
#elif defined(__CUDACC__)
#define TG_LAUNCH(kernel, grid, block, stream, ...) ::tg::launch_status((::kernel<<<grid, block, 0, stream>>>(__VA_ARGS__), cudaGetLastError()))
#else
#define TG_LAUNCH(kernel, grid, block, stream, ...) (tg_emu::launch_named(#kernel, ::kernel, dim3(grid), dim3(block), __VA_ARGS__), ::tg::kOk)
#endif
