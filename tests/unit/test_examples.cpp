// Properties of the example corpus and of what the generator makes of it.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "driver/pipeline.h"
#include "frontend/overrides.h"
#include "frontend/reader.h"
#include "lower/decompose.h"
#include "lower/rng.h"
#include "ops/op_table.h"
#include "support/generated_text.h"
#include "trace_builder.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> examples() {
  std::vector<fs::path> out;
  // examples/corpus and examples/consumer too; a consumer's overrides file is JSON but no trace.
  // Not examples/symbolic/ nor its folders: a symbolic trace is read at sizes named for it (tests/CMakeLists.txt).
  for (const auto& e : fs::recursive_directory_iterator(TG_EXAMPLES_DIR))
    if (e.path().extension() == ".json" && e.path().filename() != "tags.json" && e.path().string().find("/symbolic/") == std::string::npos) out.push_back(e.path());
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

// Calls f(name, parameter list, body) for each `extern "C" __global__` kernel of generated code
// and each pointwise kernel's element function (`__device__ __forceinline__`).
template <class F>
void for_each_kernel(const std::string& cuda, const F& f) {
  const std::regex kernel(R"((?:extern "C" __global__ void __launch_bounds__\(\d+\)|__device__ __forceinline__ void) (\w+)\(([^)]*)\) \{)");
  for (auto k = std::sregex_iterator(cuda.begin(), cuda.end(), kernel); k != std::sregex_iterator(); ++k) {
    const size_t body = size_t(k->position() + k->length());
    f((*k)[1].str(), (*k)[2].str(), cuda.substr(body, cuda.find("\n}\n", body) - body));
  }
}

// Names a generated kernel declares as locals (loop variables, consts, arrays) that are also
// the names of its parameters: a local would hide the parameter (a weight named `g` in a loop
// over runs `g` did).
std::vector<std::string> locals_hiding_parameters(const std::string& cuda) {
  std::vector<std::string> found;
  const std::regex param(R"((\w+)\s*$)");
  const std::regex local(R"((?:int|int64_t|unsigned|bool|float|double|auto|tg::\w+(?:<[^>]*>)?)\s+(\w+)\s*(?:=|\[|;))");
  for_each_kernel(cuda, [&](const std::string& name, const std::string& list, const std::string& body) {
    std::set<std::string> params;
    std::stringstream items(list);
    for (std::string p; std::getline(items, p, ',');)
      if (std::smatch m; std::regex_search(p, m, param)) params.insert(m[1]);
    for (auto l = std::sregex_iterator(body.begin(), body.end(), local); l != std::sregex_iterator(); ++l)
      if (params.count((*l)[1])) found.push_back(name + ": " + (*l)[1].str());
  });
  return found;
}

// Identifiers a generated kernel declares (parameters and locals) that are neither role-prefixed
// (src/support/generated_text.h: a stem and its only underscore, then the trace's name) nor one of the
// generator's fixed names, which hold no underscore: such an identifier could meet a trace's name.
std::vector<std::string> identifiers_outside_the_scheme(const std::string& cuda) {
  std::set<std::string> prefixes;
  for (tg::Role role : tg::kAllRoles) prefixes.insert(std::string(tg::role_prefix(role)));
  auto in_scheme = [&](const std::string& id) {
    const size_t underscore = id.find('_');
    if (underscore == std::string::npos) return true;  // fixed: i, row, lane, d0, ...
    return prefixes.count(id.substr(0, underscore + 1)) > 0;
  };
  std::vector<std::string> found;
  const std::regex param(R"((\w+)\s*$)");
  const std::regex local(R"((?:int|int64_t|unsigned|bool|float|double|auto|tg::\w+(?:<[^>]*>)?)\s+(\w+)\s*(?:=|\[|;))");
  for_each_kernel(cuda, [&](const std::string& name, const std::string& list, const std::string& body) {
    std::stringstream items(list);
    for (std::string p; std::getline(items, p, ',');)
      if (std::smatch m; std::regex_search(p, m, param) && !in_scheme(m[1])) found.push_back(name + ": parameter " + m[1].str());
    for (auto l = std::sregex_iterator(body.begin(), body.end(), local); l != std::sregex_iterator(); ++l)
      if (!in_scheme((*l)[1])) found.push_back(name + ": local " + (*l)[1].str());
  });
  return found;
}

// Runs a generated kernel moves that are wider than 16 bytes (tg::load_run_to<N> / store_run_from<N>
// of N elements of a parameter): a run is checked for 16-byte alignment only, so anything wider
// could be misaligned (an f32 weight beside bf16 rows once took runs of 8).
std::vector<std::string> runs_over_16_bytes(const std::string& cuda) {
  static const std::map<std::string, int> bytes = {{"float", 4}, {"double", 8}, {"tg::bfloat16", 2}, {"tg::half", 2}, {"bool", 1},
                                                   {"int64_t", 8}, {"int32_t", 4}, {"int16_t", 2}, {"int8_t", 1}, {"uint8_t", 1}};
  std::vector<std::string> found;
  const std::regex param(R"(([\w:]+)\*? __restrict__ (\w+))");
  const std::regex run(R"((?:load_run_to|store_run_from)<(\d+)>\((\w+),)");
  for_each_kernel(cuda, [&](const std::string& name, const std::string& list, const std::string& body) {
    std::map<std::string, int> size;
    for (auto m = std::sregex_iterator(list.begin(), list.end(), param); m != std::sregex_iterator(); ++m)
      if (bytes.count((*m)[1])) size[(*m)[2]] = bytes.at((*m)[1]);
    for (auto r = std::sregex_iterator(body.begin(), body.end(), run); r != std::sregex_iterator(); ++r)
      if (size.count((*r)[2]) && std::stoi((*r)[1]) * size.at((*r)[2]) > 16) found.push_back(name + ": " + (*r)[0].str());
  });
  return found;
}

// Every example's forward.cu and backward.cu, generated once: (file name, text).
const std::vector<std::pair<std::string, std::string>>& generated_cuda() {
  static const std::vector<std::pair<std::string, std::string>> all = [] {
    std::vector<std::pair<std::string, std::string>> out;
    std::ostringstream log;
    for (const fs::path& p : examples()) {
      tg::PipelineResult r = tg::run_pipeline(tg::read_trace_file(p.string()), {}, log);
      for (const char* file : {"forward.cu", "backward.cu"}) out.emplace_back(p.filename().string() + " " + file, file_text(r.files, file));
    }
    return out;
  }();
  return all;
}

// The ops of out = (in - broadcast(sum(in, [1]))) * broadcast(weight) over rows [rows, cols] f32: a
// row kernel holding its row in registers, with an operand (weight) shaped like one row.
std::string centered_times_weight(const std::string& in, const std::string& weight, const std::string& out, int64_t rows, int64_t cols) {
  using test::op, test::tensor;
  const std::string r = std::to_string(rows), c = std::to_string(cols), row = "[" + r + ", " + c + "]";
  return op("prims.sum", "[\"" + in + "\", [1]]", tensor(out + "_s", "[" + r + "]")) + "," +
         op("prims.broadcast_in_dim", "[\"" + out + "_s\", " + row + ", [0]]", tensor(out + "_sb", row)) + "," +
         op("prims.sub", "[\"" + in + "\", \"" + out + "_sb\"]", tensor(out + "_d", row)) + "," +
         op("prims.broadcast_in_dim", "[\"" + weight + "\", " + row + ", [1]]", tensor(out + "_wb", row)) + "," +
         op("prims.mul", "[\"" + out + "_d\", \"" + out + "_wb\"]", tensor(out, row));
}

}  // namespace

using test::count;

TEST_CASE("no run a generated kernel moves is wider than 16 bytes") {
  for (const auto& [where, cuda] : generated_cuda()) {
    INFO(where);
    CHECK(runs_over_16_bytes(cuda).empty());
  }
  std::ostringstream log;
  // bf16 rows (runs of 8 would be 16 bytes) scaled by an f32 weight loaded in the same runs.
  using test::op, test::tensor;
  const std::string row = "[8, 2048]";
  std::string ops = op("prims.convert_element_type", "[\"x\", {\"dtype\": \"f32\"}]", tensor("xf", row)) + "," +
                    centered_times_weight("xf", "wt", "yf", 8, 2048) + "," +
                    op("prims.convert_element_type", "[\"yf\", {\"dtype\": \"bf16\"}]", tensor("y", row, "bf16"));
  tg::PipelineResult r =
      tg::run_pipeline(tg::read_trace(test::trace("mixed", tensor("x", row, "bf16") + "," + tensor("wt", "[2048]"), ops, "\"y\"")), {}, log);
  const std::string cuda = file_text(r.files, "forward.cu");
  REQUIRE(cuda.find("c_wt") != std::string::npos);  // wt is loaded once, in runs
  CHECK(runs_over_16_bytes(cuda).empty());
  CHECK(runs_over_16_bytes("extern \"C\" __global__ void __launch_bounds__(32) k(const float* __restrict__ w) {\n  tg::load_run_to<8>(w, j, c_w);\n}\n") ==
        std::vector<std::string>{"k: load_run_to<8>(w,"});
}

TEST_CASE("every identifier a generated kernel declares is role-prefixed or one of the generator's fixed names") {
  for (const auto& [where, cuda] : generated_cuda()) {
    INFO(where);
    CHECK(identifiers_outside_the_scheme(cuda).empty());
  }
  // The check finds a bare trace name.
  CHECK(identifiers_outside_the_scheme("extern \"C\" __global__ void __launch_bounds__(32) k(const float* __restrict__ g_x, float* __restrict__ t_0) {\n"
                                       "  const float my_x = 1.0f;\n  const float v_x = 2.0f;\n}\n") ==
        std::vector<std::string>{"k: parameter t_0", "k: local my_x"});
  // ... and in an element function, whose parameters are values and references.
  CHECK(identifiers_outside_the_scheme("__device__ __forceinline__ void f(int64_t i, float my_x, float& out_y) {\n  out_y = my_x;\n}\n") ==
        std::vector<std::string>{"f: parameter my_x"});
}

TEST_CASE("no local of a generated kernel hides one of its parameters") {
  for (const auto& [where, cuda] : generated_cuda()) {
    INFO(where);
    CHECK(locals_hiding_parameters(cuda).empty());
  }
  std::ostringstream log;
  // A weight named g over rows a thread holds in several runs (8192 over 512 threads: 4 runs of 4).
  using test::tensor;
  tg::PipelineResult r = tg::run_pipeline(
      tg::read_trace(test::trace("gain", tensor("x", "[4, 8192]") + "," + tensor("g", "[8192]"), centered_times_weight("x", "g", "y", 4, 8192), "\"y\"")), {},
      log);
  const std::string cuda = file_text(r.files, "forward.cu");
  REQUIRE(cuda.find("c_g") != std::string::npos);  // g is loaded once, in runs
  CHECK(locals_hiding_parameters(cuda).empty());
  // The check finds a hidden parameter.
  CHECK(locals_hiding_parameters("extern \"C\" __global__ void __launch_bounds__(32) k(const float* __restrict__ g) {\n  for (int g = 0; g < 2; ++g) {\n  }\n}\n") ==
        std::vector<std::string>{"k: g"});
}

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
    // An op declared with the domains its tests draw from (the unary and binary float prims, the
    // activations), or an exact binary prim, and its torch form, runs end to end from its
    // declaration: random_traces generates it (random_traces.coverage checks that) and,
    // differentiable, op_grads.
    if (info.made_by_fusion() || !info.domains.empty() || info.family == "binary_exact_prims") continue;
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

TEST_CASE("dropout, residual and LayerNorm in one held row: one Philox draw per element, the mask a warp-word at a time") {
  std::ostringstream log;
  tg::PipelineResult r = tg::run_pipeline(tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/dropout_residual_layernorm.json"), {}, log);
  const std::string cu = file_text(r.files, "forward.cu");
  REQUIRE(count(cu, "TG_LAUNCH(") == 1);      // the mask, the sum and the LayerNorm: one row kernel
  REQUIRE(count(cu, "(pass 1: mean)") == 1);  // whose three passes read the row from registers
  CHECK(count(cu, "tg::philox_uniform(") == 1);  // drawn once, before them, not in each
  CHECK(count(cu, "c_t4__0[k] = ") == 1);
  CHECK(count(cu, "tg::store_run_bits<1>(g_t4__1, ") == 1);  // not tg::store's atomic per bit
  CHECK(count(cu, "tg::store(g_t4__1") == 0);
}

TEST_CASE("manifest.json stays valid JSON when a reason quotes text with quotes, backslashes and control characters") {
  // An overrides file's name (not its folder) is part of the reason for what it saves; this one
  // needs escaping.
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
  CHECK(reason.find(file.filename().string() + ": /@t3") != std::string::npos);
  CHECK(reason.find(dir.string()) == std::string::npos);
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
