#include "reference.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>

#include <algorithm>
#include <functional>
#include <map>

#include "lower/rng.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

#define TG_HOST_ONLY
#include "tg_runtime.cuh"  // the runtime's Philox generator

namespace tg {

torch::Dtype torch_storage_dtype(DType t) {
  switch (t) {
    case DType::b8: return torch::kBool;
    case DType::u8: return torch::kUInt8;
    case DType::i8: return torch::kInt8;
    case DType::i16: return torch::kInt16;
    case DType::i32: return torch::kInt32;
    case DType::i64: return torch::kInt64;
    case DType::f16: return torch::kHalf;
    case DType::bf16: return torch::kBFloat16;
    case DType::f32: return torch::kFloat;
    case DType::f64: return torch::kDouble;
  }
  return torch::kFloat;
}

torch::Dtype torch_compute_dtype(DType t) {
  return t == DType::f16 || t == DType::bf16 ? torch::kFloat : torch_storage_dtype(t);
}

namespace {

using torch::Tensor;

std::vector<int64_t> to_vec(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

class Interpreter {
 public:
  Interpreter(const Trace& t, Precision p) : t_(t), precision_(p), wide_(p == Precision::wide) {}

  // What a value of dtype `t` computes in: see Precision.
  torch::Dtype compute(DType t) const { return wide_ && is_float(t) ? torch::kDouble : torch_compute_dtype(t); }

  // A PyTorch function of tensors (torch.exp, torch.special.ndtri, torch.atan2) called through
  // LibTorch's dispatcher by its ATen name (aten::exp, aten::special_ndtri, aten::atan2), so a
  // declared op needs no code here. Its overload taking the operands as tensors (aten::add.Tensor,
  // aten::pow.Tensor_Tensor), the other arguments at their defaults (add's alpha = 1).
  static Tensor call_aten(std::string_view torch_function, const std::vector<Tensor>& operands) {
    std::string name(torch_function.substr(std::string_view("torch.").size()));
    std::replace(name.begin(), name.end(), '.', '_');
    for (const char* overload : {"", "Tensor", "Tensor_Tensor"}) {
      const auto handle = c10::Dispatcher::singleton().findSchema({"aten::" + name, overload});
      if (!handle || !takes_tensors(handle->schema(), operands.size())) continue;
      torch::jit::Stack stack(operands.begin(), operands.end());
      for (size_t i = operands.size(); i < handle->schema().arguments().size(); ++i)
        stack.push_back(*handle->schema().arguments()[i].default_value());
      handle->callBoxed(stack);
      return stack.back().toTensor();
    }
    throw std::runtime_error("reference: LibTorch has no aten::" + name + " taking " + std::to_string(operands.size()) + " tensors");
  }
  // Its first n arguments are tensors and the others have defaults.
  static bool takes_tensors(const c10::FunctionSchema& schema, size_t n) {
    const std::vector<c10::Argument>& args = schema.arguments();
    if (args.size() < n) return false;
    for (size_t i = 0; i < args.size(); ++i)
      if (i < n ? args[i].type()->kind() != c10::TypeKind::TensorType : !args[i].default_value()) return false;
    return true;
  }

  // `x`, a value of dtype `t`, rounded to `t` when that is a 16-bit float (held in f32 or f64).
  static Tensor as_stored(const Tensor& x, DType t) {
    if (t != DType::bf16 && t != DType::f16) return x;
    return x.to(torch_storage_dtype(t)).to(x.scalar_type());
  }

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    TG_CHECK(inputs.size() == t_.inputs.size(), "reference: wrong number of inputs");
    for (size_t i = 0; i < inputs.size(); ++i) env_[t_.inputs[i]] = inputs[i].to(compute(t_.value(t_.inputs[i]).dtype));
    ops(t_.ops);
    std::vector<Tensor> out;
    for (ValueId v : t_.outputs) out.push_back(env_.at(v));
    return out;
  }

 private:
  const Trace& t_;
  Precision precision_;
  bool wide_;
  std::map<ValueId, Tensor> env_;

  void ops(const std::vector<Op>& list) {
    for (const Op& op : list) one(op);
  }

  void one(const Op& op) {
    if (op.info && op.info->kind == OpKind::fused_kernel) return ops(op.sub);
    if (op.info) {
      std::vector<Tensor> outs = eval(op);
      for (size_t i = 0; i < op.outs.size(); ++i) {
        const DType dtype = t_.value(op.outs[i]).dtype;
        Tensor out = outs[i].to(compute(dtype));
        env_[op.outs[i]] = (precision_ == Precision::op_by_op ? as_stored(out, dtype) : out).contiguous();
      }
      return;
    }
    if (op.custom) return custom_forward(op);
    ops(op.sub);
  }

  // A custom-gradient op runs as a LibTorch autograd Function, so torch differentiates it with
  // the user's bwd body, as the contract demands, and never sees inside its fwd.
  void custom_forward(const Op& op) {
    std::vector<Tensor> args;
    for (const Arg& a : op.args)
      if (a.is_value() && !t_.value(a.value).is_scalar) args.push_back(env_.at(a.value));
    std::vector<Tensor> outs = CustomFunction::apply(&op, this, at::TensorList(args));
    for (size_t i = 0; i < op.outs.size(); ++i) env_[op.outs[i]] = outs[i];
  }

  // Runs a body with `inputs` bound to its inputs; returns its outputs (undefined for null ones)
  // and, for fwd, its saved values.
  std::vector<Tensor> run_body(const SubTrace& body, const std::vector<Tensor>& inputs, std::vector<Tensor>* saved) {
    Interpreter inner(t_, precision_);
    for (size_t i = 0; i < inputs.size(); ++i) inner.env_[body.inputs.at(i)] = inputs[i];
    inner.ops(body.ops);
    std::vector<Tensor> out;
    for (ValueId v : body.outputs) out.push_back(v == kNoValue ? Tensor() : inner.env_.at(v).clone());
    if (saved)
      for (ValueId v : body.saved) saved->push_back(inner.env_.at(v));
    return out;
  }

  struct CustomFunction : torch::autograd::Function<CustomFunction> {
    static std::vector<Tensor> forward(torch::autograd::AutogradContext* ctx, const Op* op, Interpreter* self, at::TensorList args) {
      std::vector<Tensor> saved;
      std::vector<Tensor> outs = self->run_body(op->custom->fwd, args.vec(), &saved);
      ctx->save_for_backward(saved);
      ctx->saved_data["op"] = int64_t(reinterpret_cast<intptr_t>(op));
      // The trace outlives the autograd graph; this interpreter may not.
      ctx->saved_data["trace"] = int64_t(reinterpret_cast<intptr_t>(&self->t_));
      ctx->saved_data["precision"] = int64_t(self->precision_);
      return outs;
    }
    static std::vector<Tensor> backward(torch::autograd::AutogradContext* ctx, std::vector<Tensor> cotangents) {
      const Op* op = reinterpret_cast<const Op*>(intptr_t(ctx->saved_data["op"].toInt()));
      Interpreter interpreter(*reinterpret_cast<const Trace*>(intptr_t(ctx->saved_data["trace"].toInt())),
                              Precision(ctx->saved_data["precision"].toInt()));
      Interpreter* self = &interpreter;
      std::vector<Tensor> inputs;
      for (size_t i = 0; i < cotangents.size(); ++i) {
        const Value& out = self->t_.value(op->outs[i]);
        inputs.push_back(cotangents[i].defined() ? cotangents[i]
                                                 : torch::zeros(to_vec(out.shape), torch::TensorOptions().dtype(self->compute(out.dtype))));
      }
      for (const Tensor& s : ctx->get_saved_variables()) inputs.push_back(s);
      std::vector<Tensor> grads = {Tensor(), Tensor()};  // for op and self
      for (Tensor& g : self->run_body(op->custom->bwd, inputs, nullptr)) grads.push_back(g);
      return grads;
    }
  };

  // An operand as a tensor of dtype `as`: values from the environment, numbers as 0-d tensors (an
  // integer through int64, exact where a double would round it: 2^53 + 1).
  Tensor operand(const Arg& a, torch::Dtype as) const {
    if (a.is_value()) return env_.at(a.value).to(as);
    const bool integer = a.kind == Arg::Kind::integer;
    return torch::scalar_tensor(integer ? torch::Scalar(a.integer) : a.kind == Arg::Kind::boolean ? torch::Scalar(a.boolean) : torch::Scalar(a.real),
                                torch::TensorOptions().dtype(integer ? torch::kLong : torch::kDouble))
        .to(as);
  }

  // The columns of binary_exact_prims.def's `reference`: how LibTorch computes the prim of
  // `torch_function` on a and b, `bits`-bit integers for the shifts.
  static Tensor aten(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t) { return call_aten(torch_function, {a, b}); }
  static Tensor shift_left(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits) {
    return shift(torch_function, a, b, bits, torch::zeros_like(a));
  }
  static Tensor shift_right(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits) {
    return shift(torch_function, a, b, bits, (a < 0).to(a.scalar_type()).neg());
  }
  // Shifts of `bits`-bit integers by a negative amount or by `bits` or more give `beyond_fill` (0,
  // or -1 shifting a negative value right), as PyTorch 2 defines them; LibTorch 1.13's CPU kernels
  // leave those to the machine (x86 masks the amount).
  static Tensor shift(std::string_view torch_function, const Tensor& x, const Tensor& by, int64_t bits, const Tensor& beyond_fill) {
    const Tensor beyond = (by < 0) | (by >= bits);
    const Tensor amount = torch::where(beyond, torch::zeros_like(by), by);
    return torch::where(beyond, beyond_fill, call_aten(torch_function, {x, amount}));
  }

  // A number argument as LibTorch's promotion sees it (a Python scalar).
  torch::Scalar scalar_of(const Arg& a) const {
    if (a.is_value()) {  // a scalar value: its kind decides
      const double v = env_.at(a.value).item<double>();
      const DType t = t_.value(a.value).dtype;
      return is_float(t) ? torch::Scalar(v) : is_bool(t) ? torch::Scalar(v != 0) : torch::Scalar(int64_t(v));
    }
    return a.kind == Arg::Kind::real ? torch::Scalar(a.real) : a.kind == Arg::Kind::boolean ? torch::Scalar(a.boolean) : torch::Scalar(a.integer);
  }

  // The dtype a torch-level elementwise call computes in, by LibTorch's own type promotion over
  // the declared dtypes (independent of src/ops/torch_elementwise.cpp's), with PyTorch's float rule
  // for true division and float functions of integers.
  DType torch_form_dtype(const Op& op) const {
    at::native::ResultTypeState state;
    for (size_t i = op.info->kind == OpKind::where ? 1 : 0; i < op.args.size() && op.info->params[i].kind == ParamKind::tensor_or_number; ++i) {
      const Arg& a = op.arg(i);
      if (a.is_value() && !t_.value(a.value).is_scalar) {
        const Value& v = t_.value(a.value);
        const Tensor probe = torch::empty(v.shape.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{1},
                                          torch::TensorOptions().dtype(torch_storage_dtype(v.dtype)));
        state = at::native::update_result_type_state(probe, state);
      } else {
        state = at::native::update_result_type_state(scalar_of(a), state);
      }
    }
    DType common = from_torch(at::native::result_type(state));
    const bool true_division = op.info->kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::none;
    if (!is_float(common) && (op_info(op.info->kind).accepts == DTypes::floats || true_division)) common = DType::f32;
    return common;
  }

  static DType from_torch(torch::ScalarType t) {
    for (DType d : kAllDTypes)
      if (torch_storage_dtype(d) == t) return d;
    throw std::runtime_error("reference: LibTorch promoted to a dtype thunder-gen has not: " + std::string(c10::toString(t)));
  }

  std::vector<Tensor> eval(const Op& op) {
    const Value& out = t_.value(op.outs[0]);
    const torch::Dtype ct = compute(out.dtype);
    const bool torch_form = is_torch_form(*op.info);
    const DType operand_dt = torch_form ? torch_form_dtype(op) : operand_dtype(t_, op);
    if (torch_form && out.dtype != DType::b8 && out.dtype != operand_dt)
      throw std::runtime_error("reference: " + op.symbol + " at " + op.where + ": LibTorch promotes to " + std::string(dtype_name(operand_dt)) +
                               ", the trace declares " + std::string(dtype_name(out.dtype)));
    // A discontinuous op reads 16-bit operands rounded to their dtype, as generated code does; so
    // does a kinked one (maximum, minimum): LibTorch's gradients of these compare the operands
    // (thunder-gen's rules do it with discontinuous prims), rounded, so both masks see the same
    // values (the values do not change: rounding is monotone). A torch-level form's tensors are
    // broadcast to the result's shape, as LibTorch would.
    auto a = [&](size_t i) {
      const OpInfo& prim = op_info(op.info->kind);
      Tensor x = operand(op.arg(i), compute(operand_dt));
      if (torch_form && op.arg(i).is_value() && !t_.value(op.arg(i).value).is_scalar) x = x.expand(to_vec(out.shape));
      return op.info->discontinuous || (torch_form && prim.discontinuous) || prim.kinked ? as_stored(x, operand_dt) : x;
    };
    auto in = [&] { return env_.at(op.arg(0).value); };
    auto floating = [&] { return is_float(operand_dt); };
    if (torch_form && (op.info->kind == OpKind::add || op.info->kind == OpKind::sub) && op.arg("alpha").kind != Arg::Kind::none)
      return {op.info->kind == OpKind::add ? torch::add(a(0), a(1), scalar_of(op.arg("alpha"))) : torch::sub(a(0), a(1), scalar_of(op.arg("alpha")))};
    if (torch_form && op.info->kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::string)
      return {torch::div(a(0), a(1), op.arg("rounding_mode").text)};
    if (op.info->kind == OpKind::div && !floating()) return {torch::div(a(0), a(1), "trunc")};  // as C++ divides integers
    if (torch_form && op.info->kind == OpKind::where)
      return {torch::where(operand(op.arg("pred"), torch::kBool).expand(to_vec(out.shape)), a(1), a(2))};
    switch (op.info->kind) {
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) case OpKind::name:
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
        return {call_aten(op.info->torch_function, {a(0)})};
#define TG_BINARY_FLOAT(name, ...) case OpKind::name:
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
        return {call_aten(op.info->torch_function, {a(0), a(1)})};
      case OpKind::abs: return {torch::abs(a(0))};
      case OpKind::neg: return {torch::neg(a(0))};
      case OpKind::floor: return {floating() ? torch::floor(a(0)) : a(0)};
      case OpKind::ceil: return {floating() ? torch::ceil(a(0)) : a(0)};
      case OpKind::round: return {floating() ? torch::round(a(0)) : a(0)};
      case OpKind::trunc: return {floating() ? torch::trunc(a(0)) : a(0)};
      case OpKind::sign: return {torch::sign(a(0))};
      case OpKind::signbit: return {torch::signbit(a(0))};
      case OpKind::isfinite: return {torch::isfinite(a(0))};
      case OpKind::bitwise_not: return {torch::bitwise_not(a(0))};
#define TG_BINARY_EXACT(name, torch, code, accepts, result, reference) \
  case OpKind::name: return {reference(op.info->torch_function, a(0), a(1), 8 * dtype_bytes(operand_dt))};
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT
      case OpKind::where: return {torch::where(operand(op.arg("pred"), torch::kBool), a(1), a(2))};
      case OpKind::lerp: return {torch::lerp(a(0), a(1), a(2))};
      case OpKind::convert_element_type: {
        // The operand rounded to its own dtype (rounding rule 4, docs/design-notes.md), then to the
        // stored type, then held in the compute type.
        DType to = op.arg("dtype").dtype;
        Tensor x = as_stored(in(), t_.value(op.arg("a").value).dtype);
        if (to == DType::b8) return {x != 0};
        return {x.to(torch_storage_dtype(to)).to(compute(to))};
      }
      case OpKind::full:
        return {operand(op.arg("fill_value"), ct).expand(to_vec(out.shape)).contiguous()};
      case OpKind::uniform:
        throw InternalError("prims.uniform reached the reference unbound: bind_rng runs first");
      case OpKind::uniform_philox: {
        // The runtime's own generator (templates/tg_runtime.cuh), so the draws are the same.
        uint64_t seed = uint64_t(operand(op.arg("seed"), torch::kInt64).item<int64_t>());
        uint64_t offset = uint64_t(operand(op.arg("offset"), torch::kInt64).item<int64_t>());
        double lo = operand(op.arg("minval"), torch::kDouble).item<double>(), hi = operand(op.arg("maxval"), torch::kDouble).item<double>();
        Tensor u = torch::empty({numel(out.shape)}, torch::kFloat);
        float* p = u.data_ptr<float>();
        for (int64_t i = 0; i < u.numel(); ++i) p[i] = philox_uniform(seed, offset, i, uint64_t(op.arg("stream").integer));
        // In the output's compute type, as the kernel's expression computes it.
        return {torch::full({}, lo, torch::kFloat).add(u.mul(float(hi - lo))).to(ct).reshape(to_vec(out.shape))};
      }
      case OpKind::iota: {
        int64_t n = op.arg("length").integer, start = op.arg("start").integer, step = op.arg("step").integer;
        return {torch::arange(0, n, torch::kInt64).mul(step).add(start).to(ct)};
      }
      case OpKind::broadcast_in_dim: {
        Tensor x = in();
        auto bdims = op.arg("broadcast_dimensions").int_list();
        std::vector<int64_t> view(out.shape.size(), 1);
        for (size_t i = 0; i < bdims.size(); ++i) view[bdims[i]] = x.size(int64_t(i));
        return {x.reshape(view).expand(to_vec(out.shape))};
      }
      case OpKind::reshape:
      case OpKind::squeeze: return {in().reshape(to_vec(out.shape))};
      case OpKind::transpose: return {in().permute(op.arg("permutation").int_list())};
      case OpKind::slice: {
        Tensor x = in();
        auto start = op.arg("start_indices").int_list(), end = op.arg("end_indices").int_list();
        std::vector<int64_t> strides(start.size(), 1);
        if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
        for (size_t d = 0; d < start.size(); ++d) x = x.slice(int64_t(d), start[d], end[d], strides[d]);
        return {x};
      }
      case OpKind::pad: return {pad(op)};
      case OpKind::cat: {
        std::vector<Tensor> pieces;
        for (const Arg& p : op.arg("tensors").items) pieces.push_back(env_.at(p.value));
        return {torch::cat(pieces, op.arg("dim").integer)};
      }
      case OpKind::sum:
      case OpKind::prod:
      case OpKind::amax:
      case OpKind::amin: return {reduce(op)};
      case OpKind::var:
      case OpKind::var_mean: {
        auto dims = reduction_dims(t_, op);
        double correction = op.arg("correction").is_value() ? env_.at(op.arg("correction").value).item<double>() : op.arg("correction").as_double();
        // Spelled out: the meaning is plain and no overload of torch::var_mean is guessed at.
        Tensor x = in();
        int64_t n = 1;
        for (int64_t d : dims) n *= x.size(d);
        Tensor mean = dims.empty() ? x : x.mean(dims, true);
        Tensor var = dims.empty() ? torch::zeros_like(x) : (x - mean).square().sum(dims) / (double(n) - correction);
        if (!dims.empty()) mean = mean.reshape(var.sizes());
        if (op.info->kind == OpKind::var) return {var};
        return {var, mean};
      }
      case OpKind::argmax:
      case OpKind::argmin: {
        c10::optional<int64_t> dim;
        if (op.arg("dim").kind != Arg::Kind::none) dim = op.arg("dim").integer;
        const Tensor x = as_stored(in(), t_.value(op.arg("a").value).dtype);
        return {op.info->kind == OpKind::argmax ? torch::argmax(x, dim) : torch::argmin(x, dim)};
      }
      case OpKind::matmul: {  // with the epilogue pass's extensions (see op_table.cpp)
        const bool transpose_a = op.has_arg("transpose_a") && op.arg("transpose_a").boolean, transpose_b = op.has_arg("transpose_b") && op.arg("transpose_b").boolean;
        const Tensor left = transpose_a ? a(0).t() : a(0), right = transpose_b ? a(1).t() : a(1);
        Tensor c = torch::matmul(left, right);
        if (op.has_arg("bias") && op.arg("bias").is_value()) c = c + a(2);
        const std::string epilogue = op.has_arg("epilogue") ? op.arg("epilogue").text : "none";
        if (epilogue == "gelu_tanh") return {torch::gelu(c, "tanh")};
        if (epilogue == "gelu_tanh_aux") return {torch::gelu(c, "tanh"), c};
        if (epilogue == "bias_grad") return {c, left.sum(-1)};
        return {c};
      }
      // Torch-level ops: LibTorch's own functions, not thunder-gen's lowering, so the lowering is
      // checked too. 16-bit inputs compute in f32 (they are held in f32) and round at the end.
      case OpKind::t_softmax: return {torch::softmax(in(), op.arg("dim").integer)};
      case OpKind::t_log_softmax: return {torch::log_softmax(in(), op.arg("dim").integer)};
      case OpKind::t_relu: return {torch::relu(in())};
      case OpKind::t_sigmoid: return {torch::sigmoid(in())};
      case OpKind::t_tanh: return {torch::tanh(in())};
      case OpKind::t_silu: return {torch::silu(in())};
      case OpKind::t_gelu: return {torch::gelu(in(), op.arg("approximate").text)};
      case OpKind::t_linear:
      case OpKind::t_prim_linear:
        return {op.arg("bias").is_value() ? torch::linear(in(), env_.at(op.arg("w").value), env_.at(op.arg("bias").value)) : torch::linear(in(), env_.at(op.arg("w").value))};
      case OpKind::t_matmul: return {torch::matmul(in(), env_.at(op.arg("b").value))};
      case OpKind::t_reshape: return {in().reshape(to_vec(out.shape))};
      case OpKind::t_permute: return {in().permute(op.arg("dims").int_list()).contiguous()};
      case OpKind::t_transpose: return {in().transpose(op.arg("dim0").integer, op.arg("dim1").integer).contiguous()};
      case OpKind::t_unsqueeze: return {in().unsqueeze(op.arg("dim").integer)};
      case OpKind::shallow_copy:
      case OpKind::stride_order: return {in().clone()};
      case OpKind::t_cross_entropy:
      case OpKind::t_nll_loss: {
        Tensor target = env_.at(op.arg("target").value).to(torch::kInt64);
        const auto [ignore_index, r] = class_loss_args(op);
        const int64_t reduction = r == "none" ? at::Reduction::None : r == "sum" ? at::Reduction::Sum : at::Reduction::Mean;
        c10::optional<Tensor> weight;
        if (op.arg("weight").is_value()) weight = env_.at(op.arg("weight").value);
        if (op.info->kind == OpKind::t_cross_entropy) return {at::cross_entropy_loss(in(), target, weight, reduction, ignore_index, op.arg("label_smoothing").as_double())};
        return {at::nll_loss_nd(in(), target, weight, reduction, ignore_index)};
      }
      case OpKind::t_dropout: {  // the mask from the runtime's Philox, as the lowering draws it
        double p = op.arg("p").as_double();
        Tensor x = in();
        if (!op.arg("training").boolean || p == 0.0) return {x};
        return {philox_dropout(op, x, p)};
      }
      case OpKind::t_cat: {
        std::vector<Tensor> parts;
        for (const Arg& a : op.arg("tensors").items) parts.push_back(env_.at(a.value));
        return {torch::cat(parts, op.arg("dim").integer)};
      }
      case OpKind::t_split: {
        std::vector<Tensor> parts;
        if (op.arg("split_size_or_sections").kind == Arg::Kind::integer) parts = torch::split(in(), op.arg("split_size_or_sections").integer, op.arg("dim").integer);
        else parts = torch::split_with_sizes(in(), op.arg("split_size_or_sections").int_list(), op.arg("dim").integer);
        for (Tensor& p : parts) p = p.contiguous();
        return parts;
      }
      case OpKind::t_var: {
        Tensor x = in();
        std::vector<int64_t> dims;
        if (op.arg("dim").kind == Arg::Kind::integer) dims = {op.arg("dim").integer};
        else if (op.arg("dim").kind == Arg::Kind::list) dims = op.arg("dim").int_list();
        else for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
        int64_t correction = op.arg("correction").is_number() ? int64_t(op.arg("correction").as_double()) : op.arg("unbiased").is_number() ? int64_t(op.arg("unbiased").as_double() != 0) : 1;
        return {torch::var(x, at::OptionalIntArrayRef(dims), correction, op.arg("keepdim").boolean)};
      }
      case OpKind::t_embedding: {
        const Tensor w = env_.at(op.arg("weight").value);
        const int64_t padding = op.arg("padding_idx").kind == Arg::Kind::none ? -1 : op.arg("padding_idx").integer < 0 ? op.arg("padding_idx").integer + w.size(0) : op.arg("padding_idx").integer;
        return {torch::embedding(w, in().to(torch::kInt64), padding)};
      }
      case OpKind::t_addmm: return {torch::addmm(in(), env_.at(op.arg("mat1").value), env_.at(op.arg("mat2").value), scalar_of(op.arg("beta")), scalar_of(op.arg("alpha")))};
      case OpKind::t_baddbmm:
        return {torch::baddbmm(in(), env_.at(op.arg("batch1").value), env_.at(op.arg("batch2").value), scalar_of(op.arg("beta")), scalar_of(op.arg("alpha")))};
      case OpKind::t_bmm: return {torch::bmm(in(), env_.at(op.arg("mat2").value))};
      case OpKind::t_addcmul:
        return {torch::addcmul(in().to(ct), operand(op.arg("tensor1"), ct), operand(op.arg("tensor2"), ct), scalar_of(op.arg("value")))};
      case OpKind::t_addcdiv:
        return {torch::addcdiv(in().to(ct), operand(op.arg("tensor1"), ct), operand(op.arg("tensor2"), ct), scalar_of(op.arg("value")))};
      case OpKind::t_max:
      case OpKind::t_min: return extremum(op);
      case OpKind::t_clamp: {  // numbers as 0-dim tensors: the Tensor overload takes either bound alone
        auto bound = [&](size_t i) -> c10::optional<Tensor> {
          if (op.arg(i).kind == Arg::Kind::none) return c10::nullopt;
          return operand(op.arg(i), ct);
        };
        return {torch::clamp(in().to(ct), bound(1), bound(2))};
      }
      case OpKind::t_masked_fill: {
        const Tensor mask = operand(op.arg("mask"), torch::kBool);
        if (op.arg("value").is_value()) return {in().masked_fill(mask, operand(op.arg("value"), in().scalar_type()))};
        return {in().masked_fill(mask, scalar_of(op.arg("value")))};
      }
      case OpKind::t_tril:
      case OpKind::t_triu: {
        const Tensor x = in();
        const int64_t d = op.arg("diagonal").integer;
        const bool lower = op.info->kind == OpKind::t_tril;
        if (op.arg("fill_value").kind == Arg::Kind::none) return {lower ? x.tril(d) : x.triu(d)};
        Tensor keep = torch::ones({x.size(-2), x.size(-1)}, torch::kBool);
        return {torch::where(lower ? keep.tril(d) : keep.triu(d), x, operand(op.arg("fill_value"), x.scalar_type()))};
      }
      case OpKind::t_cumsum: return {torch::cumsum(in().to(ct), op.arg("dim").integer)};  // dtype= converts first
      case OpKind::t_normalize: {
        const Tensor x = in();
        const std::vector<int64_t> dims = op.arg("dim").kind == Arg::Kind::integer ? std::vector<int64_t>{op.arg("dim").integer} : op.arg("dim").int_list();
        return {x / torch::norm(x, 2, dims, true).clamp_min(op.arg("eps").as_double()).expand_as(x)};
      }
      case OpKind::t_conv1d:
      case OpKind::t_conv2d:
      case OpKind::t_convolution: {  // the rule admits patch convolutions only: stride is the kernel
        const Tensor w = env_.at(op.arg("weight").value);
        const std::vector<int64_t> kernel(w.sizes().begin() + 2, w.sizes().end()), zeros(kernel.size(), 0), ones(kernel.size(), 1);
        c10::optional<Tensor> bias;
        if (op.arg("bias").is_value()) bias = env_.at(op.arg("bias").value);
        return {torch::convolution(in(), w, bias, kernel, zeros, ones, false, zeros, 1)};
      }
      case OpKind::t_sdpa: {  // the math form, written with LibTorch ops (1.13 has no fused SDPA)
        Tensor q = in(), k = env_.at(op.arg("key").value), v = env_.at(op.arg("value").value);
        if (op.arg("enable_gqa").boolean && q.dim() >= 3 && k.size(-3) != q.size(-3)) {  // enable_gqa, as PyTorch's math form does it
          k = k.repeat_interleave(q.size(-3) / k.size(-3), -3);
          v = v.repeat_interleave(q.size(-3) / v.size(-3), -3);
        }
        double scale = op.arg("scale").is_number() ? op.arg("scale").as_double() : 1.0 / std::sqrt(double(q.size(-1)));
        Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
        if (op.arg("is_causal").boolean) s = s.masked_fill(torch::ones({q.size(-2), k.size(-2)}, torch::kBool).tril().logical_not(), -INFINITY);
        if (op.arg("attn_mask").is_value()) {
          Tensor m = env_.at(op.arg("attn_mask").value);
          s = m.scalar_type() == torch::kBool ? s.masked_fill(m.logical_not(), -INFINITY) : s + m;
        }
        Tensor p = torch::softmax(s, -1);
        double dropout_p = op.arg("dropout_p").as_double();
        if (dropout_p > 0.0) p = philox_dropout(op, p, dropout_p);
        return {torch::matmul(p, v)};
      }
      case OpKind::t_mha: return multi_head_attention(op);
      case OpKind::t_layer_norm: {
        auto ns = op.arg("normalized_shape").int_list();
        c10::optional<Tensor> w, b;
        if (op.arg("weight").is_value()) w = env_.at(op.arg("weight").value);
        if (op.arg("bias").is_value()) b = env_.at(op.arg("bias").value);
        return {torch::layer_norm(in(), ns, w, b, op.arg("eps").as_double())};
      }
      case OpKind::t_rms_norm: {  // LibTorch 1.13 has no rms_norm: its definition, autograd differentiates it
        Tensor x = in();
        std::vector<int64_t> dims;
        for (size_t k = 0; k < op.arg("normalized_shape").items.size(); ++k) dims.push_back(x.dim() - 1 - int64_t(k));
        DType dt = t_.value(op.arg("a").value).dtype;
        double eps = op.arg("eps").is_number() ? op.arg("eps").as_double()
                                           : dt == DType::f64 ? 2.220446049250313e-16 : dt == DType::f16 ? 0.0009765625 : dt == DType::bf16 ? 0.0078125 : 1.1920929e-07;
        Tensor y = x * torch::rsqrt(x.square().mean(dims, true) + eps);
        return {op.arg("weight").is_value() ? y * env_.at(op.arg("weight").value) : y};
      }
      case OpKind::t_sum:
      case OpKind::t_mean: {
        Tensor x = in();
        if (op.arg("dtype").kind == Arg::Kind::dtype) x = x.to(compute(op.arg("dtype").dtype));
        std::vector<int64_t> dims;
        if (op.arg("dim").kind == Arg::Kind::integer) dims = {op.arg("dim").integer};
        else if (op.arg("dim").kind == Arg::Kind::list) dims = op.arg("dim").int_list();
        else for (int64_t d = 0; d < x.dim(); ++d) dims.push_back(d);
        bool keep = op.arg("keepdim").boolean;
        if (dims.empty()) return {x};
        if (op.info->kind == OpKind::t_mean) return {x.mean(dims, keep)};
        return {x.sum(dims, keep, is_float(out.dtype) ? x.scalar_type() : torch::kInt64)};
      }
      case OpKind::partial_sum: {
        // Part p sums the rows r (the leading, reduced dims flattened) with r % parts == p.
        const int64_t parts = op.arg("parts").integer;
        int64_t rows = 1;
        for (int64_t d : reduction_dims(t_, op)) rows *= in().size(d);
        const int64_t per_row = rows == 0 ? 0 : in().numel() / rows;
        Tensor x = in().to(ct).reshape({rows, per_row});
        const int64_t groups = (rows + parts - 1) / parts;
        x = torch::constant_pad_nd(x, {0, 0, 0, groups * parts - rows}).reshape({groups, parts, per_row}).sum(0);
        return {x.reshape(out.shape)};
      }
      case OpKind::fused_kernel: break;
      // One process has no other ranks: distributed traces are checked against PyTorch eager by
      // tools/check_distributed.py, with the ranks as threads of the emulated harness.
      case OpKind::all_reduce: case OpKind::all_gather: case OpKind::reduce_scatter: case OpKind::broadcast:
      case OpKind::t_synchronize: case OpKind::t_wait: case OpKind::t_pack: case OpKind::t_unpack:
      case OpKind::t_pack_for_fsdp: case OpKind::t_unpack_for_fsdp:
        throw std::runtime_error("reference: " + op.symbol + " at " + op.where +
                                 ": the reference interpreter runs one process, not a process group (tools/check_distributed.py checks distributed traces)");
    }
    throw InternalError("reference: cannot evaluate " + op.symbol);
  }

  // x with elements dropped with probability p, scaled by 1 / (1 - p): the mask from the runtime's
  // Philox stream given by the op's seed, offset and stream parameters, as the lowering draws it.
  Tensor philox_dropout(const Op& op, const Tensor& x, double p) {
    uint64_t seed = uint64_t(operand(op.arg("seed"), torch::kInt64).item<int64_t>());
    uint64_t offset = uint64_t(operand(op.arg("offset"), torch::kInt64).item<int64_t>());
    Tensor keep = torch::empty({x.numel()}, torch::kBool);
    bool* k = keep.data_ptr<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) k[i] = philox_uniform(seed, offset, i, uint64_t(op.arg("stream").integer)) < float(1.0 - p);
    return x * keep.reshape(x.sizes()).to(x.scalar_type()) * (1.0 / (1.0 - p));
  }

  // multi_head_attention_forward as PyTorch's Python function computes it, in LibTorch ops
  // (LibTorch 1.13's C++ multi_head_attention_forward differs: it adds a b8 attn_mask as 0/1 and
  // takes no 3-D attn_mask, no float key_padding_mask and no is_causal). Attention dropout drops
  // the weights, which need_weights returns dropped, as PyTorch does.
  std::vector<Tensor> multi_head_attention(const Op& op) {
    auto given = [&](std::string_view name) -> c10::optional<Tensor> {
      if (!op.arg(name).is_value()) return c10::nullopt;
      return env_.at(op.arg(name).value);
    };
    const bool batched = t_.value(op.arg("query").value).shape.size() == 3;
    auto batch = [&](std::string_view name) { return batched ? *given(name) : given(name)->unsqueeze(1); };
    const Tensor query = batch("query"), key = batch("key"), value = batch("value");
    const int64_t l = query.size(0), n = query.size(1), e = query.size(2), s = key.size(0), heads = op.arg("num_heads").integer;
    const int64_t head_dim = e / heads;
    auto as_float = [&](c10::optional<Tensor> m) -> c10::optional<Tensor> {  // _canonical_mask: b8 true is -inf
      if (!m || m->scalar_type() != torch::kBool) return m;
      return torch::zeros(m->sizes(), query.options()).masked_fill(*m, -INFINITY);
    };
    const bool causal = mha_causal_replaces_mask(op);
    c10::optional<Tensor> mask = causal ? c10::nullopt : as_float(given("attn_mask")), padding = as_float(given("key_padding_mask"));
    std::vector<c10::optional<Tensor>> biases(3);
    if (auto b = given("in_proj_bias")) biases = {b->chunk(3)[0], b->chunk(3)[1], b->chunk(3)[2]};
    constexpr std::string_view kWeights[] = {"q_proj_weight", "k_proj_weight", "v_proj_weight"};
    auto project = [&](size_t which, const Tensor& x) {
      Tensor w = op.arg("use_separate_proj_weight").boolean ? *given(kWeights[which]) : given("in_proj_weight")->chunk(3)[which];
      return torch::linear(x, w, biases[which]).reshape({x.size(0), n * heads, head_dim}).transpose(0, 1);
    };
    const Tensor q = project(0, query), k = project(1, key), v = project(2, value);
    if (mask && mask->dim() == 2) mask = mask->unsqueeze(0);
    if (padding) {
      Tensor p = padding->reshape({n, 1, 1, s}).expand({n, heads, 1, s}).reshape({n * heads, 1, s});
      mask = mask ? *mask + p : p;
    }
    const Tensor q_scaled = q * std::sqrt(1.0 / double(head_dim)), k_t = k.transpose(-2, -1);
    Tensor scores = mask ? torch::baddbmm(*mask, q_scaled, k_t) : torch::bmm(q_scaled, k_t);
    if (causal) scores = scores.masked_fill(torch::ones({l, s}, torch::kBool).tril().logical_not(), -INFINITY);
    Tensor weights = torch::softmax(scores, -1);
    const double dropout_p = op.arg("dropout_p").as_double();
    if (op.arg("training").boolean && dropout_p > 0.0) weights = philox_dropout(op, weights, dropout_p);
    Tensor y = torch::bmm(weights, v).transpose(0, 1).reshape({l * n, e});
    y = torch::linear(y, *given("out_proj_weight"), given("out_proj_bias")).view({l, n, -1});
    if (!batched) y = y.squeeze(1);
    if (!op.arg("need_weights").boolean) return {y};
    Tensor w = weights.view({n, heads, l, s});
    if (op.arg("average_attn_weights").boolean) w = w.mean(1);
    return {y, batched ? w : w.squeeze(0)};
  }

  // torch.max / torch.min in their three forms, on operands rounded as maximum's and amax's are.
  std::vector<Tensor> extremum(const Op& op) {
    const bool is_max = op.info->kind == OpKind::t_max;
    if (op.arg("dim").is_value() || op.arg("other").is_value()) {
      const DType dt = t_.value(op.outs[0]).dtype;
      const Tensor a = as_stored(operand(op.arg("input"), compute(dt)), dt);
      const Tensor b = as_stored(operand(op.arg("dim").is_value() ? op.arg("dim") : op.arg("other"), compute(dt)), dt);
      return {is_max ? torch::max(a, b) : torch::min(a, b)};
    }
    const Tensor x = as_stored(env_.at(op.arg("input").value), t_.value(op.arg("input").value).dtype);
    if (op.arg("dim").kind == Arg::Kind::none) return {is_max ? x.max() : x.min()};
    auto [values, indices] = is_max ? torch::max(x, op.arg("dim").integer, op.arg("keepdim").boolean) : torch::min(x, op.arg("dim").integer, op.arg("keepdim").boolean);
    return {values, indices};
  }

  Tensor reduce(const Op& op) {
    Tensor x = env_.at(op.arg("a").value);
    auto dims = reduction_dims(t_, op);
    if (dims.empty()) return x;  // LibTorch would reduce everything for an empty dim list
    switch (op.info->kind) {
      case OpKind::sum: return x.sum(dims, false, is_float(t_.value(op.outs[0]).dtype) ? x.scalar_type() : torch::kInt64);
      case OpKind::prod: {
        for (auto it = dims.rbegin(); it != dims.rend(); ++it) x = x.prod(*it, false, is_float(t_.value(op.outs[0]).dtype) ? x.scalar_type() : torch::kInt64);
        return x;
      }
      // (Rounded as maximum's operands are, for the gradient's mask.)
      case OpKind::amax: return as_stored(x, t_.value(op.arg("a").value).dtype).amax(dims);
      default: return as_stored(x, t_.value(op.arg("a").value).dtype).amin(dims);
    }
  }

  // Pads one dim at a time: positions lo + p * (interior + 1) take input element p.
  Tensor pad(const Op& op) {
    Tensor x = env_.at(op.arg("a").value);
    const Arg& config = op.arg("padding_config");
    for (size_t d = 0; d < config.items.size(); ++d) {
      auto lhi = config.items[d].int_list();
      int64_t len = x.size(int64_t(d)), step = lhi[2] + 1;
      int64_t out_len = lhi[0] + lhi[1] + len + (len > 0 ? (len - 1) * lhi[2] : 0);
      std::vector<int64_t> shape = x.sizes().vec();
      shape[d] = out_len;
      Tensor padded = operand(op.arg("padding_value"), x.scalar_type()).expand(shape).contiguous();
      std::vector<int64_t> from, to;
      for (int64_t p = 0; p < len; ++p) {
        int64_t o = lhi[0] + p * step;
        if (o >= 0 && o < out_len) { from.push_back(p); to.push_back(o); }
      }
      if (!from.empty())
        padded.index_copy_(int64_t(d), torch::tensor(to, torch::kInt64), x.index_select(int64_t(d), torch::tensor(from, torch::kInt64)));
      x = padded;
    }
    return x;
  }
};

}  // namespace

std::vector<torch::Tensor> run_reference(const Trace& trace, const std::vector<torch::Tensor>& inputs, Precision precision) {
  return Interpreter(trace, precision).run(inputs);
}

ReferenceGradients reference_gradients(const Trace& trace, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& cotangents,
                                       Precision precision) {
  std::vector<torch::Tensor> leaves;
  std::vector<torch::Tensor> differentiable;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = trace.value(trace.inputs[i]);
    torch::Tensor x = inputs[i].to(precision == Precision::wide && is_float(v.dtype) ? torch::kDouble : torch_compute_dtype(v.dtype)).detach();
    if (v.requires_grad) {
      x.requires_grad_(true);
      differentiable.push_back(x);
    }
    leaves.push_back(x);
  }
  ReferenceGradients r;
  r.outputs = run_reference(trace, leaves, precision);
  std::vector<torch::Tensor> roots, seeds;
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (r.outputs[i].requires_grad()) {
      roots.push_back(r.outputs[i]);
      seeds.push_back(cotangents.at(i).to(r.outputs[i].scalar_type()));
    }
  std::vector<torch::Tensor> grads;
  if (!roots.empty()) grads = torch::autograd::grad(roots, differentiable, seeds, /*retain_graph=*/false, /*create_graph=*/false, /*allow_unused=*/true);
  for (size_t i = 0; i < differentiable.size(); ++i) {
    torch::Tensor g = i < grads.size() && grads[i].defined() ? grads[i] : torch::zeros_like(differentiable[i]);
    r.gradients.push_back(g.detach());
  }
  for (torch::Tensor& o : r.outputs) o = o.detach();
  return r;
}

}  // namespace tg
