// GEMM epilogues: which bias adds and GELUs fold into the matmul before them, and which must not.
#include <catch2/catch.hpp>

#include <sstream>

#include "driver/pipeline.h"
#include "frontend/reader.h"
#include "lower/decompose.h"
#include "ops/op_table.h"
#include "ops/verify.h"
#include "schedule/gemm_epilogue.h"
#include "trace_builder.h"

using test::op;
using test::tensor;

namespace {

tg::Trace folded(const std::string& json) {
  tg::Trace t = tg::fold_gemm_epilogues(tg::decompose(tg::read_trace(json)));
  tg::verify_pass(t, "epilogue");
  return t;
}

// x [16, 32] @ w [32, 8] + bias [8], the add's operands in either order.
std::string bias_trace(const std::string& dtype, bool bias_first, const std::string& outputs = "\"y\"") {
  std::string ops = op("prims.matmul", "[\"x\", \"w\"]", tensor("c", "[16, 8]", dtype)) + "," +
                    op("prims.broadcast_in_dim", "[\"b\", [16, 8], [1]]", tensor("bb", "[16, 8]", dtype)) + "," +
                    op("prims.add", bias_first ? "[\"bb\", \"c\"]" : "[\"c\", \"bb\"]", tensor("y", "[16, 8]", dtype));
  return test::trace("bias", tensor("x", "[16, 32]", dtype) + "," + tensor("w", "[32, 8]", dtype) + "," + tensor("b", "[8]", dtype), ops,
                     outputs);
}

// torch.nn.functional.gelu(linear(x, w, b), approximate=mode), torch-level calls lowered by
// thunder-gen; `features` outputs; with requires_grad, x, w and b all require grad.
std::string linear_gelu_trace(const std::string& mode, bool requires_grad = false, int features = 8) {
  const std::string f = std::to_string(features);
  std::string x = requires_grad ? "{\"name\": \"x\", \"shape\": [16, 32], \"dtype\": \"f32\", \"requires_grad\": true}" : tensor("x", "[16, 32]");
  std::string ops = op("torch.nn.functional.linear", "[\"x\", \"w\", \"b\"]", tensor("h", "[16, " + f + "]")) + "," +
                    op("torch.nn.functional.gelu", "[\"h\"]", tensor("y", "[16, " + f + "]"),
                       ",\"kwargs\": {\"approximate\": {\"str\": \"" + mode + "\"}}");
  auto parameter = [&](const std::string& name, const std::string& shape) {
    return requires_grad ? "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"f32\", \"requires_grad\": true}" : tensor(name, shape);
  };
  return test::trace("mlp", x + "," + parameter("w", "[" + f + ", 32]") + "," + parameter("b", "[" + f + "]"), ops, "\"y\"");
}

// The forward and the backward of a trace, fused, as --emit fused lists them.
std::string fused_listing(const std::string& json) {
  tg::PipelineOptions options;
  options.stop_after = tg::Pass::fuse;
  std::ostringstream log;
  return tg::run_pipeline(tg::read_trace(json), options, log).stopped_text;
}

const tg::Op* only_matmul(const tg::Trace& t) {
  const tg::Op* found = nullptr;
  for (const tg::Op& o : t.ops)
    if (o.info->kind == tg::OpKind::matmul) {
      REQUIRE(found == nullptr);
      found = &o;
    }
  REQUIRE(found != nullptr);
  return found;
}

}  // namespace

TEST_CASE("a bias add after a matmul folds into it, whichever side the bias is on") {
  for (bool bias_first : {false, true}) {
    tg::Trace t = folded(bias_trace("bf16", bias_first));
    REQUIRE(t.ops.size() == 1);
    const tg::Op& m = t.ops[0];
    CHECK(m.arg(2).is_value());
    CHECK(t.value(m.arg(2).value).name == "b");
    CHECK(m.arg(3).text == "none");
    CHECK(t.value(m.outs[0]).name == "y");
  }
}

TEST_CASE("a bias add does not fold when the product is also read elsewhere, or in f64") {
  CHECK(folded(bias_trace("f32", false, "\"y\", \"c\"")).ops.size() == 3);
  CHECK(folded(bias_trace("f64", false)).ops.size() == 3);
}

TEST_CASE("linear then tanh GELU becomes one matmul with the bias and GELU epilogue") {
  tg::Trace t = folded(linear_gelu_trace("tanh"));
  const tg::Op* m = only_matmul(t);
  CHECK(m->arg(2).is_value());
  CHECK(m->arg(3).text == "gelu_tanh");
  CHECK(t.value(m->outs[0]).name == "y");
  for (const tg::Op& o : t.ops) CHECK(o.info->fusion != tg::FusionClass::elementwise);  // no GELU prims left
}

TEST_CASE("the exact (erf) GELU is not cuBLASLt's, so only the bias folds") {
  tg::Trace t = folded(linear_gelu_trace("none"));
  const tg::Op* m = only_matmul(t);
  CHECK(m->arg(2).is_value());
  CHECK(m->arg(3).text == "none");
}

TEST_CASE("in training the GELU input is saved for its gradient: the matmul writes it beside the GELU's result") {
  const std::string listing = fused_listing(linear_gelu_trace("tanh", true));
  const size_t backward = listing.find("# backward");
  REQUIRE(backward != std::string::npos);
  const std::string forward = listing.substr(0, backward);
  CHECK(forward.find("= prims.matmul(x, w, bias=b, epilogue='gelu_tanh_aux', transpose_b=True)") != std::string::npos);
  CHECK(forward.find("prims.tanh") == std::string::npos);  // no GELU kernel left
  // The weight gradient g^T x and the bias gradient sum(g, [0]) are one GEMM in the backward.
  CHECK(listing.find("epilogue='bias_grad', transpose_a=True)", backward) != std::string::npos);
  CHECK(listing.find("prims.sum", backward) == std::string::npos);
}

TEST_CASE("cuBLASLt keeps the GELU's input only in a leading dimension that is a multiple of 8") {
  const std::string listing = fused_listing(linear_gelu_trace("tanh", true, 12));
  CHECK(listing.find("gelu_tanh") == std::string::npos);
  CHECK(listing.find("prims.matmul(x, w, bias=b, transpose_b=True)") != std::string::npos);
}

// g [16, 8], x [16, 32]: gw = g^T x (a linear layer's weight gradient) and gb = sum(g, [0]), the
// sum before or after the matmul; `read_early` adds a reader of gb before the matmul.
std::string weight_and_bias_grad_trace(bool sum_first, bool read_early = false, bool transposed = true) {
  std::string gt = transposed ? op("prims.transpose", "[\"g\", [1, 0]]", tensor("gt", "[8, 16]"))
                              : op("prims.mul", "[\"h\", 2.0]", tensor("gt", "[8, 16]"));
  std::string matmul = op("prims.matmul", "[\"gt\", \"x\"]", tensor("gw", "[8, 32]"));
  std::string sum = op("prims.sum", "[\"g\", [0]]", tensor("gb", "[8]"));
  if (read_early) sum += "," + op("prims.mul", "[\"gb\", 3.0]", tensor("gb3", "[8]"));
  std::string ops = sum_first ? sum + "," + gt + "," + matmul : gt + "," + matmul + "," + sum;
  std::string inputs = tensor("g", "[16, 8]") + "," + tensor("x", "[16, 32]") + "," + tensor("h", "[8, 16]");
  return test::trace("linear_backward", inputs, ops, read_early ? "\"gw\", \"gb\", \"gb3\"" : "\"gw\", \"gb\"");
}

TEST_CASE("a weight gradient's GEMM also writes the bias gradient when the sum's readers all come after it") {
  for (bool sum_first : {false, true}) {
    tg::Trace t = folded(weight_and_bias_grad_trace(sum_first));
    REQUIRE(t.ops.size() == 1);
    const tg::Op& m = t.ops[0];
    CHECK(m.arg(3).text == "bias_grad");
    CHECK(m.arg(4).boolean);
    CHECK(t.value(m.arg(0).value).name == "g");
    REQUIRE(m.outs.size() == 2);
    CHECK(t.value(m.outs[1]).name == "gb");
  }
  // gb read before the matmul: the sum stays.
  tg::Trace early = folded(weight_and_bias_grad_trace(true, true));
  CHECK(only_matmul(early)->arg(3).text == "none");
  CHECK(early.ops.size() == 3);
  // The matmul's a is not g read transposed: nothing to share.
  tg::Trace other = folded(weight_and_bias_grad_trace(false, false, false));
  CHECK(only_matmul(other)->arg(3).text == "none");
  CHECK(other.ops.size() == 3);
  // The emitted call names the bias gradient's buffer last.
  tg::PipelineOptions options;
  options.stop_after = tg::Pass::emit;
  std::ostringstream log;
  const std::string cuda = test::one_line(tg::run_pipeline(tg::read_trace(weight_and_bias_grad_trace(false)), options, log).stopped_text);
  const size_t call = cuda.find("tg::matmul(g, x, gw, tg::GemmShape{1, 8, 32, 16, false, true, false}, stream, ");
  REQUIRE(call != std::string::npos);
  CHECK(cuda.substr(call, cuda.find(";", call) - call).find(", nullptr, tg::Epilogue::bias_grad, gb))") != std::string::npos);
}

// x [16, 32] @ transpose(w [8, 32]) and, when `shared`, the transpose also an output.
std::string transposed_weight_trace(bool shared) {
  std::string ops = op("prims.transpose", "[\"w\", [1, 0]]", tensor("wt", "[32, 8]")) + "," +
                    op("prims.matmul", "[\"x\", \"wt\"]", tensor("y", "[16, 8]"));
  return test::trace("linear", tensor("x", "[16, 32]") + "," + tensor("w", "[8, 32]"), ops, shared ? "\"y\", \"wt\"" : "\"y\"");
}

TEST_CASE("a 2-D transpose feeding a matmul becomes cuBLASLt's transpose flag; it stays only for other readers") {
  tg::Trace t = folded(transposed_weight_trace(false));
  REQUIRE(t.ops.size() == 1);
  const tg::Op& m = t.ops[0];
  CHECK(t.value(m.arg(1).value).name == "w");
  CHECK(m.arg(5).boolean);
  CHECK_FALSE(m.arg(4).boolean);
  tg::Trace kept = folded(transposed_weight_trace(true));
  CHECK(kept.ops.size() == 2);
  CHECK(only_matmul(kept)->arg(5).boolean);
}

TEST_CASE("a matmul that reads its operands transposed has no gradient rule: the fold comes after autograd") {
  std::string x = "{\"name\": \"x\", \"shape\": [16, 32], \"dtype\": \"f32\", \"requires_grad\": true}";
  std::string ops = op("prims.matmul", "[\"x\", \"w\"]", tensor("y", "[16, 8]"), ",\"kwargs\": {\"transpose_b\": true}");
  std::ostringstream log;
  CHECK_THROWS_WITH(tg::run_pipeline(tg::read_trace(test::trace("t", x + "," + tensor("w", "[8, 32]"), ops, "\"y\"")), {}, log),
                    Catch::Contains("transpose_a or transpose_b has no gradient rule"));
}

TEST_CASE("a transposed weight folds under a batched activation too: the batches join the GEMM's m") {
  // x [2, 16, 32] @ w^T: a linear layer on [batch, sequence, features], as real models call it.
  std::string ops = op("prims.transpose", "[\"w\", [1, 0]]", tensor("wt", "[32, 8]")) + "," +
                    op("prims.matmul", "[\"x\", \"wt\"]", tensor("y", "[2, 16, 8]"));
  std::string json = test::trace("linear", tensor("x", "[2, 16, 32]") + "," + tensor("w", "[8, 32]"), ops, "\"y\"");
  tg::Trace t = folded(json);
  REQUIRE(t.ops.size() == 1);
  CHECK(t.value(t.ops[0].arg(1).value).name == "w");
  CHECK(t.ops[0].arg(5).boolean);
  tg::PipelineOptions options;
  options.stop_after = tg::Pass::emit;
  std::ostringstream log;
  const std::string cuda = tg::run_pipeline(tg::read_trace(json), options, log).stopped_text;
  CHECK(cuda.find("tg::GemmShape{1, 32, 8, 32, false, false, true}") != std::string::npos);
  CHECK(cuda.find("prims.transpose") == std::string::npos);
}
