#include "pipeline.h"

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <optional>

#include "autograd.h"
#include "decompose.h"
#include "emit_cuda.h"
#include "emit_harness.h"
#include "explain.h"
#include "fuse.h"
#include "gemm_epilogue.h"
#include "partition.h"
#include "rng.h"
#include "printer.h"
#include "templates.h"
#include "verify.h"

namespace tg {

namespace {

// The process's peak resident memory so far, in MB (Linux reports ru_maxrss in KB).
long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

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
    done(name, in, out, start);
    return out;
  }

  // The checks, log line and listing of a pass that ran since `start`.
  void done(const char* name, const Trace& in, const Trace& out, std::chrono::steady_clock::time_point start) {
    verify_pass(out, name);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (o_.verbose)
      log_ << "thunder-gen: " << name << ": " << in.ops.size() << " ops -> " << out.ops.size() << " ops (" << ms << " ms, peak RSS "
           << peak_rss_mb() << " MB)\n";
    dump(name, out);
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

namespace {

bool trains(const Trace& t) {
  for (ValueId id : t.inputs)
    if (t.value(id).requires_grad) return true;
  return false;
}

std::string listing(const char* title, const Trace& t) { return "# " + std::string(title) + "\n" + print_trace(t); }

}  // namespace

PipelineResult run_pipeline(const Trace& read, const PipelineOptions& o, std::ostream& log) {
  // Dropout calls get the trace's Philox seed and offset inputs; policies become tags on the ops.
  const Trace input = apply_overrides(bind_rng(read), o.overrides);
  PipelineResult result;
  PassLog passes(o, log);
  passes.dump("read", input);
  if (o.stop_after == Stage::read) return {print_trace(input), {}};
  const bool training = trains(input);
  Trace decomposed = passes.pass("decompose", input, [&](const Trace& t) { return decompose(t, training); });
  if (o.stop_after == Stage::decompose) return {print_trace(decomposed), {}};

  std::optional<Partition> parts;
  const Trace* forward = &decomposed;
  if (training) {
    const auto autograd_start = std::chrono::steady_clock::now();
    JointTrace joint = autograd(decomposed);
    passes.done("autograd", decomposed, joint.trace, autograd_start);
    if (o.stop_after == Stage::joint) return {print_trace(joint.trace), {}};
    auto plan_start = std::chrono::steady_clock::now();
    parts = partition(joint, o.remat);
    const double plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - plan_start).count();
    verify_pass(parts->forward, "partition");
    verify_pass(parts->backward, "partition");
    passes.dump("forward", parts->forward);
    passes.dump("backward", parts->backward);
    if (o.verbose)
      log << "thunder-gen: partition: " << parts->forward.ops.size() << " forward ops, " << parts->backward.ops.size() << " backward ops, "
          << parts->saved.size() << " saved values (" << plan_ms << " ms, peak RSS " << peak_rss_mb() << " MB)\n";
    forward = &parts->forward;
    if (o.stop_after == Stage::partition) return {explain_partition(*parts, o.input_file), {}};
  } else if (o.stop_after == Stage::partition) {
    return {o.input_file + " (trace \"" + input.name + "\"): no input requires grad, so there is no backward and nothing is saved\n", {}};
  } else if (o.stop_after == Stage::joint) {
    return {print_trace(decomposed), {}};
  }

  Trace fused_forward = passes.pass("fuse", passes.pass("epilogue", *forward, fold_gemm_epilogues), fuse);
  std::optional<Trace> fused_backward;
  if (parts) fused_backward = passes.pass("fuse", passes.pass("epilogue", parts->backward, fold_gemm_epilogues), fuse);
  if (o.stop_after == Stage::fuse)
    return {fused_backward ? listing("forward", fused_forward) + "\n" + listing("backward", *fused_backward) : print_trace(fused_forward), {}};

  auto start = std::chrono::steady_clock::now();
  CudaFile forward_cu = emit_cuda(fused_forward, input.name + "_forward", "forward.cu", o.input_file);
  std::optional<CudaFile> backward_cu;
  if (fused_backward) backward_cu = emit_cuda(*fused_backward, input.name + "_backward", "backward.cu", o.input_file);
  if (o.verbose)
    log << "thunder-gen: emit: " << forward_cu.kernels.size() << " forward kernels"
        << (backward_cu ? ", " + std::to_string(backward_cu->kernels.size()) + " backward kernels" : std::string()) << " ("
        << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() << " ms, peak RSS " << peak_rss_mb()
        << " MB)\n";
  if (o.stop_after == Stage::cuda) return {forward_cu.text + (backward_cu ? "\n" + backward_cu->text : std::string()), {}};

  const Partition* training_parts = parts ? &*parts : nullptr;
  std::vector<std::string> cu_files = {"forward.cu"};
  std::vector<std::pair<std::string, const CudaFile*>> emitted = {{"forward.cu", &forward_cu}};
  result.files.emplace_back("forward.cu", forward_cu.text);
  if (backward_cu) {
    result.files.emplace_back("backward.cu", backward_cu->text);
    cu_files.push_back("backward.cu");
    emitted.emplace_back("backward.cu", &*backward_cu);
  }
  result.files.emplace_back("kernels.cu", emit_nvrtc_program(input, cu_files));
  result.files.emplace_back("harness.cpp", emit_harness(input, training_parts, o.input_file));
  result.files.emplace_back("CMakeLists.txt", emit_cmake(input, cu_files));
  result.files.emplace_back("manifest.json", emit_manifest(input, training_parts, emitted));
  for (const auto& [name, text] : embedded_templates()) result.files.emplace_back(std::string(name), std::string(text));
  return result;
}

}  // namespace tg
