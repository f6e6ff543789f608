// The gradient test case of every op in the table: one small trace per differentiable op, in
// f64 (tests that need another float dtype substitute it). A switch over OpKind, so an op added
// to the table without a case here fails to compile (-Werror=switch). Used by the f64 check
// against LibTorch autograd (test_gradients.cpp) and by the per-op checks through generated
// code (tools/op_grad_trace.cpp).
#pragma once
#include <algorithm>
#include <optional>
#include <string>

#include "ops/op_table.h"

namespace test {

struct Case {
  std::string inputs;  // JSON declarations
  std::string op;      // JSON of the one op
  std::string outputs;
  double lo = 0.2, hi = 0.9;  // input domain
};

inline std::string f64(const std::string& name, const std::string& shape, bool grad = true) {
  return "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"f64\"" + (grad ? ", \"requires_grad\": true" : "") + "}";
}
inline std::string out(const std::string& name, const std::string& shape, const char* dtype = "f64") {
  return "{\"name\": \"" + name + "\", \"shape\": " + shape + ", \"dtype\": \"" + dtype + "\"}";
}
inline std::string call(std::string_view id, const std::string& args, const std::string& outs, const std::string& extra = "") {
  return "{\"op\": \"" + std::string(id) + "\", \"args\": " + args + ", \"out\": [" + outs + "]" + extra + "}";
}

// A unary float prim declared without a gradient rule (TG_NO_GRADIENT_RULE), or its torch form:
// differentiating through it is refused, so it has no case.
inline bool refuses_gradient(const tg::OpInfo& info) { return tg::op_info(info.kind).grad_saves == "none"; }

// A distributed prim (thunder.distributed.prims): one process has no process group, so these
// have no case here; synchronize's gradient rule, and every collective, are checked against
// PyTorch eager with the ranks as threads (tools/check_distributed.py).
inline bool is_distributed(const tg::OpInfo& info) { return info.id.starts_with("thunder.distributed."); }

// A declared prim's case drawn from [0.2, 0.9], or where its operands' domain (the intersection of
// their declared domains) does not hold that, from the domain's first 0.8.
inline Case in_domain(Case c, tg::Domain d) {
  if (d.lo > 0.2 || d.hi < 0.9) c.lo = d.lo, c.hi = std::min(d.hi, d.lo + 0.8);
  return c;
}
inline tg::Domain common_domain(const std::vector<tg::Domain>& domains) {
  tg::Domain d = domains.at(0);
  for (const tg::Domain& other : domains) d = {std::max(d.lo, other.lo), std::min(d.hi, other.hi)};
  return d;
}

// The case for one op, or nullopt when the op has no gradient to check.
inline std::optional<Case> case_for(const tg::OpInfo& info) {
  const std::string x = f64("x", "[3, 4]"), y = f64("y", "[3, 4]");
  const std::string o = out("o", "[3, 4]");
  switch (info.kind) {
    // A unary float prim: its declared domain, narrowed to [0.2, 0.9] where that lies inside it
    // (else its first 0.8); none for a prim declared without a gradient rule.
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) case tg::OpKind::name:
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
      if (refuses_gradient(info)) return std::nullopt;
      return in_domain(Case{x, call(info.id, "[\"x\"]", o), "\"o\""}, info.domains.at(0));
    case tg::OpKind::abs: case tg::OpKind::neg:
      return Case{x, call(info.id, "[\"x\"]", o), "\"o\""};
    // A binary float prim, both operands tensors. A discontinuous one (fmod, remainder) also with a
    // number second operand (several wraps); the second operand is an input, not a computed value,
    // so f32 and bf16 runs see the same jumps as LibTorch.
#define TG_BINARY_FLOAT(name, ...) case tg::OpKind::name:
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
      if (tg::op_info(info.kind).discontinuous)
        return in_domain(Case{x + "," + y, call(info.id, "[\"x\", 0.15]", o) + "," + call(info.id, "[\"x\", \"y\"]", out("r", "[3, 4]")), "\"o\", \"r\""},
                         common_domain(info.domains));
      return in_domain(Case{x + "," + y, call(info.id, "[\"x\", \"y\"]", o), "\"o\""}, common_domain(info.domains));
    case tg::OpKind::where:
      return Case{f64("p", "[3, 4]", false) + "," + x + "," + y,
                  call("prims.gt", "[\"p\", 0.5]", out("m", "[3, 4]", "b8")) + "," + call(info.id, "[\"m\", \"x\", \"y\"]", o), "\"o\""};
    case tg::OpKind::lerp: return Case{x + "," + y + "," + f64("w", "[3, 4]"), call(info.id, "[\"x\", \"y\", \"w\"]", o), "\"o\""};
    case tg::OpKind::convert_element_type:
      return Case{x, call(info.id, "[\"x\", {\"dtype\": \"f32\"}]", out("c", "[3, 4]", "f32")) + "," +
                         call(info.id, "[\"c\", {\"dtype\": \"f64\"}]", o), "\"o\""};
    case tg::OpKind::broadcast_in_dim:
      return Case{f64("x", "[3, 1]"), call(info.id, "[\"x\", [2, 3, 4], [1, 2]]", out("o", "[2, 3, 4]")), "\"o\""};
    case tg::OpKind::reshape: return Case{x, call(info.id, "[\"x\", [2, 6]]", out("o", "[2, 6]")), "\"o\""};
    case tg::OpKind::transpose: return Case{f64("x", "[2, 3, 4]"), call(info.id, "[\"x\", [2, 0, 1]]", out("o", "[4, 2, 3]")), "\"o\""};
    case tg::OpKind::squeeze: return Case{f64("x", "[3, 1, 4]"), call(info.id, "[\"x\", [1]]", o), "\"o\""};
    case tg::OpKind::slice:
      return Case{f64("x", "[5, 7]"), call(info.id, "[\"x\", [1, 0], [5, 6], [2, 3]]", out("o", "[2, 2]")), "\"o\""};
    case tg::OpKind::pad:
      return Case{x, call(info.id, "[\"x\", 0.5, [[-1, 2, 1], [1, -2, 0]]]", out("o", "[6, 3]")), "\"o\""};
    case tg::OpKind::cat:
      return Case{x + "," + f64("y", "[3, 2]"), call(info.id, "[[\"x\", \"y\", \"x\"], 1]", out("o", "[3, 10]")), "\"o\""};
    case tg::OpKind::flip:  // every dim (one of length 1), and one by a negative index
      return Case{f64("x", "[3, 1, 4]"), call(info.id, "[\"x\", [0, 1, 2]]", out("o", "[3, 1, 4]")) + "," + call(info.id, "[\"x\", [-1]]", out("r", "[3, 1, 4]")),
                  "\"o\", \"r\""};
    case tg::OpKind::sum: case tg::OpKind::prod: case tg::OpKind::amax: case tg::OpKind::amin:
      return Case{f64("x", "[3, 4, 5]"), call(info.id, "[\"x\", [0, 2]]", out("o", "[4]")), "\"o\""};
    // Torch-level ops, bound positionally and by keyword as exporters write them.
    case tg::OpKind::t_softmax: case tg::OpKind::t_log_softmax:
      return Case{x, call(info.id, "[\"x\"]", o, ", \"kwargs\": {\"dim\": -1}") + "," + call(info.id, "[\"x\", 0, null]", out("r", "[3, 4]")),
                  "\"o\", \"r\""};
    case tg::OpKind::t_relu:
      return Case{x, call(info.id, "[\"x\"]", o, ", \"kwargs\": {\"inplace\": false}"), "\"o\"", -1.0, 1.0};
    case tg::OpKind::t_leaky_relu:  // the default slope, and one by keyword
      return Case{x, call(info.id, "[\"x\"]", o) + "," + call(info.id, "[\"x\"]", out("r", "[3, 4]"), ", \"kwargs\": {\"negative_slope\": 0.2}"),
                  "\"o\", \"r\"", -1.0, 1.0};
    case tg::OpKind::t_sigmoid: case tg::OpKind::t_tanh: case tg::OpKind::t_silu:
      return Case{x, call(info.id, "[\"x\"]", o), "\"o\"", -2.0, 2.0};
    case tg::OpKind::t_gelu:
      return Case{x, call(info.id, "[\"x\"]", o) + "," + call(info.id, "[\"x\"]", out("r", "[3, 4]"), ", \"kwargs\": {\"approximate\": {\"str\": \"tanh\"}}"),
                  "\"o\", \"r\"", -2.0, 2.0};
    case tg::OpKind::t_linear:
      return Case{f64("x", "[2, 3, 4]") + "," + f64("w", "[5, 4]") + "," + f64("b", "[5]"),
                  call(info.id, "[\"x\", \"w\", \"b\"]", out("o", "[2, 3, 5]")) + "," +
                      call(info.id, "[\"x\"]", out("r", "[2, 3, 5]"), ", \"kwargs\": {\"w\": \"w\"}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_prim_linear:  // bias given and null (both positional, as Thunder's autocast records them)
      return Case{f64("x", "[2, 3, 4]") + "," + f64("w", "[5, 4]") + "," + f64("b", "[5]"),
                  call(info.id, "[\"x\", \"w\", \"b\"]", out("o", "[2, 3, 5]")) + "," + call(info.id, "[\"x\", \"w\", null]", out("r", "[2, 3, 5]")),
                  "\"o\", \"r\""};
    case tg::OpKind::t_matmul:
      return Case{f64("x", "[2, 3, 4]") + "," + f64("y", "[2, 4, 5]"), call(info.id, "[\"x\", \"y\"]", out("o", "[2, 3, 5]")), "\"o\""};
    case tg::OpKind::t_reshape: return Case{x, call(info.id, "[\"x\", [2, -1]]", out("o", "[2, 6]")), "\"o\""};
    case tg::OpKind::t_permute:
      return Case{f64("x", "[2, 3, 4]"), call(info.id, "[\"x\", [2, 0, 1]]", out("o", "[4, 2, 3]")), "\"o\""};
    case tg::OpKind::t_transpose:
      return Case{f64("x", "[2, 3, 4]"), call(info.id, "[\"x\", 0, -1]", out("o", "[4, 3, 2]")), "\"o\""};
    case tg::OpKind::t_unsqueeze: return Case{x, call(info.id, "[\"x\", 1]", out("o", "[3, 1, 4]")), "\"o\""};
    case tg::OpKind::shallow_copy: return Case{x, call(info.id, "[\"x\"]", o), "\"o\""};
    case tg::OpKind::stride_order: return Case{f64("x", "[2, 3, 4]"), call(info.id, "[\"x\", [2, 1, 0]]", out("o", "[2, 3, 4]")), "\"o\""};
    case tg::OpKind::t_sum: case tg::OpKind::t_mean:
      return Case{f64("x", "[3, 4, 5]"), call(info.id, "[\"x\", [0, 2], true]", out("o", "[1, 4, 1]")) + "," +
                                             call(info.id, "[\"x\"]", out("r", "[]"), ", \"kwargs\": {\"dim\": null}"),
                  "\"o\", \"r\""};
    // Class-index targets from an i64 input in the case's domain (0, 1): floor(3.9 * x) - 1 is
    // in [-1, 2], so -1 (the ignore_index given) appears; the three reductions, and smoothing.
    case tg::OpKind::t_cross_entropy: case tg::OpKind::t_nll_loss: {
      const bool ce = info.kind == tg::OpKind::t_cross_entropy;
      std::string targets = call("prims.mul", "[\"k\", 3.9]", out("k1", "[5]")) + "," + call("prims.floor", "[\"k1\"]", out("k2", "[5]")) + "," +
                            call("prims.sub", "[\"k2\", 1.0]", out("k3", "[5]")) + "," +
                            call("prims.convert_element_type", "[\"k3\", {\"dtype\": \"i64\"}]", out("t", "[5]", "i64"));
      std::string weighted = call(info.id, "[\"x\", \"t\", \"w\"]", out("wo", "[]"), ", \"kwargs\": {\"ignore_index\": -1}") + "," +
                             call(info.id, "[\"x\", \"t\"]", out("wq", "[5]"),
                                  std::string(", \"kwargs\": {\"weight\": \"w\", \"reduction\": {\"str\": \"none\"}, \"ignore_index\": -1") +
                                      (ce ? ", \"label_smoothing\": 0.2}" : "}")) + "," +
                             call(info.id, "[\"x\", \"t\"]", out("wm", "[]"),
                                  std::string(", \"kwargs\": {\"weight\": \"w\", \"ignore_index\": -1") + (ce ? ", \"label_smoothing\": 0.2}" : "}"));
      std::string calls = weighted + "," + call(info.id, "[\"x\", \"t\"]", out("o", "[]"), ", \"kwargs\": {\"ignore_index\": -1}") + "," +
                          call(info.id, "[\"x\", \"t\"]", out("r", "[]"), ", \"kwargs\": {\"reduction\": {\"str\": \"sum\"}, \"ignore_index\": -1}") + "," +
                          call(info.id, "[\"x\", \"t\"]", out("q", "[5]"),
                               std::string(", \"kwargs\": {\"reduction\": {\"str\": \"none\"}, \"ignore_index\": -1") +
                                   (ce ? ", \"label_smoothing\": 0.1}" : "}"));
      return Case{f64("x", "[5, 3]") + "," + f64("k", "[5]", false) + "," + f64("w", "[3]", false), targets + "," + calls,
                  "\"o\", \"r\", \"q\", \"wo\", \"wq\", \"wm\""};
    }
    case tg::OpKind::t_dropout:  // a draw (seed and offset bound by thunder-gen's RNG pass), and eval mode
      return Case{f64("x", "[20, 30]"),
                  call(info.id, "[\"x\", 0.3]", out("o", "[20, 30]")) + "," +
                      call(info.id, "[\"x\"]", out("r", "[20, 30]"), ", \"kwargs\": {\"p\": 0.5, \"training\": false}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_cat:
      return Case{x + "," + f64("y", "[3, 2]"),
                  call(info.id, "[[\"x\", \"y\", \"x\"], 1]", out("o", "[3, 10]")) + "," +
                      call(info.id, "[[\"y\", \"x\"]]", out("r", "[3, 6]"), ", \"kwargs\": {\"dim\": -1}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_split:
      return Case{f64("x", "[5, 4]"),
                  call(info.id, "[\"x\", 2]", out("o", "[2, 4]") + "," + out("p", "[2, 4]") + "," + out("q", "[1, 4]")) + "," +
                      call(info.id, "[\"x\", [1, 3]]", out("r", "[5, 1]") + "," + out("s", "[5, 3]"), ", \"kwargs\": {\"dim\": 1}"),
                  "\"o\", \"p\", \"q\", \"r\", \"s\""};
    case tg::OpKind::t_var:
      return Case{f64("x", "[3, 4, 5]"),
                  call(info.id, "[\"x\", [0, 2], null, true]", out("o", "[1, 4, 1]")) + "," +
                      call(info.id, "[\"x\", 1]", out("r", "[3, 5]"), ", \"kwargs\": {\"correction\": 0}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_embedding:  // ids floor(3.9 k) in [0, 3] from a non-differentiable input; padding rows 2 and -1 (3)
      return Case{f64("k", "[2, 3]", false) + "," + f64("w", "[4, 5]"),
                  call("prims.mul", "[\"k\", 3.9]", out("k1", "[2, 3]")) + "," + call("prims.floor", "[\"k1\"]", out("k2", "[2, 3]")) + "," +
                      call("prims.convert_element_type", "[\"k2\", {\"dtype\": \"i64\"}]", out("i", "[2, 3]", "i64")) + "," +
                      call(info.id, "[\"i\", \"w\"]", out("o", "[2, 3, 5]")) + "," +
                      call(info.id, "[\"i\", \"w\"]", out("r", "[2, 3, 5]"), ", \"kwargs\": {\"padding_idx\": 2}") + "," +
                      call(info.id, "[\"i\", \"w\", -1]", out("q", "[2, 3, 5]")),
                  "\"o\", \"r\", \"q\""};
    case tg::OpKind::t_gather:  // positions floor(4.9 k) in [0, 4] of a non-differentiable input: along
      // the last dim (some picked twice, some never), along dim 0 with fewer columns (a slice)
      return Case{f64("x", "[3, 5]") + "," + f64("k", "[3, 4]", false),
                  call("prims.mul", "[\"k\", 4.9]", out("k1", "[3, 4]")) + "," + call("prims.floor", "[\"k1\"]", out("k2", "[3, 4]")) + "," +
                      call("prims.convert_element_type", "[\"k2\", {\"dtype\": \"i64\"}]", out("i", "[3, 4]", "i64")) + "," +
                      call("prims.mul", "[\"k\", 2.9]", out("k3", "[3, 4]")) + "," + call("prims.floor", "[\"k3\"]", out("k4", "[3, 4]")) + "," +
                      call("prims.convert_element_type", "[\"k4\", {\"dtype\": \"i32\"}]", out("j", "[3, 4]", "i32")) + "," +
                      call(info.id, "[\"x\", -1, \"i\"]", out("o", "[3, 4]")) + "," +
                      call(info.id, "[\"x\", 0, \"j\"]", out("r", "[3, 4]")),
                  "\"o\", \"r\""};
    // Opaque torch calls (docs/torch-ops.md): the broadcast forms, keyword and positional.
    case tg::OpKind::t_addmm:  // a bias row broadcast with beta and alpha; a full input; beta 0 (input unread)
      return Case{f64("b", "[4]") + "," + f64("c", "[3, 4]") + "," + f64("m", "[3, 5]") + "," + f64("n", "[5, 4]"),
                  call(info.id, "[\"b\", \"m\", \"n\"]", o, ", \"kwargs\": {\"beta\": 0.5, \"alpha\": 2.0}") + "," +
                      call(info.id, "[\"c\", \"m\", \"n\"]", out("r", "[3, 4]")) + "," +
                      call(info.id, "[\"c\", \"m\", \"n\"]", out("q", "[3, 4]"), ", \"kwargs\": {\"beta\": 0}"),
                  "\"o\", \"r\", \"q\""};
    case tg::OpKind::t_baddbmm:
      return Case{f64("b", "[4]") + "," + f64("c", "[2, 3, 4]") + "," + f64("m", "[2, 3, 5]") + "," + f64("n", "[2, 5, 4]"),
                  call(info.id, "[\"c\", \"m\", \"n\"]", out("o", "[2, 3, 4]")) + "," +
                      call(info.id, "[\"b\", \"m\", \"n\"]", out("r", "[2, 3, 4]"), ", \"kwargs\": {\"beta\": 0.5, \"alpha\": -1.5}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_bmm:
      return Case{f64("m", "[2, 3, 5]") + "," + f64("n", "[2, 5, 4]"), call(info.id, "[\"m\", \"n\"]", out("o", "[2, 3, 4]")), "\"o\""};
    case tg::OpKind::t_addcmul: case tg::OpKind::t_addcdiv:  // tensor2 broadcast over rows; value given or not
      return Case{x + "," + y + "," + f64("z", "[4]"),
                  call(info.id, "[\"x\", \"y\", \"z\"]", o) + "," + call(info.id, "[\"x\", \"y\", \"z\"]", out("r", "[3, 4]"), ", \"kwargs\": {\"value\": -0.5}"),
                  "\"o\", \"r\""};
    // All of it, (values, indices) along a dim with keepdim false and true (the indices are not
    // outputs: no cotangent), and between tensors, positional and as other=.
    case tg::OpKind::t_max: case tg::OpKind::t_min:
      return Case{f64("x", "[3, 4, 5]") + "," + f64("y", "[3, 4, 5]") + "," + f64("z", "[4, 1]"),
                  call(info.id, "[\"x\"]", out("o", "[]")) + "," + call(info.id, "[\"x\", 1]", out("v", "[3, 5]") + "," + out("i", "[3, 5]", "i64")) + "," +
                      call(info.id, "[\"x\"]", out("kv", "[3, 4, 1]") + "," + out("ki", "[3, 4, 1]", "i64"), ", \"kwargs\": {\"dim\": -1, \"keepdim\": true}") + "," +
                      call(info.id, "[\"x\", \"y\"]", out("m", "[3, 4, 5]")) + "," +
                      call(info.id, "[\"x\"]", out("n", "[3, 4, 5]"), ", \"kwargs\": {\"other\": \"z\"}"),
                  "\"o\", \"v\", \"kv\", \"m\", \"n\""};
    case tg::OpKind::t_clamp:  // a tensor min broadcast; a number max; both, one a tensor
      return Case{x + "," + f64("y", "[4]") + "," + f64("z", "[3, 4]"),
                  call(info.id, "[\"x\", \"y\"]", o) + "," + call(info.id, "[\"x\"]", out("r", "[3, 4]"), ", \"kwargs\": {\"max\": 0.5}") + "," +
                      call(info.id, "[\"x\", 0.3, \"z\"]", out("q", "[3, 4]")),
                  "\"o\", \"r\", \"q\""};
    case tg::OpKind::t_masked_fill:  // a number; a 0-dim tensor value through a mask broadcast over rows
      return Case{f64("p", "[3, 4]", false) + "," + x + "," + f64("v", "[]"),
                  call("prims.gt", "[\"p\", 0.5]", out("m", "[3, 4]", "b8")) + "," +
                      call("prims.slice_prim", "[\"m\", [0, 0], [1, 4]]", out("m1", "[1, 4]", "b8")) + "," +
                      call(info.id, "[\"x\", \"m\", -1.5]", o) + "," +
                      call(info.id, "[\"x\"]", out("r", "[3, 4]"), ", \"kwargs\": {\"mask\": \"m1\", \"value\": \"v\"}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_tril: case tg::OpKind::t_triu:  // diagonals 0, -1 and 1, and Thunder's fill_value
      return Case{f64("x", "[2, 3, 4]"),
                  call(info.id, "[\"x\"]", out("o", "[2, 3, 4]")) + "," + call(info.id, "[\"x\"]", out("r", "[2, 3, 4]"), ", \"kwargs\": {\"diagonal\": -1}") + "," +
                      call(info.id, "[\"x\", 1]", out("q", "[2, 3, 4]"), ", \"kwargs\": {\"fill_value\": 0.25}"),
                  "\"o\", \"r\", \"q\""};
    case tg::OpKind::t_cumsum:  // along a middle dim, and along the last with dtype=
      return Case{f64("x", "[3, 4, 5]"),
                  call(info.id, "[\"x\", 1]", out("o", "[3, 4, 5]")) + "," +
                      call(info.id, "[\"x\"]", out("r", "[3, 4, 5]"), ", \"kwargs\": {\"dim\": -1, \"dtype\": {\"dtype\": \"f64\"}}"),
                  "\"o\", \"r\""};
    case tg::OpKind::t_normalize:  // the default dim 1; two dims; an eps above every norm (clamped)
      return Case{f64("x", "[3, 4, 5]"),
                  call(info.id, "[\"x\"]", out("o", "[3, 4, 5]")) + "," +
                      call(info.id, "[\"x\", 2.0, [0, 2], 1e-3]", out("r", "[3, 4, 5]")) + "," +
                      call(info.id, "[\"x\"]", out("q", "[3, 4, 5]"), ", \"kwargs\": {\"dim\": -1, \"eps\": 5.0}"),
                  "\"o\", \"r\", \"q\"", -1.0, 1.0};
    // Patch convolutions (kernel == stride): with a bias and without, a spatial size the kernel
    // does not divide (the rest is not read: no gradient there), stride as an int and as a list.
    case tg::OpKind::t_conv2d:
      return Case{f64("x", "[2, 3, 8, 8]") + "," + f64("w", "[5, 3, 4, 4]") + "," + f64("b", "[5]") + "," + f64("z", "[2, 3, 9, 6]") + "," +
                      f64("v", "[5, 3, 4, 2]") + "," + f64("d", "[6, 1, 3, 3]"),
                  call(info.id, "[\"x\", \"w\", \"b\", [4, 4], [0, 0], [1, 1], 1]", out("o", "[2, 5, 2, 2]")) + "," +
                      call(info.id, "[\"z\", \"v\"]", out("r", "[2, 5, 2, 3]"), ", \"kwargs\": {\"stride\": [4, 2]}") + "," +
                      // overlapping, padded, dilated: im2col
                      call(info.id, "[\"z\", \"v\", \"b\"]", out("q", "[2, 5, 5, 6]"), ", \"kwargs\": {\"stride\": [2, 1], \"padding\": [2, 1], \"dilation\": [1, 2]}") + "," +
                      // depthwise (a group per channel, two filters each) 3x3, padding 1: ConvNeXt's, smaller
                      call(info.id, "[\"x\", \"d\", null, 1, 1, 1, 3]", out("p", "[2, 6, 8, 8]")),
                  "\"o\", \"r\", \"q\", \"p\"", -1.0, 1.0};
    case tg::OpKind::t_conv1d:
      return Case{f64("x", "[2, 3, 8]") + "," + f64("w", "[4, 3, 2]") + "," + f64("b", "[4]") + "," + f64("z", "[2, 3, 7]") + "," + f64("v", "[4, 3, 3]"),
                  call(info.id, "[\"x\", \"w\", \"b\", 2]", out("o", "[2, 4, 4]")) + "," +
                      call(info.id, "[\"z\", \"v\"]", out("r", "[2, 4, 2]"), ", \"kwargs\": {\"stride\": [3]}") + "," +
                      call(info.id, "[\"z\", \"v\", \"b\", 2, 1]", out("q", "[2, 4, 4]")),  // strided, padded
                  "\"o\", \"r\", \"q\"", -1.0, 1.0};
    case tg::OpKind::t_convolution:  // three spatial dims, as conv3d decomposes
      return Case{f64("x", "[2, 2, 4, 2, 6]") + "," + f64("w", "[3, 2, 2, 2, 3]") + "," + f64("b", "[3]") + "," + f64("u", "[4, 1, 2, 2, 2]"),
                  call(info.id, "[\"x\", \"w\", \"b\", [2, 2, 3], [0, 0, 0], [1, 1, 1], false, [0, 0, 0], 1]", out("o", "[2, 3, 2, 1, 2]")) + "," +
                      // two groups, stride 1, padded in one dim, dilated in another
                      call(info.id, "[\"x\", \"u\", null, [1, 1, 1], [1, 0, 0], [1, 1, 2], false, [0, 0, 0], 2]", out("r", "[2, 4, 5, 1, 4]")),
                  "\"o\", \"r\"", -1.0, 1.0};
    // Pooling: overlapping windows, padded (at most half a window), strided and dilated (max),
    // unbatched; count_include_pad=False and divisor_override (avg); adaptive to 1 and to a
    // divisor of the size. (Ties in a window, where the first maximum takes the gradient, are
    // checked against eager by tools/test_pt2_ops.py.)
    case tg::OpKind::t_max_pool1d:  // ceil_mode over an input shorter than the window: one window
      return Case{f64("x", "[2, 3, 9]") + "," + f64("s", "[2, 3, 2]"),
                  call(info.id, "[\"x\", 3, 2, 1]", out("o", "[2, 3, 5]")) + "," +
                      call(info.id, "[\"x\", 2]", out("r", "[2, 3, 7]"), ", \"kwargs\": {\"stride\": 1, \"dilation\": 2}") + "," +
                      call(info.id, "[\"s\", 3, 2]", out("c", "[2, 3, 1]"), ", \"kwargs\": {\"ceil_mode\": true}"),
                  "\"o\", \"r\", \"c\"", -1.0, 1.0};
    case tg::OpKind::t_max_pool2d:  // ResNet's stem (3x3, stride 2, padding 1); 2x2 patches of an unbatched input; ceil_mode
      return Case{f64("x", "[2, 3, 7, 6]") + "," + f64("u", "[3, 4, 6]") + "," + f64("z", "[2, 3, 8, 6]"),
                  call(info.id, "[\"x\", 3, 2, 1]", out("o", "[2, 3, 4, 3]")) + "," + call(info.id, "[\"u\", [2, 2]]", out("r", "[3, 2, 3]")) + "," +
                      call(info.id, "[\"z\", 3, 2]", out("c", "[2, 3, 4, 3]"), ", \"kwargs\": {\"ceil_mode\": true}"),
                  "\"o\", \"r\", \"c\"", -1.0, 1.0};
    case tg::OpKind::t_max_pool3d:
      return Case{f64("x", "[1, 2, 4, 5, 3]"), call(info.id, "[\"x\", [2, 3, 2], [2, 1, 1], [1, 1, 0]]", out("o", "[1, 2, 3, 5, 2]")), "\"o\"", -1.0, 1.0};
    case tg::OpKind::t_avg_pool1d:  // ceil_mode: the last window holds one element
      return Case{f64("x", "[2, 3, 9]"),
                  call(info.id, "[\"x\", 3, 2, 1]", out("o", "[2, 3, 5]")) + "," +
                      call(info.id, "[\"x\", 3, 2, 1]", out("r", "[2, 3, 5]"), ", \"kwargs\": {\"count_include_pad\": false}") + "," +
                      call(info.id, "[\"x\", 2, 2, 0, true]", out("c", "[2, 3, 5]")),
                  "\"o\", \"r\", \"c\"", -1.0, 1.0};
    // ceil_mode with padding: the last windows reach past the padding, which count_include_pad counts and the overhang never
    case tg::OpKind::t_avg_pool2d:
      return Case{f64("x", "[2, 3, 7, 6]") + "," + f64("z", "[2, 3, 8, 6]"),
                  call(info.id, "[\"x\", 3, 2, 1]", out("o", "[2, 3, 4, 3]"), ", \"kwargs\": {\"count_include_pad\": false}") + "," +
                      call(info.id, "[\"x\", [2, 3]]", out("r", "[2, 3, 3, 2]"), ", \"kwargs\": {\"divisor_override\": 4}") + "," +
                      call(info.id, "[\"x\", 3, 1, 1]", out("q", "[2, 3, 7, 6]")) + "," +
                      call(info.id, "[\"z\", 3, 2, 1, true]", out("c", "[2, 3, 5, 4]")) + "," +
                      call(info.id, "[\"z\", 3, 2, 1, true, false]", out("e", "[2, 3, 5, 4]")),
                  "\"o\", \"r\", \"q\", \"c\", \"e\"", -1.0, 1.0};
    case tg::OpKind::t_avg_pool3d:
      return Case{f64("x", "[1, 2, 4, 5, 3]"),
                  call(info.id, "[\"x\", 2, 1, 1]", out("o", "[1, 2, 5, 6, 4]"), ", \"kwargs\": {\"count_include_pad\": false}"), "\"o\"", -1.0, 1.0};
    case tg::OpKind::t_adaptive_avg_pool1d:
      return Case{f64("x", "[2, 3, 8]"),
                  call(info.id, "[\"x\", 1]", out("o", "[2, 3, 1]")) + "," + call(info.id, "[\"x\", [4]]", out("r", "[2, 3, 4]")),
                  "\"o\", \"r\"", -1.0, 1.0};
    case tg::OpKind::t_adaptive_avg_pool2d:  // a classifier head's (1, 1); a divisor in one dim, the size in the other
      return Case{f64("x", "[2, 3, 6, 4]") + "," + f64("u", "[3, 6, 4]"),
                  call(info.id, "[\"x\", [1, 1]]", out("o", "[2, 3, 1, 1]")) + "," + call(info.id, "[\"u\", [3, 4]]", out("r", "[3, 3, 4]")),
                  "\"o\", \"r\"", -1.0, 1.0};
    case tg::OpKind::t_adaptive_avg_pool3d:
      return Case{f64("x", "[1, 2, 4, 6, 3]"), call(info.id, "[\"x\", [2, 1, 3]]", out("o", "[1, 2, 2, 1, 3]")), "\"o\"", -1.0, 1.0};
    case tg::OpKind::t_sdpa:  // causal; an additive mask and an explicit scale; attention dropout; 4 q heads on 2 k/v heads
      return Case{f64("q", "[2, 3, 4]") + "," + f64("k", "[2, 3, 4]") + "," + f64("v", "[2, 3, 4]") + "," + f64("m", "[2, 3, 3]") + "," +
                      f64("gq", "[2, 4, 3, 4]") + "," + f64("gk", "[2, 2, 3, 4]") + "," + f64("gv", "[2, 2, 3, 5]"),
                  call(info.id, "[\"q\", \"k\", \"v\"]", out("o", "[2, 3, 4]"), ", \"kwargs\": {\"is_causal\": true}") + "," +
                      call(info.id, "[\"q\", \"k\", \"v\", \"m\", 0.0, false]", out("r", "[2, 3, 4]"), ", \"kwargs\": {\"scale\": 0.3}") + "," +
                      call(info.id, "[\"q\", \"k\", \"v\"]", out("d", "[2, 3, 4]"), ", \"kwargs\": {\"dropout_p\": 0.3, \"is_causal\": true}") + "," +
                      call(info.id, "[\"gq\", \"gk\", \"gv\"]", out("gqa", "[2, 4, 3, 5]"), ", \"kwargs\": {\"is_causal\": true, \"enable_gqa\": true}"),
                  "\"o\", \"r\", \"d\", \"gqa\"", -1.0, 1.0};
    // Self-attention with packed weights (weights averaged); cross-attention with separate q/k/v
    // weights (kdim 3, vdim 5), b8 attn_mask and key_padding_mask, per-head weights, eval mode
    // with dropout_p 0.1; float 3-D attn_mask and key_padding_mask without weights; is_causal (the
    // float mask it replaces gets no gradient there); unbatched with a b8 mask; a float 2-D mask;
    // attention dropout (0.3, drawn as dropout draws; the weights returned are the dropped ones).
    case tg::OpKind::t_mha: {
      const std::string head = "[\"x\", \"x\", \"x\", 4, 2, \"w\", \"b\", null, null, false, 0.0, \"ow\", \"ob\"]";
      const std::string masks = call("prims.ge", "[\"p\", -2.0]", out("t", "[3, 4]", "b8")) + "," +
                                call("torch.triu", "[\"t\", 1]", out("bm", "[3, 4]", "b8")) + "," +
                                call("prims.slice_prim", "[\"bm\", [0, 0], [3, 3]]", out("bs", "[3, 3]", "b8")) + "," +
                                call("prims.ge", "[\"pk\", -2.0]", out("tk", "[2, 4]", "b8")) + "," +
                                call("torch.triu", "[\"tk\", 3]", out("bk", "[2, 4]", "b8"));
      const std::string calls =
          call(info.id, head, out("o", "[3, 2, 4]") + "," + out("ow_", "[2, 3, 3]")) + "," +
          call(info.id, "[\"x\", \"kx\", \"vx\", 4, 2, null, \"b\", null, null, false, 0.1, \"ow\", null]", out("r", "[3, 2, 4]") + "," + out("rw", "[2, 2, 3, 4]"),
               ", \"kwargs\": {\"training\": false, \"key_padding_mask\": \"bk\", \"attn_mask\": \"bm\", \"use_separate_proj_weight\": true, "
               "\"q_proj_weight\": \"qw\", \"k_proj_weight\": \"kw\", \"v_proj_weight\": \"vw\", \"average_attn_weights\": false}") + "," +
          call(info.id, head, out("c", "[3, 2, 4]"), ", \"kwargs\": {\"need_weights\": false, \"attn_mask\": \"fm3\", \"key_padding_mask\": \"fk\"}") + "," +
          call(info.id, head, out("d", "[3, 2, 4]"), ", \"kwargs\": {\"need_weights\": false, \"attn_mask\": \"fm\", \"is_causal\": true}") + "," +
          call(info.id, "[\"xu\", \"xu\", \"xu\", 4, 2, \"w\", \"b\", null, null, false, 0.0, \"ow\", \"ob\"]", out("u", "[3, 4]") + "," + out("uw", "[2, 3, 3]"),
               ", \"kwargs\": {\"attn_mask\": \"bs\", \"average_attn_weights\": false}") + "," +
          call(info.id, head, out("f", "[3, 2, 4]") + "," + out("fw", "[2, 3, 3]"), ", \"kwargs\": {\"attn_mask\": \"fm\"}") + "," +
          call(info.id, "[\"x\", \"x\", \"x\", 4, 2, \"w\", \"b\", null, null, false, 0.3, \"ow\", \"ob\"]", out("dr", "[3, 2, 4]") + "," + out("drw", "[2, 3, 3]"));
      return Case{f64("x", "[3, 2, 4]") + "," + f64("kx", "[4, 2, 3]") + "," + f64("vx", "[4, 2, 5]") + "," + f64("xu", "[3, 4]") + "," +
                      f64("w", "[12, 4]") + "," + f64("b", "[12]") + "," + f64("ow", "[4, 4]") + "," + f64("ob", "[4]") + "," + f64("qw", "[4, 4]") + "," +
                      f64("kw", "[4, 3]") + "," + f64("vw", "[4, 5]") + "," + f64("fm", "[3, 3]") + "," + f64("fm3", "[4, 3, 3]") + "," +
                      f64("fk", "[2, 3]") + "," + f64("p", "[3, 4]", false) + "," + f64("pk", "[2, 4]", false),
                  masks + "," + calls, "\"o\", \"ow_\", \"r\", \"rw\", \"c\", \"d\", \"u\", \"uw\", \"f\", \"fw\", \"dr\", \"drw\"", -1.0, 1.0};
    }
    case tg::OpKind::t_layer_norm:  // affine over the last dim, and plain over the last two
      return Case{f64("x", "[2, 3, 4]") + "," + f64("w", "[4]") + "," + f64("b", "[4]"),
                  call(info.id, "[\"x\", [4], \"w\", \"b\", 1e-5]", out("o", "[2, 3, 4]")) + "," +
                      call(info.id, "[\"x\", [3, 4]]", out("r", "[2, 3, 4]"), ", \"kwargs\": {\"eps\": 0.001}"),
                  "\"o\", \"r\"", -1.0, 1.0};
    case tg::OpKind::t_rms_norm:
      return Case{f64("x", "[2, 3, 4]") + "," + f64("w", "[4]"),
                  call(info.id, "[\"x\", [4], \"w\", 1e-6]", out("o", "[2, 3, 4]")) + "," +
                      call(info.id, "[\"x\", [3, 4]]", out("r", "[2, 3, 4]"), ", \"kwargs\": {\"eps\": null}"),
                  "\"o\", \"r\"", -1.0, 1.0};
    case tg::OpKind::matmul:  // b without batch dims, and with a's
      return Case{f64("x", "[2, 3, 4]") + "," + f64("y", "[4, 5]") + "," + f64("z", "[2, 4, 5]"),
                  call(info.id, "[\"x\", \"y\"]", out("o", "[2, 3, 5]")) + "," + call(info.id, "[\"x\", \"z\"]", out("r", "[2, 3, 5]")), "\"o\", \"r\""};
    case tg::OpKind::var:
      return Case{x, call(info.id, "[\"x\", [1]]", out("o", "[3]"), ", \"kwargs\": {\"correction\": 1}"), "\"o\""};
    case tg::OpKind::var_mean:
      return Case{x, call(info.id, "[\"x\", [0]]", out("v", "[4]") + "," + out("m", "[4]"), ", \"kwargs\": {\"correction\": 0}"), "\"v\", \"m\""};
    // no gradient flows through these
    case tg::OpKind::floor: case tg::OpKind::ceil: case tg::OpKind::round: case tg::OpKind::trunc: case tg::OpKind::sign:
    case tg::OpKind::signbit: case tg::OpKind::isfinite: case tg::OpKind::bitwise_not:
#define TG_BINARY_EXACT(name, ...) case tg::OpKind::name:
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT
    case tg::OpKind::full: case tg::OpKind::iota: case tg::OpKind::uniform: case tg::OpKind::uniform_philox: case tg::OpKind::argmax:
    case tg::OpKind::argmin: case tg::OpKind::partial_sum: case tg::OpKind::fused_kernel:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace test
