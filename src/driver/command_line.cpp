#include "driver/command_line.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <tuple>

#include "support/generated_text.h"

namespace tg {
namespace {

// --emit's names: every pass by its name, and the stage names of earlier versions.
const std::map<std::string, Pass>& emit_stages() {
  static const std::map<std::string, Pass> stages = [] {
    std::map<std::string, Pass> m = {{"trace", Pass::overrides}, {"decomposed", Pass::decompose}, {"joint", Pass::autograd},
                                     {"plan", Pass::partition},  {"fused", Pass::fuse},           {"cuda", Pass::emit}};
    for (Pass pass : all_passes()) m.emplace(std::string(pass_name(pass)), pass);
    return m;
  }();
  return stages;
}

std::vector<std::string> emit_stage_names() {
  std::vector<std::string> names;
  for (const auto& [name, pass] : emit_stages()) names.push_back(name);
  return names;
}

constexpr const char* kSpecializeHelp = "a symbolic trace's sizes, one per symbol: B=64,T=128 (docs/symbolic-shapes.md)";

// An option given as "" would read as one not given (no sizes, no tags file, no dumps): refused.
CLI::Validator given(const std::string& what, const std::string& example = "") {
  const std::string why = "no " + what + " given" + (example.empty() ? "" : " (" + example + ")");
  return CLI::Validator([why](const std::string& text) { return text.empty() ? why : std::string(); }, "");
}
const CLI::Validator kSizesGiven = given("sizes", "B=64,T=128");

void add_override_options(CLI::App& app, Request& r) {
  app.add_option("--specialize", r.specialize_text, kSpecializeHelp)->check(kSizesGiven);
  app.add_option("--plan-at", r.plan_at_text,
                 "a symbolic trace's sizes the rematerialization plan weighs bytes and recomputation at (and --activation-budget "
                 "holds at), one per symbol or some: B=64,T=1024; by default each symbol's largest")
      ->check(kSizesGiven);
  app.add_option("--tag", r.tags, "rematerialization policy: <selector>=<save|recompute|prefer-save|prefer-recompute>, the selector a symbol id, @value, or for a PT2 archive an aten.* target or a module path glob; repeatable")
      ->take_all();
  app.add_option("--tags", r.tags_file, "a JSON file of {\"<selector>\": \"<policy>\"} overrides")->check(given("file"));
  app.add_flag("--no-pack-bool", r.no_pack_bool, "store saved boolean masks at a byte per element, not a bit");
  app.add_option("--activation-budget", r.activation_budget,
                 "the most bytes of saved intermediates; among plans that fit, the fastest predicted (by bytes: the one recomputing least)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--remat-objective", r.objective,
                 "time (default): the fewest activation bytes within --time-slack of the fastest step the time model predicts, or the "
                 "fastest within --activation-budget; bytes: the fewest activation bytes, a bit saved weighing as an element recomputed")
      ->check(CLI::IsMember({"bytes", "time"}));
  app.add_flag("--exact", r.exact,
               "with --remat-objective time: the optimal plan by an MILP solver (CBC) for graphs up to 600 forward ops, within 10 s; "
               "else the frontier's plan, with a note");
  app.add_option("--price-plans", r.price_plans,
                 "with --remat-objective time: what plans are compared on: kernels (default: each candidate's kernels, fused and "
                 "predicted, for joint traces up to 4000 ops) or cut (the cut's linear estimate; --exact always uses it)")
      ->check(CLI::IsMember({"kernels", "cut"}));
  app.add_option("--device-model", r.device_model,
                 "the device the planner's time model predicts for: h200 (default), h100, or a .json description (devices/)");
  app.add_option("--time-slack", r.time_slack_percent,
                 "the default plan saves the fewest activation bytes among plans predicted within this many percent of the fastest (default 1)")
      ->check(CLI::Range(0.0, 1000.0))
      ->check([](const std::string& text) { return std::isfinite(std::strtod(text.c_str(), nullptr)) ? "" : "not a finite number"; });
  app.add_option("--bucket-size-mb", r.bucket_mb,
                 "distributed traces: all-reduce DDP's gradients in buckets of this many MiB, as Thunder's ddp() does (default 25; 0: one all-reduce per gradient)")
      ->check(CLI::NonNegativeNumber);
}

// The main command's options: a trace in, a folder (or a stage's listing) out. Returns --diff-lines,
// whose presence matters.
CLI::Option* add_generate_options(CLI::App& app, Request& request) {
  app.add_option("trace", request.trace_file, "trace JSON file or PT2 archive (torch.export.save)");
  app.add_option("-o,--output", request.out_dir, "output folder: created, or replaced as a whole when empty or an earlier output");
  app.add_flag("--force", request.force, "replace the output folder even when it holds something other than an earlier output");
  app.add_option("--emit", request.emit,
                 "stop after a pass and print its result: read, rng, overrides (or trace), decompose (or decomposed), dead-code, "
                 "autograd (or joint), partition (or plan: as explain prints it), epilogue, fuse (or fused), emit (or cuda)")
      ->check(CLI::IsMember(emit_stage_names()));
  app.add_option("--dump-dir", request.dump_dir, "write every stage's trace here, numbered")->check(given("folder"));
  app.add_option("--from-stage", request.from_stage,
                 "the input is the listing --emit prints after this pass (or --dump-dir writes): run the passes after it (give --emit)")
      ->check(CLI::IsMember(emit_stage_names()));
  app.add_flag("-v,--verbose", request.verbose, "one line per pass, with its time");
  app.add_flag("--check", request.check,
               "write nothing: exit 0 when the output folder holds exactly what generation writes, else 1 with a unified diff (a/ the folder, b/ generation)");
  CLI::Option* diff_lines = app.add_option("--diff-lines", request.diff_lines, "--check: cut the diff after this many lines (0: never; default 400)");
  add_override_options(app, request);
  return diff_lines;
}

// Options that cannot go together, refused rather than one of them ignored.
std::string conflicting_options(const Request& r) {
  if (!r.from_stage.empty() && r.emit.empty()) return "--from-stage runs the passes after a listing's: give --emit, the stage to print";
  if (!r.from_stage.empty() && !r.specialize_text.empty())
    return "--specialize sizes a symbolic trace; a listing (--from-stage) is at the sizes its '# specialized at' lines say";
  if (!r.check) return r.diff_lines_given ? "--diff-lines goes with --check" : "";
  if (!r.emit.empty()) return "--check compares an output folder; --emit prints a stage instead";
  if (!r.dump_dir.empty()) return "--check writes nothing, so --dump-dir cannot go with it";
  if (r.force) return "--check replaces nothing, so --force cannot go with it";
  return "";
}

// The main command's usage errors: "" when there is none.
// Planning options that need another: --exact and --price-plans choose among plans by time.
std::string planning_usage_error(const Request& r) {
  if (r.exact && r.objective != "time") return "--exact goes with --remat-objective time";
  if (!r.price_plans.empty() && r.objective != "time") return "--price-plans goes with --remat-objective time";
  if (r.exact && r.price_plans == "kernels") return "--exact solves the cut's problem: it goes with --price-plans cut (or none)";
  return "";
}

std::string usage_error(const Request& r) {
  if (const std::string planning = planning_usage_error(r); !planning.empty()) return planning;
  if (r.trace_file.empty()) {
    // --tag takes every word after it: a trace written after the tags was taken for one.
    for (const std::string& tag : r.tags)
      if (tag.find('=') == std::string::npos)
        return "no trace given: \"" + printable_line(tag) + "\" after --tag was read as a tag (not <selector>=<policy>); give the trace before --tag";
    return "no trace given (usage: thunder-gen trace.json -o out/)";
  }
  if (std::string conflict = conflicting_options(r); !conflict.empty()) return conflict;
  if (r.out_dir.empty() && r.emit.empty()) return "-o OUT is required unless --emit is given";
  return "";
}

}  // namespace

Pass emit_stage(const std::string& name) { return emit_stages().at(name); }

std::optional<int> parse_command_line(int argc, char** argv, CommandLine& line) {
  CLI::App app{"thunder-gen: captured PyTorch/Thunder trace (JSON) -> CUDA forward.cu, harness and manifest"};
  app.set_version_flag("--version", std::string("thunder-gen ") + THUNDER_GEN_VERSION);
  auto* validate_cmd = app.add_subcommand("validate", "check traces and report the first error in each");
  validate_cmd->add_option("traces", line.validate_files, "trace JSON files or PT2 archives")->required();
  std::string validate_specialize;
  validate_cmd->add_option("--specialize", validate_specialize, kSpecializeHelp)->check(kSizesGiven);
  auto* list_cmd = app.add_subcommand("list-ops", "print the op table");
  list_cmd->add_flag("--json", line.list_json, "as JSON, for tools");
  list_cmd->add_flag("--aten", line.list_aten, "the ATen ops PT2 archives may use that thunder-gen translates, against Core ATen");
  Request explain;
  auto* explain_cmd = app.add_subcommand("explain", "print the rematerialization plan: what is saved for the backward and why, what is recomputed");
  explain_cmd->add_option("trace", explain.trace_file, "trace JSON file or PT2 archive (torch.export.save)")->required();
  add_override_options(*explain_cmd, explain);
  explain_cmd->add_flag("--frontier", explain.frontier, "print the Pareto plans of activation bytes against predicted step time instead, the chosen one marked");
  explain_cmd->add_flag("--json", explain.json, "with --frontier: as JSON ({\"frontier\": [...], \"chosen\": i})");
  CLI::Option* diff_lines = add_generate_options(app, line.request);
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  line.request.diff_lines_given = diff_lines->count() > 0;
  for (auto [flag, text, values] : {std::tuple{"--specialize", &line.request.specialize_text, &line.request.specialize},
                                     std::tuple{"--specialize", &explain.specialize_text, &explain.specialize},
                                     std::tuple{"--specialize", &validate_specialize, &line.validate_specialize},
                                     std::tuple{"--plan-at", &line.request.plan_at_text, &line.request.plan_at},
                                     std::tuple{"--plan-at", &explain.plan_at_text, &explain.plan_at}}) {
    try {
      *values = parse_symbol_values(*text);
    } catch (const SizeExprError& e) {
      std::cerr << "thunder-gen: error: " << flag << ": " << e.what() << "\n";
      return kExitUsage;
    }
  }
  if (*validate_cmd) {
    line.command = CommandLine::Command::validate;
  } else if (*list_cmd) {
    line.command = CommandLine::Command::list_ops;
  } else if (*explain_cmd) {
    line.command = CommandLine::Command::explain;
    if (explain.json && !explain.frontier) {
      std::cerr << "thunder-gen: error: --json goes with --frontier\n";
      return kExitUsage;
    }
    if (const std::string error = planning_usage_error(explain); !error.empty()) {
      std::cerr << "thunder-gen: error: " << error << "\n";
      return kExitUsage;
    }
    line.request = std::move(explain);
    line.request.emit = "plan";
  } else if (const std::string error = usage_error(line.request); !error.empty()) {
    std::cerr << "thunder-gen: error: " << error << "\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace tg
