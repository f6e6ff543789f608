// thunder-gen's command line: its options and subcommands read into a CommandLine (CLI11), and
// the usage errors it refuses before any work. Exit codes: 0 ok, 1 bad input, 2 usage, 70
// internal error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/passes.h"
#include "ir/size_expr.h"

namespace tg {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 70;

// One run of the pipeline: generating a folder (or printing a stage), or `explain`.
struct Request {
  std::string trace_file, out_dir, emit, dump_dir;
  std::string from_stage;         // --from-stage PASS: trace_file is that pass's listing
  bool verbose = false;
  std::string tags_file;          // --tags overrides.json
  std::string specialize_text;    // --specialize B=64,T=128
  SymbolValues specialize;        // ... read
  std::string plan_at_text;       // --plan-at B=64,T=1024
  SymbolValues plan_at;           // ... read
  std::vector<std::string> tags;  // --tag <selector>=<policy>, in order
  bool no_pack_bool = false;      // --no-pack-bool
  bool force = false;             // --force: replace an output folder that is not an earlier output
  int64_t activation_budget = -1; // --activation-budget BYTES (-1: none)
  std::string objective = "time";     // --remat-objective: time (the plans priced by the time model) or bytes (first)
  std::string device_model = "h200";  // --device-model: the time model's device, a name or a .json file
  double time_slack_percent = 1;      // --time-slack: how much slower than the fastest plan the default may be
  bool exact = false;                 // --exact: the time objective's plan by an MILP solver
  std::string price_plans;            // --price-plans: kernels (the default: each candidate fused and priced) or cut
  bool frontier = false;              // explain --frontier
  bool json = false;                  // explain --frontier --json
  double bucket_mb = 25;          // --bucket-size-mb: DDP's gradient buckets (0: an all-reduce per gradient)
  bool check = false;             // --check: compare the output folder with what generation writes
  size_t diff_lines = 400;        // --diff-lines: --check's diff is cut after this many lines (0: never)
  bool diff_lines_given = false;
};

struct CommandLine {
  enum class Command { generate, validate, list_ops, explain };
  Command command = Command::generate;
  Request request;                          // generate's, or explain's (whose emit is "plan")
  std::vector<std::string> validate_files;  // validate's traces
  SymbolValues validate_specialize;         // validate --specialize
  bool list_json = false;                   // list-ops --json
  bool list_aten = false;                   // list-ops --aten
};

// Reads argv into `line`. Returns the exit code when the run ends here: after --help or
// --version (0), or on a usage error, which it reports (kExitUsage).
std::optional<int> parse_command_line(int argc, char** argv, CommandLine& line);

// The pass an --emit or --from-stage name stands for: every pass by its name, and the stage
// names of earlier versions ("decomposed", "joint", "plan", "fused", "cuda", "trace").
Pass emit_stage(const std::string& name);

}  // namespace tg
