// kernel-module-check WORK: tg_host.h's KernelModule (the nvrtc-mode harness's kernel loader)
// against a fake CUDA driver and runtime defined below, so it runs without a GPU; NVRTC is real.
// In WORK it writes a one-kernel kernels.cu and uses WORK/cache as TG_NVRTC_CACHE, then checks:
//   1. a cold cache: compiled, cached, loaded once;
//   2. a warm cache: the entry is loaded, nothing is written;
//   3. the driver rejects the cached cubin (as after a driver change): KernelModule compiles again,
//      replaces the entry (a new file) and loads the fresh cubin, and the launch goes ahead.
// Exits 0 when all hold, 1 naming the first that does not.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tg_host.h"

// ---- the fake driver and runtime: what tg_host.h calls in nvrtc mode ----------------------------

namespace fake {
int loads = 0;            // cuModuleLoadData calls
int rejections_left = 0;  // how many of the next loads fail
std::string launched;     // the last kernel launched
CUmodule module = reinterpret_cast<CUmodule>(&loads);
}  // namespace fake

cudaError_t cudaFree(void*) { return cudaSuccess; }
cudaError_t cudaGetDevice(int* device) { return *device = 0, cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
  *value = attribute == cudaDevAttrComputeCapabilityMajor ? 9 : 0;
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t) { return "fake runtime error"; }
CUresult cuGetErrorString(CUresult, const char** text) { return *text = "fake driver: image rejected", CUDA_SUCCESS; }
CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  ++fake::loads;
  if (fake::rejections_left > 0) return --fake::rejections_left, CUDA_ERROR_INVALID_IMAGE;
  if (std::string(static_cast<const char*>(image), 4) != "\x7f" "ELF") return CUDA_ERROR_INVALID_IMAGE;  // a cubin is an ELF file
  *module = fake::module;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (module != fake::module) return CUDA_ERROR_INVALID_HANDLE;
  fake::launched = name;
  *function = reinterpret_cast<CUfunction>(&fake::launched);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**) {
  return CUDA_SUCCESS;
}

// ---- the checks ----------------------------------------------------------------------------------

namespace {

bool failed = false;

void check(bool holds, const char* what) {
  if (!holds) std::fprintf(stderr, "kernel-module-check: %s\n", what), failed = true;
}

// Loads the kernels of `dir` in a new KernelModule (as a harness run does) and launches `scale`.
void run_once(const std::string& dir) {
  tg::KernelModule module(dir.c_str());
  float* data = nullptr;
  module.launch("scale", 1, 32, nullptr, data, 0);
}

std::filesystem::path only_entry(const std::filesystem::path& cache) {
  std::filesystem::path entry;
  int count = 0;
  for (const auto& file : std::filesystem::directory_iterator(cache)) entry = file.path(), ++count;
  return count == 1 ? entry : std::filesystem::path();
}

ino_t inode_of(const std::filesystem::path& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_ino : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: kernel-module-check WORK\n"), 2;
  const std::filesystem::path work = argv[1], dir = work / "kernels", cache = work / "cache";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "kernels.cu") << "extern \"C\" __global__ void scale(float* x, int n) {\n"
                                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.f;\n}\n";
  ::setenv("TG_NVRTC_CACHE", cache.c_str(), 1);

  run_once(dir.string());
  const std::filesystem::path entry = only_entry(cache);
  check(!entry.empty(), "1. a cold cache: expected one entry after the build");
  check(fake::loads == 1 && fake::launched == "scale", "1. a cold cache: expected one load, then the launch of scale");

  const ino_t cold_inode = inode_of(entry);
  fake::loads = 0, fake::launched.clear();
  run_once(dir.string());
  check(fake::loads == 1 && fake::launched == "scale", "2. a warm cache: expected one load, then the launch of scale");
  check(inode_of(entry) == cold_inode, "2. a warm cache: the entry was rewritten");

  fake::loads = 0, fake::launched.clear(), fake::rejections_left = 1;
  run_once(dir.string());
  check(fake::loads == 2 && fake::launched == "scale", "3. the cached cubin rejected: expected a second load of a fresh build, then the launch");
  check(only_entry(cache) == entry && inode_of(entry) != cold_inode, "3. the cached cubin rejected: expected the entry replaced");
  if (!failed) std::printf("kernel-module-check: cold, warm and rejected-entry loads behave\n");
  return failed ? 1 : 0;
}
