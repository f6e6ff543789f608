// The joint autograd pass: structure (numbers are checked against LibTorch in tests/reference).
#include <catch2/catch.hpp>

#include "autograd/autograd.h"
#include "frontend/reader.h"
#include "ops/printer.h"
#include "ops/verify.h"
#include "trace_builder.h"

using test::op;
using test::tensor;

namespace {

std::string grad_input(const std::string& name, const std::string& shape, bool requires_grad) {
  return "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"f32\", \"requires_grad\": " + (requires_grad ? "true" : "false") + "}";
}

tg::Trace joint_of(const std::string& json) {
  tg::Trace joint = tg::autograd(tg::read_trace(json)).trace;
  tg::verify_pass(joint, "autograd");
  return joint;
}

size_t count_ops(const tg::Trace& t, std::string_view symbol) {
  size_t n = 0;
  for (const tg::Op& o : t.ops) n += o.symbol == symbol;
  return n;
}

}  // namespace

TEST_CASE("a value used twice gets the sum of both cotangents") {
  tg::Trace j = joint_of(test::trace("t", grad_input("x", "[4]", true), op("prims.mul", "[\"x\", \"x\"]", tensor("y", "[4]")), "\"y\""));
  INFO(tg::print_trace(j));
  REQUIRE(j.inputs.size() == 2);
  CHECK(j.value(j.inputs[1]).name == "cotangent_y");
  REQUIRE(j.outputs.size() == 2);
  CHECK(count_ops(j, "prims.mul") == 3);  // forward x*x, then g*x twice
  CHECK(count_ops(j, "prims.add") == 1);  // summed
}

TEST_CASE("inputs that do not require grad get no gradient work; unreached ones get zeros") {
  std::string inputs = grad_input("x", "[4]", true) + "," + grad_input("w", "[4]", false) + "," + grad_input("unused", "[4]", true);
  tg::Trace j = joint_of(test::trace("t", inputs, op("prims.mul", "[\"x\", \"w\"]", tensor("y", "[4]")), "\"y\""));
  INFO(tg::print_trace(j));
  REQUIRE(j.outputs.size() == 3);  // y, grad x, grad unused
  CHECK(count_ops(j, "prims.mul") == 2);  // forward, and g*w for x only
  const tg::Op& last = j.ops.back();
  CHECK(last.symbol == "prims.full");
  CHECK(last.outs[0] == j.outputs[2]);
}

TEST_CASE("non-differentiable ops stop gradients, and an output listed twice sums its cotangents") {
  std::string ops = op("prims.floor", "[\"x\"]", tensor("f", "[4]")) + "," + op("prims.add", "[\"x\", \"f\"]", tensor("y", "[4]"));
  tg::Trace j = joint_of(test::trace("t", grad_input("x", "[4]", true), ops, "\"y\", \"y\""));
  INFO(tg::print_trace(j));
  REQUIRE(j.inputs.size() == 3);     // x and two cotangents
  CHECK(count_ops(j, "prims.add") == 2);  // forward add, and the two cotangents of y summed
  CHECK(j.outputs.back() != j.inputs[0]);
}
