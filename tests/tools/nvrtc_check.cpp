// nvrtc-check FILE.cu [ARCH] [--cache DIR]: compiles the kernels of a generated .cu file with
// NVRTC, the way the nvrtc-mode harness does at run time (tg::nvrtc_build, include path: the
// file's folder), and reports the result and the time. Without --cache it always compiles; with
// it, it goes through that cache folder as the harness does and says whether it compiled.
// Needs no GPU. Exits 0 when NVRTC compiles it (or the cache has it), 1 with NVRTC's log otherwise.
#include <iostream>
#include <string>

#include "tg_nvrtc.h"

int main(int argc, char** argv) {
  std::string file, arch = "sm_90";
  std::filesystem::path cache;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cache" && i + 1 < argc) cache = argv[++i];
    else if (positional == 0) file = a, ++positional;
    else if (positional == 1) arch = a, ++positional;
    else file.clear();
  }
  if (file.empty()) {
    std::cerr << "usage: nvrtc-check FILE.cu [sm_90] [--cache DIR]\n";
    return 2;
  }
  const std::filesystem::path path = file;
  try {
    tg::NvrtcBuild build = tg::nvrtc_build(path.has_parent_path() ? path.parent_path() : ".", path.filename().string(), arch, cache);
    std::cout << file << ": " << (build.from_cache ? "read from the NVRTC cache" : "NVRTC compiled it") << " for " << arch << " in "
              << build.milliseconds << " ms (" << build.cubin.size() << " bytes of cubin"
              << (build.cache_file.empty() ? "" : ", cache entry " + build.cache_file) << ")\n";
  } catch (const std::exception& e) {
    std::cerr << file << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
