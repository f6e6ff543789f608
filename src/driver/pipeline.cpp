#include "driver/pipeline.h"

#include <chrono>
#include <future>
#include <optional>
#include <sstream>

#include "autograd/autograd.h"
#include "autograd/explain.h"
#include "autograd/partition.h"
#include "codegen/emit_cuda.h"
#include "codegen/entry_points.h"
#include "codegen/kernel_program.h"
#include "codegen/kernel_time.h"
#include "lower/dead_code.h"
#include "lower/decompose.h"
#include "lower/rng.h"
#include "ops/printer.h"
#include "ops/verify.h"
#include "output/emit_cmake.h"
#include "output/emit_harness.h"
#include "output/emit_header.h"
#include "output/emit_sizes.h"
#include "output/manifest.h"
#include "output/templates.h"
#include "schedule/fuse.h"
#include "schedule/gemm_epilogue.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

namespace {

// One of the two traces lowered to CUDA: epilogues, fusion and the CUDA source, or as far as
// --emit asks (the fork keeps that listing: its stopped()).
struct Lowered {
  FusedTrace fused;
  std::optional<KernelProgram> program;
  std::optional<CudaFile> cuda;
};

// Runs `pass` on `in`, unless the run resumes after it (--from-stage): `in` is its result then.
template <class F>
Trace step(Pass pass, F&& f, Trace in, PassManager& passes, const PipelineOptions& o) {
  return o.resumes_after(pass) ? in : passes.run(pass, std::forward<F>(f), std::move(in));
}

Lowered lower(Trace t, PassManager& passes, const EntryPoint& entry, const char* file, const PipelineOptions& o) {
  const char* input_file = o.input_file.c_str();
  Trace folded = step(Pass::epilogue, fold_gemm_epilogues, std::move(t), passes, o);
  if (passes.stopped()) return {{std::move(folded), {}}, std::nullopt, std::nullopt};
  Lowered out{o.resumes_after(Pass::fuse) ? FusedTrace{std::move(folded), o.resume->plans} : passes.run(Pass::fuse, fuse, std::move(folded)),
              std::nullopt, std::nullopt};
  if (passes.stopped()) return out;
  out.program = passes.run(Pass::kernel_ir, [&](const FusedTrace& fused) { return lower_kernels(fused, entry); }, out.fused);
  if (passes.stopped()) return out;
  out.cuda = passes.run(Pass::emit, [&](const KernelProgram& program) { return emit_cuda(out.fused, program, entry, file, input_file); }, *out.program);
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

std::string listing(const char* title, const std::string& text) { return "# " + std::string(title) + "\n" + text; }

}  // namespace

namespace {

// The traces a run builds, kept as long as its result (PipelineResult::work).
struct Work {
  Trace input;
  std::optional<Partition> parts;
  std::optional<Lowered> forward, backward;
};

// Binding, policies, decomposition and dead code: the trace every later pass starts from.
// (A run resumed after one of these passes starts with its result: see step.)
Trace front_end(Trace read, const PipelineOptions& o, PassManager& passes, Trace& input) {
  if (!o.resumes_after(Pass::read)) passes.finish_read(read);
  Trace bound = has_unbound_draws(read) || o.resumes_after(Pass::rng) ? step(Pass::rng, bind_rng, std::move(read), passes, o)
                                                                      : passes.unchanged(Pass::rng, std::move(read));
  input = step(Pass::overrides, [&](Trace t) { return apply_overrides(std::move(t), o.overrides); }, std::move(bound), passes, o);
  const bool training = trains(input);
  Trace decomposed = o.resumes_after(Pass::decompose) ? input : passes.run(Pass::decompose, [&](const Trace& t) { return decompose(t, training); }, input);
  return step(Pass::dead_code, remove_dead_ops, std::move(decomposed), passes, o);
}

// --plan-at settled against the trace: each size given is a symbol's and allowed by it, and a
// symbol not given is weighed at its largest size, or at the folder's where that is past 2^20 (a
// range left open, as torch.export leaves one; 2^20 for a folder that takes its sizes at run time). A static trace takes none, and neither does a
// listing read back, whose dims carry no expressions to weigh elsewhere.
RematOptions settle_plan_sizes(const RematOptions& remat, const Trace& t, bool from_listing) {
  RematOptions settled = remat;
  if (t.symbols.empty() || from_listing) {
    if (!remat.plan_at.empty())
      throw UserError("thunder-gen", "--plan-at", t.symbols.empty() ? "sizes a symbolic trace's plan, and this trace's sizes are static"
                                                                      : "a listing (--from-stage) carries no size expressions to plan at other sizes with");
    return settled;
  }
  for (const auto& [name, size] : remat.plan_at) {
    const SymbolDecl* decl = t.symbols.find(name);
    if (!decl) throw UserError("thunder-gen", "--plan-at", "the trace has no symbol " + name);
    if (!decl->allows(size)) throw UserError("thunder-gen", "--plan-at", name + "=" + std::to_string(size) + " is outside its range: " + decl->range_text());
  }
  constexpr int64_t kLargestDefault = int64_t(1) << 20;
  for (const auto& [name, decl] : t.symbols.all())
    if (decl.max <= kLargestDefault) settled.plan_at.try_emplace(name, decl.largest());
    else if (t.sizes_at_run_time) settled.plan_at.try_emplace(name, std::max(decl.min, kLargestDefault / decl.multiple_of * decl.multiple_of));
    else if (auto at = t.specialized_at.find(name); at != t.specialized_at.end()) settled.plan_at.try_emplace(name, at->second);
  return settled;
}

// A trace's kernels as lowering makes them: GEMM epilogues folded, then fused.
FusedTrace fused_kernels(Trace t) { return fuse(fold_gemm_epilogues(std::move(t))); }

// What a candidate plan's kernels are predicted to take (the choice by time prices its
// candidates so: RematOptions::price_kernels).
KernelSteps price_kernels(const Partition& p, const DeviceModel& device) {
  return {total_fs(predict_kernel_times(fused_kernels(p.forward), p.plan_at, device)),
          total_fs(predict_kernel_times(fused_kernels(p.backward), p.plan_at, device))};
}

// Autograd and the rematerialization plan, for a trace that trains (or a joint trace read back).
Partition differentiate(Trace forward, PassManager& passes, const PipelineOptions& o) {
  JointTrace joint;
  if (o.resumes_after(Pass::autograd)) {
    const JointMarks& marks = o.resume->joint;
    const size_t cotangents = forward.inputs.size() - marks.forward_inputs;  // one per forward output
    joint = JointTrace{.trace = std::move(forward), .forward_ops = marks.forward_ops, .forward_inputs = marks.forward_inputs,
                       .forward_outputs = cotangents};
  } else {
    joint = passes.run(Pass::autograd, autograd, std::move(forward));
  }
  return passes.run(Pass::partition, [&](JointTrace j) {
    RematOptions remat = settle_plan_sizes(o.remat, j.trace, o.resume.has_value());
    if (remat.choose_by_time && remat.price_by_kernels) remat.price_kernels = [device = *remat.device](const Partition& p) { return price_kernels(p, device); };
    return partition(std::move(j), remat);
  }, std::move(joint));
}

// What --emit asked of a lowering pass, from the forward's and the backward's forks.
std::string stopped_listing(Pass pass, const PassManager& forward, const PassManager* backward) {
  if (!backward) return *forward.stopped();
  if (pass == Pass::emit) return *forward.stopped() + "\n" + *backward->stopped();
  return listing("forward", *forward.stopped()) + "\n" + listing("backward", *backward->stopped());
}

// The output folder's files, from the lowered traces.
FileSet output_files(const Work& w, const EntryPoint& forward_api, const EntryPoint* backward_api, const PipelineOptions& o,
                     ManifestWriter& manifest, std::string harness) {
  const Trace& input = w.input;
  const CudaFile& forward_cu = *w.forward->cuda;
  const CudaFile* backward_cu = w.backward ? &*w.backward->cuda : nullptr;
  FileSet files;
  std::vector<std::string> cu_files = {"forward.cu"};
  const std::optional<SizeBinding> sizes = size_binding(input, forward_api, input.name);
  files.emplace_back("forward.cu", forward_cu.text + wrap_code_lines(emit_api_functions(input, forward_cu, backward_cu) + (sizes ? bind_sizes_definition(*sizes) : "")));
  files.emplace_back("include/" + input.name + ".h", emit_header(input.name, o.input_file, w.forward->fused.trace, forward_api,
                                                                 w.backward ? &w.backward->fused.trace : nullptr, backward_api, sizes ? &*sizes : nullptr));
  if (backward_cu) {
    files.emplace_back("backward.cu", backward_cu->text);
    cu_files.push_back("backward.cu");
    manifest.add_kernels("backward.cu", *backward_cu);
  }
  files.emplace_back("kernels.cu", emit_nvrtc_program(input, cu_files));
  files.emplace_back("harness.cpp", std::move(harness));
  files.emplace_back("CMakeLists.txt", emit_cmake(input, cu_files));
  files.emplace_back("manifest.json", manifest.finish());
  for (const auto& [name, text] : embedded_templates()) files.emplace_back(std::string(name), std::string(text));
  return files;
}

// explain and --emit plan, after the plan: the kernels each pass launches, fused as generating
// would fuse them, with their predicted times.
std::string kernel_times_listing(Trace forward, std::optional<Partition>& parts, const PipelineOptions& o) {
  std::future<FusedTrace> backward;
  if (parts) backward = std::async(std::launch::async, fused_kernels, std::move(parts->backward));
  const SymbolValues at = parts ? parts->plan_at : SymbolValues{};
  std::string sizes = sizes_text(at);
  if (sizes.empty() && !forward.symbols.empty()) sizes = "the sizes the trace was read at, " + forward.specialization_text();
  const std::vector<KernelTime> forward_times = predict_kernel_times(fused_kernels(std::move(forward)), at, *o.kernel_times);
  std::optional<std::vector<KernelTime>> backward_times;
  if (parts) backward_times = predict_kernel_times(backward.get(), at, *o.kernel_times);
  return "\n" + kernel_times_text(forward_times, backward_times ? &*backward_times : nullptr, *o.kernel_times, sizes);
}

PipelineResult run_passes(Trace read, const PipelineOptions& o, PassManager& passes, std::ostream& log) {
  auto work = std::make_shared<Work>();
  Trace decomposed = front_end(std::move(read), o, passes, work->input);
  const Trace& input = work->input;
  Trace* forward = &decomposed;
  // (A listing from after the partition is one of its two traces, lowered as it is.)
  if (trains(input) && !o.resumes_after(Pass::partition)) {
    work->parts = differentiate(std::move(decomposed), passes, o);
    forward = &work->parts->forward;
  } else {
    passes.skip(Pass::autograd, print_trace(decomposed));
    const std::string no_backward = "no input requires grad, so there is no backward and nothing is saved";
    passes.skip(Pass::partition, o.plan_listing == PlanListing::frontier_json
                                     ? "{\"frontier\": [], \"chosen\": -1, \"note\": \"" + no_backward + "\"}\n"
                                     : o.input_file + " (trace \"" + input.name + "\"): " + no_backward + "\n");
  }
  const Partition* parts = work->parts ? &*work->parts : nullptr;
  if (passes.stopped()) return {*passes.stopped() + kernel_times_listing(std::move(*forward), work->parts, o), {}};

  // The forward and the backward are lowered independently, so the backward (the larger) gets a
  // thread of its own, which verifies the partition's backward first; the log lines and dumps
  // come out as a sequential run's would. Lowering consumes the ops; the partition keeps the rest
  // of each trace (values and signature) for the harness and the manifest, which are written
  // while the backward is still lowered.
  std::ostringstream forward_log, backward_log;
  PassManager forward_passes = passes.fork(forward_log, 3, parts ? "forward" : "");  // epilogue, fuse, kernel-ir
  PassManager backward_passes = passes.fork(backward_log, 3, "backward");
  const EntryPoint forward_api = forward_entry(*forward, parts, input.name);
  const std::optional<EntryPoint> backward_api = parts ? std::optional(backward_entry(*parts, input.name)) : std::nullopt;
  std::future<Lowered> backward_future;
  if (parts)
    backward_future = std::async(std::launch::async, [&, backward = with_ops_of(work->parts->backward)]() mutable {
      PassManager::verify(backward, Pass::partition);
      return lower(std::move(backward), backward_passes, *backward_api, "backward.cu", o);
    });
  std::string harness;
  std::optional<ManifestWriter> manifest;
  double harness_ms = 0;
  try {
    Trace to_lower = parts ? with_ops_of(*forward) : std::move(*forward);
    if (parts) PassManager::verify(to_lower, Pass::partition);
    work->forward = lower(std::move(to_lower), forward_passes, forward_api, "forward.cu", o);
    if (!forward_passes.stopped()) {
      const auto harness_start = std::chrono::steady_clock::now();
      harness = emit_harness(input, parts, forward_api, backward_api ? &*backward_api : nullptr, o.input_file);
      manifest.emplace(input, parts, forward_api, backward_api ? &*backward_api : nullptr);
      manifest->add_kernels("forward.cu", *work->forward->cuda);
      harness_ms = ms_since(harness_start);
    }
  } catch (...) {
    if (backward_future.valid()) backward_future.wait();  // it reads the partition: let it finish first
    throw;
  }
  if (backward_future.valid()) work->backward = backward_future.get();
  log << forward_log.str() << backward_log.str();
  for (Pass pass : {Pass::epilogue, Pass::fuse, Pass::kernel_ir, Pass::emit})
    if (passes.stops_after(pass)) return {stopped_listing(pass, forward_passes, parts ? &backward_passes : nullptr), {}};

  const auto outputs_start = std::chrono::steady_clock::now();
  PipelineResult result;
  result.files = output_files(*work, forward_api, backward_api ? &*backward_api : nullptr, o, *manifest, std::move(harness));
  result.manifest_sizes = manifest->sizes_lines();
  if (o.verbose)
    log << "thunder-gen: harness and manifest: " << result.files.size() << " files (" << harness_ms + ms_since(outputs_start) << " ms)\n";
  result.work = std::move(work);
  return result;
}

}  // namespace

PipelineResult run_pipeline(Trace read, const PipelineOptions& o, std::ostream& log) {
  PassManager passes(o, log);
  try {
    return run_passes(std::move(read), o, passes, log);
  } catch (const PassManager::Stopped& stop) {
    return {stop.listing, {}};
  }
}

}  // namespace tg
