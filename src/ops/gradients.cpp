#include "ops/gradients.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/distributed.h"
#include "ops/prim_vocabulary.h"
#include "ops/torch_ops.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using V = ValueId;
using G = GradBuilder;
using Contributions = std::vector<GradContribution>;

using namespace vocabulary;

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
    int64_t rows = numel(as) / as.back();
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

// ---- rule shapes ----------------------------------------------------------------------------

// d out / d a = f(a, out): contribution g * f.
using LocalDerivative = std::function<V(G&, const Op&, V a, V out)>;
GradRule unary_rule(LocalDerivative f) {
  return [f](G& g, const Op& op, const std::vector<V>& cot) -> Contributions {
    V a = op.arg("a").value;
    return {{a, mul(g, val(cot[0]), val(f(g, op, a, op.outs[0])))}};
  };
}

// Contributions of both operands of a binary op; number operands get none.
using BinaryDerivatives = std::function<std::pair<V, V>(G&, const Arg& a, const Arg& b, V out, V cot)>;
GradRule binary_rule(BinaryDerivatives f) {
  return [f](G& g, const Op& op, const std::vector<V>& cot) -> Contributions {
    auto [ga, gb] = f(g, op.arg("a"), op.arg("b"), op.outs[0], cot[0]);
    Contributions out;
    if (is_tensor(g, op.arg("a")) && ga != kNoValue) out.emplace_back(op.arg("a").value, ga);
    if (is_tensor(g, op.arg("b")) && gb != kNoValue) out.emplace_back(op.arg("b").value, gb);
    return out;
  };
}

// ---- elementwise prims ----------------------------------------------------------------------

V square(G& g, V x) { return mul(g, val(x), val(x)); }

const double kLn2 = std::log(2.0), kLn10 = std::log(10.0), kTwoOverSqrtPi = 2.0 / std::sqrt(M_PI);

V abs_derivative(G& g, const Op&, V a, V) { return unary(g, "prims.sign", a); }

// A unary float prim declared without a gradient rule: differentiating through it is refused.
[[noreturn]] V no_gradient_rule(const Op& op) {
  throw UserError(op.where, op.symbol + " has no gradient rule in thunder-gen, and a value that requires grad flows through it");
}
#define TG_NO_GRADIENT_RULE no_gradient_rule(op)

Contributions neg_gradient(G& g, const Op& op, const std::vector<V>& cot) { return {{op.arg("a").value, neg(g, cot[0])}}; }

// maximum's and minimum's contribution to `self`: the cotangent c where self wins the comparison
// `wins` against `other`, half of it at a tie (PyTorch shares ties equally), else 0.
V extremum_share(G& g, std::string_view wins, const Arg& self, const Arg& other, V c) {
  V won = cmp(g, wins, self, other);
  V tie = cmp(g, "prims.eq", self, other);
  V half = mul(g, val(c), num(0.5));
  return where(g, won, val(c), val(where(g, tie, val(half), num(0.0))));
}

// where(pred, a, b): the cotangent goes to the branch each element took; a literal predicate
// sends all of it to one branch and zeros to the other.
Contributions where_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  Contributions out;
  V pred = op.arg("pred").is_value() ? op.arg("pred").value : kNoValue;
  auto pick = [&](const Arg& branch, bool when) {
    if (!is_tensor(g, branch)) return;
    V c = pred == kNoValue ? ((op.arg("pred").boolean == when) ? cot[0] : zeros(g, shape_of(g, cot[0]), value_of(g, cot[0]).dtype))
                           : where(g, pred, when ? val(cot[0]) : num(0.0), when ? num(0.0) : val(cot[0]));
    out.emplace_back(branch.value, c);
  };
  pick(op.arg("a"), true);
  pick(op.arg("b"), false);
  return out;
}

// lerp(s, e, w) = s + w (e - s).
Contributions lerp_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  const Arg &s = op.arg("start"), &e = op.arg("end"), &w = op.arg("weight");
  V c = cot[0];
  Contributions out = {{s.value, mul(g, val(c), one_minus(g, w))}, {e.value, mul(g, val(c), w)}};
  if (is_tensor(g, w)) out.emplace_back(w.value, mul(g, val(c), val(sub(g, e, s))));
  return out;
}

// A conversion from an integer or bool carries no gradient.
Contributions convert_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  if (!is_float(value_of(g, a).dtype)) return {};
  return {{a, convert(g, cot[0], value_of(g, a).dtype)}};
}

// ---- shape ops and reductions -------------------------------------------------------------

// Reductions to one value over dims: amax/amin share the gradient among the extreme elements.
Contributions extreme_reduction(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& shape = shape_of(g, a);
  auto dims = reduction_dims(g.trace(), op);
  V hit = cmp(g, "prims.eq", val(a), val(unreduce(g, op.outs[0], shape, dims)));
  V count = sum(g, convert(g, hit, value_of(g, a).dtype), dims);
  V share = div(g, val(cot[0]), val(count));
  return {{a, where(g, hit, val(unreduce(g, share, shape, dims)), num(0.0))}};
}

Contributions variance(G& g, const Op& op, const std::vector<V>& cot) {
  // var = sum((a - mean)^2) / (n - correction): d var / d a = 2 (a - mean) / (n - correction).
  V a = op.arg("a").value;
  const Shape& shape = shape_of(g, a);
  auto dims = reduction_dims(g.trace(), op);
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  V mean = op.info->kind == OpKind::var_mean ? op.outs[1] : div(g, val(sum(g, a, dims)), num(double(n)));
  V centered = sub(g, val(a), val(unreduce(g, mean, shape, dims)));
  V total = kNoValue;
  if (cot[0] != kNoValue) {
    // n - correction; a scalar correction needs a tensor to subtract from.
    Arg denominator = op.arg("correction").is_number() ? num(double(n) - op.arg("correction").as_double())
                                            : val(sub(g, val(full(g, shape_of(g, cot[0]), double(n), value_of(g, cot[0]).dtype)), op.arg("correction")));
    V scale = div(g, val(mul(g, val(cot[0]), num(2.0))), denominator);
    total = mul(g, val(centered), val(unreduce(g, scale, shape, dims)));
  }
  if (op.info->kind == OpKind::var_mean && cot.size() > 1 && cot[1] != kNoValue) {
    V from_mean = unreduce(g, div(g, val(cot[1]), num(double(n))), shape, dims);
    total = total == kNoValue ? from_mean : add(g, val(total), val(from_mean));
  }
  if (total == kNoValue) return {};
  return {{a, total}};
}

// The input positions a slice or pad reads: for output/input lengths and out = lo + p * step.
Contributions pad_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& in = shape_of(g, a);
  const Shape& out = shape_of(g, op.outs[0]);
  std::vector<int64_t> start, end, strides;
  std::vector<Arg> repad;
  bool empty = false;
  for (size_t d = 0; d < in.size(); ++d) {
    auto lhi = op.arg("padding_config").items[d].int_list();
    int64_t lo = lhi[0], step = lhi[2] + 1, len = in[d];
    // input positions p whose padded position lo + p * step lands inside the output
    int64_t p0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t p1 = len;
    while (p1 > p0 && lo + (p1 - 1) * step >= out[d]) --p1;
    if (p1 <= p0) { empty = true; break; }
    start.push_back(lo + p0 * step);
    end.push_back(lo + (p1 - 1) * step + 1);
    strides.push_back(step);
    repad.push_back(int_list({p0, len - p1, 0}));
  }
  if (empty) return {{a, zeros(g, in, value_of(g, a).dtype)}};
  V taken = call(g, "prims.slice_prim", {val(cot[0]), int_list(start), int_list(end), int_list(strides)});
  bool cropped = false;
  for (const Arg& r : repad) cropped = cropped || r.items[0].integer != 0 || r.items[1].integer != 0;
  if (!cropped) return {{a, taken}};
  return {{a, call(g, "prims.pad", {val(taken), num(0.0), Arg::of_list(repad)})}};
}

Contributions slice_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& in = shape_of(g, a);
  const Shape& out = shape_of(g, op.outs[0]);
  auto start = op.arg("start_indices").int_list();
  std::vector<int64_t> strides(in.size(), 1);
  if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
  std::vector<Arg> config;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] == 0) return {{a, zeros(g, in, value_of(g, a).dtype)}};
    int64_t last = start[d] + (out[d] - 1) * strides[d];
    config.push_back(int_list({start[d], in[d] - last - 1, strides[d] - 1}));
  }
  return {{a, call(g, "prims.pad", {val(cot[0]), num(0.0), Arg::of_list(config)})}};
}

Contributions broadcast_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& in = shape_of(g, a);
  const Shape& out = shape_of(g, op.outs[0]);
  auto bdims = op.arg("broadcast_dimensions").int_list();
  std::vector<int64_t> summed;
  for (int64_t d = 0; d < int64_t(out.size()); ++d) {
    auto it = std::find(bdims.begin(), bdims.end(), d);
    if (it == bdims.end() || (in[it - bdims.begin()] == 1 && out[d] != 1)) summed.push_back(d);
  }
  return {{a, reshape(g, sum(g, cot[0], summed), in)}};
}

Contributions cat_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  const Shape& out = shape_of(g, op.outs[0]);
  int64_t dim = op.arg("dim").integer < 0 ? op.arg("dim").integer + int64_t(out.size()) : op.arg("dim").integer;
  Contributions result;
  int64_t offset = 0;
  for (const Arg& piece : op.arg("tensors").items) {
    const Shape& s = shape_of(g, piece.value);
    std::vector<int64_t> start(out.size(), 0), end(out.begin(), out.end());
    start[dim] = offset;
    end[dim] = offset + s[dim];
    result.emplace_back(piece.value, call(g, "prims.slice_prim", {val(cot[0]), int_list(start), int_list(end), Arg{}}));
    offset += s[dim];
  }
  return result;
}

// reshape and squeeze: the cotangent reshaped back.
Contributions reshape_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  return {{op.arg("a").value, reshape(g, cot[0], shape_of(g, op.arg("a").value))}};
}

// The cotangent transposed by the inverse permutation.
Contributions transpose_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto perm = op.arg("permutation").int_list();
  std::vector<int64_t> inverse(perm.size());
  for (size_t j = 0; j < perm.size(); ++j) inverse[perm[j] < 0 ? perm[j] + int64_t(perm.size()) : perm[j]] = int64_t(j);
  return {{op.arg("a").value, call(g, "prims.transpose", {val(cot[0]), int_list(inverse)})}};
}

Contributions sum_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  return {{a, unreduce(g, cot[0], shape_of(g, a), reduction_dims(g.trace(), op))}};
}

Contributions prod_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  // d prod / d a_i = prod / a_i (undefined where a_i is zero; see docs/design-notes.md).
  V a = op.arg("a").value;
  auto dims = reduction_dims(g.trace(), op);
  V scaled = mul(g, val(cot[0]), val(op.outs[0]));
  return {{a, div(g, val(unreduce(g, scaled, shape_of(g, a), dims)), val(a))}};
}

}  // namespace

// Every kind decides here, once, where its gradient rule comes from (the compiler insists on each
// kind): its own rule below, a torch-level rule (torch_ops.cpp), Thunder's distributed rules
// (distributed.h), or none.
RuleSource rule_source(OpKind kind) {
  switch (kind) {
#define TG_UNARY_FLOAT(name, ...) case OpKind::name:
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
#define TG_BINARY_FLOAT(name, ...) case OpKind::name:
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
    case OpKind::abs: case OpKind::neg: case OpKind::where: case OpKind::lerp:
    case OpKind::convert_element_type: case OpKind::broadcast_in_dim: case OpKind::reshape: case OpKind::squeeze:
    case OpKind::transpose: case OpKind::slice: case OpKind::pad: case OpKind::cat: case OpKind::sum:
    case OpKind::prod: case OpKind::amax: case OpKind::amin: case OpKind::var: case OpKind::var_mean:
    case OpKind::matmul:
      return RuleSource::own;
    case OpKind::t_softmax: case OpKind::t_log_softmax: case OpKind::t_relu: case OpKind::t_sigmoid: case OpKind::t_tanh:
    case OpKind::t_silu: case OpKind::t_gelu: case OpKind::t_linear: case OpKind::t_matmul: case OpKind::t_reshape:
    case OpKind::t_permute: case OpKind::t_transpose: case OpKind::t_unsqueeze: case OpKind::t_sum: case OpKind::t_mean:
    case OpKind::t_layer_norm: case OpKind::t_rms_norm: case OpKind::t_cross_entropy: case OpKind::t_nll_loss:
    case OpKind::t_cat: case OpKind::t_split: case OpKind::t_var: case OpKind::t_embedding: case OpKind::t_sdpa:
    case OpKind::t_addmm: case OpKind::t_baddbmm: case OpKind::t_bmm: case OpKind::t_addcmul: case OpKind::t_addcdiv:
    case OpKind::t_max: case OpKind::t_min: case OpKind::t_clamp: case OpKind::t_masked_fill: case OpKind::t_tril:
    case OpKind::t_triu: case OpKind::t_cumsum: case OpKind::t_normalize: case OpKind::t_mha:
    case OpKind::t_conv1d: case OpKind::t_conv2d:
    case OpKind::t_convolution: case OpKind::t_prim_linear:
    case OpKind::t_dropout: case OpKind::shallow_copy: case OpKind::stride_order:
      return RuleSource::torch_level;
    // Distributed prims: synchronize has Thunder's rule, the collectives theirs (src/ops/distributed.h);
    // wait and the bucket prims are differentiated through their lowering.
    case OpKind::t_synchronize: case OpKind::t_wait: case OpKind::t_pack: case OpKind::t_unpack: case OpKind::t_pack_for_fsdp:
    case OpKind::t_unpack_for_fsdp: case OpKind::all_reduce: case OpKind::all_gather: case OpKind::reduce_scatter: case OpKind::broadcast:
      return RuleSource::distributed;
    // No gradient flows: piecewise constant, boolean or integer results, sources.
    case OpKind::floor: case OpKind::ceil: case OpKind::round: case OpKind::trunc: case OpKind::sign:
    case OpKind::signbit: case OpKind::isfinite: case OpKind::bitwise_not:
#define TG_BINARY_EXACT(name, ...) case OpKind::name:
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT
    case OpKind::full: case OpKind::iota: case OpKind::uniform: case OpKind::uniform_philox: case OpKind::argmax: case OpKind::argmin: case OpKind::partial_sum: case OpKind::fused_kernel:
      return RuleSource::none;
  }
  throw InternalError("an OpKind outside the enum");
}

namespace {

// The rules of the kinds whose RuleSource is own.
GradRule own_rule(OpKind kind) {
  switch (kind) {
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) \
  case OpKind::name:                                         \
    return unary_rule([]([[maybe_unused]] G& g, [[maybe_unused]] const Op& op, [[maybe_unused]] V a, [[maybe_unused]] V out) -> V { return derivative; });
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
#define TG_BINARY_FLOAT(name, torch, code, integer_code, accepts, continuity, saves, shared, grad_a, grad_b, a_lo, a_hi, b_lo, b_hi) \
  case OpKind::name:                                                                                                    \
    return binary_rule([]([[maybe_unused]] G& g, [[maybe_unused]] const Arg& a, [[maybe_unused]] const Arg& b,         \
                          [[maybe_unused]] V out, [[maybe_unused]] V c) {                                               \
      [[maybe_unused]] const V s = shared;                                                                              \
      return std::pair{is_tensor(g, a) ? V(grad_a) : kNoValue, is_tensor(g, b) ? V(grad_b) : kNoValue};                \
    });
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
    case OpKind::abs: return unary_rule(abs_derivative);
    case OpKind::neg: return neg_gradient;

    case OpKind::where: return where_gradient;
    case OpKind::lerp: return lerp_gradient;
    case OpKind::convert_element_type: return convert_gradient;

    case OpKind::broadcast_in_dim: return broadcast_gradient;
    case OpKind::reshape:
    case OpKind::squeeze: return reshape_gradient;
    case OpKind::transpose: return transpose_gradient;
    case OpKind::slice: return slice_gradient;
    case OpKind::pad: return pad_gradient;
    case OpKind::cat: return cat_gradient;
    case OpKind::sum: return sum_gradient;
    case OpKind::prod: return prod_gradient;
    case OpKind::amax:
    case OpKind::amin: return extreme_reduction;
    case OpKind::var:
    case OpKind::var_mean: return variance;
    case OpKind::matmul: return matmul_gradient;
    default:
      throw InternalError("no rule of its own for an op whose rule_source says it has one");
  }
}

}  // namespace

GradRule gradient_rule(OpKind kind) {
  switch (rule_source(kind)) {
    case RuleSource::own: return own_rule(kind);
    case RuleSource::torch_level: return torch_gradient(kind);
    case RuleSource::distributed: return distributed_gradient(kind);
    case RuleSource::none: return nullptr;
  }
  return nullptr;
}

}  // namespace tg

namespace tg {

std::string_view gradient_saves(OpKind kind) {
  if (rule_source(kind) == RuleSource::torch_level) return torch_gradient_saves(kind);
  if (!gradient_rule(kind)) return "";  // (none, or differentiated through its lowering)
  switch (kind) {
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) \
  case OpKind::name: return #saves;
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
#define TG_BINARY_FLOAT(name, torch, code, integer_code, accepts, continuity, saves, ...) \
  case OpKind::name: return saves;
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
    case OpKind::prod: case OpKind::amax: case OpKind::amin: case OpKind::var_mean:
      return "inputs, output";
    // Linear in their operands (or moving elements): the cotangent alone decides the gradient.
    case OpKind::neg: case OpKind::convert_element_type: case OpKind::broadcast_in_dim:
    case OpKind::reshape: case OpKind::transpose: case OpKind::squeeze: case OpKind::slice: case OpKind::pad: case OpKind::cat:
    case OpKind::sum: case OpKind::t_synchronize: case OpKind::all_reduce: case OpKind::all_gather: case OpKind::reduce_scatter:
    case OpKind::broadcast:
      return "nothing";
    default:
      return "inputs";
  }
}

}  // namespace tg
