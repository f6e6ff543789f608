// Reader, binder, verifier and printer.
#include <catch2/catch.hpp>
#include <cmath>
#include <set>

#include "frontend/reader.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/diagnostics.h"
#include "trace_builder.h"

using test::op;
using test::tensor;

namespace {

std::string where_of(const std::string& json) {
  try {
    tg::read_trace(json);
  } catch (const tg::UserError& e) {
    return e.where + " | " + e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("arguments bind to the signature positionally or by keyword, defaults filled") {
  auto by_position = test::trace("t", tensor("x", "[4, 6]"),
                                 op("prims.slice_prim", "[\"x\", [0, 1], [4, 5]]", tensor("y", "[4, 4]")), "\"y\"");
  auto by_keyword = test::trace("t", tensor("x", "[4, 6]"),
                                op("prims.slice_prim", "[\"x\"]", tensor("y", "[4, 4]"),
                                   ", \"kwargs\": {\"end_indices\": [4, 5], \"start_indices\": [0, 1], \"strides\": null}"),
                                "\"y\"");
  tg::Trace a = tg::read_trace(by_position), b = tg::read_trace(by_keyword);
  REQUIRE(a.ops[0].args.size() == 4);
  REQUIRE(b.ops[0].args.size() == 4);
  CHECK(a.ops[0].args[1].int_list() == std::vector<int64_t>{0, 1});
  CHECK(b.ops[0].args[1].int_list() == std::vector<int64_t>{0, 1});
  CHECK(b.ops[0].args[2].int_list() == std::vector<int64_t>{4, 5});
  CHECK(a.ops[0].args[3].kind == tg::Arg::Kind::none);  // strides defaulted
  CHECK(tg::print_trace(a) == tg::print_trace(b));
}

TEST_CASE("Thunder's spellings: variadic shapes, other ids, opaque literals, unreadable decompositions") {
  // torch.reshape(a, *shape): integers past the last list parameter are that list.
  auto variadic = test::trace("t", tensor("x", "[4, 6]"), op("torch.reshape", "[\"x\", 2, 12]", tensor("y", "[2, 12]")), "\"y\"");
  tg::Trace v = tg::read_trace(variadic);
  CHECK(v.ops[0].args[1].int_list() == std::vector<int64_t>{2, 12});
  CHECK(where_of(test::trace("t", tensor("x", "[4, 6]"), op("torch.reshape", "[\"x\", 2, 1.5]", tensor("y", "[2, 12]")), "\"y\"")) ==
        "/ops/0/args/2 | torch.reshape takes 2 positional arguments but 3 were given");
  // nn.LayerNorm records torch.layer_norm: the layer_norm row, with its own gradient rule.
  REQUIRE(tg::find_op("torch.layer_norm"));
  CHECK(tg::find_op("torch.layer_norm") == tg::find_op("torch.nn.functional.layer_norm"));
  // A symbol lowered through its decomposition may take a slice or Ellipsis; a row refuses them.
  auto getitem = test::trace("t", tensor("x", "[4, 6]"),
                             op("torch.Tensor.__getitem__", "[\"x\", [{\"ellipsis\": \"...\"}, {\"slice\": [null, 3, null]}]]", tensor("y", "[4, 3]"),
                                ", \"sub\": [" + op("prims.slice_prim", "[\"x\", [0, 0], [4, 3]]", tensor("y", "[4, 3]")) + "]"),
                             "\"y\"");
  tg::Trace g = tg::read_trace(getitem);
  CHECK(tg::print_trace(g).find("[..., slice(None, 3, None)]") != std::string::npos);
  CHECK(where_of(test::trace("t", tensor("x", "[4, 6]"), op("prims.reshape", "[\"x\", {\"ellipsis\": \"...\"}]", tensor("y", "[4, 6]")), "\"y\"")) ==
        "/ops/0/args/1 | argument \"shape\" must be a list of integers, got ...");
  // A ruled op whose decomposition holds a prim without a row: the decomposition is not read.
  auto unknown_inside = test::trace("t", tensor("x", "[4, 6]"),
                                    op("torch.relu", "[\"x\"]", tensor("y", "[4, 6]"),
                                       ", \"sub\": [" + op("prims.not_a_prim", "[\"x\"]", tensor("y", "[4, 6]")) + "]"),
                                    "\"y\"");
  CHECK(tg::read_trace(unknown_inside).ops[0].sub.empty());
  // ...but a symbol without a rule needs a decomposition it can read.
  auto unruled = test::trace("t", tensor("x", "[4, 6]"),
                             op("torch.my_op", "[\"x\"]", tensor("y", "[4, 6]"),
                                ", \"sub\": [" + op("prims.not_a_prim", "[\"x\"]", tensor("y", "[4, 6]")) + "]"),
                             "\"y\"");
  CHECK(where_of(unruled).find("/ops/0/sub/0/op | unknown op \"prims.not_a_prim\"") == 0);
}

TEST_CASE("an argument given twice, an unknown keyword and a missing argument are errors at their place") {
  auto twice = test::trace("t", tensor("x", "[4]"), op("prims.exp", "[\"x\"]", tensor("y", "[4]"), ", \"kwargs\": {\"a\": \"x\"}"), "\"y\"");
  CHECK(where_of(twice).rfind("/ops/0/kwargs/a | argument \"a\" is given twice", 0) == 0);
  auto unknown = test::trace("t", tensor("x", "[4]"), op("prims.exp", "[\"x\"]", tensor("y", "[4]"), ", \"kwargs\": {\"b\": 1}"), "\"y\"");
  CHECK(where_of(unknown).rfind("/ops/0/kwargs/b | prims.exp has no parameter \"b\"", 0) == 0);
  auto missing = test::trace("t", tensor("x", "[4]"), op("prims.sum", "[\"x\"]", tensor("y", "[]")), "\"y\"");
  CHECK(where_of(missing).rfind("/ops/0 | prims.sum is missing its argument \"dims\"", 0) == 0);
}

TEST_CASE("shape rules are checked against declared outputs") {
  auto wrong = test::trace("t", tensor("x", "[4, 6]"), op("prims.sum", "[\"x\", [1]]", tensor("y", "[6]")), "\"y\"");
  CHECK(where_of(wrong) == "/ops/0/out/0 | prims.sum gives f32[4], but \"y\" is declared f32[6]");
  auto mismatch = test::trace("t", tensor("x", "[4, 6]") + "," + tensor("z", "[6]"), op("prims.add", "[\"x\", \"z\"]", tensor("y", "[4, 6]")), "\"y\"");
  CHECK(where_of(mismatch).rfind("/ops/0/args/1 | prims.add: shape [6] does not match [4, 6]", 0) == 0);
}

TEST_CASE("a decomposition defines its op's outputs; its private names stay private") {
  auto sub = test::trace("t", tensor("x", "[3]"),
                         "{\"op\": \"torch.mystery\", \"args\": [\"x\"], \"out\": [" + tensor("y", "[3]") + "], \"sub\": [" +
                             op("prims.exp", "[\"x\"]", tensor("e", "[3]")) + "," + op("prims.neg", "[\"e\"]", tensor("y", "[3]")) + "]}," +
                             op("prims.add", "[\"y\", \"e\"]", tensor("z", "[3]")),
                         "\"z\"");
  CHECK(where_of(sub) == "/ops/1/args/1 | value \"e\" exists only inside the decomposition at /ops/0");
}

TEST_CASE("typed literals and scalars are read") {
  auto t = tg::read_trace(test::trace("t", tensor("x", "[2]") + ", {\"name\": \"s\", \"scalar\": \"f64\"}",
                                      op("prims.maximum", "[\"x\", {\"float\": \"-inf\"}]", tensor("m", "[2]")) + "," +
                                          op("prims.mul", "[\"m\", \"s\"]", tensor("y", "[2]")) + "," +
                                          op("prims.full", "[[2], 1.5]", tensor("f", "[2]", "bf16"),
                                             ", \"kwargs\": {\"device\": {\"device\": \"cuda:0\"}, \"dtype\": {\"dtype\": \"bf16\"}}"),
                                      "\"y\", \"f\""));
  CHECK(std::isinf(t.ops[0].args[1].real));
  CHECK(t.value(t.inputs[1]).is_scalar);
  std::string listing = tg::print_trace(t);
  CHECK(listing.find("m = prims.maximum(x, -float('inf'))  # m: f32[2]") != std::string::npos);
  CHECK(listing.find("f = prims.full([2], 1.5, device=devices.Device('cuda:0'), dtype=dtypes.bf16)  # f: bf16[2]") != std::string::npos);
}

TEST_CASE("keyword arguments of a symbol without a row print in the file's order") {
  // (A reader that keeps objects as sorted maps would print alpha before zeta.)
  auto t = tg::read_trace(test::trace("t", tensor("x", "[2]"),
                                      op("torch.frobnicate", "[\"x\"]", tensor("y", "[2]"),
                                         ", \"kwargs\": {\"zeta\": 1, \"alpha\": 2}, \"sub\": [" + op("prims.exp", "[\"x\"]", tensor("y", "[2]")) + "]"),
                                      "\"y\""));
  CHECK(tg::print_trace(t).find("y = torch.frobnicate(x, zeta=1, alpha=2)") != std::string::npos);
}

TEST_CASE("custom-gradient ops parse and check their bodies against the op") {
  std::string fwd = "\"fwd\": {\"inputs\": [" + tensor("a", "[2, 2]") + "], \"ops\": [" + op("prims.sin", "[\"a\"]", tensor("s", "[2, 2]")) +
                    "], \"outputs\": [\"s\"], \"saved\": [\"a\"]}";
  std::string bwd = "\"bwd\": {\"inputs\": [" + tensor("g", "[2, 2]") + "," + tensor("a", "[2, 2]") + "], \"ops\": [" +
                    op("prims.cos", "[\"a\"]", tensor("c", "[2, 2]")) + "," + op("prims.mul", "[\"g\", \"c\"]", tensor("ga", "[2, 2]")) +
                    "], \"outputs\": [\"ga\"]}";
  auto ok = test::trace("t", tensor("x", "[2, 2]"),
                        "{\"op\": \"torch.ops.higher_order.autograd_function_apply\", \"args\": [\"x\"], \"out\": [" + tensor("t6", "[2, 2]") + "], " + fwd +
                            ", " + bwd + "}",
                        "\"t6\"");
  tg::Trace t = tg::read_trace(ok);
  REQUIRE(t.ops[0].custom);
  CHECK(t.ops[0].custom->fwd.saved.size() == 1);
  CHECK(t.ops[0].custom->bwd.outputs.size() == 1);
  std::string bad_bwd = "\"bwd\": {\"inputs\": [" + tensor("g", "[2, 2]") + "], \"ops\": [], \"outputs\": [\"g\"]}";
  auto bad = test::trace("t", tensor("x", "[2, 2]"),
                         "{\"op\": \"torch.ops.higher_order.autograd_function_apply\", \"args\": [\"x\"], \"out\": [" + tensor("t6", "[2, 2]") + "], " + fwd +
                             ", " + bad_bwd + "}",
                         "\"t6\"");
  CHECK(where_of(bad).rfind("/ops/0/bwd/inputs | expected 2 inputs", 0) == 0);
}

TEST_CASE("syntax errors name line and column") {
  CHECK(where_of("{\n  \"format\": \"thunder-gen-trace\",\n  \"version\": 1,,\n}").rfind("3:16 | invalid JSON", 0) == 0);
}

TEST_CASE("every op-table row has a rule, and ids are unique") {
  std::set<std::string_view> ids;
  for (const tg::OpInfo& info : tg::op_table()) {
    CHECK(ids.insert(info.id).second);
    CHECK(bool(info.rule) == (info.kind != tg::OpKind::fused_kernel));
    if (!info.made_by_fusion()) {
      CHECK(tg::find_op(info.id) == &info);
    }
    if (info.fusion == tg::FusionClass::elementwise && info.kind != tg::OpKind::convert_element_type) CHECK(!info.code.empty());
  }
}

TEST_CASE("edge shapes: 0-d reductions are refused, iota(0) is [0], huge strides do not overflow") {
  auto zero_d = test::trace("t", tensor("x", "[]"), op("prims.amax", "[\"x\", [0]]", tensor("y", "[]")), "\"y\"");
  CHECK(where_of(zero_d) == "/ops/0/args/1 | prims.amax: dim 0 is out of range for rank 0");
  auto iota0 = test::trace("t", "",
                           op("prims.iota", "[0]", tensor("y", "[0]", "i64"),
                              ", \"kwargs\": {\"start\": 0, \"step\": 1, \"device\": {\"device\": \"cuda:0\"}, \"dtype\": {\"dtype\": \"i64\"}}"),
                           "\"y\"");
  CHECK(where_of(iota0) == "accepted");
  auto stride = test::trace("t", tensor("x", "[4]"), op("prims.slice_prim", "[\"x\", [0], [4], [9223372036854775807]]", tensor("y", "[1]")), "\"y\"");
  CHECK(where_of(stride) == "accepted");
  auto pad = test::trace("t", tensor("x", "[2]"), op("prims.pad", "[\"x\", 0.0, [[9223372036854775807, 9223372036854775807, 0]]]", tensor("y", "[0]")), "\"y\"");
  CHECK(where_of(pad) == "/ops/0/args/2 | prims.pad: padding of dimension 0 overflows 64 bits");
}

TEST_CASE("a duplicate key is an error at its place") {
  std::string doc = "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"t\", \"inputs\": [" + tensor("x", "[2]") +
                    "], \"ops\": [{\"op\": \"prims.exp\", \"args\": [\"x\"], \"args\": [\"x\"], \"out\": [" + tensor("y", "[2]") +
                    "]}], \"outputs\": [\"y\"]}";
  CHECK(where_of(doc) == "/ops/0/args | duplicate key \"args\"");
}

TEST_CASE("a duplicate key is reported before an error the reader finds earlier in the document") {
  // The duplicate-key walk runs beside the reader; its error still comes first, as though it
  // had run before it.
  std::string doc = "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"t\", \"inputs\": [" + tensor("x", "[2]") +
                    "], \"ops\": [{\"op\": \"prims.exp\", \"args\": [\"nowhere\"], \"out\": [" + tensor("y", "[2]") +
                    "]}], \"outputs\": [\"y\"], \"outputs\": [\"y\"]}";
  CHECK(where_of(doc) == "/outputs | duplicate key \"outputs\"");
  std::string no_duplicate = doc.substr(0, doc.rfind(", \"outputs\"")) + "}";
  CHECK(where_of(no_duplicate) == "/ops/0/args/0 | undefined value \"nowhere\"");
}
