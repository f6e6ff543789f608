// Symbolic sizes as the front ends read them (docs/symbolic-shapes.md): a JSON trace's "symbols"
// and size expressions, a dynamic-shape export's range_constraints and SymInts, each read at the
// sizes --specialize gives; and what either refuses, at its place.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "driver/run_time_sizes.h"
#include "frontend/input_file.h"
#include "frontend/pt2_program.h"
#include "frontend/pt2_sizes.h"
#include "frontend/reader.h"
#include "support/diagnostics.h"

namespace symbolic_reader {

using nlohmann::json;

// x [B, T, 4] -> reshape to [B*T, 4] -> sum over dim 1: a trace symbolic in B and T.
json symbolic_trace() {
  return json::parse(R"({
    "format": "thunder-gen-trace", "version": 1, "name": "t",
    "symbols": {"B": {"min": 1, "max": 64}, "T": {"min": 2, "max": 512, "multiple_of": 2}},
    "inputs": [{"name": "x", "shape": ["B", "T", 4], "dtype": "f32", "requires_grad": true}],
    "ops": [
      {"op": "torch.reshape", "args": ["x", [{"size": "B*T"}, 4]], "out": [{"name": "r", "shape": ["T*B", 4], "dtype": "f32"}]},
      {"op": "torch.sum", "args": ["r", 1], "out": [{"name": "s", "shape": ["B * (T//2) * 2"], "dtype": "f32"}]}
    ],
    "outputs": ["s"]})");
}

std::string error_of(const json& trace, const tg::SymbolValues& at) {
  try {
    tg::read_trace(trace.dump(), at);
  } catch (const tg::UserError& e) {
    return (e.file.empty() ? "" : e.file + ": ") + e.where + ": " + e.what();
  }
  return "accepted";
}

}  // namespace symbolic_reader

using namespace symbolic_reader;

TEST_CASE("a symbolic JSON trace is read at the sizes it is specialised to") {
  const tg::Trace t = tg::read_trace(symbolic_trace().dump(), {{"B", 3}, {"T", 10}});
  CHECK(t.value(t.inputs[0]).shape == tg::Shape{3, 10, 4});
  CHECK(t.value(t.ops[0].outs[0]).shape == tg::Shape{30, 4});
  CHECK(t.ops[0].args[1].int_list() == std::vector<int64_t>{30, 4});
  CHECK(t.value(t.outputs[0]).shape == tg::Shape{30});
  CHECK(t.specialization_text() == "B=3, T=10 (1 <= B <= 64; 2 <= T <= 512, a multiple of 2)");
  // ... and where the sizes disagree with the ops, the verifier says so as for any trace.
  json wrong = symbolic_trace();
  wrong["ops"][0]["out"][0]["shape"] = {"B", 4};
  CHECK(error_of(wrong, {{"B", 3}, {"T", 10}}).find("/ops/0") == 0);
}

TEST_CASE("specialised at 1, a symbolic dim broadcast against a constant 1 keeps its expression") {
  // At B=1 both operands' first dims are 1; the one that is 1 at every size is the one broadcast,
  // so the sum is [B, 4] as declared (and weighed as such at --plan-at sizes), not [1, 4].
  const json t = json::parse(R"({
    "format": "thunder-gen-trace", "version": 1, "name": "t",
    "symbols": {"B": {"min": 1, "max": 64}},
    "inputs": [{"name": "x", "shape": ["B", 4], "dtype": "f32"}, {"name": "b", "shape": [1, 4], "dtype": "f32"}],
    "ops": [{"op": "torch.add", "args": ["b", "x"], "out": [{"name": "y", "shape": ["B", 4], "dtype": "f32"}]},
            {"op": "torch.mul", "args": ["x", "b"], "out": [{"name": "z", "shape": ["B", 4], "dtype": "f32"}]}],
    "outputs": ["y", "z"]})");
  REQUIRE(error_of(t, {{"B", 1}}) == "accepted");
  const tg::Trace read = tg::read_trace(t.dump(), {{"B", 1}});
  for (tg::ValueId out : read.outputs) {
    const tg::Dim& d = read.value(out).shape[0];
    REQUIRE(d.expr());
    CHECK(d.expr()->text() == "B");
  }
}

TEST_CASE("a symbolic trace needs a size for every symbol, one its declaration allows") {
  const json t = symbolic_trace();
  CHECK(error_of(t, {}) == "/symbols/B: the trace's sizes depend on B (1 <= B <= 64); name a size for each symbol with --specialize B=<size>, "
                           "or none for a folder that takes them at run time");
  // None named: the error a caller taking the sizes at run time catches, with the symbols.
  try {
    tg::read_trace(t.dump());
    FAIL("read without sizes");
  } catch (const tg::SizesNotGiven& e) {
    CHECK(e.symbols.all().size() == 2);
    CHECK(e.symbols.at("T").multiple_of == 2);
  }
  CHECK(error_of(t, {{"B", 3}}).find("/symbols/T: the trace's sizes depend on T (2 <= T <= 512, a multiple of 2)") == 0);
  CHECK(error_of(t, {{"B", 65}, {"T", 2}}) == "--specialize: : B=65 is not a size the trace allows: 1 <= B <= 64 (/symbols/B)");
  CHECK(error_of(t, {{"B", 1}, {"T", 7}}) == "--specialize: : T=7 is not a size the trace allows: 2 <= T <= 512, a multiple of 2 (/symbols/T)");
  CHECK(error_of(t, {{"B", 1}, {"T", 2}, {"C", 1}}) == "--specialize: : the trace declares no symbol 'C' (its symbols: B, T)");
  json static_trace = t;
  static_trace.erase("symbols");
  static_trace["inputs"][0]["shape"] = {2, 2, 4};
  CHECK(error_of(static_trace, {{"B", 2}}) == "--specialize: : the trace declares no symbol 'B' (its symbols: none)");
}

TEST_CASE("symbol declarations and size expressions are checked where they are written") {
  const tg::SymbolValues at{{"B", 3}, {"T", 10}};
  auto with = [](const std::string& pointer, const json& value) {
    json t = symbolic_trace();
    t[json::json_pointer(pointer)] = value;
    return t;
  };
  CHECK(error_of(with("/symbols/B", json{{"min", 5}, {"max", 4}}), at) == "/symbols/B: symbol 'B': min 5 is over max 4");
  CHECK(error_of(with("/symbols/B", json{{"min", 1}}), at) == "/symbols/B: a symbol declares \"max\"");
  CHECK(error_of(with("/symbols/B", json{{"min", 1}, {"max", 4}, {"step", 2}}), at).find("/symbols/B") == 0);
  CHECK(error_of(with("/symbols/max", json{{"min", 1}, {"max", 4}}), at) == "/symbols/max: a symbol's name is an identifier of at most 64 characters, not max or min");
  CHECK(error_of(with("/inputs/0/shape/0", "B*X"), at) ==
        "/inputs/0/shape/0: in the size \"B*X\" at offset 3: unknown symbol 'X' (declare it under \"symbols\")");
  CHECK(error_of(with("/inputs/0/shape/0", "B - 2"), at) == "/inputs/0/shape/0: the size B - 2 may be negative for sizes the symbols allow");
  CHECK(error_of(with("/inputs/0/shape/0", "B/2"), at) == "/inputs/0/shape/0: in the size \"B/2\" at offset 2: '/' is true division: sizes divide with '//'");
  CHECK(error_of(with("/ops/0/args/1/0", json{{"size", 6}}), at) == "/ops/0/args/1/0/size: a size literal is a string: {\"size\": \"B*T\"}");
  std::string power = "B";
  for (int i = 1; i < 30; ++i) power += "*B";  // 3^30: an int64, but 3^30 * 10 elements are over 2^48
  CHECK(error_of(with("/inputs/0/shape/0", power), at) == "/inputs/0/shape/1: the shape has more than 2^48 elements");
  for (int i = 30; i < 41; ++i) power += "*B";  // 3^41 is over int64
  CHECK(error_of(with("/inputs/0/shape/0", power), at).find("/inputs/0/shape/0: the size B*B*") == 0);
  CHECK(error_of(with("/inputs/0/shape/0", power), at).find(" at B=3, T=10 (1 <= B <= 64; 2 <= T <= 512, a multiple of 2): size arithmetic overflows int64") !=
        std::string::npos);
}

namespace symbolic_reader {

json sym(const std::string& srepr, int64_t hint) { return {{"as_expr", {{"expr_str", srepr}, {"hint", {{"as_int", hint}}}}}}; }
std::string symbol(const std::string& name) { return "Symbol('" + name + "', positive=True, integer=True)"; }

// A dynamic-shape export of x [s0, 2*s1] -> x[:, : x.shape[1] // 2] -> neg, as torch 2.9 writes it.
json dynamic_program() {
  const json meta_x = {{"dtype", 7}, {"sizes", {sym(symbol("s0"), 3), sym("Mul(Integer(2), " + symbol("s1") + ")", 8)}}, {"requires_grad", false},
                       {"device", {{"type", "cpu"}, {"index", nullptr}}}, {"strides", json::array()}, {"storage_offset", {{"as_int", 0}}}, {"layout", 7}};
  json meta_half = meta_x, meta_neg = meta_x;
  meta_half["sizes"][1] = sym(symbol("s1"), 4);
  meta_neg["sizes"][1] = sym(symbol("s1"), 4);
  auto input = [](const std::string& name, json arg) { return json{{"name", name}, {"arg", std::move(arg)}, {"kind", 1}}; };
  auto tensor = [](const std::string& name) { return json{{"as_tensor", {{"name", name}}}}; };
  const json nodes = {
      {{"target", "torch.ops.aten.sym_size.int"}, {"inputs", {input("self", tensor("x")), input("dim", {{"as_int", 1}})}},
       {"outputs", {{{"as_sym_int", {{"as_name", "sym_size_int"}}}}}}, {"metadata", json::object()}},
      {{"target", "_operator.floordiv"}, {"inputs", {input("a", {{"as_sym_int", {{"as_name", "sym_size_int"}}}}), input("b", {{"as_int", 2}})}},
       {"outputs", {{{"as_sym_int", {{"as_name", "floordiv"}}}}}}, {"metadata", json::object()}},
      {{"target", "torch.ops.aten.slice.Tensor"},
       {"inputs", {input("self", tensor("x")), input("dim", {{"as_int", 1}}), input("start", {{"as_none", true}}), input("end", {{"as_sym_int", {{"as_name", "floordiv"}}}})}},
       {"outputs", {tensor("half")}}, {"metadata", json::object()}},
      {{"target", "torch.ops.aten.neg.default"}, {"inputs", {input("self", tensor("half"))}}, {"outputs", {tensor("y")}}, {"metadata", json::object()}}};
  const json graph = {{"inputs", {tensor("x")}}, {"outputs", {tensor("y")}}, {"nodes", nodes},
                      {"tensor_values", {{"x", meta_x}, {"half", meta_half}, {"y", meta_neg}}},
                      {"sym_int_values", {{"sym_size_int", sym("Mul(Integer(2), " + symbol("s1") + ")", 8)}, {"floordiv", sym(symbol("s1"), 4)}}},
                      {"sym_bool_values", json::object()}, {"sym_float_values", json::object()}, {"custom_obj_values", json::object()},
                      {"is_single_tensor_return", false}};
  const json signature = {{"input_specs", {{{"user_input", {{"arg", tensor("x")}}}}}}, {"output_specs", {{{"user_output", {{"arg", tensor("y")}}}}}}};
  return {{"graph_module", {{"graph", graph}, {"signature", signature}, {"module_call_graph", json::array()}, {"metadata", json::object()}}},
          {"opset_version", {{"aten", 10}}},
          {"range_constraints", {{"s0", {{"min_val", 1}, {"max_val", 4096}}}, {"s1", {{"min_val", 2}, {"max_val", 512}}}, {"2*s1", {{"min_val", 4}, {"max_val", 1024}}}}},
          {"schema_version", {{"major", 8}, {"minor", 14}}}, {"verifiers", {"ATEN"}}, {"torch_version", "2.9.0"}};
}

std::string pt2_error_of(const json& program, const tg::SymbolValues& at) {
  try {
    tg::read_trace(tg::translate_program(program.dump(), "t", at).trace.dump(), at, tg::PlainIntegers::sizes_alone);
  } catch (const tg::UserError& e) {
    return (e.file.empty() ? "" : e.file + ": ") + e.where + ": " + e.what();
  }
  return "accepted";
}

}  // namespace symbolic_reader

TEST_CASE("a dynamic-shape export is translated at the sizes its symbols are given") {
  const tg::Pt2Translation t = tg::translate_program(dynamic_program().dump(), "t", {{"s0", 5}, {"s1", 3}});
  CHECK(t.symbols.all().size() == 2);  // s0 and s1; "2*s1" is derived from s1
  CHECK(t.symbols.at("s1").min == 2);
  const tg::Trace trace = tg::read_trace(t.trace.dump(), {{"s0", 5}, {"s1", 3}}, tg::PlainIntegers::sizes_alone);  // a symbolic trace, its inputs sized by expression
  CHECK(trace.value(trace.inputs[0]).shape == tg::Shape{5, 6});
  CHECK(trace.value(trace.outputs[0]).shape == tg::Shape{5, 3});
  CHECK(trace.ops.size() == 2);  // the slice and the neg: the size arithmetic is not translated
  // The input's sizes are kept as expressions (the manifest's inputs[].sizes).
  CHECK(trace.input_sizes.at("x").at(1).text() == "2*s1");
  CHECK(trace.specialized_at == tg::SymbolValues{{"s0", 5}, {"s1", 3}});
}

TEST_CASE("a dynamic-shape export needs its sizes, and refuses what it cannot evaluate") {
  const json p = dynamic_program();
  CHECK(pt2_error_of(p, {{"s0", 5}}).find("/range_constraints/s1: the trace's sizes depend on s1 (2 <= s1 <= 512)") == 0);
  CHECK(pt2_error_of(p, {{"s0", 5}, {"s1", 1}}) == "--specialize: : s1=1 is not a size the trace allows: 2 <= s1 <= 512 (/range_constraints/s1)");
  json unbacked = p;
  unbacked["graph_module"]["graph"]["tensor_values"]["y"]["sizes"][0] = sym(symbol("u0"), 0);
  CHECK(pt2_error_of(unbacked, {{"s0", 5}, {"s1", 3}}) ==
        "/graph_module/graph/tensor_values/y/sizes/0/as_expr/expr_str: at offset 7 of the size: a data-dependent size (u0): thunder-gen generates code "
        "whose sizes follow from its inputs' sizes");
  json sympy_function = p;
  sympy_function["graph_module"]["graph"]["sym_int_values"]["floordiv"] = sym("ceiling(" + symbol("s1") + ")", 4);
  CHECK(pt2_error_of(sympy_function, {{"s0", 5}, {"s1", 3}}).find("the sympy function 'ceiling' in a size") != std::string::npos);
  json unknown_name = p;
  unknown_name["graph_module"]["graph"]["sym_int_values"].erase("floordiv");
  CHECK(pt2_error_of(unknown_name, {{"s0", 5}, {"s1", 3}}).find("no SymInt named \"floordiv\"") != std::string::npos);
}

TEST_CASE("the names thunder_gen.export gave torch's symbols are the trace's") {
  const tg::pt2::SymbolNames names = tg::pt2::read_symbol_names(R"({"s0": "batch", "s1": "half_seq"})", "m.pt2:m/extra/names.json");
  const tg::Pt2Translation t = tg::translate_program(dynamic_program().dump(), "t", {{"batch", 5}, {"half_seq", 3}}, names);
  CHECK(t.symbols.all().size() == 2);
  CHECK(t.symbols.at("half_seq").min == 2);
  CHECK(t.symbols.find("s1") == nullptr);
  const tg::Trace trace = tg::read_trace(t.trace.dump(), {{"batch", 5}, {"half_seq", 3}}, tg::PlainIntegers::sizes_alone);
  CHECK(trace.value(trace.inputs[0]).shape == tg::Shape{5, 6});  // 2*s1 read as 2*half_seq
  auto error_with = [&](const tg::pt2::SymbolNames& n, const tg::SymbolValues& at) {
    try {
      tg::translate_program(dynamic_program().dump(), "t", at, n);
    } catch (const tg::UserError& e) {
      return e.file + ": " + e.where + ": " + e.what();
    }
    return std::string("accepted");
  };
  // The error for a missing size names the given name, and points at torch's.
  CHECK(error_with(names, {{"batch", 5}}).find("/range_constraints/s1: the trace's sizes depend on half_seq (2 <= half_seq <= 512)") != std::string::npos);
  CHECK(error_with(names, {{"batch", 5}, {"s1", 3}}).find("the trace declares no symbol 's1' (its symbols: batch, half_seq)") != std::string::npos);
  // A name another symbol has, and a symbol the program lacks, are refused at the names file.
  CHECK(error_with(tg::pt2::read_symbol_names(R"({"s0": "s1"})", "names.json"), {}) ==
        "names.json: /s0: the name 's1' is taken by another symbol of the program");
  CHECK(error_with(tg::pt2::read_symbol_names(R"({"s9": "batch"})", "names.json"), {}) ==
        "names.json: /s9: names a symbol the program's range_constraints do not have");
  auto names_error = [](const std::string& text) {
    try {
      tg::pt2::read_symbol_names(text, "names.json");
    } catch (const tg::UserError& e) {
      return e.where + ": " + e.what();
    }
    return std::string("accepted");
  };
  CHECK(names_error("[1]").find(": expected a JSON object") == 0);
  CHECK(names_error(R"({"s0": 3})") == "/s0: expected a name (a string), got an integer");
  CHECK(names_error(R"({"s0": "two words"})") == "/s0: the name 'two words' is not a size symbol's (an identifier of at most 64 characters, not max or min)");
  CHECK(names_error(R"({"s0": ")" + std::string(65, 'n') + R"("})").find("is not a size symbol's") != std::string::npos);
  CHECK(names_error(R"({"s0": "a", "s0": "b"})").find("duplicate key") != std::string::npos);  // not the last one silently
  CHECK(names_error(R"({"s0": "max"})").find("is not a size symbol's") != std::string::npos);
  CHECK(names_error(R"({"s0": "b", "s1": "b"})") == "/s1: the name 'b' is given to two symbols");
}

TEST_CASE("sympy's srepr text reads as a size expression") {
  tg::Symbols s;
  s.declare({"s0", 1, 100, 1});
  s.declare({"s1", 2, 50, 1});
  CHECK(tg::pt2::sympy_size("Add(Mul(Integer(2), " + symbol("s0") + "), Integer(-1))", s) == tg::parse_size_expr("2*s0 - 1", s));
  CHECK(tg::pt2::sympy_size("FloorDiv(" + symbol("s0") + ", Integer(4))", s) == tg::parse_size_expr("s0//4", s));
  CHECK(tg::pt2::sympy_size("Mod(" + symbol("s0") + ", Integer(4))", s) == tg::parse_size_expr("s0 - 4*(s0//4)", s));
  CHECK(tg::pt2::sympy_size("Pow(" + symbol("s1") + ", Integer(2))", s) == tg::parse_size_expr("s1*s1", s));
  CHECK(tg::pt2::sympy_size("Max(" + symbol("s0") + ", Integer(1), " + symbol("s1") + ")", s) == tg::parse_size_expr("max(s0, s1)", s));
  CHECK_THROWS_AS(tg::pt2::sympy_size("Symbol('s0'", s), tg::SizeExprError);
  CHECK_THROWS_AS(tg::pt2::sympy_size("Pow(" + symbol("s1") + ", Integer(-1))", s), tg::SizeExprError);
  CHECK_THROWS_AS(tg::pt2::sympy_size(std::string(5000, 'A'), s), tg::SizeExprError);
}

#include "frontend/json_document.h"

namespace symbolic_reader {

// SymIntSizes over hand-written JSON: a root with range_constraints, a graph with sym_int_values.
struct SizesOf {
  simdjson::dom::parser root_parser, graph_parser;
  simdjson::padded_string root_text, graph_text;
  std::string pointer;  // "": the documents' roots
  tg::json::Object root, graph;
  SizesOf(const json& root_json, const json& graph_json) : root_text(root_json.dump()), graph_text(graph_json.dump()) {
    const tg::json::Path at(pointer);
    root = tg::json::object_at(tg::json::parse_document(root_parser, root_text), at);
    graph = tg::json::object_at(tg::json::parse_document(graph_parser, graph_text), at);
  }
};

std::string sizes_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const tg::UserError& e) {
    return e.where + ": " + e.what();
  }
  return "accepted";
}

}  // namespace symbolic_reader

TEST_CASE("a graph's SymInts are read by name, and a nested graph's must agree with them") {
  const json root = {{"range_constraints", {{"s0", {{"min_val", 2}, {"max_val", nullptr}}}, {"u0", {{"min_val", 0}, {"max_val", 9}}}}}};
  const json graph = {{"sym_int_values", {{"a", sym(symbol("s0"), 4)}, {"two", {{"as_int", 2}}}}}};
  SizesOf docs(root, graph);
  const std::string path = "/graph";
  const tg::json::Path at(path);
  tg::pt2::SymIntSizes sizes(docs.root, at, docs.graph, at, {{"s0", 6}});
  CHECK(sizes.symbols().at("s0").max == tg::kMaxSymbolSize);  // an unbounded max: the largest size declared
  CHECK_FALSE(sizes.symbols().find("u0"));                     // unbacked: refused where a size names it
  CHECK(sizes.named("a", at) == 6);
  CHECK(sizes.named("two", at) == 2);
  CHECK(sizes_error([&] { sizes.named("b", at); }) == "/graph: no SymInt named \"b\" in the graph's sym_int_values");

  SizesOf same(root, {{"sym_int_values", {{"a", sym(symbol("s0"), 4)}}}});
  sizes.add_graph(same.graph, at);  // the same name and size in a region's body
  SizesOf other(root, {{"sym_int_values", {{"a", sym("Mul(Integer(2), " + symbol("s0") + ")", 8)}}}});
  CHECK(sizes_error([&] { sizes.add_graph(other.graph, at); }) == "/graph/sym_int_values/a: the SymInt \"a\" is 2*s0 here and s0 in another graph");
  SizesOf odd(root, {{"sym_int_values", {{"c", {{"as_float", 2.0}}}}}});
  CHECK(sizes_error([&] { sizes.add_graph(odd.graph, at); }) == "/graph/sym_int_values/c: a SymInt is {\"as_int\": n} or {\"as_expr\": ...}, not \"as_float\"");
}

TEST_CASE("the probes keep apart the sizes a composite's lowering makes, from each kind of composite") {
  // Two convolutions padded alike (their padded inputs, T + 2, lowered once) and one padded and
  // dilated more, of the same shapes but for its arguments (its padded input, T + 4).
  const json trace = json::parse(R"({
    "format": "thunder-gen-trace", "version": 1, "name": "convs",
    "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 4, "max": 64}},
    "inputs": [{"name": "x", "shape": ["B", 2, "T"], "dtype": "f32", "requires_grad": true},
               {"name": "w", "shape": [2, 2, 3], "dtype": "f32", "requires_grad": true}],
    "ops": [
      {"op": "torch.nn.functional.conv1d", "args": ["x", "w"], "kwargs": {"padding": 1}, "out": [{"name": "a", "shape": ["B", 2, "T"], "dtype": "f32"}]},
      {"op": "torch.nn.functional.conv1d", "args": ["a", "w"], "kwargs": {"padding": 1}, "out": [{"name": "b", "shape": ["B", 2, "T"], "dtype": "f32"}]},
      {"op": "torch.nn.functional.conv1d", "args": ["b", "w"], "kwargs": {"padding": 2, "dilation": 2}, "out": [{"name": "c", "shape": ["B", 2, "T"], "dtype": "f32"}]}
    ],
    "outputs": ["c"]})");
  const tg::Trace t = tg::read_trace(trace.dump(), {{"B", 2}, {"T", 9}});
  std::set<std::string> sizes;
  for (const tg::SizeExpr* e : tg::probed_sizes(t)) sizes.insert(e->text());
  CHECK(sizes.count("T + 2"));  // (the first two's padded inputs)
  CHECK(sizes.count("T + 4"));  // (the third's: only its own lowering makes it)
}

TEST_CASE("the probes keep apart the sizes an op takes as operands, not only its shapes'") {
  // x * (T//16): T//16 is 0 at small probes, which the code would take as the number 0.
  const json trace = json::parse(R"({
    "format": "thunder-gen-trace", "version": 1, "name": "scaled",
    "symbols": {"T": {"min": 1, "max": 64}},
    "inputs": [{"name": "x", "shape": ["T"], "dtype": "f32"}],
    "ops": [{"op": "torch.mul", "args": ["x", {"size": "T//16"}], "out": [{"name": "y", "shape": ["T"], "dtype": "f32"}]}],
    "outputs": ["y"]})");
  std::set<std::string> sizes;
  for (const tg::SizeExpr* e : tg::probed_sizes(tg::read_trace(trace.dump(), {{"T", 9}}))) sizes.insert(e->text());
  CHECK(sizes.count("T//16"));
}
