// The PT2 front end without an archive: the ATen declarations against the op table, and small
// serialized ExportedPrograms (as torch 2.9 writes models/model.json) translated into traces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "frontend/aten_table.h"
#include "frontend/pt2_lowerings.h"
#include "frontend/pt2_program.h"
#include "frontend/reader.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

// (A named namespace: unit_tests compiles in batches, where another file's helpers share the unit.)
namespace pt2_programs {

using nlohmann::json;

json meta_of(std::vector<int64_t> sizes, int dtype = 7, bool requires_grad = false) {
  json s = json::array();
  for (int64_t n : sizes) s.push_back({{"as_int", n}});
  return {{"dtype", dtype}, {"sizes", s}, {"requires_grad", requires_grad}, {"device", {{"type", "cpu"}, {"index", nullptr}}},
          {"strides", json::array()}, {"storage_offset", {{"as_int", 0}}}, {"layout", 7}};
}

json tensor_arg(const std::string& name) { return {{"as_tensor", {{"name", name}}}}; }
json named_input(const std::string& name, json arg) { return {{"name", name}, {"arg", std::move(arg)}, {"kind", 1}}; }

// A program with user input x (f32 [2, 6]) and the given nodes, tensor values and outputs.
std::string program_with(json nodes, json values, std::vector<std::string> outputs) {
  values["x"] = meta_of({2, 6}, 7, true);
  json graph_outputs = json::array(), output_specs = json::array();
  for (const std::string& out : outputs) {
    graph_outputs.push_back(tensor_arg(out));
    output_specs.push_back({{"user_output", {{"arg", tensor_arg(out)}}}});
  }
  json graph = {{"inputs", {tensor_arg("x")}}, {"outputs", graph_outputs}, {"nodes", nodes}, {"tensor_values", values},
                {"sym_int_values", json::object()}, {"sym_bool_values", json::object()}, {"sym_float_values", json::object()},
                {"custom_obj_values", json::object()}, {"is_single_tensor_return", false}};
  json signature = {{"input_specs", {{{"user_input", {{"arg", tensor_arg("x")}}}}}}, {"output_specs", output_specs}};
  json root = {{"graph_module", {{"graph", graph}, {"signature", signature}, {"module_call_graph", json::array()}, {"metadata", json::object()}}},
               {"opset_version", {{"aten", 10}}}, {"range_constraints", json::object()}, {"schema_version", {{"major", 8}, {"minor", 14}}},
               {"verifiers", {"ATEN"}}, {"torch_version", "2.9.0"}};
  return root.dump();
}

json node_of(const std::string& target, json inputs, json outputs) {
  return {{"target", "torch.ops." + target}, {"inputs", std::move(inputs)}, {"outputs", std::move(outputs)}, {"metadata", json::object()}};
}

std::string error_of(const std::string& text) {
  try {
    tg::read_trace(tg::translate_program(text, "t").trace.dump());
  } catch (const tg::UserError& e) {
    return e.where + ": " + e.what();
  }
  return "";
}

}  // namespace pt2_programs

using namespace pt2_programs;

TEST_CASE("every ATen declaration binds parameters its op has, and every required one") {
  for (const tg::AtenRow& row : tg::aten_rows()) {
    INFO(row.target);
    if (!row.lowering.empty()) {
      CHECK(tg::has_aten_lowering(row.lowering));
      continue;
    }
    if (row.symbol == "=") CHECK(row.params.front().type.rfind("Tensor", 0) == 0);
    if (row.symbol.empty() || row.symbol == "=") continue;
    const tg::OpInfo* info = tg::find_op(row.symbol);
    REQUIRE(info != nullptr);
    for (const tg::AtenBinding& b : row.binding) {
      if (b.kind != tg::AtenBinding::Kind::assign) continue;
      bool found = false;
      for (const tg::Param& p : info->params) found = found || p.name == b.ours;
      CHECK(found);
    }
    for (const tg::Param& p : info->params) {
      if (p.has_default) continue;
      bool bound = false;
      for (const tg::AtenBinding& b : row.binding) bound = bound || (b.kind == tg::AtenBinding::Kind::assign && b.ours == p.name);
      INFO(p.name);
      CHECK(bound);
    }
  }
}

TEST_CASE("Core ATen coverage counts the snapshot's overloads that have rows") {
  const tg::AtenCoverage c = tg::aten_coverage();
  CHECK(c.torch_version == "2.9.0");
  CHECK(c.core.size() == 188);
  size_t translated = 0;
  for (size_t i = 0; i < c.core.size(); ++i) {
    CHECK(c.core_translated[i] == !tg::aten_rows_for(c.core[i]).empty());
    translated += c.core_translated[i];
  }
  CHECK(translated >= 100);
}

TEST_CASE("a layer_norm node becomes the torch-level op with the archive's arguments") {
  json ln = node_of("aten.native_layer_norm.default",
                 {named_input("input", tensor_arg("x")), named_input("normalized_shape", {{"as_ints", {6}}}), named_input("weight", {{"as_none", true}}),
                  named_input("bias", {{"as_none", true}}), named_input("eps", {{"as_float", 0.001}})},
                 {tensor_arg("y"), tensor_arg("mean"), tensor_arg("rstd")});
  const tg::Pt2Translation t = tg::translate_program(
      program_with({ln}, {{"y", meta_of({2, 6})}, {"mean", meta_of({2, 1})}, {"rstd", meta_of({2, 1})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["op"] == "torch.nn.functional.layer_norm");
  CHECK(t.trace["ops"][0]["kwargs"]["eps"] == 0.001);
  CHECK(t.trace["ops"][0]["out"].size() == 1);
  CHECK(t.inputs.at(0).role == "user_input");
  CHECK(t.op_origins.at(0).pointer == "/graph_module/graph/nodes/0");
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
}

TEST_CASE("an output thunder-gen does not compute is refused when something reads it") {
  json ln = node_of("aten.native_layer_norm.default",
                 {named_input("input", tensor_arg("x")), named_input("normalized_shape", {{"as_ints", {6}}}), named_input("weight", {{"as_none", true}}),
                  named_input("bias", {{"as_none", true}}), named_input("eps", {{"as_float", 1e-5}})},
                 {tensor_arg("y"), tensor_arg("mean"), tensor_arg("rstd")});
  const std::string text = program_with({ln}, {{"y", meta_of({2, 6})}, {"mean", meta_of({2, 1})}, {"rstd", meta_of({2, 1})}}, {"y", "mean"});
  CHECK_THAT(error_of(text), Catch::Contains("output 1 (mean) is read") && Catch::Contains("/graph_module/graph/nodes/0/outputs"));
}

TEST_CASE("an argument away from its default that the declaration does not bind is refused") {
  json softmax = node_of("aten._softmax.default", {named_input("self", tensor_arg("x")), named_input("dim", {{"as_int", 1}}), named_input("half_to_float", {{"as_bool", true}})},
                      {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({softmax}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("only when half_to_float==false"));
  json gelu = node_of("aten.gelu.default", {named_input("self", tensor_arg("x")), named_input("approximate", {{"as_string", "tanh"}})}, {tensor_arg("y")});
  CHECK(error_of(program_with({gelu}, {{"y", meta_of({2, 6})}}, {"y"})).empty());
  json embedding = node_of("aten.embedding.default", {named_input("weight", tensor_arg("x")), named_input("indices", tensor_arg("x")),
                                                      named_input("scale_grad_by_freq", {{"as_bool", true}})},
                        {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({embedding}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("aten.embedding with scale_grad_by_freq=true is not supported"));
}

TEST_CASE("a translation written as code refuses an argument of another type than its schema's, naming it") {
  json repeat = node_of("aten.repeat.default", {named_input("self", tensor_arg("x")), named_input("repeats", {{"as_int", 2}})}, {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({repeat}, {{"y", meta_of({2, 6})}}, {"y"})),
             Catch::Contains("/graph_module/graph/nodes/0") && Catch::Contains("argument repeats must be a list of integers, not 2"));
  json elu = node_of("aten.elu.default", {named_input("self", tensor_arg("x")), named_input("alpha", {{"as_string", "one"}})}, {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({elu}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("argument alpha must be a number"));
  json select = node_of("aten.index_select.default", {named_input("self", tensor_arg("x")), named_input("dim", {{"as_float", 1.5}}),
                                                      named_input("index", tensor_arg("x"))},
                        {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({select}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("argument dim must be an integer"));
  json norm = node_of("aten.batch_norm.default",
                      {named_input("input", tensor_arg("x")), named_input("weight", {{"as_none", true}}), named_input("bias", {{"as_none", true}}),
                       named_input("running_mean", {{"as_none", true}}), named_input("running_var", {{"as_none", true}}),
                       named_input("training", {{"as_int", 1}}), named_input("momentum", {{"as_float", 0.1}}), named_input("eps", {{"as_float", 1e-5}}),
                       named_input("cudnn_enabled", {{"as_bool", true}})},
                      {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({norm}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("argument training must be true or false"));
}

TEST_CASE("unknown union members, dtypes and targets are refused at their place") {
  json mystery = node_of("aten.neg.default", {named_input("self", {{"as_mystery", 1}})}, {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({mystery}, {{"y", meta_of({2, 6})}}, {"y"})),
             Catch::Contains("/graph_module/graph/nodes/0/inputs/0/arg") && Catch::Contains("unknown Argument member \"as_mystery\""));
  json neg = node_of("aten.neg.default", {named_input("self", tensor_arg("x"))}, {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({neg}, {{"y", meta_of({2, 6}, 29)}}, {"y"})), Catch::Contains("ScalarType 29"));
  json sparse = meta_of({2, 6});
  sparse["layout"] = 1;
  CHECK_THAT(error_of(program_with({neg}, {{"y", sparse}}, {"y"})),
             Catch::Contains("/graph_module/graph/tensor_values/y/layout") && Catch::Contains("sparse or mkldnn layout"));
  json cond = node_of("higher_order.cond", json::array(), json::array());
  CHECK_THAT(error_of(program_with({cond}, json::object(), {"x"})), Catch::Contains("a higher-order op"));
  json unmapped = node_of("aten.nonzero.default", {named_input("self", tensor_arg("x"))}, {tensor_arg("y")});
  CHECK_THAT(error_of(program_with({unmapped}, {{"y", meta_of({2, 6})}}, {"y"})), Catch::Contains("aten.nonzero.default has no translation"));
}

TEST_CASE("slices take Python's bounds: None, negative, past the end") {
  json slice = node_of("aten.slice.Tensor", {named_input("self", tensor_arg("x")), named_input("dim", {{"as_int", 1}}), named_input("start", {{"as_int", -4}}),
                                          named_input("end", {{"as_int", 9223372036854775807}})},
                    {tensor_arg("y")});
  const tg::Pt2Translation t = tg::translate_program(program_with({slice}, {{"y", meta_of({2, 4})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["op"] == "prims.slice_prim");
  CHECK(t.trace["ops"][0]["kwargs"]["start_indices"] == json({0, 2}));
  CHECK(t.trace["ops"][0]["kwargs"]["end_indices"] == json({2, 6}));
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
}

TEST_CASE("a copy or layout change is its input's value: no op, later readers read the input") {
  json clone = node_of("aten.clone.default", {named_input("self", tensor_arg("x")), named_input("memory_format", {{"as_memory_format", 1}})}, {tensor_arg("c")});
  json neg = node_of("aten.neg.default", {named_input("self", tensor_arg("c"))}, {tensor_arg("y")});
  const tg::Pt2Translation t = tg::translate_program(program_with({clone, neg}, {{"c", meta_of({2, 6})}, {"y", meta_of({2, 6})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["kwargs"]["a"] == "x");
}

TEST_CASE("schema versions outside major 8, minor 14 and later, are refused with the way out") {
  std::string text = program_with(json::array(), json::object(), {"x"});
  json doc = json::parse(text);
  doc["schema_version"] = {{"major", 8}, {"minor", 8}};
  CHECK_THAT(error_of(doc.dump()), Catch::Contains("re-save it with torch.export.save from torch >= 2.9"));
  doc["schema_version"] = {{"major", 9}, {"minor", 1}};
  CHECK_THAT(error_of(doc.dump()), Catch::Contains("schema major version 8"));
}

TEST_CASE("an in-place op is its functional form, and later readers of its target read the result") {
  json neg = node_of("aten.neg.default", {named_input("self", tensor_arg("x"))}, {tensor_arg("n")});
  json add = node_of("aten.add_.Tensor", {named_input("self", tensor_arg("n")), named_input("other", tensor_arg("x"))}, {tensor_arg("a")});
  json mul = node_of("aten.mul.Tensor", {named_input("self", tensor_arg("n")), named_input("other", tensor_arg("x"))}, {tensor_arg("y")});
  json values = {{"n", meta_of({2, 6})}, {"a", meta_of({2, 6})}, {"y", meta_of({2, 6})}};
  const tg::Pt2Translation t = tg::translate_program(program_with({neg, add, mul}, values, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 3);
  CHECK(t.trace["ops"][1]["op"] == "torch.add");
  CHECK(t.trace["ops"][2]["kwargs"]["a"] == "a");  // n after the add_: its result
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));

  json add_to_input = node_of("aten.add_.Tensor", {named_input("self", tensor_arg("x")), named_input("other", tensor_arg("x"))}, {tensor_arg("a")});
  CHECK_THAT(error_of(program_with({add_to_input}, {{"a", meta_of({2, 6})}}, {"a"})), Catch::Contains("writes the program's input \"x\" in place"));
  json view = node_of("aten.view.default", {named_input("self", tensor_arg("n")), named_input("size", {{"as_ints", {12}}})}, {tensor_arg("v")});
  json values_with_view = {{"n", meta_of({2, 6})}, {"v", meta_of({12})}, {"a", meta_of({2, 6})}};
  CHECK_THAT(error_of(program_with({neg, view, add}, values_with_view, {"a", "v"})), Catch::Contains("which a view shares"));
}

TEST_CASE("an empty dim list reduces every dim, as ATen's sum, mean and var do") {
  for (const char* target : {"aten.sum.dim_IntList", "aten.mean.dim"}) {
    json reduce = node_of(target, {named_input("self", tensor_arg("x")), named_input("dim", {{"as_ints", json::array()}})}, {tensor_arg("y")});
    const tg::Pt2Translation t = tg::translate_program(program_with({reduce}, {{"y", meta_of({})}}, {"y"}), "t");
    REQUIRE(t.trace["ops"].size() == 1);
    CHECK(t.trace["ops"][0]["kwargs"]["dim"].is_null());
    CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
  }
  json rows = node_of("aten.sum.dim_IntList", {named_input("self", tensor_arg("x")), named_input("dim", {{"as_ints", {1}}})}, {tensor_arg("y")});
  const tg::Pt2Translation t = tg::translate_program(program_with({rows}, {{"y", meta_of({2})}}, {"y"}), "t");
  CHECK(t.trace["ops"][0]["kwargs"]["dim"] == json({1}));
}

namespace pt2_programs {

// wrap_with_autocast(device, bf16, enabled, False, body, x) around mm(x, t(x)), whose recorded
// result is bf16 when enabled (the transpose keeps f32: autocast leaves it alone).
json autocast_region(bool enabled, const char* body_dtype, const std::string& body_name, const std::string& out);

std::string autocast_program(bool enabled, const char* body_dtype = "bf16") {
  const int result = std::string(body_dtype) == "bf16" ? 13 : 7;
  return program_with({autocast_region(enabled, body_dtype, "submod_1", "getitem")}, {{"getitem", meta_of({2, 2}, result)}}, {"getitem"});
}

json autocast_region(bool enabled, const char* body_dtype, const std::string& body_name, const std::string& out) {
  const int result = std::string(body_dtype) == "bf16" ? 13 : 7;
  json t = node_of("aten.t.default", {named_input("self", tensor_arg("arg0_1"))}, {tensor_arg("t")});
  json mm = node_of("aten.mm.default", {named_input("self", tensor_arg("arg0_1")), named_input("mat2", tensor_arg("t"))}, {tensor_arg("mm")});
  json body = {{"inputs", {tensor_arg("arg0_1")}}, {"outputs", {tensor_arg("mm")}}, {"nodes", {t, mm}},
               {"tensor_values", {{"arg0_1", meta_of({2, 6})}, {"t", meta_of({6, 2})}, {"mm", meta_of({2, 2}, result)}}},
               {"sym_int_values", json::object()}, {"sym_bool_values", json::object()}, {"sym_float_values", json::object()},
               {"custom_obj_values", json::object()}, {"is_single_tensor_return", false}};
  json region = node_of("higher_order.wrap_with_autocast",
                        {named_input("", {{"as_string", "cuda"}}), named_input("", {{"as_scalar_type", 13}}), named_input("", {{"as_bool", enabled}}),
                         named_input("", {{"as_bool", false}}), named_input("", {{"as_graph", {{"name", body_name}, {"graph", body}}}}),
                         named_input("", tensor_arg("x"))},
                        {tensor_arg(out)});
  return region;
}

std::vector<std::string> op_names(const json& trace) {
  std::vector<std::string> names;
  for (const json& op : trace["ops"]) names.push_back(op["op"].get<std::string>());
  return names;
}

}  // namespace pt2_programs

TEST_CASE("an autocast region is inlined, its operands cast to the dtype the archive records") {
  const tg::Pt2Translation t = tg::translate_program(autocast_program(true), "t");
  CHECK(op_names(t.trace) == std::vector<std::string>{"torch.transpose", "prims.convert_element_type", "prims.convert_element_type", "torch.matmul"});
  CHECK(t.trace["ops"][3]["kwargs"]["a"] == "submod_1__x__autocast_bf16");  // in the region's scope
  CHECK(t.trace["ops"][3]["kwargs"]["b"] == "submod_1__t__autocast_bf16");
  CHECK(t.trace["outputs"] == json({"submod_1__mm"}));
  CHECK(t.op_origins.at(3).pointer == "/graph_module/graph/nodes/0/inputs/4/arg/as_graph/graph/nodes/1");
  const tg::Trace trace = tg::read_trace(t.trace.dump());
  CHECK(trace.value(trace.outputs.at(0)).dtype == tg::DType::bf16);
}

TEST_CASE("a disabled autocast region is inlined as it is, and a region must be well formed") {
  const tg::Pt2Translation t = tg::translate_program(autocast_program(false, "f32"), "t");
  // (mm of a transposed 2-D value is a linear: pt2_patterns.cpp)
  CHECK(op_names(t.trace) == std::vector<std::string>{"torch.transpose", "torch.nn.functional.linear"});
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
  // A region whose recorded result the translation does not reach is a reader error, not a cast.
  json text = json::parse(autocast_program(false, "bf16"));
  CHECK_THAT(error_of(text.dump()), Catch::Contains("bf16"));
  text["graph_module"]["graph"]["nodes"][0]["inputs"][4]["arg"] = {{"as_int", 1}};
  CHECK_THAT(error_of(text.dump()), Catch::Contains("/graph_module/graph/nodes/0/inputs/4/arg") && Catch::Contains("must be a subgraph"));
}

TEST_CASE("unbind gives each index of its dim as a tensor without that dim") {
  json unbind = node_of("aten.unbind.int", {named_input("self", tensor_arg("x"))}, {{{"as_tensors", {{{"name", "a"}}, {{"name", "b"}}}}}});
  const tg::Pt2Translation t = tg::translate_program(program_with({unbind}, {{"a", meta_of({6})}, {"b", meta_of({6})}}, {"a", "b"}), "t");
  REQUIRE(t.trace["ops"].size() == 4);
  CHECK(t.trace["ops"][2]["kwargs"]["start_indices"] == json({1, 0}));
  CHECK(t.trace["ops"][3]["out"][0]["name"] == "b");
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
  json three = node_of("aten.unbind.int", {named_input("self", tensor_arg("x")), named_input("dim", {{"as_int", 1}})}, {{{"as_tensors", {{{"name", "a"}}}}}});
  CHECK_THAT(error_of(program_with({three}, {{"a", meta_of({2})}}, {"a"})), Catch::Contains("unbind into 1 outputs of a dim of 6"));
}

namespace pt2_programs {

json ints(std::vector<int64_t> v) { return {{"as_ints", v}}; }

// x [2, 6] viewed as x3 [2, 2, 3] and w [4, 3]; Core ATen's linear of them: view to [4, 3], permute
// w, mm, view back to [2, 2, 4]; `extra` adds a second reader of the mm.
std::string decomposed_linear(bool extra) {
  json nodes = {node_of("aten.view.default", {named_input("self", tensor_arg("x")), named_input("size", ints({2, 2, 3}))}, {tensor_arg("x3")}),
                node_of("aten.view.default", {named_input("self", tensor_arg("x")), named_input("size", ints({4, 3}))}, {tensor_arg("w")}),
                node_of("aten.permute.default", {named_input("self", tensor_arg("w")), named_input("dims", ints({1, 0}))}, {tensor_arg("t")}),
                node_of("aten.view.default", {named_input("self", tensor_arg("x3")), named_input("size", ints({4, 3}))}, {tensor_arg("x2")}),
                node_of("aten.mm.default", {named_input("self", tensor_arg("x2")), named_input("mat2", tensor_arg("t"))}, {tensor_arg("mm")}),
                node_of("aten.view.default", {named_input("self", tensor_arg("mm")), named_input("size", ints({2, 2, 4}))}, {tensor_arg("y")})};
  json values = {{"x3", meta_of({2, 2, 3})}, {"w", meta_of({4, 3})}, {"t", meta_of({3, 4})}, {"x2", meta_of({4, 3})},
                 {"mm", meta_of({4, 4})}, {"y", meta_of({2, 2, 4})}};
  if (extra) {
    nodes.push_back(node_of("aten.neg.default", {named_input("self", tensor_arg("mm"))}, {tensor_arg("n")}));
    values["n"] = meta_of({4, 4});
  }
  return program_with(nodes, values, extra ? std::vector<std::string>{"y", "n"} : std::vector<std::string>{"y"});
}

}  // namespace pt2_programs

TEST_CASE("Core ATen's view, permute, mm, view is a linear again; a 2-D one when the GEMM has other readers") {
  const tg::Pt2Translation t = tg::translate_program(decomposed_linear(false), "t");
  const std::vector<std::string> names = op_names(t.trace);
  REQUIRE(std::count(names.begin(), names.end(), "torch.nn.functional.linear") == 1);
  const json& linear = t.trace["ops"][size_t(std::find(names.begin(), names.end(), "torch.nn.functional.linear") - names.begin())];
  CHECK(linear["kwargs"]["a"] == "x3");
  CHECK(linear["kwargs"]["w"] == "w");
  CHECK(linear["out"][0]["shape"] == json({2, 2, 4}));
  CHECK(t.trace["outputs"] == json({"mm"}));
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
  const tg::Pt2Translation kept = tg::translate_program(decomposed_linear(true), "t");
  const std::vector<std::string> kept_names = op_names(kept.trace);
  REQUIRE(std::count(kept_names.begin(), kept_names.end(), "torch.nn.functional.linear") == 1);
  const json& flat = kept.trace["ops"][size_t(std::find(kept_names.begin(), kept_names.end(), "torch.nn.functional.linear") - kept_names.begin())];
  CHECK(flat["kwargs"]["a"] == "x2");  // the 2-D linear: the view back stays a reshape
  CHECK(flat["out"][0]["shape"] == json({4, 4}));
  CHECK(std::count(kept_names.begin(), kept_names.end(), "torch.reshape") == 4);
  CHECK_NOTHROW(tg::read_trace(kept.trace.dump()));
}

TEST_CASE("the linear pattern refuses a hostile graph in words: a missing value, a number for self") {
  json text = json::parse(decomposed_linear(false));
  text["graph_module"]["graph"]["tensor_values"].erase("y");  // (pt2_fuzzer found this one: map::at)
  CHECK_THAT(error_of(text.dump()), Catch::Contains("no tensor_values entry for \"y\""));
  json neg = node_of("aten.neg.default", {named_input("self", {{"as_float", 1.5}})}, {tensor_arg("n")});
  CHECK_THAT(error_of(program_with({neg}, {{"n", meta_of({2, 6})}}, {"n"})), Catch::Contains("aten.neg.default's self must be a tensor, not 1.5"));
}

TEST_CASE("two autocast regions cast the same value each in its scope; a body name the graph has is refused") {
  const tg::Pt2Translation t = tg::translate_program(
      program_with({autocast_region(true, "bf16", "submod_1", "getitem"), autocast_region(true, "bf16", "submod_2", "getitem_1")},
                   {{"getitem", meta_of({2, 2}, 13)}, {"getitem_1", meta_of({2, 2}, 13)}}, {"getitem", "getitem_1"}),
      "t");
  CHECK(t.trace["ops"][3]["kwargs"]["a"] == "submod_1__x__autocast_bf16");
  CHECK(t.trace["ops"][7]["kwargs"]["a"] == "submod_2__x__autocast_bf16");
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
  // (found by a hostile review: the enclosing graph's entry was kept, and the body's op computed in its dtype)
  json clash = json::parse(autocast_program(true));
  clash["graph_module"]["graph"]["tensor_values"]["submod_1__mm"] = meta_of({2, 2});
  CHECK_THAT(error_of(clash.dump()), Catch::Contains("\"submod_1__mm\" names a value of the enclosing graph too"));
}
