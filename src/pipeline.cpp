#include "pipeline.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include <optional>

#include "autograd.h"
#include "decompose.h"
#include "emit_cuda.h"
#include "emit_harness.h"
#include "emit_header.h"
#include "entry_points.h"
#include "explain.h"
#include "fuse.h"
#include "gemm_epilogue.h"
#include "partition.h"
#include "rng.h"
#include "printer.h"
#include "templates.h"
#include "thunder_gen/diagnostics.h"
#include "verify.h"

namespace tg {

long peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;  // Linux reports KB
}

namespace {

// A stage's listing, written as a new file or over one (never through a symbolic link); a file
// that cannot be written is an error, not a listing silently missing.
void write_dump(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  const int error = errno;
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok) throw UserError("thunder-gen", "--dump-dir", "cannot write " + path.string() + ": " + std::strerror(error));
}

class PassLog {
 public:
  PassLog(const PipelineOptions& o, std::ostream& log) : o_(o), log_(log) {
    std::error_code error;
    if (!o_.dump_dir.empty() && !std::filesystem::create_directories(o_.dump_dir, error) && !std::filesystem::is_directory(o_.dump_dir))
      throw UserError("thunder-gen", "--dump-dir " + o_.dump_dir, "cannot create the folder" + (error ? ": " + error.message() : ""));
  }

  // Runs one pass, verifies its result, logs it and dumps its listing. A pass that takes its
  // input by value is handed an rvalue one to consume.
  template <class In, class F>
  Trace pass(const char* name, In&& in, F&& f) {
    auto start = std::chrono::steady_clock::now();
    const size_t in_ops = in.ops.size();
    Trace out = f(std::forward<In>(in));
    done(name, in_ops, out, start);
    return out;
  }

  // The checks, log line and listing of a pass that ran since `start`.
  void done(const char* name, size_t in_ops, const Trace& out, std::chrono::steady_clock::time_point start) {
    verify_pass(out, name);
    if (o_.verbose)
      log_ << "thunder-gen: " << name << ": " << in_ops << " ops -> " << out.ops.size() << " ops (" << ms_since(start) << " ms, peak RSS "
           << peak_rss_mb() << " MB)\n";
    dump(name, out);
  }

  void dump(const char* name, const Trace& t) {
    if (o_.dump_dir.empty()) return;
    char prefix[8];
    std::snprintf(prefix, sizeof prefix, "%02d-", stage_++);
    write_dump(std::filesystem::path(o_.dump_dir) / (prefix + std::string(name) + ".txt"), print_trace(t));
  }

  std::ostream& log() { return log_; }

  // A log for passes that run on another thread: its lines wait in `buffer`, and its dumps are
  // numbered from this log's next `stages` numbers, so the output is a sequential run's.
  PassLog fork(std::ostringstream& buffer, int stages) {
    PassLog child(o_, buffer);
    child.stage_ = stage_;
    stage_ += stages;
    return child;
  }

  static double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  const PipelineOptions& o_;
  std::ostream& log_;
  int stage_ = 0;
};

// One of the two traces lowered to CUDA: epilogues, fusion, then (unless the pipeline stops at
// the fused traces) the CUDA source.
struct Lowered {
  Trace fused;
  std::optional<CudaFile> cuda;
};

Lowered lower(Trace t, PassLog& passes, const PipelineOptions& o, const EntryPoint& entry, const char* file, const char* role) {
  Lowered out{passes.pass("fuse", passes.pass("epilogue", std::move(t), fold_gemm_epilogues), fuse), std::nullopt};
  if (o.stop_after == Stage::fuse) return out;
  auto start = std::chrono::steady_clock::now();
  out.cuda = emit_cuda(out.fused, entry, file, o.input_file);
  if (o.verbose)
    passes.log() << "thunder-gen: emit: " << out.cuda->kernels.size() << " " << role << " kernels (" << PassLog::ms_since(start) << " ms, peak RSS "
                 << peak_rss_mb() << " MB)\n";
  return out;
}

}  // namespace

namespace {

bool trains(const Trace& t) {
  for (ValueId id : t.inputs)
    if (t.value(id).requires_grad) return true;
  return false;
}

// A trace with t's ops and a copy of the rest, leaving t without ops.
Trace with_ops_of(Trace& t) {
  Trace out = t.without_ops();
  out.ops = std::move(t.ops);
  t.ops.clear();
  return out;
}

std::string listing(const char* title, const Trace& t) { return "# " + std::string(title) + "\n" + print_trace(t); }

}  // namespace

PipelineResult run_pipeline(Trace read, const PipelineOptions& o, std::ostream& log) {
  // Dropout calls get the trace's Philox seed and offset inputs; policies become tags on the ops.
  Trace input = apply_overrides(bind_rng(std::move(read)), o.overrides);
  PipelineResult result;
  PassLog passes(o, log);
  passes.dump("read", input);
  if (o.stop_after == Stage::read) return {print_trace(input), {}};
  const bool training = trains(input);
  Trace decomposed = passes.pass("decompose", input, [&](const Trace& t) { return decompose(t, training); });
  if (o.stop_after == Stage::decompose) return {print_trace(decomposed), {}};

  std::optional<Partition> parts;
  Trace* forward = &decomposed;
  if (training) {
    const auto autograd_start = std::chrono::steady_clock::now();
    const size_t decomposed_ops = decomposed.ops.size();
    JointTrace joint = autograd(std::move(decomposed));
    passes.done("autograd", decomposed_ops, joint.trace, autograd_start);
    if (o.stop_after == Stage::joint) return {print_trace(joint.trace), {}};
    auto plan_start = std::chrono::steady_clock::now();
    parts = partition(std::move(joint), o.remat);
    const double plan_ms = PassLog::ms_since(plan_start);
    passes.dump("forward", parts->forward);
    passes.dump("backward", parts->backward);
    if (o.verbose)
      log << "thunder-gen: partition: " << parts->forward.ops.size() << " forward ops, " << parts->backward.ops.size() << " backward ops, "
          << parts->saved.size() << " saved values (" << plan_ms << " ms, peak RSS " << peak_rss_mb() << " MB)\n";
    forward = &parts->forward;
    if (o.stop_after == Stage::partition) {
      verify_pass(parts->forward, "partition");
      verify_pass(parts->backward, "partition");
      return {explain_partition(*parts, o.input_file), {}};
    }
  } else if (o.stop_after == Stage::partition) {
    return {o.input_file + " (trace \"" + input.name + "\"): no input requires grad, so there is no backward and nothing is saved\n", {}};
  } else if (o.stop_after == Stage::joint) {
    return {print_trace(decomposed), {}};
  }

  // The forward and the backward are lowered independently, so the backward (the larger) gets a
  // thread of its own, which verifies the partition's backward first; the log lines and dumps
  // come out as a sequential run's would. Lowering consumes the ops; the partition keeps the rest
  // of each trace (values and signature, which lowering leaves as they were) for the harness and
  // the manifest; the harness, and the manifest up to the backward's kernels, are written while the backward is still lowered.
  std::ostringstream forward_log, backward_log;
  PassLog forward_passes = passes.fork(forward_log, 2), backward_passes = passes.fork(backward_log, 2);
  // The entry points' parameters, from the traces' signatures (before lowering takes their ops).
  const EntryPoint forward_api = forward_entry(*forward, parts ? &*parts : nullptr, input.name);
  const std::optional<EntryPoint> backward_api = parts ? std::optional(backward_entry(*parts, input.name)) : std::nullopt;
  std::future<Lowered> backward_future;
  if (parts)
    backward_future = std::async(std::launch::async, [&, backward = with_ops_of(parts->backward)]() mutable {
      verify_pass(backward, "partition");
      return lower(std::move(backward), backward_passes, o, *backward_api, "backward.cu", "backward");
    });
  std::optional<Lowered> forward_lowered, backward_lowered;
  std::string harness;
  std::optional<ManifestWriter> manifest;
  double harness_ms = 0;
  try {
    Trace to_lower = parts ? with_ops_of(*forward) : std::move(*forward);
    if (parts) verify_pass(to_lower, "partition");
    forward_lowered = lower(std::move(to_lower), forward_passes, o, forward_api, "forward.cu", "forward");
    if (o.stop_after == Stage::all) {
      const auto harness_start = std::chrono::steady_clock::now();
      harness = emit_harness(input, parts ? &*parts : nullptr, forward_api, backward_api ? &*backward_api : nullptr, o.input_file);
      manifest.emplace(input, parts ? &*parts : nullptr, forward_api, backward_api ? &*backward_api : nullptr);
      manifest->add_kernels("forward.cu", *forward_lowered->cuda);
      harness_ms = PassLog::ms_since(harness_start);
    }
  } catch (...) {
    if (backward_future.valid()) backward_future.wait();  // it reads `parts`: let it finish first
    throw;
  }
  if (backward_future.valid()) backward_lowered = backward_future.get();
  log << forward_log.str() << backward_log.str();
  const Trace& fused_forward = forward_lowered->fused;
  if (o.stop_after == Stage::fuse)
    return {backward_lowered ? listing("forward", fused_forward) + "\n" + listing("backward", backward_lowered->fused) : print_trace(fused_forward),
            {}};

  const CudaFile& forward_cu = *forward_lowered->cuda;
  const CudaFile* backward_cu = backward_lowered ? &*backward_lowered->cuda : nullptr;
  if (o.stop_after == Stage::cuda) return {forward_cu.text + (backward_cu ? "\n" + backward_cu->text : std::string()), {}};

  const auto outputs_start = std::chrono::steady_clock::now();
  std::vector<std::string> cu_files = {"forward.cu"};
  result.files.emplace_back("forward.cu", forward_cu.text + emit_api_functions(input.name, forward_cu, backward_cu));
  result.files.emplace_back("include/" + input.name + ".h",
                            emit_header(input.name, o.input_file, forward_lowered->fused, forward_api, backward_lowered ? &backward_lowered->fused : nullptr,
                                        backward_api ? &*backward_api : nullptr));
  if (backward_cu) {
    result.files.emplace_back("backward.cu", backward_cu->text);
    cu_files.push_back("backward.cu");
    manifest->add_kernels("backward.cu", *backward_cu);
  }
  result.files.emplace_back("kernels.cu", emit_nvrtc_program(input, cu_files));
  result.files.emplace_back("harness.cpp", std::move(harness));
  result.files.emplace_back("CMakeLists.txt", emit_cmake(input, cu_files));
  result.files.emplace_back("manifest.json", manifest->finish());
  for (const auto& [name, text] : embedded_templates()) result.files.emplace_back(std::string(name), std::string(text));
  if (o.verbose)
    log << "thunder-gen: harness and manifest: " << result.files.size() << " files (" << harness_ms + PassLog::ms_since(outputs_start)
        << " ms)\n";
  // The traces live as long as the result, not this function: the CLI, which exits next, need
  // not free them (PipelineResult::work).
  struct Work {
    Trace input;
    std::optional<Partition> parts;
    std::optional<Lowered> forward, backward;
  };
  result.work = std::make_shared<Work>(Work{std::move(input), std::move(parts), std::move(forward_lowered), std::move(backward_lowered)});
  return result;
}

}  // namespace tg
