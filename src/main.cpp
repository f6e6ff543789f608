// thunder-gen command line. Exit codes: 0 ok, 1 bad input, 2 usage, 70 internal error.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "pipeline.h"
#include "printer.h"
#include "reader.h"
#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 70;

// file: /json/pointer: error: message   (or file:line:col: error: ... for syntax errors)
void report(const std::string& file, const tg::UserError& e) {
  std::string where = e.where.empty() ? file + ":" : e.where[0] == '/' ? file + ": " + e.where + ":" : file + ":" + e.where + ":";
  std::cerr << where << " error: " << e.what() << "\n";
}

int list_ops() {
  std::cout << "thunder-gen " << THUNDER_GEN_VERSION << ": " << tg::op_table().size() - 1 << " ops\n";
  for (const tg::OpInfo& op : tg::op_table()) {
    if (op.kind == tg::OpKind::fused_kernel) continue;
    std::string sig;
    for (const tg::Param& p : op.params) {
      if (!sig.empty()) sig += ", ";
      if (p.keyword_only && sig.find('*') == std::string::npos) sig += "*, ";
      sig += std::string(p.name) + (p.has_default ? "=" + tg::print_literal(p.default_value, tg::Trace{}) : "");
    }
    std::cout << op.id << "(" << sig << ")  [" << tg::fusion_class_name(op.fusion) << "]";
    if (!op.grad_saves.empty()) std::cout << "  grad saves: " << op.grad_saves;
    if (!op.code.empty()) std::cout << "  " << op.code;
    std::cout << "\n";
  }
  return 0;
}

int validate(const std::vector<std::string>& files) {
  int status = 0;
  for (const std::string& file : files) {
    try {
      tg::Trace t = tg::read_trace_file(file);
      std::cout << file << ": ok (" << t.ops.size() << " ops, " << t.inputs.size() << " inputs, " << t.outputs.size() << " outputs)\n";
    } catch (const tg::UserError& e) {
      report(file, e);
      status = kExitBadInput;
    }
  }
  return status;
}

int generate(const std::string& file, const std::string& out_dir, const std::string& emit, const std::string& dump_dir, bool verbose) {
  static const std::map<std::string, tg::Stage> stages = {
      {"trace", tg::Stage::read}, {"decomposed", tg::Stage::decompose}, {"joint", tg::Stage::joint}, {"fused", tg::Stage::fuse}, {"cuda", tg::Stage::cuda}};
  tg::PipelineOptions options;
  options.input_file = std::filesystem::path(file).filename().string();
  options.verbose = verbose;
  options.dump_dir = dump_dir;
  if (!emit.empty()) options.stop_after = stages.at(emit);
  tg::Trace trace = tg::read_trace_file(file);
  if (verbose) std::cerr << "thunder-gen: read: " << trace.ops.size() << " ops\n";
  tg::PipelineResult result = tg::run_pipeline(trace, options, std::cerr);
  if (!emit.empty()) {
    std::cout << result.stopped_text;
    return 0;
  }
  try {
    tg::write_folder_atomically(out_dir, result.files);
  } catch (const std::runtime_error& e) {  // includes filesystem_error
    std::cerr << "thunder-gen: error: cannot write " << out_dir << ": " << e.what() << "\n";
    return kExitBadInput;
  }
  if (verbose) std::cerr << "thunder-gen: wrote " << result.files.size() << " files to " << out_dir << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"thunder-gen: captured PyTorch/Thunder trace (JSON) -> CUDA forward.cu, harness and manifest"};
  app.set_version_flag("--version", std::string("thunder-gen ") + THUNDER_GEN_VERSION);
  std::string trace_file, out_dir, emit, dump_dir;
  std::vector<std::string> validate_files;
  bool verbose = false;

  auto* validate_cmd = app.add_subcommand("validate", "check traces and report the first error in each");
  validate_cmd->add_option("traces", validate_files, "trace JSON files")->required();
  auto* list_cmd = app.add_subcommand("list-ops", "print the op table");
  app.add_option("trace", trace_file, "trace JSON file");
  app.add_option("-o,--output", out_dir, "output folder (replaced as a whole)");
  app.add_option("--emit", emit, "stop after a stage and print it: trace, decomposed, joint (the autograd trace), fused or cuda")
      ->check(CLI::IsMember({"trace", "decomposed", "joint", "fused", "cuda"}));
  app.add_option("--dump-dir", dump_dir, "write every stage's trace here, numbered");
  app.add_flag("-v,--verbose", verbose, "one line per pass, with its time");
  app.require_subcommand(0, 1);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  try {
    if (*validate_cmd) return validate(validate_files);
    if (*list_cmd) return list_ops();
    if (trace_file.empty()) {
      std::cerr << "thunder-gen: error: no trace given (usage: thunder-gen trace.json -o out/)\n";
      return kExitUsage;
    }
    if (out_dir.empty() && emit.empty()) {
      std::cerr << "thunder-gen: error: -o OUT is required unless --emit is given\n";
      return kExitUsage;
    }
    try {
      return generate(trace_file, out_dir, emit, dump_dir, verbose);
    } catch (const tg::UserError& e) {
      report(trace_file, e);
      return kExitBadInput;
    }
  } catch (const tg::InternalError& e) {
    std::cerr << "thunder-gen: internal error: " << e.what() << "\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "thunder-gen: error: " << e.what() << "\n";
    return kExitInternal;
  }
}
