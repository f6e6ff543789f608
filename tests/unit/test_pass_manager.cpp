// The pass manager (every pass verified, timed, listed and a possible --emit stop) and the
// dead-code pass.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "driver/pipeline.h"
#include "frontend/reader.h"
#include "lower/dead_code.h"
#include "ops/verify.h"
#include "support/diagnostics.h"
#include "trace_builder.h"

using test::op;
using test::tensor;

namespace {

const std::string kRow = "[4, 8]";

std::vector<std::string> op_ids(const tg::Trace& t) {
  std::vector<std::string> ids;
  for (const tg::Op& o : t.ops) ids.push_back(o.symbol);
  return ids;
}

// exp -> y (the output); a dead chain sum -> neg; var_mean with only its mean used.
tg::Trace with_dead_ops() {
  std::string ops = op("prims.sum", "[\"x\", [1]]", tensor("s", "[4]")) + "," + op("prims.exp", "[\"x\"]", tensor("e", kRow)) + "," +
                    op("prims.neg", "[\"s\"]", tensor("n", "[4]")) + "," +
                    op("prims.var_mean", "[\"x\", [1]]", tensor("v", "[4]") + "," + tensor("m", "[4]"), ", \"kwargs\": {\"correction\": 0}") + "," +
                    op("prims.broadcast_in_dim", "[\"m\", [4, 8], [0]]", tensor("mb", kRow)) + "," + op("prims.sub", "[\"e\", \"mb\"]", tensor("y", kRow));
  return tg::read_trace(test::trace("dead", tensor("x", kRow), ops, "\"y\""));
}

tg::PipelineResult run_until(tg::Trace t, std::optional<tg::Pass> stop, const std::string& dump_dir = "", std::ostream* log = nullptr) {
  tg::PipelineOptions options;
  options.stop_after = stop;
  options.dump_dir = dump_dir;
  options.verbose = log != nullptr;
  std::ostringstream no_log;
  return tg::run_pipeline(std::move(t), options, log ? *log : no_log);
}

tg::Trace example(const char* name) { return tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/" + name); }

}  // namespace

TEST_CASE("the dead-code pass drops what no output needs and keeps the order of the rest") {
  tg::Trace t = tg::remove_dead_ops(with_dead_ops());
  CHECK(op_ids(t) == std::vector<std::string>{"prims.exp", "prims.var_mean", "prims.broadcast_in_dim", "prims.sub"});
}

TEST_CASE("the dead-code pass keeps an op with no reader when the trace returns its value") {
  tg::Trace t = with_dead_ops();
  t.outputs.push_back(t.ops[2].outs[0]);  // n = neg(sum(x))
  CHECK(op_ids(tg::remove_dead_ops(std::move(t))).size() == 6);
}

TEST_CASE("--emit stops after every pass with that pass's listing, and writes no folder") {
  for (tg::Pass pass : tg::all_passes()) {
    CAPTURE(tg::pass_name(pass));
    tg::PipelineResult r = run_until(example("layer_norm.json"), pass);
    CHECK(r.files.empty());
    CHECK_FALSE(r.stopped_text.empty());
  }
  CHECK(run_until(example("layer_norm.json"), tg::Pass::dead_code).stopped_text.find("def layer_norm(") != std::string::npos);
  CHECK(run_until(example("layer_norm.json"), tg::Pass::partition).stopped_text.find("saved") != std::string::npos);
  const std::string fused = run_until(example("layer_norm.json"), tg::Pass::fuse).stopped_text;
  CHECK(fused.rfind("# forward\n", 0) == 0);
  CHECK(fused.find("\n# backward\n") != std::string::npos);
  CHECK(run_until(example("layer_norm.json"), tg::Pass::emit).stopped_text.find("__global__") != std::string::npos);
}

TEST_CASE("a trace that does not train still answers --emit autograd and --emit partition") {
  CHECK(run_until(example("softmax.json"), tg::Pass::autograd).stopped_text == run_until(example("softmax.json"), tg::Pass::dead_code).stopped_text);
  CHECK(run_until(example("softmax.json"), tg::Pass::partition).stopped_text.find("no input requires grad") != std::string::npos);
}

TEST_CASE("-v logs one line per pass and --dump-dir lists every pass in pipeline order") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "tg_pass_manager_dumps";
  std::filesystem::remove_all(dir);
  std::ostringstream log;
  tg::PipelineResult r = run_until(example("layer_norm.json"), std::nullopt, dir.string(), &log);
  CHECK_FALSE(r.files.empty());
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"00-read.txt", "01-rng.txt", "02-overrides.txt", "03-decompose.txt", "04-dead-code.txt", "05-autograd.txt",
                                          "06-partition-forward.txt", "07-partition-backward.txt", "08-forward-epilogue.txt",
                                          "09-forward-fuse.txt", "10-forward-kernel-ir.txt", "11-backward-epilogue.txt",
                                          "12-backward-fuse.txt", "13-backward-kernel-ir.txt"});
  for (tg::Pass pass : tg::all_passes()) {
    if (pass == tg::Pass::read) continue;  // (the CLI logs the reader)
    CAPTURE(tg::pass_name(pass));
    CHECK(log.str().find("thunder-gen: " + std::string(tg::pass_name(pass)) + ": ") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("rng binds the draws of a trace that has them, and says it had nothing to do on one without") {
  std::ostringstream without, with;
  run_until(example("layer_norm.json"), tg::Pass::rng, "", &without);
  CHECK(without.str().find("thunder-gen: rng: nothing to do") != std::string::npos);
  const tg::PipelineResult r = run_until(example("dropout_p09.json"), tg::Pass::rng, "", &with);
  CHECK(with.str().find("thunder-gen: rng: 1 ops -> 1 ops") != std::string::npos);
  CHECK(r.stopped_text.find("philox_seed") != std::string::npos);
}

TEST_CASE("the pass manager verifies what a pass returns") {
  std::ostringstream log;
  tg::PassOptions options;
  tg::PassManager passes(options, log);
  tg::Trace broken_by_pass = [](tg::Trace t) {
    t.ops.erase(t.ops.begin() + 1);  // var_mean: the broadcast of its mean reads nothing defined
    return t;
  }(tg::remove_dead_ops(with_dead_ops()));
  CHECK_THROWS_AS(passes.run(tg::Pass::fuse, [&](tg::Trace) { return broken_by_pass; }, with_dead_ops()), tg::InternalError);
}

TEST_CASE("verification refuses two values with one name, however many values the trace has") {
  // What a pass that names a new value carelessly would make: the reader cannot (a name read twice
  // is one value, defined twice), so the check is the verifier's alone.
  tg::Trace t = with_dead_ops();
  for (int i = 0; i < 100; ++i) {  // (enough values that the verifier's name table grows)
    tg::Value v = t.value(t.inputs[0]);
    v.name = "extra" + std::to_string(i);
    t.inputs.push_back(t.add_value(std::move(v)));
  }
  CHECK_NOTHROW(tg::verify(t));
  t.value(t.ops[1].outs[0]).name = "extra57";  // e = exp(x) now shares a name with an input
  CHECK_THROWS_WITH(tg::verify(t), Catch::Contains("the name \"extra57\" is used by two values"));
  t.value(t.ops[1].outs[0]).name = "e";
  CHECK_NOTHROW(tg::verify(t));
}

TEST_CASE("a folder taking its sizes at run time records each \"sizes\" its manifest writes, as the probes compare them") {
  tg::Trace t = tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/symbolic/symbolic_block.json", {{"B", 2}, {"T", 3}});
  t.sizes_at_run_time = true;
  const tg::PipelineResult r = run_until(std::move(t), std::nullopt);
  const auto manifest = std::find_if(r.files.begin(), r.files.end(), [](const auto& f) { return f.first == "manifest.json"; });
  REQUIRE(manifest != r.files.end());
  const nlohmann::json m = nlohmann::json::parse(manifest->second);
  std::vector<std::string> written;
  auto add = [&](const std::string& where, const nlohmann::json& v) {
    if (!v.contains("sizes")) return;
    std::string line = where + " " + v["name"].get<std::string>() + ": [";
    for (const nlohmann::json& s : v["sizes"]) line += (line.back() == '[' ? "" : ", ") + s.dump();
    written.push_back(line + "]");
  };
  for (const nlohmann::json& input : m["inputs"]) add("input", input);
  for (const char* entry : {"forward", "backward"})
    for (const nlohmann::json& p : m["entry_points"][entry]["params"]) add(std::string(entry) + " parameter", p);
  CHECK(r.manifest_sizes == written);
  CHECK(std::find(written.begin(), written.end(), "input x: [\"B\", \"T\", 64]") != written.end());
  CHECK(written.size() > 10);
}
