// Properties of the example corpus and of what the generator makes of it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "decompose.h"
#include "rng.h"
#include "overrides.h"
#include "pipeline.h"
#include "reader.h"
#include "thunder_gen/op_table.h"
#include "trace_builder.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> examples() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(TG_EXAMPLES_DIR))  // examples/corpus too
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void collect_ops(const std::vector<tg::Op>& ops, std::set<tg::OpKind>& kinds) {
  for (const tg::Op& op : ops) {
    if (op.info) kinds.insert(op.info->kind);
    collect_ops(op.sub, kinds);
  }
}

std::string file_text(const tg::FileSet& files, const std::string& name) {
  for (const auto& [n, text] : files)
    if (n == name) return text;
  return "";
}

}  // namespace

using test::count;

TEST_CASE("the examples cover every op in the table and every dtype") {
  std::set<tg::OpKind> ops;
  std::set<tg::DType> dtypes;
  bool large = false;
  for (const fs::path& p : examples()) {
    tg::Trace read = tg::read_trace_file(p.string());
    collect_ops(read.ops, ops);  // torch-level ops as written
    tg::Trace t = tg::decompose(tg::bind_rng(read));
    collect_ops(t.ops, ops);
    for (const tg::Value& v : t.values) {
      dtypes.insert(v.dtype);
      large = large || (!v.is_scalar && tg::numel(v.shape) >= (int64_t(1) << 21));
    }
  }
  for (const tg::OpInfo& info : tg::op_table()) {
    if (info.made_by_fusion()) continue;
    INFO("op " << info.id << " is in no example");
    CHECK(ops.count(info.kind));
  }
  for (tg::DType t : tg::kAllDTypes) {
    INFO("dtype " << tg::dtype_name(t) << " is in no example");
    CHECK(dtypes.count(t));
  }
  CHECK(examples().size() >= 10);
  CHECK(large);  // at least one real-size case: millions of elements
}

TEST_CASE("a fused chain of 10 elementwise ops is one kernel reading x once and writing once") {
  tg::Trace t = tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/chain10.json");
  size_t elementwise = 0;
  for (const tg::Op& op : tg::decompose(t).ops) elementwise += op.info->fusion == tg::FusionClass::elementwise;
  REQUIRE(elementwise == 10);
  std::ostringstream log;
  tg::PipelineResult r = tg::run_pipeline(t, tg::PipelineOptions{}, log);
  auto manifest = nlohmann::json::parse(file_text(r.files, "manifest.json"));
  REQUIRE(manifest["kernels"].size() == 1);
  auto kernel = manifest["kernels"][0];
  CHECK(kernel["reads"] == nlohmann::json::array({"x"}));
  CHECK(kernel["writes"].size() == 1);
  CHECK(kernel["ops"].size() == 10);
  std::string cu = file_text(r.files, "forward.cu");
  CHECK(count(cu, "tg::load(") == 1);
  CHECK(count(cu, "tg::store(") == 1);
  CHECK(count(cu, "TG_LAUNCH(") == 1);
}

TEST_CASE("manifest.json stays valid JSON when a reason quotes text with quotes, backslashes and control characters") {
  // An overrides file's path is part of the reason for what it saves; this one needs escaping.
  const fs::path dir = fs::temp_directory_path() / "tg_manifest_escaping";
  fs::create_directories(dir);
  const fs::path file = dir / "a\"b\\c\td.json";
  std::ofstream(file) << "{\"@t3\": \"save\"}";
  tg::PipelineOptions options;
  options.overrides = tg::read_overrides_file(file.string());
  std::ostringstream log;
  tg::PipelineResult r = tg::run_pipeline(tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/exp_chain_matmul.json"), options, log);
  fs::remove_all(dir);
  auto manifest = nlohmann::json::parse(file_text(r.files, "manifest.json"));  // throws if the escaping is wrong
  std::string reason;
  for (const auto& saved : manifest["saved_for_backward"])
    if (saved["name"] == "t3") reason = saved["reason"];
  CHECK(reason.find(file.string()) != std::string::npos);
}

TEST_CASE("every example's manifest reads only what its entry point is given or an earlier kernel, call or view wrote") {
  // Views (reshapes that launch nothing) read their input's memory; whatever reads a view must
  // still find it written before, as for any kernel output.
  size_t views = 0;
  for (const fs::path& path : examples()) {
    INFO(path.filename().string());
    std::ostringstream log;
    tg::PipelineResult r = tg::run_pipeline(tg::read_trace_file(path.string()), {}, log);
    auto manifest = nlohmann::json::parse(file_text(r.files, "manifest.json"));
    std::set<std::string> forward_given, backward_given;
    for (const auto& v : manifest["inputs"]) forward_given.insert(v["name"].get<std::string>());
    backward_given = forward_given;
    for (const char* saved : {"saved_for_backward", "saved_scalars"})
      for (const auto& v : manifest[saved]) backward_given.insert(v["name"].get<std::string>());
    for (const auto& v : manifest["outputs"]) backward_given.insert("cotangent_" + v["name"].get<std::string>());
    std::map<std::string, std::set<std::string>> known = {{"forward.cu", forward_given}, {"backward.cu", backward_given}};
    for (const auto& k : manifest["kernels"]) {
      std::set<std::string>& written = known.at(k["file"].get<std::string>());
      for (const auto& read : k["reads"]) {
        INFO(k["name"].get<std::string>() << " reads " << read.get<std::string>());
        CHECK(written.count(read.get<std::string>()));
      }
      for (const auto& w : k["writes"]) written.insert(w.get<std::string>());
      views += k.contains("view_of");
    }
  }
  CHECK(views > 0);  // the corpus has linear layers over 3-D activations
}
