// The matrix products' op-table rows, built from matmul_ops.def: shape rules, gradient rules and
// the lowerings of the torch-level calls.
#include <algorithm>
#include <numeric>

#include "ops/family.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

// a [..., M, K] @ b [K, N] or [..., K, N] (the same batch dims) -> [..., M, N]. prims.matmul's
// transpose_a / transpose_b (2-D operands only) say a is [K, M] / b is [N, K] in memory.
std::vector<OutType> matmul_rule(const Trace& t, const Op& op) {
  Value a = t.value(op.arg("a").value);
  Value b = t.value(op.arg("b").value);
  // A transposed operand's shape as the messages below show it: stored, then as read.
  auto shape_str = [&](const Shape& s) {
    bool read_transposed = (&s == &a.shape && op.has_arg("transpose_a") && op.arg("transpose_a").boolean) || (&s == &b.shape && op.has_arg("transpose_b") && op.arg("transpose_b").boolean);
    return read_transposed ? tg::shape_str(Shape{s[1], s[0]}) + " read transposed as " + tg::shape_str(s) : tg::shape_str(s);
  };
  for (size_t i : {size_t(4), size_t(5)})
    if (op.args.size() > i && op.arg(i).boolean) {
      Value& operand = i == 4 ? a : b;
      if (operand.shape.size() != 2) fail(int(i), "transposes only a 2-D operand, not shape " + tg::shape_str(operand.shape));
      std::swap(operand.shape[0], operand.shape[1]);
    }
  if (a.shape.size() < 2) fail(0, "needs at least 2 dims, has shape " + shape_str(a.shape));
  if (b.shape.size() < 2) fail(1, "needs at least 2 dims, has shape " + shape_str(b.shape));
  if (b.dtype != a.dtype) fail(1, "has dtype " + std::string(dtype_name(b.dtype)) + ", not " + std::string(dtype_name(a.dtype)));
  if (!is_float(a.dtype)) fail(0, "needs a float dtype, not " + std::string(dtype_name(a.dtype)));
  // (cuBLASLt takes no empty GEMM, and an empty inner dim would have to write zeros.)
  if (numel(a.shape) == 0) fail(0, "shape " + shape_str(a.shape) + " is empty: GEMMs of empty operands are not supported");
  if (numel(b.shape) == 0) fail(1, "shape " + shape_str(b.shape) + " is empty: GEMMs of empty operands are not supported");
  size_t r = a.shape.size();
  if (b.shape[b.shape.size() - 2] != a.shape[r - 1])
    fail(1, "shape " + shape_str(b.shape) + " does not match " + shape_str(a.shape) + " (inner dims differ)");
  if (b.shape.size() != 2 && (b.shape.size() != r || !std::equal(a.shape.begin(), a.shape.end() - 2, b.shape.begin())))
    fail(1, "shape " + shape_str(b.shape) + ": batch dims must be absent or equal to those of " + shape_str(a.shape));
  Shape out = a.shape;
  out[r - 1] = b.shape.back();
  if (op.has_arg("bias") && op.arg("bias").is_value()) {  // prims.matmul's bias: one value per output column
    const Value& bias = t.value(op.arg("bias").value);
    if (bias.dtype != a.dtype) fail(2, "has dtype " + std::string(dtype_name(bias.dtype)) + ", not " + std::string(dtype_name(a.dtype)));
    if (bias.shape != Shape{out.back()}) fail(2, "has shape " + shape_str(bias.shape) + ", expected [" + std::to_string(out.back()) + "]");
  }
  // The epilogues with a second output: "gelu_tanh_aux" also writes the GELU's input (the product
  // plus bias, saved for the backward); "bias_grad" also writes a summed over k, [M] (a linear
  // layer's bias gradient, when a is the output gradient read transposed).
  const std::string epilogue = op.has_arg("epilogue") ? op.arg("epilogue").text : "none";
  if (epilogue == "none" || epilogue == "gelu_tanh") return {{a.dtype, out}};
  if (epilogue == "gelu_tanh_aux") return {{a.dtype, out}, {a.dtype, out}};
  if (epilogue == "bias_grad") {
    if (r != 2) fail(3, "\"bias_grad\" needs a 2-D a, not shape " + shape_str(a.shape));
    if (op.arg("bias").is_value()) fail(2, "is not allowed with the \"bias_grad\" epilogue");
    return {{a.dtype, out}, {a.dtype, {a.shape[0]}}};
  }
  fail(3, "is \"" + epilogue + "\"; the epilogues are \"none\", \"gelu_tanh\", \"gelu_tanh_aux\" and \"bias_grad\"");
}

// linear(a [..., in], w [out, in], bias [out] or null) -> [..., out].
std::vector<OutType> linear_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  const Value& w = t.value(op.arg("w").value);
  if (a.shape.empty()) fail(0, "needs at least one dim");
  if (w.shape.size() != 2) fail(1, "weight must be 2-d [out, in], has shape " + shape_str(w.shape));
  if (w.dtype != a.dtype) fail(1, "has dtype " + std::string(dtype_name(w.dtype)) + ", not " + std::string(dtype_name(a.dtype)));
  if (w.shape[1] != a.shape.back()) fail(1, "weight shape " + shape_str(w.shape) + " does not match input shape " + shape_str(a.shape));
  if (op.arg("bias").is_value()) {
    const Value& b = t.value(op.arg("bias").value);
    if (b.shape != Shape{w.shape[0]} || b.dtype != a.dtype) fail(2, "bias must be " + std::string(dtype_name(a.dtype)) + "[" + std::to_string(w.shape[0]) + "]");
  }
  Shape out = a.shape;
  out.back() = w.shape[0];
  return {{a.dtype, out}};
}

// addmm(input, mat1 [n, m], mat2 [m, p], *, beta=1, alpha=1) and baddbmm(input, batch1 [b, n, m],
// batch2 [b, m, p], *, beta=1, alpha=1): input broadcasts to the product's shape.
std::vector<OutType> addmm_rule(const Trace& t, const Op& op) {
  const Value& in = float_tensor(t, op, 0);
  const bool addmm = op.info->kind == OpKind::t_addmm;
  const Value& a = t.value(op.arg(addmm ? "mat1" : "batch1").value);
  const Value& b = t.value(op.arg(addmm ? "mat2" : "batch2").value);
  const size_t rank = addmm ? 2 : 3;
  if (a.shape.size() != rank) fail(1, "needs " + std::to_string(rank) + " dims, has shape " + shape_str(a.shape));
  if (b.shape.size() != rank) fail(2, "needs " + std::to_string(rank) + " dims, has shape " + shape_str(b.shape));
  if (a.dtype != in.dtype) fail(1, "has dtype " + std::string(dtype_name(a.dtype)) + ", not " + std::string(dtype_name(in.dtype)));
  if (b.dtype != in.dtype) fail(2, "has dtype " + std::string(dtype_name(b.dtype)) + ", not " + std::string(dtype_name(in.dtype)));
  if (a.shape[rank - 1] != b.shape[rank - 2] || (rank == 3 && a.shape[0] != b.shape[0]))
    fail(2, "shape " + shape_str(b.shape) + " does not multiply with " + shape_str(a.shape));
  Shape out = a.shape;
  out.back() = b.shape.back();
  if (in.shape.size() > rank) fail(0, "shape " + shape_str(in.shape) + " does not broadcast to " + shape_str(out));
  for (size_t k = 0; k < in.shape.size(); ++k)
    if (in.shape[k] != 1 && in.shape[k] != out[rank - in.shape.size() + k]) fail(0, "shape " + shape_str(in.shape) + " does not broadcast to " + shape_str(out));
  need_number_literal(op, "beta");
  need_number_literal(op, "alpha");
  if (op.has_arg("out") && op.arg("out").kind != Arg::Kind::none) fail(5, "out must be null");  // baddbmm's (Thunder records it)
  return {{in.dtype, out}};
}

// bmm(input [b, n, m], mat2 [b, m, p]) -> [b, n, p].
std::vector<OutType> bmm_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  const Value& b = t.value(op.arg("mat2").value);
  if (a.shape.size() != 3) fail(0, "needs 3 dims, has shape " + shape_str(a.shape));
  if (b.shape.size() != 3 || b.shape[0] != a.shape[0] || b.shape[1] != a.shape[2]) fail(1, "shape " + shape_str(b.shape) + " does not multiply with " + shape_str(a.shape));
  if (b.dtype != a.dtype) fail(1, "has dtype " + std::string(dtype_name(b.dtype)) + ", not " + std::string(dtype_name(a.dtype)));
  return {{a.dtype, {a.shape[0], a.shape[1], b.shape[2]}}};
}

// embedding(a integer ids [...], weight [V, D], padding_idx=None, max_norm=None, ...) -> [..., D].
std::vector<OutType> embedding_rule(const Trace& t, const Op& op) {
  const Value& ids = t.value(op.arg("a").value);
  const Value& w = t.value(op.arg("weight").value);
  if (ids.dtype != DType::i64 && ids.dtype != DType::i32) fail(0, "needs integer ids (i64 or i32), not " + std::string(dtype_name(ids.dtype)));
  if (w.shape.size() != 2 || !is_float(w.dtype)) fail(1, "weight must be a float [num_embeddings, dim] tensor");
  if (op.arg("padding_idx").kind != Arg::Kind::none && op.arg("padding_idx").kind != Arg::Kind::integer) fail(2, "padding_idx must be an integer literal or null");
  if (op.arg("padding_idx").kind == Arg::Kind::integer && (op.arg("padding_idx").integer < -w.shape[0] || op.arg("padding_idx").integer >= w.shape[0]))
    fail(2, "padding_idx " + std::to_string(op.arg("padding_idx").integer) + " is out of range for " + std::to_string(w.shape[0]) + " embeddings");
  if (op.arg("max_norm").kind != Arg::Kind::none) fail(3, "max_norm is not supported yet");
  if (op.arg("scale_grad_by_freq").boolean) fail(5, "scale_grad_by_freq is not supported yet");
  Shape out = ids.shape;
  out.push_back(w.shape[1]);
  return {{w.dtype, out}};
}

// ---- gradient rules ---------------------------------------------------------------------------

// a @ b: ga = g @ b^T; gb = a^T @ g, summed over a's batch dims when b has none (done as one
// GEMM over the batch folded into M).
// A bias (the epilogue pass's extension) gets g summed over every dim but the last. The GELU
// epilogue is only ever written after autograd, so a trace differentiating through it is refused.
Contributions matmul_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  if (op.has_arg("epilogue") && op.arg("epilogue").text != "none")
    throw UserError(op.where, "prims.matmul with epilogue=\"" + op.arg("epilogue").text + "\" has no gradient rule; write the activation as its own op");
  if ((op.has_arg("transpose_a") && op.arg("transpose_a").boolean) || (op.has_arg("transpose_b") && op.arg("transpose_b").boolean))
    throw UserError(op.where, "prims.matmul with transpose_a or transpose_b has no gradient rule; write the transpose as its own op");
  V a = op.arg("a").value, b = op.arg("b").value, c = cot[0];
  Shape as = shape_of(g, a), bs = shape_of(g, b), cs = shape_of(g, c);
  Contributions out = {{a, matmul(g, c, transpose_last_two(g, b))}};
  if (bs.size() == 2 && as.size() > 2) {
    const Dim rows = numel_dim(as, as.size() - 1);
    V a2 = reshape(g, a, {rows, as.back()}), c2 = reshape(g, c, {rows, cs.back()});
    out.emplace_back(b, matmul(g, transpose_last_two(g, a2), c2));
  } else {
    out.emplace_back(b, matmul(g, transpose_last_two(g, a), c));
  }
  if (op.has_arg("bias") && op.arg("bias").is_value()) {
    std::vector<int64_t> leading(cs.size() - 1);
    std::iota(leading.begin(), leading.end(), 0);
    out.emplace_back(op.arg("bias").value, sum(g, c, leading));
  }
  return out;
}

// ga = g @ w (no transpose of w); gw = g^T @ a over all rows; gb = sum of g.
Contributions linear_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value, w = op.arg("w").value, c = cot[0];
  Shape as = shape_of(g, a), cs = shape_of(g, c);
  const Dim rows = numel_dim(as, as.size() - 1);
  V c2 = reshape(g, c, {rows, cs.back()}), a2 = reshape(g, a, {rows, as.back()});
  Contributions out = {{a, matmul(g, c, w)}, {w, matmul(g, call(g, "prims.transpose", {val(c2), int_list({1, 0})}), a2)}};
  if (op.arg("bias").is_value()) out.emplace_back(op.arg("bias").value, sum(g, c2, {0}));
  return out;
}

// b8 [ids, num_embeddings]: row i marks the table row id i reads. `skip_padding`: not the
// padding_idx row (it gets no gradient).
V embedding_onehot(G& g, const Op& op, bool skip_padding) {
  V ids = op.arg("a").value;
  const Dim n = numel_dim(shape_of(g, ids)), rows = shape_of(g, op.arg("weight").value)[0];
  V classes = call(g, "prims.iota", {Arg::of_dim(rows), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(value_of(g, ids).dtype)});
  V onehot = cmp(g, "prims.eq", val(broadcast(g, reshape(g, ids, {n}), {n, rows}, {0})), val(broadcast(g, classes, {n, rows}, {1})));
  if (!skip_padding || op.arg("padding_idx").kind == Arg::Kind::none) return onehot;
  const int64_t index = op.arg("padding_idx").integer;  // (counted from the end where negative: rows + index, an expression)
  const Dim padding = index < 0 ? add_dims(rows, Dim::constant(index)) : Dim::constant(index);
  return call(g, "prims.bitwise_and", {val(onehot), val(broadcast(g, cmp(g, "prims.ne", val(classes), Arg::of_dim(padding)), {n, rows}, {1}))});
}

// Reads the ids: onehot^T @ g, the padding_idx row left out (PyTorch gives it no gradient).
Contributions embedding_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V w = op.arg("weight").value;
  const Shape& cs = shape_of(g, cot[0]);  // [ids..., dim]
  V c = reshape(g, cot[0], {numel_dim(cs, cs.size() - 1), cs.back()});
  V onehot = convert(g, embedding_onehot(g, op, true), value_of(g, w).dtype);
  return {{w, matmul(g, call(g, "prims.transpose", {val(onehot), int_list({1, 0})}), c)}};
}

// ---- lowerings --------------------------------------------------------------------------------

V lower_linear(G& g, const Op& op) { return linear(g, op.arg("a").value, op.arg("w").value, optional_value(op.arg("bias"))); }

V lower_matmul(G& g, const Op& op) { return matmul(g, op.arg("a").value, op.arg("b").value); }
V lower_bmm(G& g, const Op& op) { return matmul(g, op.arg("input").value, op.arg("mat2").value); }

// addmm / baddbmm: beta * input + alpha * (a @ b). With beta 0 input is not read (PyTorch
// ignores its NaNs too), so it gets no gradient.
V lower_addmm(G& g, const Op& op) {
  const bool addmm = op.info->kind == OpKind::t_addmm;
  V y = matmul(g, op.arg(addmm ? "mat1" : "batch1").value, op.arg(addmm ? "mat2" : "batch2").value);
  const double beta = op.arg("beta").as_double(), alpha = op.arg("alpha").as_double();
  if (alpha != 1.0) y = mul(g, val(y), num(alpha));
  if (beta == 0.0) return y;
  V in = broadcast_to(g, op.arg("input").value, shape_of(g, y));
  if (beta != 1.0) in = mul(g, val(in), num(beta));
  return add(g, val(in), val(y));
}

// One-hot rows times the table: exact (one nonzero term per output); the weight gradient is
// onehot^T @ g, the scatter-add embedding needs (embedding_gradient).
V lower_embedding(G& g, const Op& op) {
  V w = op.arg("weight").value;
  V rows = matmul(g, convert(g, embedding_onehot(g, op, false), value_of(g, w).dtype), w);
  return reshape(g, rows, shape_of(g, op.outs[0]));
}

}  // namespace

#define TG_FAMILY_ROWS matmul_op_rows
#define TG_FAMILY "matmul_ops"
#define TG_FAMILY_FILE "ops/matmul_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
