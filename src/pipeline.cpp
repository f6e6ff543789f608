#include "pipeline.h"

#include <chrono>
#include <filesystem>
#include <fstream>

#include "decompose.h"
#include "emit_cuda.h"
#include "emit_harness.h"
#include "fuse.h"
#include "printer.h"
#include "templates.h"
#include "verify.h"

namespace tg {

namespace {

class PassLog {
 public:
  PassLog(const PipelineOptions& o, std::ostream& log) : o_(o), log_(log) {
    if (!o_.dump_dir.empty()) std::filesystem::create_directories(o_.dump_dir);
  }

  // Runs one pass, verifies its result, logs it and dumps its listing.
  template <class F>
  Trace pass(const char* name, const Trace& in, F&& f) {
    auto start = std::chrono::steady_clock::now();
    Trace out = f(in);
    verify_pass(out, name);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (o_.verbose) log_ << "thunder-gen: " << name << ": " << in.ops.size() << " ops -> " << out.ops.size() << " ops (" << ms << " ms)\n";
    dump(name, out);
    return out;
  }

  void dump(const char* name, const Trace& t) {
    if (o_.dump_dir.empty()) return;
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%02d-", stage_++);
    std::ofstream(std::filesystem::path(o_.dump_dir) / (prefix + std::string(name) + ".txt")) << print_trace(t);
  }

 private:
  const PipelineOptions& o_;
  std::ostream& log_;
  int stage_ = 0;
};

}  // namespace

PipelineResult run_pipeline(const Trace& input, const PipelineOptions& o, std::ostream& log) {
  PipelineResult result;
  PassLog passes(o, log);
  passes.dump("read", input);
  if (o.stop_after == Stage::read) return {print_trace(input), {}};
  Trace decomposed = passes.pass("decompose", input, decompose);
  if (o.stop_after == Stage::decompose) return {print_trace(decomposed), {}};
  Trace fused = passes.pass("fuse", decomposed, fuse);
  if (o.stop_after == Stage::fuse) return {print_trace(fused), {}};

  auto start = std::chrono::steady_clock::now();
  const std::string entry = input.name + "_forward";
  CudaFile forward = emit_cuda(fused, entry, "forward.cu", o.input_file);
  if (o.verbose)
    log << "thunder-gen: emit: " << forward.kernels.size() << " kernels ("
        << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() << " ms)\n";
  if (o.stop_after == Stage::cuda) return {forward.text, {}};

  result.files.emplace_back("forward.cu", forward.text);
  result.files.emplace_back("harness.cpp", emit_harness(input, entry, o.input_file));
  result.files.emplace_back("CMakeLists.txt", emit_cmake(input, {"forward.cu"}));
  result.files.emplace_back("manifest.json", emit_manifest(input, {{"forward.cu", &forward}}));
  for (const auto& [name, text] : embedded_templates()) result.files.emplace_back(std::string(name), std::string(text));
  return result;
}

}  // namespace tg
