// thunder-gen's entry point: runs what the command line asks (driver/command_line.h) and turns
// errors into messages and exit codes: 0 ok, 1 bad input, 2 usage, 70 internal error.
#include <mimalloc.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <future>
#include <iostream>
#include <new>
#include <optional>

#include <unistd.h>
#include <sstream>

#include "driver/command_line.h"
#include "driver/list_ops.h"
#include "driver/pipeline.h"
#include "driver/resume.h"
#include "driver/run_time_sizes.h"
#include "frontend/input_file.h"
#include "frontend/overrides.h"
#include "frontend/reader.h"
#include "ops/verify.h"
#include "output/folder_check.h"
#include "output/output_folder.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace {

using tg::kExitBadInput;
using tg::kExitInternal;
using tg::Request;

// A diagnostic as one line of plain ASCII: control characters (a trace's newlines, a terminal's
// escape sequences) and other bytes (a Unicode direction override) written as \xNN.
std::string one_line(const std::string& text) { return tg::printable_line(text); }

// file: /json/pointer: error: message   (or file:line:col: error: ... for syntax errors)
void report(const std::string& trace_file, const tg::UserError& e) {
  const std::string& file = e.file.empty() ? trace_file : e.file;
  if (e.where.empty()) {
    std::cerr << one_line(file + ": error: " + e.what()) << "\n";
    return;
  }
  std::string where = (e.where[0] == '/' || e.where[0] == '-') ? file + ": " + e.where + ":" : file + ":" + e.where + ":";
  std::cerr << one_line(where + " error: " + e.what()) << "\n";
}

// mimalloc's error handler: running out of memory ends the run as bad input does, with a message
// (written without allocating). A staging folder it leaves is removed by the next run.
void out_of_memory(int error, void*) {
  if (error != ENOMEM) return;
  static const char message[] = "thunder-gen: error: out of memory\n";
  if (::write(STDERR_FILENO, message, sizeof message - 1) < 0) {}
  std::_Exit(kExitBadInput);
}

// The trace at the sizes `specialize` names; a symbolic trace without them at the first of two
// probes (run_time_sizes.h), its code to take the sizes at run time.
tg::Trace read_or_probe(const std::string& file, const tg::SymbolValues& specialize, std::optional<tg::SizeProbes>& probes) {
  try {
    return tg::read_input_file(file, specialize);
  } catch (const tg::SizesNotGiven& e) {
    std::variant<tg::SizeProbes, std::string> chosen = tg::choose_probes(e.symbols);
    if (const std::string* why = std::get_if<std::string>(&chosen)) throw tg::UserError("", *why);
    probes = std::get<tg::SizeProbes>(chosen);
  }
  tg::Trace trace = tg::read_input_file(file, probes->first);
  const std::vector<const tg::SizeExpr*> sizes = tg::probed_sizes(trace);
  if (tg::lift_first_probe(*probes, trace, sizes)) trace = tg::read_input_file(file, probes->first);
  trace.sizes_at_run_time = true;
  tg::verify(trace);  // (again: the shape rules that must hold at every size, a reshape's count, check it now)
  tg::separate_probes(*probes, trace, sizes);
  return trace;
}

int validate(const std::vector<std::string>& files, const tg::SymbolValues& specialize) {
  int status = 0;
  for (const std::string& file : files) {
    try {
      std::optional<tg::SizeProbes> probes;  // (without sizes: checked at a size in range)
      tg::Trace t = read_or_probe(file, specialize, probes);
      // Decomposition and autograd refuse some traces the reader accepts (an op with no gradient
      // on a requires-grad path); validate reports what generation would.
      tg::PipelineOptions through_autograd;
      through_autograd.stop_after = tg::Pass::autograd;
      std::ostringstream no_log;
      tg::run_pipeline(t, through_autograd, no_log);
      std::cout << file << ": ok (" << t.ops.size() << " ops, " << t.inputs.size() << " inputs, " << t.outputs.size() << " outputs)\n";
    } catch (const tg::UserError& e) {
      report(file, e);
      status = kExitBadInput;
    }
  }
  return status;
}

// The overrides file's policies, then the command line's: later ones win.
std::vector<tg::Override> overrides_of(const Request& r) {
  std::vector<tg::Override> out;
  if (!r.tags_file.empty()) out = tg::read_overrides_file(r.tags_file);
  for (const std::string& flag : r.tags) out.push_back(tg::parse_tag_flag(flag));
  return out;
}

// Refuses an output folder before the run spends time generating.
void check_writable_output(const std::string& out_dir, const tg::OutputFolderOptions& options) {
  try {
    tg::check_output_folder(out_dir, options);
  } catch (const std::filesystem::filesystem_error& e) {
    throw tg::OutputFolderError("cannot check " + out_dir + ": " + e.what());
  }
}

// --check: exit 0 when the folder holds exactly `files`, else 1 with a unified diff on stdout.
int check_folder(const std::string& out_dir, const tg::FileSet& files, size_t diff_lines) {
  const std::vector<tg::FolderDifference> differences = tg::compare_folder(out_dir, files);
  if (differences.empty()) return 0;
  std::cout << tg::diff_report(differences, diff_lines) << std::flush;
  std::cerr << "thunder-gen: --check: " << one_line(out_dir) << " differs from what generation writes: " << tg::difference_summary(differences)
            << "\n";
  return kExitBadInput;
}

// --from-stage's listing, read back, and where the pipeline resumes; its --emit must come after.
tg::Trace read_listing_to_resume(const Request& r, tg::PipelineOptions& options) {
  const tg::Pass after = tg::emit_stage(r.from_stage);
  if (*options.stop_after <= after)
    throw tg::UserError("thunder-gen", "--emit " + r.emit, "prints a stage before the passes --from-stage " + r.from_stage + " runs");
  tg::ResumedTrace listing = tg::read_to_resume(r.trace_file, after);
  options.resume = std::move(listing.resume);
  return std::move(listing.trace);
}

// A folder taking its sizes at run time is the one generated at the first probe; it is written
// only when the code generated at the second is the same. The second run starts at once on a
// thread of its own, beside the first (its -v lines are printed after the first's; it writes no
// --dump-dir listings, which are the first probe's). --emit of the kernel IR or the code is
// checked the same way: it is what such a folder holds.
std::future<tg::PipelineResult> start_second_probe(const std::string& file, const tg::SizeProbes& probes, tg::PipelineOptions options,
                                                   std::ostringstream& log) {
  options.dump_dir.clear();
  return std::async(std::launch::async, [&file, &probes, &log, options = std::move(options)] {
    tg::Trace trace = tg::read_input_file(file, probes.second);
    trace.sizes_at_run_time = true;
    return tg::run_pipeline(std::move(trace), options, log);
  });
}

// The second probe's result, when its code is the first's. Returns it for the caller to free
// with its own (at exit: see generate()).
tg::PipelineResult check_code_at_second_probe(std::future<tg::PipelineResult>& second_run, const tg::SizeProbes& probes,
                                              const tg::PipelineOptions& options, const tg::PipelineResult& first) {
  tg::PipelineResult second = second_run.get();
  const std::optional<tg::Pass> emitted = options.stop_after;
  const std::string listing = emitted == tg::Pass::kernel_ir ? "kernel-ir.kir" : "emitted.cu";
  std::optional<std::string> difference;
  if (emitted)
    difference = tg::code_difference({{listing, first.stopped_text}}, {{listing, second.stopped_text}}, probes);
  else if (!(difference = tg::code_difference(first.files, second.files, probes)))
    difference = tg::manifest_sizes_difference(first.manifest_sizes, second.manifest_sizes, probes);
  if (difference)
    throw tg::UserError("", "the generated code depends on the sizes other than through the symbols, so one folder cannot serve every size: " +
                                *difference + (probes.without_parameters.empty() ? "" : "; sizes it takes as numbers: " + probes.without_parameters) +
                                "; name the sizes with --specialize");
  return second;
}

tg::RematOptions remat_options_of(const Request& r) {
  tg::RematOptions remat;
  remat.pack_bools = !r.no_pack_bool;
  if (r.activation_budget >= 0) remat.activation_budget = r.activation_budget;
  remat.plan_at = r.plan_at;
  remat.bucket_bytes = int64_t(r.bucket_mb * 1024 * 1024);
  // The time model: chosen by, or only listed (explain --frontier of a plan by bytes).
  if (r.objective == "time" || r.frontier) remat.device = tg::device_model(r.device_model);
  remat.choose_by_time = r.objective == "time";
  remat.list_frontier = r.frontier;
  remat.time_slack = r.time_slack_percent / 100;
  remat.exact = r.exact;
  remat.price_by_kernels = r.price_plans != "cut" && !r.exact;
  return remat;
}

// The output folder, written in two steps (tg::StagedFolder): stage() writes it beside its place,
// commit() swaps it in. A folder taking its sizes at run time is staged while the second probe
// finishes; an error writing it is reported at commit(), after the probes' comparison, as it
// would be were it written then.
class OutputWriting {
 public:
  OutputWriting(const std::string& folder, const tg::OutputFolderOptions& options) : folder_(folder), options_(options) {}
  void stage(const tg::FileSet& files) {
    const auto start = std::chrono::steady_clock::now();
    try {
      staged_.emplace(folder_, files, options_);
    } catch (...) {
      error_ = std::current_exception();
    }
    ms_ += tg::ms_since(start);
  }
  // False when the folder cannot be written (said on stderr); throws OutputFolderError for a
  // folder that may not be replaced.
  bool commit(const tg::FileSet& files) {
    const auto start = std::chrono::steady_clock::now();
    try {
      if (error_) std::rethrow_exception(error_);
      if (!staged_) staged_.emplace(folder_, files, options_);
      staged_->commit();
    } catch (const tg::OutputFolderError& e) {
      throw;
    } catch (const std::runtime_error& e) {  // includes filesystem_error
      std::cerr << "thunder-gen: error: cannot write " << one_line(folder_) << ": " << one_line(e.what()) << "\n";
      return false;
    }
    ms_ += tg::ms_since(start);
    return true;
  }
  double ms() const { return ms_; }  // spent writing

 private:
  std::string folder_;
  tg::OutputFolderOptions options_;
  std::optional<tg::StagedFolder> staged_;
  std::exception_ptr error_;
  double ms_ = 0;
};

int generate(const Request& r) {
  const std::string& file = r.trace_file;
  const std::string& emit = r.emit;
  const std::string& out_dir = r.out_dir;
  const bool verbose = r.verbose;
  tg::PipelineOptions options;
  options.input_file = std::filesystem::path(file).filename().string();
  options.verbose = verbose;
  options.dump_dir = r.dump_dir;
  options.overrides = overrides_of(r);
  options.remat = remat_options_of(r);
  options.plan_listing = !r.frontier ? tg::PlanListing::plan : r.json ? tg::PlanListing::frontier_json : tg::PlanListing::frontier;
  if (!emit.empty()) options.stop_after = tg::emit_stage(emit);
  if (options.stop_after == tg::Pass::partition && options.plan_listing == tg::PlanListing::plan)
    options.kernel_times = tg::device_model(r.device_model);
  tg::OutputFolderOptions folder_options{r.force, {file}};
  if (!r.tags_file.empty()) folder_options.inputs.push_back(r.tags_file);
  if (!out_dir.empty() && emit.empty() && !r.check) check_writable_output(out_dir, folder_options);
  // Dumps inside the output folder would be replaced with it, or keep it from being one.
  if (!r.dump_dir.empty() && !out_dir.empty() && tg::path_within(r.dump_dir, out_dir))
    throw tg::UserError("thunder-gen", "--dump-dir " + r.dump_dir, "is inside the output folder " + out_dir + ", which is replaced as a whole");
  auto start = std::chrono::steady_clock::now();
  std::optional<tg::SizeProbes> probes;
  tg::Trace trace = r.from_stage.empty() ? read_or_probe(file, r.specialize, probes) : read_listing_to_resume(r, options);
  if (verbose) std::cerr << "thunder-gen: read: " << trace.ops.size() << " ops (" << tg::ms_since(start) << " ms)\n";
  start = std::chrono::steady_clock::now();
  // A listing before the kernel IR is the first probe's, and says so ("specialized at").
  const bool second_probe_checks = probes && (emit.empty() || *options.stop_after >= tg::Pass::kernel_ir);
  std::ostringstream second_log;
  std::future<tg::PipelineResult> second_run;
  if (second_probe_checks) {
    options.remat.shared_plans = tg::make_shared_plans();  // (both probes plan at --plan-at)
    second_run = start_second_probe(file, *probes, options, second_log);
  }
  std::optional<tg::PipelineResult> first_run;
  try {
    first_run = tg::run_pipeline(std::move(trace), options, std::cerr);
  } catch (...) {
    if (second_run.valid()) second_run.wait();  // (the first run's error is the one reported)
    throw;
  }
  tg::PipelineResult& result = *first_run;
  OutputWriting output(out_dir, folder_options);
  if (second_probe_checks && emit.empty() && !r.check) output.stage(result.files);  // (while the second probe finishes)
  tg::PipelineResult second_probe;
  if (second_probe_checks) {
    second_run.wait();
    if (verbose) std::cerr << "thunder-gen: at the second probe's sizes, beside it:\n" << second_log.str();
    const auto compare_start = std::chrono::steady_clock::now();
    second_probe = check_code_at_second_probe(second_run, *probes, options, result);
    if (verbose) std::cerr << "thunder-gen: the code is the same at both probes (" << tg::ms_since(compare_start) << " ms)\n";
  }
  if (verbose && emit.empty()) std::cerr << "thunder-gen: pipeline: " << tg::ms_since(start) - output.ms() << " ms (passes, harness and manifest)\n";
  if (!emit.empty()) {
    std::cout << result.stopped_text;
    return 0;
  }
  if (r.check) return check_folder(out_dir, result.files, r.diff_lines);
  if (!output.commit(result.files)) return kExitBadInput;
  if (verbose)
    std::cerr << "thunder-gen: wrote " << result.files.size() << " files to " << out_dir << " (" << output.ms() << " ms, peak RSS "
              << tg::peak_rss_mb() << " MB)\n";
  // Done: the process ends here without freeing what the run built (result.work), which the
  // system reclaims at once. Nothing else is pending: the files are closed, stderr unbuffered.
  std::cout.flush();
  std::_Exit(0);
}

// generate(), with its bad input reported against `trace_file` (exit 1).
int generate_reporting(const Request& r) {
  try {
    return generate(r);
  } catch (const tg::UserError& e) {
    report(r.trace_file, e);
    return kExitBadInput;
  }
}

int run(const tg::CommandLine& line) {
  using Command = tg::CommandLine::Command;
  switch (line.command) {
    case Command::validate: return validate(line.validate_files, line.validate_specialize);
    case Command::list_ops:
      if (line.list_aten) return tg::list_aten_ops(line.list_json);
      return line.list_json ? tg::list_ops_json() : tg::list_ops();
    case Command::explain: return generate_reporting(line.request);
    case Command::generate:
      try {
        return generate_reporting(line.request);
      } catch (const tg::OutputFolderError& e) {
        std::cerr << "thunder-gen: error: " << one_line(e.what()) << "\n";
        return kExitBadInput;
      }
  }
  return kExitInternal;
}

}  // namespace

int main(int argc, char** argv) {
  // mimalloc runs in its default 4 KB pages and keeps the memory it frees: a run is short, and
  // pages given back to the system are faulted in again (docs/performance.md §3). MIMALLOC_* in
  // the environment still decides.
#if MI_MALLOC_VERSION >= 210  // (2.1 calls giving memory back purging)
  if (!std::getenv("MIMALLOC_PURGE_DELAY")) mi_option_set(mi_option_purge_delay, -1);
#else
  if (!std::getenv("MIMALLOC_ALLOW_DECOMMIT")) mi_option_disable(mi_option_allow_decommit);
#endif
  // mimalloc (a C library, blind to std::set_new_handler) aborts when `new` finds no memory; it
  // reports the failure first, and this handler makes that an error message and exit code 1.
  mi_register_error(out_of_memory, nullptr);
  tg::CommandLine line;
  if (std::optional<int> exit_now = tg::parse_command_line(argc, argv, line)) return *exit_now;
  try {
    return run(line);
  } catch (const tg::InternalError& e) {
    std::cerr << "thunder-gen: internal error: " << e.what() << "\n";
    return kExitInternal;
  } catch (const std::bad_alloc&) {  // (an allocation that fails without reaching mimalloc's handler)
    std::cerr << "thunder-gen: error: out of memory\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "thunder-gen: error: " << e.what() << "\n";
    return kExitInternal;
  }
}
