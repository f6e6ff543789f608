// The listing reader's API (src/frontend/listing_reader.h): what it keeps of a listing that the passes after
// it need. Its diagnostics and the passes it feeds are tested as checked-in files
// (tests/passes/listing_errors.test and the rest).
#include <catch2/catch.hpp>

#include "frontend/listing_reader.h"
#include "support/diagnostics.h"

namespace {

const std::string kFused =
    "def t(x):\n"
    "  # x: f32[8, 32]\n"
    "  y = thunder_gen.kernel[t_pointwise_y](x)  # y: f32[8, 32]  (/ops/0)\n"
    "    # plan: pointwise block=256 lanes=4\n"
    "    # y = prims.exp(x)  # y: f32[8, 32]  (torch.exp at /ops/0)\n"
    "  return (y,)\n";

}  // namespace

TEST_CASE("a kernel's plan line is kept with its line, and the ops' provenance becomes their where and origin") {
  const tg::ListingTrace read = tg::read_listing(kFused, "k.txt", tg::Pass::fuse);
  REQUIRE(read.trace.ops.size() == 1);
  const tg::Op& kernel = read.trace.ops[0];
  REQUIRE(read.kernels.size() == 1);
  CHECK(read.kernels[0].op_index == 0);
  CHECK(read.kernels[0].line == 3);
  CHECK(read.kernels[0].plan_text == "pointwise block=256 lanes=4");
  CHECK(kernel.label == "t_pointwise_y");
  CHECK(kernel.where == "/ops/0");
  REQUIRE(kernel.sub.size() == 1);
  CHECK(kernel.sub[0].origin == "torch.exp");
  CHECK(kernel.sub[0].where == "/ops/0");
  CHECK_FALSE(read.joint);
}

TEST_CASE("a plan line anywhere but right under a kernel's line is refused at its line") {
  std::string late = kFused;
  const std::string plan = "    # plan: pointwise block=256 lanes=4\n";
  late.erase(late.find(plan), plan.size());
  late.insert(late.find("  return"), plan);
  try {
    tg::read_listing(late, "k.txt", tg::Pass::fuse);
    FAIL("read");
  } catch (const tg::UserError& e) {
    CHECK(e.file == "k.txt");
    CHECK(e.where == "5");
  }
}

TEST_CASE("a joint listing's cotangents and backward part are its JointMarks") {
  const std::string joint =
      "def t(x, cotangent_y):\n"
      "  # x: f32[8] requires_grad\n"
      "  # cotangent_y: f32[8] cotangent\n"
      "  y = prims.exp(x)  # y: f32[8]\n"
      "  # backward\n"
      "  grad_x = prims.mul(cotangent_y, y)  # grad_x: f32[8]\n"
      "  return (y, grad_x)\n";
  const tg::ListingTrace read = tg::read_listing(joint, "j.txt", tg::Pass::autograd);
  REQUIRE(read.joint);
  CHECK(read.joint->forward_inputs == 1);
  CHECK(read.joint->forward_ops == 1);
  REQUIRE(read.trace.inputs.size() == 2);
  CHECK(read.trace.value(read.trace.inputs[1]).name == "cotangent_y");
  CHECK(read.trace.value(read.trace.inputs[0]).requires_grad);
  // Autograd makes the cotangents after every forward value; read back, they are made there too.
  CHECK(read.trace.inputs[1] > read.trace.ops[0].outs[0]);
}
