// nvrtc-check FILE.cu [ARCH] [--cache DIR] [--reject-loads N]: compiles the kernels of a generated
// .cu file with NVRTC, the way the nvrtc-mode harness does at run time (tg::nvrtc_build_and_load,
// include path: the file's folder), and reports the result and the time. Without --cache it always
// compiles; with it, it goes through that cache folder as the harness does and says whether it
// compiled. Needs no GPU: a stand-in for cuModuleLoadData takes the cubin, accepting an ELF file
// (what a cubin is) and rejecting the first N it is given (--reject-loads; 0 by default), so the
// tests can play a driver that rejects a cached cubin (tests/nvrtc_cache_hostile.sh).
// Exits 0 when NVRTC compiles it (or the cache has it) and the stand-in loads it, 1 with the
// reason otherwise (NVRTC's log for a compile error), 2 on a usage error.
#include <iostream>
#include <string>

#include "tg_nvrtc.h"

namespace {

class FakeLoader {
 public:
  explicit FakeLoader(long rejections) : rejections_left_(rejections) {}
  std::string operator()(const std::string& cubin) {
    if (rejections_left_ > 0) return --rejections_left_, "rejected by nvrtc-check's fake loader (--reject-loads)";
    if (cubin.compare(0, 4, "\x7f" "ELF") != 0) return "not an ELF file, so not a cubin";
    return "";
  }

 private:
  long rejections_left_;
};

bool is_count(const std::string& text) { return !text.empty() && text.size() < 9 && text.find_first_not_of("0123456789") == std::string::npos; }

}  // namespace

int main(int argc, char** argv) {
  std::string file, arch = "sm_90";
  std::filesystem::path cache;
  long rejections = 0;
  bool usage_error = false;
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cache" && i + 1 < argc) cache = argv[++i];
    else if (a == "--reject-loads" && i + 1 < argc && is_count(argv[i + 1])) rejections = std::stol(argv[++i]);
    else if (a.rfind("--", 0) == 0) usage_error = true;
    else if (positional == 0) file = a, ++positional;
    else if (positional == 1) arch = a, ++positional;
    else usage_error = true;
  }
  if (file.empty() || usage_error) {
    std::cerr << "usage: nvrtc-check FILE.cu [sm_90] [--cache DIR] [--reject-loads N]\n";
    return 2;
  }
  const std::filesystem::path path = file;
  try {
    tg::NvrtcBuild build = tg::nvrtc_build_and_load(path.has_parent_path() ? path.parent_path() : ".", path.filename().string(), arch,
                                                    FakeLoader(rejections), cache);
    std::cout << file << ": " << (build.from_cache ? "read from the NVRTC cache" : "NVRTC compiled it") << " for " << arch << " in "
              << build.milliseconds << " ms (" << build.cubin.size() << " bytes of cubin"
              << (build.cache_file.empty() ? "" : ", cache entry " + build.cache_file) << ")\n";
  } catch (const std::exception& e) {
    std::cerr << file << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
