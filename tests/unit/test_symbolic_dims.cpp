// The sizes of a symbolic trace's values as expressions (tg::Dim, docs/symbolic-shapes.md): the
// trace read at two sizes and carried through decomposition, autograd and the partition, every
// value's dims compared pair by pair. A dim whose size differs between the two depends on the
// symbols and must have an expression; every expression must give its dim's size at its trace's
// sizes, and be the same expression at both.
#include <catch2/catch.hpp>

#include "autograd/autograd.h"
#include "autograd/partition.h"
#include "frontend/pt2_program.h"
#include "frontend/reader.h"
#include "lower/decompose.h"
#include "lower/rng.h"
#include "support/diagnostics.h"

namespace {

struct DimCount {
  int symbolic = 0, with_expression = 0;
  std::vector<std::string> lost;  // "value dim k" without an expression
};

void compare(const tg::Trace& a, const tg::SymbolValues& at_a, const tg::Trace& b, const tg::SymbolValues& at_b, DimCount& count) {
  REQUIRE(a.values.size() == b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const tg::Value& va = a.values[i];
    const tg::Value& vb = b.values[i];
    REQUIRE(va.name == vb.name);
    REQUIRE(va.shape.size() == vb.shape.size());
    for (size_t d = 0; d < va.shape.size(); ++d) {
      const tg::Dim& x = va.shape[d];
      const tg::Dim& y = vb.shape[d];
      const std::string where = va.name + " dim " + std::to_string(d);
      if (x.expr()) {
        INFO(where << ": " << x.expr()->text());
        CHECK(x.expr()->evaluate(at_a) == int64_t(x));
        REQUIRE(y.expr());
        CHECK(*x.expr() == *y.expr());
        CHECK(y.expr()->evaluate(at_b) == int64_t(y));
      }
      if (int64_t(x) == int64_t(y)) continue;
      ++count.symbolic;
      if (x.expr()) ++count.with_expression;
      else count.lost.push_back(where);
    }
  }
}

tg::Partition trained(const std::string& file, const tg::SymbolValues& at) {
  tg::Trace t = file.ends_with(".pt2") ? tg::read_pt2_file(file, at) : tg::read_trace_file(file, at);
  return tg::partition(tg::autograd(tg::decompose(tg::bind_rng(std::move(t)), true)), {});
}

// The count over a trace's forward and backward at p and q.
DimCount dims_of(const std::string& file, const tg::SymbolValues& p, const tg::SymbolValues& q) {
  const tg::Partition a = trained(file, p), b = trained(file, q);
  DimCount count;
  compare(a.forward, p, b.forward, q, count);
  compare(a.backward, p, b.backward, q, count);
  for (const std::string& l : count.lost) UNSCOPED_INFO(file << ": " << l);
  return count;
}

}  // namespace

TEST_CASE("symbolic dims: every size that depends on the symbols keeps its expression through autograd and the partition") {
  const std::string examples = TG_EXAMPLES_DIR, pt2 = std::string(TG_SOURCE_DIR) + "/tests/pt2/torch-2.9/dynamic/";
  const struct {
    std::string file;
    tg::SymbolValues p, q;
    int at_least;  // sizes that depend on the symbols (so the test compares something)
  } cases[] = {
      {examples + "/symbolic/symbolic_block.json", {{"B", 3}, {"T", 7}}, {{"B", 5}, {"T", 17}}, 300},
      {std::string(TG_SOURCE_DIR) + "/tests/api/sizes_probe.json", {{"B", 3}, {"E", 4}, {"T", 5}, {"U", 2}}, {{"B", 4}, {"E", 8}, {"T", 7}, {"U", 3}}, 20},
      {pt2 + "mlp_dynamic.pt2", {{"batch", 3}, {"seq", 3}}, {{"batch", 5}, {"seq", 17}}, 10},
      {pt2 + "attention_dynamic.pt2", {{"batch", 1}, {"seq", 3}}, {{"batch", 4}, {"seq", 17}}, 50},
      {pt2 + "attention_bf16_dynamic.pt2", {{"batch", 1}, {"seq", 3}}, {{"batch", 4}, {"seq", 17}}, 50},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    const DimCount count = dims_of(c.file, c.p, c.q);
    INFO("without an expression: " << count.lost.size() << " of " << count.symbolic);
    CHECK(count.symbolic >= c.at_least);
    CHECK(count.lost.empty());
  }
}

TEST_CASE("symbolic dims: an output declared as an expression its rule does not give at every size is refused, naming both") {
  const std::string trace = R"({"format": "thunder-gen-trace", "version": 1, "name": "t", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 8}},
    "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32"}],
    "ops": [{"op": "torch.sum", "args": ["x", 1], "out": [{"name": "y", "shape": ["T"], "dtype": "f32"}]}],
    "outputs": ["y"]})";
  // At B = T the sizes agree, so only the expressions can tell.
  try {
    tg::read_trace(trace, {{"B", 3}, {"T", 3}});
    FAIL("accepted");
  } catch (const tg::UserError& e) {
    CHECK(e.where == "/ops/0/out/0");
    CHECK(std::string(e.what()).find("gives dim 0 of \"y\" as B, declared T") != std::string::npos);
    CHECK(std::string(e.what()).find("not at B=8,T=1 (8 and 1)") != std::string::npos);
  }
  // The same trace declaring B reads, and y's dim keeps its expression.
  std::string good = trace;
  good.replace(good.find(R"("shape": ["T"])"), 14, R"("shape": ["B"])");
  const tg::Trace t = tg::read_trace(good, {{"B", 3}, {"T", 3}});
  REQUIRE(t.value(t.outputs[0]).shape[0].expr());
  CHECK(t.value(t.outputs[0]).shape[0].expr()->text() == "B");
}

TEST_CASE("symbolic dims: the plan weighs bytes and recomputation at --plan-at's sizes; the saved bytes stay the trace's") {
  const std::string file = std::string(TG_EXAMPLES_DIR) + "/symbolic/symbolic_block.json";
  auto planned_at = [&](const tg::SymbolValues& at) {
    tg::RematOptions options;
    options.plan_at = at;
    return tg::partition(tg::autograd(tg::decompose(tg::bind_rng(tg::read_trace_file(file, {{"B", 3}, {"T", 7}})), true)), options);
  };
  const tg::Partition small = planned_at({{"B", 1}, {"T", 1}}), large = planned_at({{"B", 8}, {"T", 40}}), here = planned_at({});
  CHECK(large.plan_cost_bits > 100 * small.plan_cost_bits / 10);  // B*T is 320 times larger; the weights' share is not
  CHECK(here.plan_cost_bits < large.plan_cost_bits);
  CHECK(small.activation_bytes == here.activation_bytes);  // bytes of the folder, at B=3, T=7
  CHECK(large.activation_bytes == here.activation_bytes);
  CHECK(large.plan_at == tg::SymbolValues{{"B", 8}, {"T", 40}});
  CHECK(tg::numel_at(large.forward.value(large.forward.inputs[0]).shape, {{"B", 8}, {"T", 40}}) == 8 * 40 * 64);
}

TEST_CASE("symbolic dims: a size computed from an integer that may stand for a symbol gets no expression, never a wrong one") {
  // x[:, 6:] at T = 7 written with a plain 6, as a PT2 translation may (its integers are sizes
  // alone): the slice is 1 long here, T - 6 nowhere but by accident.
  const std::string trace = R"({"format": "thunder-gen-trace", "version": 1, "name": "t", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 7, "max": 40}},
    "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32"}],
    "ops": [{"op": "prims.slice_prim", "args": ["x", [0, 6], [{"size": "B"}, {"size": "T"}]], "out": [{"name": "y", "shape": ["B", 1], "dtype": "f32"}]},
            {"op": "prims.slice_prim", "args": ["x", [0, {"size": "T - 1"}], [{"size": "B"}, {"size": "T"}]], "out": [{"name": "z", "shape": ["B", 1], "dtype": "f32"}]}],
    "outputs": ["y", "z"]})";
  const tg::Trace t = tg::read_trace(trace, {{"B", 3}, {"T", 7}}, tg::PlainIntegers::sizes_alone);
  const tg::Shape& y = t.value(t.outputs[0]).shape;
  const tg::Shape& z = t.value(t.outputs[1]).shape;
  REQUIRE(y[0].expr());
  CHECK(y[0].expr()->text() == "B");
  CHECK(!y[1].expr());  // not T - 6
  REQUIRE(z[1].expr());
  CHECK(z[1].expr()->text() == "1");  // both bounds known: T - (T - 1)
  // A JSON trace's integers are the same at every size: then the slice is T - 6 long, and a
  // declared 1 is refused, naming both.
  try {
    tg::read_trace(trace, {{"B", 3}, {"T", 7}});
    FAIL("accepted");
  } catch (const tg::UserError& e) {
    CHECK(e.where == "/ops/0/out/0");
    CHECK(std::string(e.what()).find("gives dim 1 of \"y\" as T - 6, declared 1") != std::string::npos);
  }
}
