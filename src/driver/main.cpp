// thunder-gen command line. Exit codes: 0 ok, 1 bad input, 2 usage, 70 internal error.
#include <CLI/CLI.hpp>
#include <mimalloc.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>

#include <unistd.h>
#include <sstream>

#include "driver/pipeline.h"
#include "driver/resume.h"
#include "frontend/reader.h"
#include "ops/op_listing.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "output/folder_check.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 70;

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

// The op table (src/ops/op_listing.h): readable, or as JSON for the Python tools.
int list_ops_json() {
  std::cout << tg::op_table_json();
  return 0;
}

int list_ops() {
  std::cout << tg::op_table_text();
  return 0;
}

int validate(const std::vector<std::string>& files) {
  int status = 0;
  for (const std::string& file : files) {
    try {
      tg::Trace t = tg::read_trace_file(file);
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

struct Request {
  std::string trace_file, out_dir, emit, dump_dir;
  std::string from_stage;         // --from-stage PASS: trace_file is that pass's listing
  bool verbose = false;
  std::string tags_file;          // --tags overrides.json
  std::vector<std::string> tags;  // --tag <selector>=<policy>, in order
  bool no_pack_bool = false;      // --no-pack-bool
  bool force = false;             // --force: replace an output folder that is not an earlier output
  int64_t activation_budget = -1; // --activation-budget BYTES (-1: none)
  double bucket_mb = 25;          // --bucket-size-mb: DDP's gradient buckets (0: an all-reduce per gradient)
  bool check = false;             // --check: compare the output folder with what generation writes
  size_t diff_lines = 400;        // --diff-lines: --check's diff is cut after this many lines (0: never)
  bool diff_lines_given = false;
};

// The overrides file's policies, then the command line's: later ones win.
std::vector<tg::Override> overrides_of(const Request& r) {
  std::vector<tg::Override> out;
  if (!r.tags_file.empty()) out = tg::read_overrides_file(r.tags_file);
  for (const std::string& flag : r.tags) out.push_back(tg::parse_tag_flag(flag));
  return out;
}

void add_override_options(CLI::App& app, Request& r) {
  app.add_option("--tag", r.tags, "rematerialization policy for an op: <symbol id or @value>=<save|recompute|prefer-save|prefer-recompute>; repeatable")
      ->take_all();
  app.add_option("--tags", r.tags_file, "a JSON file of {\"<selector>\": \"<policy>\"} overrides");
  app.add_flag("--no-pack-bool", r.no_pack_bool, "store saved boolean masks at a byte per element, not a bit");
  app.add_option("--activation-budget", r.activation_budget,
                 "the most bytes of saved intermediates; among plans that fit, the one recomputing least")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--bucket-size-mb", r.bucket_mb,
                 "distributed traces: all-reduce DDP's gradients in buckets of this many MiB, as Thunder's ddp() does (default 25; 0: one all-reduce per gradient)")
      ->check(CLI::NonNegativeNumber);
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

// Options that cannot go together, refused rather than one of them ignored.
std::string conflicting_options(const Request& r) {
  if (!r.from_stage.empty() && r.emit.empty()) return "--from-stage runs the passes after a listing's: give --emit, the stage to print";
  if (!r.check) return r.diff_lines_given ? "--diff-lines goes with --check" : "";
  if (!r.emit.empty()) return "--check compares an output folder; --emit prints a stage instead";
  if (!r.dump_dir.empty()) return "--check writes nothing, so --dump-dir cannot go with it";
  if (r.force) return "--check replaces nothing, so --force cannot go with it";
  return "";
}

// --emit's names: every pass by its name, and the stage names of earlier versions.
const std::map<std::string, tg::Pass>& emit_stages() {
  static const std::map<std::string, tg::Pass> stages = [] {
    std::map<std::string, tg::Pass> m = {{"trace", tg::Pass::overrides}, {"decomposed", tg::Pass::decompose}, {"joint", tg::Pass::autograd},
                                         {"plan", tg::Pass::partition},  {"fused", tg::Pass::fuse},           {"cuda", tg::Pass::emit}};
    for (tg::Pass pass : tg::all_passes()) m.emplace(std::string(tg::pass_name(pass)), pass);
    return m;
  }();
  return stages;
}

std::vector<std::string> emit_stage_names() {
  std::vector<std::string> names;
  for (const auto& [name, pass] : emit_stages()) names.push_back(name);
  return names;
}

// --from-stage's listing, read back, and where the pipeline resumes; its --emit must come after.
tg::Trace read_listing_to_resume(const Request& r, tg::PipelineOptions& options) {
  const tg::Pass after = emit_stages().at(r.from_stage);
  if (*options.stop_after <= after)
    throw tg::UserError("thunder-gen", "--emit " + r.emit, "prints a stage before the passes --from-stage " + r.from_stage + " runs");
  tg::ResumedTrace listing = tg::read_to_resume(r.trace_file, after);
  options.resume = std::move(listing.resume);
  return std::move(listing.trace);
}

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
  options.remat.pack_bools = !r.no_pack_bool;
  if (r.activation_budget >= 0) options.remat.activation_budget = r.activation_budget;
  options.remat.bucket_bytes = int64_t(r.bucket_mb * 1024 * 1024);
  if (!emit.empty()) options.stop_after = emit_stages().at(emit);
  auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  tg::OutputFolderOptions folder_options{r.force, {file}};
  if (!r.tags_file.empty()) folder_options.inputs.push_back(r.tags_file);
  if (!out_dir.empty() && emit.empty() && !r.check) check_writable_output(out_dir, folder_options);
  // Dumps inside the output folder would be replaced with it, or keep it from being one.
  if (!r.dump_dir.empty() && !out_dir.empty() && tg::path_within(r.dump_dir, out_dir))
    throw tg::UserError("thunder-gen", "--dump-dir " + r.dump_dir, "is inside the output folder " + out_dir + ", which is replaced as a whole");
  auto start = std::chrono::steady_clock::now();
  tg::Trace trace = r.from_stage.empty() ? tg::read_trace_file(file) : read_listing_to_resume(r, options);
  if (verbose) std::cerr << "thunder-gen: read: " << trace.ops.size() << " ops (" << since(start) << " ms)\n";
  start = std::chrono::steady_clock::now();
  tg::PipelineResult result = tg::run_pipeline(std::move(trace), options, std::cerr);
  if (verbose && emit.empty()) std::cerr << "thunder-gen: pipeline: " << since(start) << " ms (passes, harness and manifest)\n";
  if (!emit.empty()) {
    std::cout << result.stopped_text;
    return 0;
  }
  if (r.check) return check_folder(out_dir, result.files, r.diff_lines);
  start = std::chrono::steady_clock::now();
  try {
    tg::write_folder_atomically(out_dir, result.files, folder_options);
  } catch (const tg::OutputFolderError& e) {
    throw;
  } catch (const std::runtime_error& e) {  // includes filesystem_error
    std::cerr << "thunder-gen: error: cannot write " << one_line(out_dir) << ": " << one_line(e.what()) << "\n";
    return kExitBadInput;
  }
  if (verbose)
    std::cerr << "thunder-gen: wrote " << result.files.size() << " files to " << out_dir << " (" << since(start) << " ms, peak RSS "
              << tg::peak_rss_mb() << " MB)\n";
  // Done: the process ends here without freeing what the run built (result.work), which the
  // system reclaims at once. Nothing else is pending: the files are closed, stderr unbuffered.
  std::cout.flush();
  std::_Exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  // A run touches a few hundred MB of fresh memory; faulting it in 2 MB pages rather than 4 KB
  // ones takes a 10,000-op run 1.0 -> 0.9 s (docs/performance.md), and a thread's first segment
  // gets them too when it is committed at once. The environment still decides.
  if (!std::getenv("MIMALLOC_LARGE_OS_PAGES")) mi_option_enable(mi_option_large_os_pages);
  if (!std::getenv("MIMALLOC_EAGER_COMMIT_DELAY")) mi_option_set(mi_option_eager_commit_delay, 0);
  // mimalloc (a C library, blind to std::set_new_handler) aborts when `new` finds no memory; it
  // reports the failure first, and this handler makes that an error message and exit code 1.
  mi_register_error(out_of_memory, nullptr);
  CLI::App app{"thunder-gen: captured PyTorch/Thunder trace (JSON) -> CUDA forward.cu, harness and manifest"};
  app.set_version_flag("--version", std::string("thunder-gen ") + THUNDER_GEN_VERSION);
  Request request;
  std::string& trace_file = request.trace_file;
  std::vector<std::string> validate_files;

  auto* validate_cmd = app.add_subcommand("validate", "check traces and report the first error in each");
  validate_cmd->add_option("traces", validate_files, "trace JSON files")->required();
  auto* list_cmd = app.add_subcommand("list-ops", "print the op table");
  bool list_json = false;
  list_cmd->add_flag("--json", list_json, "as JSON, for tools");
  Request explain_request;
  auto* explain_cmd = app.add_subcommand("explain", "print the rematerialization plan: what is saved for the backward and why, what is recomputed");
  explain_cmd->add_option("trace", explain_request.trace_file, "trace JSON file")->required();
  add_override_options(*explain_cmd, explain_request);
  app.add_option("trace", trace_file, "trace JSON file");
  app.add_option("-o,--output", request.out_dir, "output folder: created, or replaced as a whole when empty or an earlier output");
  app.add_flag("--force", request.force, "replace the output folder even when it holds something other than an earlier output");
  app.add_option("--emit", request.emit,
                 "stop after a pass and print its result: read, rng, overrides (or trace), decompose (or decomposed), dead-code, "
                 "autograd (or joint), partition (or plan: as explain prints it), epilogue, fuse (or fused), emit (or cuda)")
      ->check(CLI::IsMember(emit_stage_names()));
  app.add_option("--dump-dir", request.dump_dir, "write every stage's trace here, numbered");
  app.add_option("--from-stage", request.from_stage,
                 "the input is the listing --emit prints after this pass (or --dump-dir writes): run the passes after it (give --emit)")
      ->check(CLI::IsMember(emit_stage_names()));
  app.add_flag("-v,--verbose", request.verbose, "one line per pass, with its time");
  app.add_flag("--check", request.check,
               "write nothing: exit 0 when the output folder holds exactly what generation writes, else 1 with a unified diff (a/ the folder, b/ generation)");
  auto* diff_lines = app.add_option("--diff-lines", request.diff_lines, "--check: cut the diff after this many lines (0: never; default 400)");
  add_override_options(app, request);
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  request.diff_lines_given = diff_lines->count() > 0;
  try {
    if (*validate_cmd) return validate(validate_files);
    if (*list_cmd) return list_json ? list_ops_json() : list_ops();
    if (*explain_cmd) {
      explain_request.emit = "plan";
      try {
        return generate(explain_request);
      } catch (const tg::UserError& e) {
        report(explain_request.trace_file, e);
        return kExitBadInput;
      }
    }
    if (trace_file.empty()) {
      std::cerr << "thunder-gen: error: no trace given (usage: thunder-gen trace.json -o out/)\n";
      return kExitUsage;
    }
    if (const std::string conflict = conflicting_options(request); !conflict.empty()) {
      std::cerr << "thunder-gen: error: " << conflict << "\n";
      return kExitUsage;
    }
    if (request.out_dir.empty() && request.emit.empty()) {
      std::cerr << "thunder-gen: error: -o OUT is required unless --emit is given\n";
      return kExitUsage;
    }
    try {
      return generate(request);
    } catch (const tg::UserError& e) {
      report(trace_file, e);
      return kExitBadInput;
    } catch (const tg::OutputFolderError& e) {
      std::cerr << "thunder-gen: error: " << one_line(e.what()) << "\n";
      return kExitBadInput;
    }
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
