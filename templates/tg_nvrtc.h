// thunder-gen NVRTC builds: one program holding every kernel of a trace (kernels.cu includes
// forward.cu and backward.cu), compiled to a cubin and cached under a hash of everything that
// decides the result, so a warm cache compiles nothing.
//
// The cache is a folder of <hash>.cubin files: $TG_NVRTC_CACHE if set ("off" disables it), else
// $XDG_CACHE_HOME/thunder-gen/nvrtc, else $HOME/.cache/thunder-gen/nvrtc. The hash covers the
// program's source and every header it includes from its folder (the generated .cu files and
// tg_runtime.cuh, read from disk), the compile options (architecture included) and NVRTC's
// version. Entries are written to a temporary name and renamed, so concurrent builds never see a
// partial file. Host code only; needs nvrtc.h.
#pragma once
#include <nvrtc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg {

struct NvrtcBuild {
  std::string cubin;
  bool from_cache = false;
  double milliseconds = 0;  // compiling, or reading the cache entry
  std::string cache_file;   // empty when the cache is off
};

namespace nvrtc_detail {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// 128 bits from two FNV-1a passes with different offset bases: a cache key, not a defence
// against someone forging collisions.
class Hash {
 public:
  void add(const std::string& s) {
    const std::string framed = std::to_string(s.size()) + ":" + s;  // no ambiguity between parts
    for (unsigned char c : framed) {
      a_ = (a_ ^ c) * 0x100000001b3ull;
      b_ = (b_ ^ c) * 0x100000001b3ull;
    }
  }
  std::string hex() const {
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a_), static_cast<unsigned long long>(b_));
    return text;
  }

 private:
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
};

// The quoted #include names of `source` (one level: the generated files include only the
// runtime header, which includes nothing of the folder).
inline std::vector<std::string> quoted_includes(const std::string& source) {
  std::vector<std::string> names;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("#include \"");
    if (at == std::string::npos || line.find_first_not_of(" \t") != at) continue;
    size_t begin = at + 10, end = line.find('"', begin);
    if (end != std::string::npos) names.push_back(line.substr(begin, end - begin));
  }
  return names;
}

}  // namespace nvrtc_detail

inline std::filesystem::path nvrtc_cache_dir() {
  if (const char* dir = std::getenv("TG_NVRTC_CACHE")) return std::string(dir) == "off" ? std::filesystem::path() : std::filesystem::path(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "thunder-gen" / "nvrtc";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "thunder-gen" / "nvrtc";
  return {};
}

// Compiles `file` (in `dir`, which is also the include path) for `arch` ("sm_90"), or reads the
// cubin a previous build with the same inputs cached. Throws std::runtime_error with NVRTC's log
// on a compile error.
inline NvrtcBuild nvrtc_build(const std::filesystem::path& dir, const std::string& file, const std::string& arch,
                              const std::filesystem::path& cache = nvrtc_cache_dir()) {
  namespace fs = std::filesystem;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double, std::milli>(clock::now() - start).count(); };
  const std::string source = nvrtc_detail::read_file(dir / file);
  const std::vector<std::string> options = {"--gpu-architecture=" + arch, "--include-path=" + dir.string(), "--std=c++17"};

  NvrtcBuild build;
  if (!cache.empty()) {
    nvrtc_detail::Hash hash;
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    hash.add("nvrtc " + std::to_string(major) + "." + std::to_string(minor));
    for (const std::string& o : options) hash.add(o.rfind("--include-path=", 0) == 0 ? "--include-path" : o);  // not the folder's name
    hash.add(source);
    for (const std::string& name : nvrtc_detail::quoted_includes(source)) {
      const std::string text = nvrtc_detail::read_file(dir / name);
      hash.add(name);
      hash.add(text);
      for (const std::string& inner : nvrtc_detail::quoted_includes(text))
        if (fs::exists(dir / inner)) hash.add(inner), hash.add(nvrtc_detail::read_file(dir / inner));
    }
    build.cache_file = (cache / (hash.hex() + ".cubin")).string();
    std::error_code ignored;
    if (fs::exists(build.cache_file, ignored)) {
      build.cubin = nvrtc_detail::read_file(build.cache_file);
      build.from_cache = true;
      build.milliseconds = elapsed();
      return build;
    }
  }

  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), file.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    throw std::runtime_error("NVRTC: cannot create a program for " + file);
  std::vector<const char*> option_pointers;
  for (const std::string& o : options) option_pointers.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(program, int(option_pointers.size()), option_pointers.data());
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    nvrtcDestroyProgram(&program);
    throw std::runtime_error("NVRTC compile of " + (dir / file).string() + " failed (" + nvrtcGetErrorString(result) + "):\n" + log);
  }
  size_t size = 0;
  nvrtcGetCUBINSize(program, &size);
  build.cubin.assign(size, '\0');
  nvrtcGetCUBIN(program, build.cubin.data());
  nvrtcDestroyProgram(&program);
  build.milliseconds = elapsed();

  if (!build.cache_file.empty()) {  // best effort: a cache that cannot be written is only slower
    std::error_code error;
    fs::create_directories(cache, error);
    const fs::path temporary = build.cache_file + ".tmp" + std::to_string(std::random_device{}());
    std::ofstream(temporary, std::ios::binary).write(build.cubin.data(), std::streamsize(build.cubin.size()));
    fs::rename(temporary, build.cache_file, error);
    if (error) fs::remove(temporary, error);
  }
  return build;
}

}  // namespace tg
