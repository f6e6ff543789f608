// The reference's evaluator of every op kind, in a table generated from the declarations
// (src/ops/all_ops.def): an op declared with its ATen call (aten("name(params)")) or an
// elementwise prim (its PyTorch function) is evaluated from its declaration (evaluate.h); an op
// declared by_hand by the function named after its kind in `by_hand` below, which the table names,
// so the compiler insists on one for each. Torch-level ops are LibTorch's own functions, not
// thunder-gen's lowering, so the lowering is checked too; 16-bit inputs compute in f32 (they are
// held in f32) and round at the end.
#include <cmath>

#include "evaluate.h"
#include "ops/torch_ops.h"
#include "support/diagnostics.h"

namespace tg::reference {
namespace {

// The first operand, as held; the output's type and compute dtype.
const Tensor& in0(Interpreter& in, const Op& op) { return in.value(op.arg(0)); }
const Value& output(Interpreter& in, const Op& op, size_t i = 0) { return in.trace().value(op.outs[i]); }
torch::Dtype out_compute(Interpreter& in, const Op& op) { return in.compute(output(in, op).dtype); }
DType dtype_of(Interpreter& in, const Arg& a) { return in.trace().value(a.value).dtype; }

// The dims a torch-level dim argument names (null: all).
std::vector<int64_t> torch_dims(const Arg& dim, int64_t rank) {
  if (dim.kind == Arg::Kind::integer) return {dim.integer};
  if (dim.kind == Arg::Kind::list) return dim.int_list();
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

// A convolution's or pooling's per-spatial-dim argument: a number or a list (of one, or n).
std::vector<int64_t> per_dim(const Arg& a, size_t n) {
  std::vector<int64_t> v = a.kind == Arg::Kind::integer ? std::vector<int64_t>{a.integer} : a.int_list();
  if (v.size() == 1) v.assign(n, v[0]);
  return v;
}
// The spatial dims a pooling op's id names (max_pool2d: 2).
size_t pooled_dims(const Op& op) { return size_t(op.info->id[op.info->id.size() - 2] - '0'); }

}  // namespace

namespace by_hand {

std::vector<Tensor> where(Interpreter& in, const Op& op) {
  const Operands a(in, op);
  Tensor pred = in.operand(op.arg("pred"), torch::kBool);
  if (is_torch_form(*op.info)) pred = pred.expand(to_vec(output(in, op).shape));
  return {torch::where(pred, a.at(1), a.at(2))};
}

// The operand rounded to its own dtype (rounding rule 4, docs/design-notes.md), then to the stored
// type, then held in the compute type.
std::vector<Tensor> convert_element_type(Interpreter& in, const Op& op) {
  const DType to = op.arg("dtype").dtype;
  const Tensor x = Interpreter::as_stored(in0(in, op), dtype_of(in, op.arg("a")));
  if (to == DType::b8) return {x != 0};
  return {x.to(torch_storage_dtype(to)).to(in.compute(to))};
}

std::vector<Tensor> full(Interpreter& in, const Op& op) {
  return {in.operand(op.arg("fill_value"), out_compute(in, op)).expand(to_vec(output(in, op).shape)).contiguous()};
}

std::vector<Tensor> iota(Interpreter& in, const Op& op) {
  const int64_t n = op.arg("length").integer, start = op.arg("start").integer, step = op.arg("step").integer;
  return {torch::arange(0, n, torch::kInt64).mul(step).add(start).to(out_compute(in, op))};
}

std::vector<Tensor> uniform(Interpreter&, const Op&) { throw InternalError("prims.uniform reached the reference unbound: bind_rng runs first"); }

// The runtime's own generator (templates/tg_runtime.cuh), so the draws are the same; in the
// output's compute type, as the kernel's expression computes it.
std::vector<Tensor> uniform_philox(Interpreter& in, const Op& op) {
  const double lo = in.operand(op.arg("minval"), torch::kDouble).item<double>(), hi = in.operand(op.arg("maxval"), torch::kDouble).item<double>();
  const Shape& shape = output(in, op).shape;
  const Tensor u = in.philox_uniforms(op, numel(shape));
  return {torch::full({}, lo, torch::kFloat).add(u.mul(float(hi - lo))).to(out_compute(in, op)).reshape(to_vec(shape))};
}

std::vector<Tensor> broadcast_in_dim(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  const Shape& shape = output(in, op).shape;
  const std::vector<int64_t> bdims = op.arg("broadcast_dimensions").int_list();
  std::vector<int64_t> view(shape.size(), 1);
  for (size_t i = 0; i < bdims.size(); ++i) view[bdims[i]] = x.size(int64_t(i));
  return {x.reshape(view).expand(to_vec(shape))};
}

std::vector<Tensor> squeeze(Interpreter& in, const Op& op) { return {in0(in, op).reshape(to_vec(output(in, op).shape))}; }

std::vector<Tensor> slice(Interpreter& in, const Op& op) {
  Tensor x = in0(in, op);
  const std::vector<int64_t> start = op.arg("start_indices").int_list(), end = op.arg("end_indices").int_list();
  std::vector<int64_t> strides(start.size(), 1);
  if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
  for (size_t d = 0; d < start.size(); ++d) x = x.slice(int64_t(d), start[d], end[d], strides[d]);
  return {x};
}

// Pads one dim at a time: positions lo + p * (interior + 1) take input element p.
std::vector<Tensor> pad(Interpreter& in, const Op& op) {
  Tensor x = in0(in, op);
  const Arg& config = op.arg("padding_config");
  for (size_t d = 0; d < config.items.size(); ++d) {
    const std::vector<int64_t> lhi = config.items[d].int_list();
    const int64_t len = x.size(int64_t(d)), step = lhi[2] + 1;
    const int64_t out_len = lhi[0] + lhi[1] + len + (len > 0 ? (len - 1) * lhi[2] : 0);
    std::vector<int64_t> shape = x.sizes().vec();
    shape[d] = out_len;
    Tensor padded = in.operand(op.arg("padding_value"), x.scalar_type()).expand(shape).contiguous();
    std::vector<int64_t> from, to;
    for (int64_t p = 0; p < len; ++p)
      if (const int64_t o = lhi[0] + p * step; o >= 0 && o < out_len) from.push_back(p), to.push_back(o);
    if (!from.empty())
      padded.index_copy_(int64_t(d), torch::tensor(to, torch::kInt64), x.index_select(int64_t(d), torch::tensor(from, torch::kInt64)));
    x = padded;
  }
  return {x};
}

// sum, prod, amax, amin over the reduced dims (none: the operand itself; LibTorch would reduce
// every dim for an empty list). Integers sum and multiply in i64; amax and amin read 16-bit
// operands rounded, as maximum's are, for the gradient's mask.
std::vector<Tensor> reduce(Interpreter& in, const Op& op) {
  Tensor x = in0(in, op);
  const std::vector<int64_t> dims = reduction_dims(in.trace(), op);
  if (dims.empty()) return {x};
  const torch::Dtype accumulate = is_float(output(in, op).dtype) ? x.scalar_type() : torch::kInt64;
  switch (op.info->kind) {
    case OpKind::sum: return {x.sum(dims, false, accumulate)};
    case OpKind::amax: return {Interpreter::as_stored(x, dtype_of(in, op.arg("a"))).amax(dims)};
    case OpKind::amin: return {Interpreter::as_stored(x, dtype_of(in, op.arg("a"))).amin(dims)};
    default:
      for (auto it = dims.rbegin(); it != dims.rend(); ++it) x = x.prod(*it, false, accumulate);
      return {x};
  }
}
constexpr Evaluator sum = reduce, prod = reduce, amax = reduce, amin = reduce;

// Spelled out: the meaning is plain and no overload of torch::var_mean is guessed at.
std::vector<Tensor> var_mean(Interpreter& in, const Op& op) {
  const std::vector<int64_t> dims = reduction_dims(in.trace(), op);
  const double correction = op.arg("correction").is_value() ? in.value(op.arg("correction")).item<double>() : op.arg("correction").as_double();
  const Tensor& x = in0(in, op);
  int64_t n = 1;
  for (int64_t d : dims) n *= x.size(d);
  Tensor mean = dims.empty() ? x : x.mean(dims, true);
  const Tensor var = dims.empty() ? torch::zeros_like(x) : (x - mean).square().sum(dims) / (double(n) - correction);
  if (!dims.empty()) mean = mean.reshape(var.sizes());
  if (op.info->kind == OpKind::var) return {var};
  return {var, mean};
}
constexpr Evaluator var = var_mean;

std::vector<Tensor> argmax(Interpreter& in, const Op& op) {
  c10::optional<int64_t> dim;
  if (op.arg("dim").kind != Arg::Kind::none) dim = op.arg("dim").integer;
  const Tensor x = Interpreter::as_stored(in0(in, op), dtype_of(in, op.arg("a")));
  return {op.info->kind == OpKind::argmax ? torch::argmax(x, dim) : torch::argmin(x, dim)};
}
constexpr Evaluator argmin = argmax;

// With the epilogue pass's extensions (matmul_ops.def).
std::vector<Tensor> matmul(Interpreter& in, const Op& op) {
  const Operands a(in, op);
  const bool transpose_a = op.has_arg("transpose_a") && op.arg("transpose_a").boolean, transpose_b = op.has_arg("transpose_b") && op.arg("transpose_b").boolean;
  const Tensor left = transpose_a ? a.at(0).t() : a.at(0), right = transpose_b ? a.at(1).t() : a.at(1);
  Tensor c = torch::matmul(left, right);
  if (op.has_arg("bias") && op.arg("bias").is_value()) c = c + a.at(2);
  const std::string epilogue = op.has_arg("epilogue") ? op.arg("epilogue").text : "none";
  if (epilogue == "gelu_tanh") return {torch::gelu(c, "tanh")};
  if (epilogue == "gelu_tanh_aux") return {torch::gelu(c, "tanh"), c};
  if (epilogue == "bias_grad") return {c, left.sum(-1)};
  return {c};
}

// One process has no other ranks: distributed traces are checked against PyTorch eager by
// tools/check_distributed.py, with the ranks as threads of the emulated harness.
std::vector<Tensor> one_process(Interpreter&, const Op& op) {
  throw std::runtime_error("reference: " + op.symbol + " at " + op.where +
                           ": the reference interpreter runs one process, not a process group (tools/check_distributed.py checks distributed traces)");
}
constexpr Evaluator all_reduce = one_process, all_gather = one_process, reduce_scatter = one_process, broadcast = one_process,
                    t_synchronize = one_process, t_wait = one_process, t_pack = one_process, t_unpack = one_process,
                    t_pack_for_fsdp = one_process, t_unpack_for_fsdp = one_process;

std::vector<Tensor> t_embedding(Interpreter& in, const Op& op) {
  const Tensor& w = in.value(op.arg("weight"));
  const Arg& padding_idx = op.arg("padding_idx");
  const int64_t padding = padding_idx.kind == Arg::Kind::none ? -1 : padding_idx.integer < 0 ? padding_idx.integer + w.size(0) : padding_idx.integer;
  return {torch::embedding(w, in0(in, op).to(torch::kInt64), padding)};
}

// ATen's gather takes i64 positions only.
std::vector<Tensor> t_gather(Interpreter& in, const Op& op) {
  return {torch::gather(in0(in, op), op.arg("dim").integer, in.value(op.arg("index")).to(torch::kInt64))};
}

// LibTorch 1.13 has no rms_norm: its definition, autograd differentiates it.
std::vector<Tensor> t_rms_norm(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  std::vector<int64_t> dims;
  for (size_t k = 0; k < op.arg("normalized_shape").items.size(); ++k) dims.push_back(x.dim() - 1 - int64_t(k));
  const DType dt = dtype_of(in, op.arg("a"));
  const double eps = op.arg("eps").is_number() ? op.arg("eps").as_double()
                     : dt == DType::f64 ? 2.220446049250313e-16 : dt == DType::f16 ? 0.0009765625 : dt == DType::bf16 ? 0.0078125 : 1.1920929e-07;
  const Tensor y = x * torch::rsqrt(x.square().mean(dims, true) + eps);
  return {op.arg("weight").is_value() ? y * in.value(op.arg("weight")) : y};
}

std::vector<Tensor> t_normalize(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  const std::vector<int64_t> dims = op.arg("dim").kind == Arg::Kind::integer ? std::vector<int64_t>{op.arg("dim").integer} : op.arg("dim").int_list();
  return {x / torch::norm(x, 2, dims, true).clamp_min(op.arg("eps").as_double()).expand_as(x)};
}

std::vector<Tensor> t_cross_entropy(Interpreter& in, const Op& op) {
  const Tensor target = in.value(op.arg("target")).to(torch::kInt64);
  const auto [ignore_index, r] = class_loss_args(op);
  const int64_t reduction = r == "none" ? at::Reduction::None : r == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
  c10::optional<Tensor> weight;
  if (op.arg("weight").is_value()) weight = in.value(op.arg("weight"));
  if (op.info->kind == OpKind::t_cross_entropy)
    return {at::cross_entropy_loss(in0(in, op), target, weight, reduction, ignore_index, op.arg("label_smoothing").as_double())};
  return {at::nll_loss_nd(in0(in, op), target, weight, reduction, ignore_index)};
}
constexpr Evaluator t_nll_loss = t_cross_entropy;

std::vector<Tensor> t_split(Interpreter& in, const Op& op) {
  const Arg& sizes = op.arg("split_size_or_sections");
  std::vector<Tensor> parts = sizes.kind == Arg::Kind::integer ? torch::split(in0(in, op), sizes.integer, op.arg("dim").integer)
                                                                : torch::split_with_sizes(in0(in, op), sizes.int_list(), op.arg("dim").integer);
  for (Tensor& p : parts) p = p.contiguous();
  return parts;
}

std::vector<Tensor> t_tril(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  const int64_t d = op.arg("diagonal").integer;
  const bool lower = op.info->kind == OpKind::t_tril;
  if (op.arg("fill_value").kind == Arg::Kind::none) return {lower ? x.tril(d) : x.triu(d)};
  const Tensor keep = torch::ones({x.size(-2), x.size(-1)}, torch::kBool);
  return {torch::where(lower ? keep.tril(d) : keep.triu(d), x, in.operand(op.arg("fill_value"), x.scalar_type()))};
}
constexpr Evaluator t_triu = t_tril;

std::vector<Tensor> t_sum(Interpreter& in, const Op& op) {
  Tensor x = in0(in, op);
  if (op.arg("dtype").kind == Arg::Kind::dtype) x = x.to(in.compute(op.arg("dtype").dtype));
  const std::vector<int64_t> dims = torch_dims(op.arg("dim"), x.dim());
  const bool keep = op.arg("keepdim").boolean;
  if (dims.empty()) return {x};
  if (op.info->kind == OpKind::t_mean) return {x.mean(dims, keep)};
  return {x.sum(dims, keep, is_float(output(in, op).dtype) ? x.scalar_type() : torch::kInt64)};
}
constexpr Evaluator t_mean = t_sum;

std::vector<Tensor> t_var(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  const int64_t correction = op.arg("correction").is_number() ? int64_t(op.arg("correction").as_double())
                             : op.arg("unbiased").is_number() ? int64_t(op.arg("unbiased").as_double() != 0) : 1;
  return {torch::var(x, at::OptionalIntArrayRef(torch_dims(op.arg("dim"), x.dim())), correction, op.arg("keepdim").boolean)};
}

// torch.max / torch.min in their three forms, on operands rounded as maximum's and amax's are.
std::vector<Tensor> t_max(Interpreter& in, const Op& op) {
  const bool is_max = op.info->kind == OpKind::t_max;
  if (op.arg("dim").is_value() || op.arg("other").is_value()) {
    const DType dt = output(in, op).dtype;
    const Tensor a = Interpreter::as_stored(in.operand(op.arg("input"), in.compute(dt)), dt);
    const Tensor b = Interpreter::as_stored(in.operand(op.arg("dim").is_value() ? op.arg("dim") : op.arg("other"), in.compute(dt)), dt);
    return {is_max ? torch::max(a, b) : torch::min(a, b)};
  }
  const Tensor x = Interpreter::as_stored(in.value(op.arg("input")), dtype_of(in, op.arg("input")));
  if (op.arg("dim").kind == Arg::Kind::none) return {is_max ? x.max() : x.min()};
  const int64_t dim = op.arg("dim").integer;
  const bool keep = op.arg("keepdim").boolean;
  auto [values, indices] = is_max ? torch::max(x, dim, keep) : torch::min(x, dim, keep);
  return {values, indices};
}
constexpr Evaluator t_min = t_max;

std::vector<Tensor> t_cumsum(Interpreter& in, const Op& op) { return {torch::cumsum(in0(in, op).to(out_compute(in, op)), op.arg("dim").integer)}; }  // dtype= converts first

std::vector<Tensor> t_addcmul(Interpreter& in, const Op& op) {
  const torch::Dtype ct = out_compute(in, op);
  const Tensor x = in0(in, op).to(ct), t1 = in.operand(op.arg("tensor1"), ct), t2 = in.operand(op.arg("tensor2"), ct);
  const torch::Scalar value = in.scalar_of(op.arg("value"));
  return {op.info->kind == OpKind::t_addcmul ? torch::addcmul(x, t1, t2, value) : torch::addcdiv(x, t1, t2, value)};
}
constexpr Evaluator t_addcdiv = t_addcmul;

// Numbers as 0-dim tensors: the Tensor overload takes either bound alone.
std::vector<Tensor> t_clamp(Interpreter& in, const Op& op) {
  const torch::Dtype ct = out_compute(in, op);
  auto bound = [&](std::string_view name) -> c10::optional<Tensor> {
    if (op.arg(name).kind == Arg::Kind::none) return c10::nullopt;
    return in.operand(op.arg(name), ct);
  };
  return {torch::clamp(in0(in, op).to(ct), bound("min"), bound("max"))};
}

std::vector<Tensor> t_masked_fill(Interpreter& in, const Op& op) {
  const Tensor& x = in0(in, op);
  const Tensor mask = in.operand(op.arg("mask"), torch::kBool);
  if (op.arg("value").is_value()) return {x.masked_fill(mask, in.operand(op.arg("value"), x.scalar_type()))};
  return {x.masked_fill(mask, in.scalar_of(op.arg("value")))};
}

// conv1d/2d take a number or a list for each of stride, padding and dilation; prims.convolution
// lists, and groups after transposed and output_padding.
std::vector<Tensor> t_conv1d(Interpreter& in, const Op& op) {
  const Tensor& w = in.value(op.arg("weight"));
  const size_t n = size_t(w.dim()) - 2;
  const int64_t groups = op.arg(op.info->kind == OpKind::t_convolution ? 8 : 6).integer;
  c10::optional<Tensor> bias;
  if (op.arg("bias").is_value()) bias = in.value(op.arg("bias"));
  return {torch::convolution(in0(in, op), w, bias, per_dim(op.arg(3), n), per_dim(op.arg(4), n), per_dim(op.arg(5), n), false,
                             std::vector<int64_t>(n, 0), groups)};
}
constexpr Evaluator t_conv2d = t_conv1d, t_convolution = t_conv1d;

// Pooling: kernel_size, stride (null: the kernel's), padding and dilation a number or a list,
// ceil_mode; ATen's functions of the op's spatial dims (the digit of its id), batched or not.
std::vector<Tensor> t_max_pool1d(Interpreter& in, const Op& op) {
  const size_t n = pooled_dims(op);
  const std::vector<int64_t> kernel = per_dim(op.arg(1), n), stride = op.arg(2).kind == Arg::Kind::none ? kernel : per_dim(op.arg(2), n);
  const std::vector<int64_t> padding = per_dim(op.arg(3), n), dilation = per_dim(op.arg(4), n);
  const Tensor& x = in0(in, op);
  const bool ceil = op.arg(5).boolean;
  if (n == 1) return {torch::max_pool1d(x, kernel, stride, padding, dilation, ceil)};
  if (n == 2) return {torch::max_pool2d(x, kernel, stride, padding, dilation, ceil)};
  return {torch::max_pool3d(x, kernel, stride, padding, dilation, ceil)};
}
constexpr Evaluator t_max_pool2d = t_max_pool1d, t_max_pool3d = t_max_pool1d;

std::vector<Tensor> t_avg_pool1d(Interpreter& in, const Op& op) {
  const size_t n = pooled_dims(op);
  const std::vector<int64_t> kernel = per_dim(op.arg(1), n), stride = op.arg(2).kind == Arg::Kind::none ? kernel : per_dim(op.arg(2), n);
  const std::vector<int64_t> padding = per_dim(op.arg(3), n);
  const bool ceil = op.arg(4).boolean, count_pad = op.arg(5).boolean;
  c10::optional<int64_t> divisor;
  if (n > 1 && op.arg(6).kind == Arg::Kind::integer) divisor = op.arg(6).integer;
  const Tensor& x = in0(in, op);
  if (n == 1) return {torch::avg_pool1d(x, kernel, stride, padding, ceil, count_pad)};
  if (n == 2) return {torch::avg_pool2d(x, kernel, stride, padding, ceil, count_pad, divisor)};
  return {torch::avg_pool3d(x, kernel, stride, padding, ceil, count_pad, divisor)};
}
constexpr Evaluator t_avg_pool2d = t_avg_pool1d, t_avg_pool3d = t_avg_pool1d;

std::vector<Tensor> t_adaptive_avg_pool1d(Interpreter& in, const Op& op) {
  const size_t n = pooled_dims(op);
  const std::vector<int64_t> sizes = per_dim(op.arg(1), n);
  if (n == 1) return {torch::adaptive_avg_pool1d(in0(in, op), sizes)};
  if (n == 2) return {torch::adaptive_avg_pool2d(in0(in, op), sizes)};
  return {torch::adaptive_avg_pool3d(in0(in, op), sizes)};
}
constexpr Evaluator t_adaptive_avg_pool2d = t_adaptive_avg_pool1d, t_adaptive_avg_pool3d = t_adaptive_avg_pool1d;

// The mask from the runtime's Philox, as the lowering draws it.
std::vector<Tensor> t_dropout(Interpreter& in, const Op& op) {
  const double p = op.arg("p").as_double();
  if (!op.arg("training").boolean || p == 0.0) return {in0(in, op)};
  return {in.philox_dropout(op, in0(in, op), p)};
}

// Part p sums the rows r (the leading, reduced dims flattened) with r % parts == p.
std::vector<Tensor> partial_sum(Interpreter& in, const Op& op) {
  const Tensor& a = in0(in, op);
  const int64_t parts = op.arg("parts").integer;
  int64_t rows = 1;
  for (int64_t d : reduction_dims(in.trace(), op)) rows *= a.size(d);
  const int64_t per_row = rows == 0 ? 0 : a.numel() / rows;
  Tensor x = a.to(out_compute(in, op)).reshape({rows, per_row});
  const int64_t groups = (rows + parts - 1) / parts;
  x = torch::constant_pad_nd(x, {0, 0, 0, groups * parts - rows}).reshape({groups, parts, per_row}).sum(0);
  return {x.reshape(to_vec(output(in, op).shape))};
}

std::vector<Tensor> fused_kernel(Interpreter&, const Op& op) { throw InternalError("reference: a fused kernel is run op by op, not evaluated: " + op.symbol); }

// Attention (attention.cpp).
std::vector<Tensor> t_sdpa(Interpreter& in, const Op& op);
std::vector<Tensor> t_mha(Interpreter& in, const Op& op);

}  // namespace by_hand

namespace {

// The declarations' words for how an op is evaluated.
#define TG_EVALUATOR_by_hand(name) by_hand::name
#define TG_EVALUATOR_aten(call) TG_EVALUATE_BY_ATEN
#define TG_EVALUATE_BY_ATEN(name) aten_call

constexpr Evaluator kEvaluators[] = {
#define TG_UNARY_FLOAT(name, ...) unary_aten,
#define TG_UNARY(name, torch, code, integer_code, accepts, result, continuity, gradient, saves, reference) unary_##reference,
#define TG_BINARY_FLOAT(name, ...) binary_float,
#define TG_BINARY_EXACT(name, torch, code, accepts, result, reference) binary_exact<exact::reference>,
#define TG_PRIM(name, id, fusion, accepts, rule, code, gradient, saves, aten, ...) TG_EVALUATOR_##aten(name),
#define TG_REDUCTION(name, id, accepts, outputs, result, gradient, saves, aten, ...) TG_EVALUATOR_##aten(name),
#define TG_COMPOSITE(name, id, accepts, rule, lowering, gradient, saves, aten, ...) TG_EVALUATOR_##aten(name),
#define TG_ACTIVATION(name, id, rule, compute, continuity, value, derivative, saves, aten, ...) TG_EVALUATOR_##aten(name),
#include "ops/all_ops.def"
#undef TG_UNARY_FLOAT
#undef TG_UNARY
#undef TG_BINARY_FLOAT
#undef TG_BINARY_EXACT
#undef TG_PRIM
#undef TG_REDUCTION
#undef TG_COMPOSITE
#undef TG_ACTIVATION
};
static_assert(std::size(kEvaluators) == kOpKindCount, "an evaluator for every op kind, in the declarations' order");

}  // namespace

Evaluator evaluator(OpKind kind) { return kEvaluators[static_cast<size_t>(kind)]; }

}  // namespace tg::reference
