// The PT2 front end without an archive: the ATen declarations against the op table, and small
// serialized ExportedPrograms (as torch 2.9 writes models/model.json) translated into traces.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <string>

#include "frontend/aten_table.h"
#include "frontend/pt2_lowerings.h"
#include "frontend/pt2_program.h"
#include "frontend/reader.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace {

using nlohmann::json;

json tensor_meta(std::vector<int64_t> sizes, int dtype = 7, bool requires_grad = false) {
  json s = json::array();
  for (int64_t n : sizes) s.push_back({{"as_int", n}});
  return {{"dtype", dtype}, {"sizes", s}, {"requires_grad", requires_grad}, {"device", {{"type", "cpu"}, {"index", nullptr}}},
          {"strides", json::array()}, {"storage_offset", {{"as_int", 0}}}, {"layout", 7}};
}

json tensor(const std::string& name) { return {{"as_tensor", {{"name", name}}}}; }
json input(const std::string& name, json arg) { return {{"name", name}, {"arg", std::move(arg)}, {"kind", 1}}; }

// A program with user input x (f32 [2, 6]) and the given nodes, tensor values and outputs.
std::string program(json nodes, json values, std::vector<std::string> outputs) {
  values["x"] = tensor_meta({2, 6}, 7, true);
  json graph_outputs = json::array(), output_specs = json::array();
  for (const std::string& out : outputs) {
    graph_outputs.push_back(tensor(out));
    output_specs.push_back({{"user_output", {{"arg", tensor(out)}}}});
  }
  json graph = {{"inputs", {tensor("x")}}, {"outputs", graph_outputs}, {"nodes", nodes}, {"tensor_values", values},
                {"sym_int_values", json::object()}, {"sym_bool_values", json::object()}, {"sym_float_values", json::object()},
                {"custom_obj_values", json::object()}, {"is_single_tensor_return", false}};
  json signature = {{"input_specs", {{{"user_input", {{"arg", tensor("x")}}}}}}, {"output_specs", output_specs}};
  json root = {{"graph_module", {{"graph", graph}, {"signature", signature}, {"module_call_graph", json::array()}, {"metadata", json::object()}}},
               {"opset_version", {{"aten", 10}}}, {"range_constraints", json::object()}, {"schema_version", {{"major", 8}, {"minor", 14}}},
               {"verifiers", {"ATEN"}}, {"torch_version", "2.9.0"}};
  return root.dump();
}

json node(const std::string& target, json inputs, json outputs) {
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

}  // namespace

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
  json ln = node("aten.native_layer_norm.default",
                 {input("input", tensor("x")), input("normalized_shape", {{"as_ints", {6}}}), input("weight", {{"as_none", true}}),
                  input("bias", {{"as_none", true}}), input("eps", {{"as_float", 0.001}})},
                 {tensor("y"), tensor("mean"), tensor("rstd")});
  const tg::Pt2Translation t = tg::translate_program(
      program({ln}, {{"y", tensor_meta({2, 6})}, {"mean", tensor_meta({2, 1})}, {"rstd", tensor_meta({2, 1})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["op"] == "torch.nn.functional.layer_norm");
  CHECK(t.trace["ops"][0]["kwargs"]["eps"] == 0.001);
  CHECK(t.trace["ops"][0]["out"].size() == 1);
  CHECK(t.inputs.at(0).role == "user_input");
  CHECK(t.op_origins.at(0).pointer == "/graph_module/graph/nodes/0");
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
}

TEST_CASE("an output thunder-gen does not compute is refused when something reads it") {
  json ln = node("aten.native_layer_norm.default",
                 {input("input", tensor("x")), input("normalized_shape", {{"as_ints", {6}}}), input("weight", {{"as_none", true}}),
                  input("bias", {{"as_none", true}}), input("eps", {{"as_float", 1e-5}})},
                 {tensor("y"), tensor("mean"), tensor("rstd")});
  const std::string text = program({ln}, {{"y", tensor_meta({2, 6})}, {"mean", tensor_meta({2, 1})}, {"rstd", tensor_meta({2, 1})}}, {"y", "mean"});
  CHECK_THAT(error_of(text), Catch::Contains("output 1 (mean) is read") && Catch::Contains("/graph_module/graph/nodes/0/outputs"));
}

TEST_CASE("an argument away from its default that the declaration does not bind is refused") {
  json softmax = node("aten._softmax.default", {input("self", tensor("x")), input("dim", {{"as_int", 1}}), input("half_to_float", {{"as_bool", true}})},
                      {tensor("y")});
  CHECK_THAT(error_of(program({softmax}, {{"y", tensor_meta({2, 6})}}, {"y"})), Catch::Contains("only when half_to_float==false"));
  json gelu = node("aten.gelu.default", {input("self", tensor("x")), input("approximate", {{"as_string", "tanh"}})}, {tensor("y")});
  CHECK(error_of(program({gelu}, {{"y", tensor_meta({2, 6})}}, {"y"})).empty());
  json embedding = node("aten.embedding.default", {input("weight", tensor("x")), input("indices", tensor("x")), input("padding_idx", {{"as_int", 3}})},
                        {tensor("y")});
  CHECK_THAT(error_of(program({embedding}, {{"y", tensor_meta({2, 6})}}, {"y"})), Catch::Contains("padding_idx==-1"));
}

TEST_CASE("unknown union members, dtypes and targets are refused at their place") {
  json mystery = node("aten.neg.default", {input("self", {{"as_mystery", 1}})}, {tensor("y")});
  CHECK_THAT(error_of(program({mystery}, {{"y", tensor_meta({2, 6})}}, {"y"})),
             Catch::Contains("/graph_module/graph/nodes/0/inputs/0/arg") && Catch::Contains("unknown Argument member \"as_mystery\""));
  json neg = node("aten.neg.default", {input("self", tensor("x"))}, {tensor("y")});
  CHECK_THAT(error_of(program({neg}, {{"y", tensor_meta({2, 6}, 29)}}, {"y"})), Catch::Contains("ScalarType 29"));
  json cond = node("higher_order.cond", json::array(), json::array());
  CHECK_THAT(error_of(program({cond}, json::object(), {"x"})), Catch::Contains("a higher-order op"));
  json unmapped = node("aten.nonzero.default", {input("self", tensor("x"))}, {tensor("y")});
  CHECK_THAT(error_of(program({unmapped}, {{"y", tensor_meta({2, 6})}}, {"y"})), Catch::Contains("aten.nonzero.default has no translation"));
}

TEST_CASE("slices take Python's bounds: None, negative, past the end") {
  json slice = node("aten.slice.Tensor", {input("self", tensor("x")), input("dim", {{"as_int", 1}}), input("start", {{"as_int", -4}}),
                                          input("end", {{"as_int", 9223372036854775807}})},
                    {tensor("y")});
  const tg::Pt2Translation t = tg::translate_program(program({slice}, {{"y", tensor_meta({2, 4})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["op"] == "prims.slice_prim");
  CHECK(t.trace["ops"][0]["kwargs"]["start_indices"] == json({0, 2}));
  CHECK(t.trace["ops"][0]["kwargs"]["end_indices"] == json({2, 6}));
  CHECK_NOTHROW(tg::read_trace(t.trace.dump()));
}

TEST_CASE("a copy or layout change is its input's value: no op, later readers read the input") {
  json clone = node("aten.clone.default", {input("self", tensor("x")), input("memory_format", {{"as_memory_format", 1}})}, {tensor("c")});
  json neg = node("aten.neg.default", {input("self", tensor("c"))}, {tensor("y")});
  const tg::Pt2Translation t = tg::translate_program(program({clone, neg}, {{"c", tensor_meta({2, 6})}, {"y", tensor_meta({2, 6})}}, {"y"}), "t");
  REQUIRE(t.trace["ops"].size() == 1);
  CHECK(t.trace["ops"][0]["kwargs"]["a"] == "x");
}

TEST_CASE("schema versions outside major 8, minor 14 and later, are refused with the way out") {
  std::string text = program(json::array(), json::object(), {"x"});
  json doc = json::parse(text);
  doc["schema_version"] = {{"major", 8}, {"minor", 8}};
  CHECK_THAT(error_of(doc.dump()), Catch::Contains("re-save it with torch.export.save from torch >= 2.9"));
  doc["schema_version"] = {{"major", 9}, {"minor", 1}};
  CHECK_THAT(error_of(doc.dump()), Catch::Contains("schema major version 8"));
}
