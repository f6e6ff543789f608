// nvrtc-check FILE.cu [ARCH]: compiles the kernels of a generated .cu file with NVRTC, the way the
// nvrtc-mode harness does at run time (include path: the file's folder), and reports the result.
// Needs no GPU. Exits 0 when NVRTC compiles it, 1 with NVRTC's log otherwise.
#include <nvrtc.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: nvrtc-check FILE.cu [sm_90]\n";
    return 2;
  }
  std::filesystem::path file = argv[1];
  std::string arch = std::string("--gpu-architecture=") + (argc > 2 ? argv[2] : "sm_90");
  std::ifstream in(file);
  if (!in) {
    std::cerr << file << ": cannot open\n";
    return 1;
  }
  std::stringstream source;
  source << in.rdbuf();
  std::string include = "--include-path=" + (file.has_parent_path() ? file.parent_path().string() : std::string("."));
  const char* options[] = {arch.c_str(), include.c_str(), "--std=c++17"};
  nvrtcProgram program;
  std::string text = source.str();
  if (nvrtcCreateProgram(&program, text.c_str(), file.filename().c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) return 1;
  nvrtcResult result = nvrtcCompileProgram(program, 3, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  size_t cubin = 0;
  if (result == NVRTC_SUCCESS) nvrtcGetCUBINSize(program, &cubin);
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    std::cerr << file << ": NVRTC failed: " << nvrtcGetErrorString(result) << "\n" << log;
    return 1;
  }
  std::cout << file << ": NVRTC compiled for " << arch.substr(arch.find('=') + 1) << " (" << cubin << " bytes of cubin)\n";
  return 0;
}
