#include "reference.h"

#include "interpreter.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <functional>
#include <map>

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

torch::Dtype compute_dtype(DType t, Precision precision) {
  if (precision == Precision::eager) return torch_storage_dtype(t);
  return precision == Precision::wide && is_float(t) ? torch::kDouble : torch_compute_dtype(t);
}

namespace reference {

std::vector<int64_t> to_vec(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

std::vector<Tensor> Interpreter::run(const std::vector<Tensor>& inputs) {
  TG_CHECK(inputs.size() == t_.inputs.size(), "reference: wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i) env_[t_.inputs[i]] = inputs[i].to(compute(t_.value(t_.inputs[i]).dtype));
  ops(t_.ops);
  std::vector<Tensor> out;
  for (ValueId v : t_.outputs) out.push_back(env_.at(v));
  return out;
}

void Interpreter::ops(const std::vector<Op>& list) {
  for (const Op& op : list) one(op);
}

void Interpreter::one(const Op& op) {
  if (op.info && op.info->kind == OpKind::fused_kernel) return ops(op.sub);
  if (op.info) {
    std::vector<Tensor> outs = evaluator(op.info->kind)(*this, op);
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

// Runs a body with `inputs` bound to its inputs; returns its outputs (undefined for null ones)
// and, for fwd, its saved values.
std::vector<Tensor> Interpreter::run_body(const SubTrace& body, const std::vector<Tensor>& inputs, std::vector<Tensor>* saved) {
  Interpreter inner(t_, precision_);
  for (size_t i = 0; i < inputs.size(); ++i) inner.env_[body.inputs.at(i)] = inputs[i];
  inner.ops(body.ops);
  std::vector<Tensor> out;
  for (ValueId v : body.outputs) out.push_back(v == kNoValue ? Tensor() : inner.env_.at(v).clone());
  if (saved)
    for (ValueId v : body.saved) saved->push_back(inner.env_.at(v));
  return out;
}

struct Interpreter::CustomFunction : torch::autograd::Function<CustomFunction> {
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

// A custom-gradient op runs as a LibTorch autograd Function, so torch differentiates it with
// the user's bwd body, as the contract demands, and never sees inside its fwd.
void Interpreter::custom_forward(const Op& op) {
  std::vector<Tensor> args;
  for (const Arg& a : op.args)
    if (a.is_value() && !t_.value(a.value).is_scalar) args.push_back(env_.at(a.value));
  std::vector<Tensor> outs = CustomFunction::apply(&op, this, at::TensorList(args));
  for (size_t i = 0; i < op.outs.size(); ++i) env_[op.outs[i]] = outs[i];
}

Tensor Interpreter::operand(const Arg& a, torch::Dtype as) const {
  if (a.is_value()) return env_.at(a.value).to(as);
  const bool integer = a.kind == Arg::Kind::integer;
  return torch::scalar_tensor(integer ? torch::Scalar(a.integer) : a.kind == Arg::Kind::boolean ? torch::Scalar(a.boolean) : torch::Scalar(a.real),
                              torch::TensorOptions().dtype(integer ? torch::kLong : torch::kDouble))
      .to(as);
}

torch::Scalar Interpreter::scalar_of(const Arg& a) const {
  if (a.is_value()) {  // a scalar value: its kind decides
    const double v = env_.at(a.value).item<double>();
    const DType t = t_.value(a.value).dtype;
    return is_float(t) ? torch::Scalar(v) : is_bool(t) ? torch::Scalar(v != 0) : torch::Scalar(int64_t(v));
  }
  return a.kind == Arg::Kind::real ? torch::Scalar(a.real) : a.kind == Arg::Kind::boolean ? torch::Scalar(a.boolean) : torch::Scalar(a.integer);
}

Tensor Interpreter::philox_uniforms(const Op& op, int64_t n) const {
  const uint64_t seed = uint64_t(operand(op.arg("seed"), torch::kInt64).item<int64_t>());
  const uint64_t offset = uint64_t(operand(op.arg("offset"), torch::kInt64).item<int64_t>());
  Tensor u = torch::empty({n}, torch::kFloat);
  float* p = u.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = philox_uniform(seed, offset, i, uint64_t(op.arg("stream").integer));
  return u;
}

Tensor Interpreter::philox_dropout(const Op& op, const Tensor& x, double p) const {
  const Tensor keep = philox_uniforms(op, x.numel()) < float(1.0 - p);
  return x * keep.reshape(x.sizes()).to(x.scalar_type()) * (1.0 / (1.0 - p));
}

Tensor Interpreter::as_stored(const Tensor& x, DType t) {
  if (t != DType::bf16 && t != DType::f16) return x;
  return x.to(torch_storage_dtype(t)).to(x.scalar_type());
}

namespace {

// Its first n arguments are tensors and the others have defaults.
bool takes_tensors(const c10::FunctionSchema& schema, size_t n) {
  const std::vector<c10::Argument>& args = schema.arguments();
  if (args.size() < n) return false;
  for (size_t i = 0; i < args.size(); ++i)
    if (i < n ? args[i].type()->kind() != c10::TypeKind::TensorType : !args[i].default_value()) return false;
  return true;
}

}  // namespace

Tensor Interpreter::call_aten(std::string_view torch_function, const std::vector<Tensor>& operands) {
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

}  // namespace reference

std::vector<torch::Tensor> run_reference(const Trace& trace, const std::vector<torch::Tensor>& inputs, Precision precision) {
  return reference::Interpreter(trace, precision).run(inputs);
}

ReferenceGradients reference_gradients(const Trace& trace, const std::vector<torch::Tensor>& inputs, const std::vector<torch::Tensor>& cotangents,
                                       Precision precision) {
  std::vector<torch::Tensor> leaves;
  std::vector<torch::Tensor> differentiable;
  std::vector<DType> differentiable_dtypes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = trace.value(trace.inputs[i]);
    torch::Tensor x = inputs[i].to(compute_dtype(v.dtype, precision)).detach();
    if (v.requires_grad) {
      x.requires_grad_(true);
      differentiable.push_back(x);
      differentiable_dtypes.push_back(v.dtype);
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
  if (precision == Precision::eager) {  // (16-bit results widened to their compute dtype, as the other modes give them)
    for (size_t i = 0; i < r.outputs.size(); ++i) r.outputs[i] = r.outputs[i].to(torch_compute_dtype(trace.value(trace.outputs[i]).dtype));
    for (size_t i = 0; i < r.gradients.size(); ++i) r.gradients[i] = r.gradients[i].to(torch_compute_dtype(differentiable_dtypes[i]));
  }
  return r;
}

}  // namespace tg
