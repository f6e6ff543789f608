// Every differentiable op's gradient rule, checked on its own in f64: the joint trace autograd
// builds, run by the reference interpreter, against LibTorch autograd through the same forward.
// The cases come from a switch over OpKind, so an op added to the table without a case here
// fails to compile (-Werror=switch).
#define CATCH_CONFIG_PREFIX_ALL  // LibTorch's glog defines CHECK too
#include <catch2/catch.hpp>
#include <torch/types.h>
#include <torch/csrc/autograd/autograd.h>

#include "autograd/autograd.h"
#include "autograd/partition.h"
#include "lower/decompose.h"
#include "schedule/fuse.h"

#include <set>
#include "frontend/reader.h"
#include "grad_cases.h"
#include "lower/rng.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "reference.h"
#include "support/diagnostics.h"

using test::Case;
using test::case_for;

namespace {

// The joint trace autograd builds from `forward`, run by the reference interpreter on `inputs` and
// drawn cotangents, against LibTorch autograd through the same forward: each gradient within
// (1e-9, 1e-12), infinities of the same sign and NaN where LibTorch's are.
void check_gradients(const tg::Trace& forward, std::vector<torch::Tensor> inputs) {
  tg::Trace joint = tg::autograd(forward).trace;
  CATCH_INFO(tg::print_trace(joint));
  std::vector<torch::Tensor> outs = tg::run_reference(forward, inputs), cotangents;
  for (const torch::Tensor& o : outs) cotangents.push_back(torch::randn_like(o));
  std::vector<torch::Tensor> with_grad;
  for (const torch::Tensor& t : inputs)
    if (t.requires_grad()) with_grad.push_back(t);
  std::vector<torch::Tensor> expected = torch::autograd::grad(outs, with_grad, cotangents, false, false, true);

  std::vector<torch::Tensor> joint_inputs;
  for (const torch::Tensor& t : inputs) joint_inputs.push_back(t.detach());
  for (const torch::Tensor& t : cotangents) joint_inputs.push_back(t);
  std::vector<torch::Tensor> results = tg::run_reference(joint, joint_inputs);
  CATCH_REQUIRE(results.size() == outs.size() + expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    torch::Tensor want = expected[i].defined() ? expected[i] : torch::zeros_like(with_grad[i]);
    torch::Tensor got = results[outs.size() + i];
    CATCH_INFO("gradient " << i << "\nexpected " << want << "\ngot " << got);
    CATCH_CHECK(torch::equal(got.isposinf(), want.isposinf()));
    CATCH_CHECK(torch::equal(got.isneginf(), want.isneginf()));
    CATCH_CHECK(torch::equal(got.isnan(), want.isnan()));
    CATCH_CHECK(torch::allclose(got.nan_to_num(0.0, 0.0, 0.0), want.nan_to_num(0.0, 0.0, 0.0), 1e-9, 1e-12));
  }
}

tg::Trace trace_of(const std::string& inputs, const std::string& ops, const std::string& outputs) {
  return tg::bind_rng(tg::read_trace("{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"g\", \"inputs\": [" + inputs +
                                     "], \"ops\": [" + ops + "], \"outputs\": [" + outputs + "]}"));
}

}  // namespace

CATCH_TEST_CASE("every differentiable op's gradient matches LibTorch autograd in f64") {
  torch::manual_seed(0);
  int checked = 0;
  for (const tg::OpInfo& info : tg::op_table()) {
    if (test::is_distributed(info)) continue;  // (see grad_cases.h)
    std::optional<Case> c = case_for(info);
    // A rule exactly where a case says there is a gradient (torch-level ops may instead be
    // differentiated through their lowering; a torch-level form of a prim has the prim's case, and a
    // gradient when the prim has one).
    const bool differentiable = info.grad || (info.has_lowering() && (!tg::is_torch_form(info) || tg::op_info(info.kind).grad));
    CATCH_CHECK(c.has_value() == (differentiable && !test::refuses_gradient(info)));
    if (!c) continue;
    ++checked;
    CATCH_INFO("op " << info.id);
    tg::Trace forward = trace_of(c->inputs, c->op, c->outputs);
    std::vector<torch::Tensor> inputs;
    for (tg::ValueId id : forward.inputs) {
      const tg::Value& v = forward.value(id);
      inputs.push_back(torch::rand(tg::sizes_of(v.shape), torch::kDouble).mul(c->hi - c->lo).add(c->lo).requires_grad_(v.requires_grad));
    }
    check_gradients(forward, inputs);
  }
  CATCH_CHECK(checked >= 45);
}

// d(a^b)/db is a^b * log(a), and ATen makes it 0 where a is 0 and b >= 0 (0 * log 0 would be NaN);
// a number base has no tensor to take the log of. d(a^b)/da is b * a^(b - 1), 0 where b is 0
// (0 * 0^-1 would be NaN).
CATCH_TEST_CASE("pow's gradients at a zero base and a zero exponent, and with a number base") {
  torch::manual_seed(0);
  const std::string e = test::f64("e", "[5]"), a = test::f64("a", "[5]");
  const std::string ops = test::call("torch.pow", "[2.0, \"e\"]", test::out("two_to_e", "[5]")) + ", " +
                          test::call("torch.pow", "[0.0, \"e\"]", test::out("zero_to_e", "[5]")) + ", " +
                          test::call("torch.pow", "[\"a\", \"e\"]", test::out("a_to_e", "[5]"));
  tg::Trace forward = trace_of(e + ", " + a, ops, "\"two_to_e\", \"zero_to_e\", \"a_to_e\"");
  const torch::Tensor exponents = torch::tensor({-1.0, 0.0, 0.5, 1.0, 2.0}, torch::kDouble).requires_grad_(true);
  const torch::Tensor bases = torch::tensor({0.0, 0.0, 0.0, 3.0, 0.5}, torch::kDouble).requires_grad_(true);
  check_gradients(forward, {exponents, bases});
}

// Custom autograd functions (examples/custom_functions.json): the user's backward is used exactly
// as written, checked against formulas computed here directly with LibTorch, both through the
// joint trace autograd builds and through the checker's reference (reference_gradients).
// A prim declared without a gradient rule (TG_NO_GRADIENT_RULE) is refused where a gradient
// would flow through it, naming the op; where none flows it is fine.
CATCH_TEST_CASE("differentiating through a prim without a gradient rule is refused at the op") {
  for (const tg::OpInfo& info : tg::op_table()) {
    if (!test::refuses_gradient(info) || tg::is_torch_form(info)) continue;
    CATCH_INFO("op " << info.id);
    auto trace = [&](bool grad) {
      return "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"g\", \"inputs\": [" + test::f64("x", "[3]", grad) +
             "], \"ops\": [" + test::call(info.id, "[\"x\"]", test::out("o", "[3]")) + "], \"outputs\": [\"o\"]}";
    };
    CATCH_CHECK_NOTHROW(tg::autograd(tg::read_trace(trace(false))));
    try {
      tg::autograd(tg::read_trace(trace(true)));
      CATCH_FAIL("no error");
    } catch (const tg::UserError& e) {
      CATCH_CHECK(e.where == "/ops/0");
      CATCH_CHECK(std::string(e.what()).find("has no gradient rule") != std::string::npos);
    }
  }
}

CATCH_TEST_CASE("custom functions use the user's backward, even a wrong one") {
  tg::Trace forward = tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/custom_functions.json");
  tg::JointTrace joint = tg::autograd(tg::decompose(forward, /*keep_custom=*/true));
  std::vector<torch::Tensor> inputs, cotangents;
  for (tg::ValueId id : forward.inputs) inputs.push_back(torch::rand(tg::sizes_of(forward.value(id).shape), torch::kFloat).mul(4).sub(2));
  for (tg::ValueId id : forward.outputs) cotangents.push_back(torch::randn(tg::sizes_of(forward.value(id).shape), torch::kFloat));
  const torch::Tensor &x = inputs[0], &y = inputs[1], &z = inputs[2], &w = inputs[3];
  std::vector<torch::Tensor> expected_outputs = {x.sin(), y.sin(), z, w.sin().exp()};
  std::vector<torch::Tensor> expected_grads = {cotangents[0] * x.cos(), cotangents[1] * y.cos() * 200, cotangents[2] * 2, cotangents[3] * 3};

  std::vector<torch::Tensor> joint_inputs = inputs;
  joint_inputs.insert(joint_inputs.end(), cotangents.begin(), cotangents.end());
  std::vector<torch::Tensor> results = tg::run_reference(joint.trace, joint_inputs);
  tg::ReferenceGradients reference = tg::reference_gradients(forward, inputs, cotangents);
  CATCH_REQUIRE(results.size() == 8);
  for (size_t i = 0; i < 4; ++i) {
    CATCH_INFO("input " << i);
    CATCH_CHECK(torch::allclose(results[i], expected_outputs[i], 1e-5, 1e-6));
    CATCH_CHECK(torch::allclose(results[4 + i], expected_grads[i], 1e-5, 1e-6));
    CATCH_CHECK(torch::allclose(reference.outputs[i], expected_outputs[i], 1e-5, 1e-6));
    CATCH_CHECK(torch::allclose(reference.gradients[i], expected_grads[i], 1e-5, 1e-6));
  }
}

// The op table's grad_saves column says what each rule reads of the forward; check it against
// what the rule actually reads (the backward part of the joint trace of its case, before
// rematerialization chooses what to save).
CATCH_TEST_CASE("grad_saves in the op table is what each gradient rule reads") {
  for (const tg::OpInfo& info : tg::op_table()) {
    if (test::is_distributed(info)) continue;  // (see grad_cases.h)
    std::optional<Case> c = case_for(info);
    if (!c || !info.grad) {  // no gradient, one refused, or a torch-level op differentiated through its lowering
      CATCH_CHECK(info.grad_saves == (info.grad && test::refuses_gradient(info) ? "none" : ""));
      continue;
    }
    std::string json = "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"g\", \"inputs\": [" + c->inputs + "], \"ops\": [" + c->op +
                       "], \"outputs\": [" + c->outputs + "]}";
    tg::Trace forward = tg::bind_rng(tg::read_trace(json));
    const tg::Op* op = nullptr;
    for (const tg::Op& o : forward.ops)
      if (o.info == &info) op = &o;
    CATCH_REQUIRE(op);
    std::set<tg::ValueId> inputs, outputs(op->outs.begin(), op->outs.end());
    for (tg::ValueId v : tg::tensor_args(forward, *op)) inputs.insert(v);
    tg::JointTrace joint = tg::autograd(forward);
    bool reads_input = false, reads_output = false;
    for (size_t i = joint.forward_ops; i < joint.trace.ops.size(); ++i)
      tg::for_each_value(joint.trace.ops[i], [&](tg::ValueId v) {
        reads_input = reads_input || inputs.count(v);
        reads_output = reads_output || outputs.count(v);
      });
    std::string actual = reads_input && reads_output ? "inputs, output" : reads_input ? "inputs" : reads_output ? "output" : "nothing";
    CATCH_INFO("op " << info.id);
    CATCH_CHECK(actual == std::string(info.grad_saves));
  }
}

CATCH_TEST_CASE("a fused trace's partial sums over rows give the sums the trace asks for") {
  // 600 rows in 512 parts (some parts add two rows, some one), and an f16 sum, whose parts are f32.
  auto tensor = [](const std::string& name, const std::string& shape, const std::string& dtype) {
    return "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"" + dtype + "\"}";
  };
  auto op = [](const std::string& id, const std::string& args, const std::string& out) {
    return "{\"op\": \"" + id + "\", \"args\": " + args + ", \"out\": [" + out + "]}";
  };
  for (const std::string dtype : {"f32", "f16"}) {
    CATCH_INFO(dtype);
    const std::string shape = "[600, 32]";
    const std::string ops = op("prims.sum", "[\"x\", [1]]", tensor("s", "[600]", dtype)) + "," +
                            op("prims.broadcast_in_dim", "[\"s\", [600, 32], [0]]", tensor("sb", shape, dtype)) + "," +
                            op("prims.sub", "[\"x\", \"sb\"]", tensor("y", shape, dtype)) + "," + op("prims.mul", "[\"y\", \"g\"]", tensor("yg", shape, dtype)) + "," +
                            op("prims.sum", "[\"yg\", [0]]", tensor("gy", "[32]", dtype)) + "," +
                            op("prims.sum", "[\"s\", [0]]", tensor("st", "[]", dtype));  // a total of the row sums
    const std::string json = "{\"format\": \"thunder-gen-trace\", \"version\": 1, \"name\": \"parts\", \"inputs\": [" + tensor("x", shape, dtype) + "," +
                             tensor("g", shape, dtype) + "], \"ops\": [" + ops + "], \"outputs\": [\"y\", \"gy\", \"st\"]}";
    tg::Trace plain = tg::decompose(tg::read_trace(json));
    tg::Trace fused = tg::fuse(plain).trace;
    int part_sums = 0;  // gy's by element and st's total, both in the row kernel of s
    for (const tg::Op& k : fused.ops)
      for (const tg::Op& op : k.sub) part_sums += op.info->kind == tg::OpKind::partial_sum;
    CATCH_REQUIRE(part_sums == 2);
    torch::manual_seed(0);
    const torch::Dtype storage = dtype == "f32" ? torch::kFloat : torch::kHalf;
    std::vector<torch::Tensor> inputs = {torch::randn({600, 32}).to(storage), torch::randn({600, 32}).to(storage)};
    auto expected = tg::run_reference(plain, inputs, tg::Precision::wide);
    auto got = tg::run_reference(fused, inputs, tg::Precision::wide);
    CATCH_REQUIRE(got.size() == 3);
    // Every row in exactly one part: a row left out or added twice moves a sum by about 1. (f16:
    // the fused trace rounds the f32 total to f16 where the plain one keeps it wide.)
    const double tolerance = dtype == "f32" ? 1e-9 : 1.0 / 1024;
    for (size_t i : {1, 2}) CATCH_CHECK(torch::allclose(got[i].to(torch::kDouble), expected[i].to(torch::kDouble), tolerance, tolerance));
    CATCH_CHECK(torch::equal(got[0], expected[0]));
  }
}

// Precision::eager is eager PyTorch's bf16 arithmetic, forward and backward: the same bits as
// LibTorch autograd on bf16 tensors. (Precision::op_by_op rounds the forward alone: a tanh's
// gradient from its unrounded output, closer to the truth than eager.)
CATCH_TEST_CASE("the eager reference rounds a bf16 trace's gradients as eager PyTorch does") {
  const std::string trace = R"({"format": "thunder-gen-trace", "version": 1, "name": "t",
    "inputs": [{"name": "x", "shape": [3, 7, 12], "dtype": "bf16", "requires_grad": true}, {"name": "c", "shape": [7, 1], "dtype": "bf16", "requires_grad": true}],
    "ops": [{"op": "torch.mul", "args": ["x", "c"], "out": [{"name": "a", "shape": [3, 7, 12], "dtype": "bf16"}]},
            {"op": "torch.tanh", "args": ["a"], "out": [{"name": "o", "shape": [3, 7, 12], "dtype": "bf16"}]}],
    "outputs": ["o"]})";
  const tg::Trace t = tg::read_trace(trace);
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({3, 7, 12}).to(torch::kBFloat16), c = torch::randn({7, 1}).to(torch::kBFloat16);
  const torch::Tensor g = torch::randn({3, 7, 12}).to(torch::kBFloat16);
  // Eager: bf16 tensors through LibTorch autograd.
  const torch::Tensor xe = x.clone().requires_grad_(true), ce = c.clone().requires_grad_(true);
  const std::vector<torch::Tensor> eager = torch::autograd::grad({torch::tanh(xe * ce)}, {xe, ce}, {g});
  auto gradient_of_c = [&](tg::Precision p) {
    return tg::reference_gradients(t, {x.to(torch::kFloat), c.to(torch::kFloat)}, {g.to(torch::kFloat)}, p).gradients.at(1);
  };
  CATCH_CHECK(torch::equal(gradient_of_c(tg::Precision::eager), eager[1].to(torch::kFloat)));
  CATCH_CHECK(!torch::equal(gradient_of_c(tg::Precision::op_by_op), eager[1].to(torch::kFloat)));
}
