#include "evaluate.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/TypeProperties.h>

#include <regex>

#include "support/diagnostics.h"

namespace tg::reference {
namespace {

DType from_torch(torch::ScalarType t) {
  for (DType d : kAllDTypes)
    if (torch_storage_dtype(d) == t) return d;
  throw std::runtime_error("reference: LibTorch promoted to a dtype thunder-gen has not: " + std::string(c10::toString(t)));
}

// The dtype a torch-level elementwise call computes in, by LibTorch's own type promotion over the
// declared dtypes (independent of src/ops/torch_elementwise.cpp's), with PyTorch's float rule for
// true division and float functions of integers.
DType torch_form_dtype(const Interpreter& in, const Op& op) {
  const Trace& t = in.trace();
  at::native::ResultTypeState state;
  for (size_t i = op.info->kind == OpKind::where ? 1 : 0; i < op.args.size() && op.info->params[i].kind == ParamKind::tensor_or_number; ++i) {
    const Arg& a = op.arg(i);
    if (a.is_value() && !t.value(a.value).is_scalar) {
      const Value& v = t.value(a.value);
      const Tensor probe = torch::empty(v.shape.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{1},
                                        torch::TensorOptions().dtype(torch_storage_dtype(v.dtype)));
      state = at::native::update_result_type_state(probe, state);
    } else {
      state = at::native::update_result_type_state(in.scalar_of(a), state);
    }
  }
  DType common = from_torch(at::native::result_type(state));
  const bool true_division = op.info->kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::none;
  if (!is_float(common) && (op_info(op.info->kind).accepts == DTypes::floats || true_division)) common = DType::f32;
  return common;
}

}  // namespace

Operands::Operands(Interpreter& in, const Op& op) : in_(in), op_(op), torch_form_(is_torch_form(*op.info)) {
  const Value& out = in.trace().value(op.outs[0]);
  dtype = torch_form_ ? torch_form_dtype(in, op) : operand_dtype(in.trace(), op);
  if (torch_form_ && out.dtype != DType::b8 && out.dtype != dtype)
    throw std::runtime_error("reference: " + op.symbol + " at " + op.where + ": LibTorch promotes to " + std::string(dtype_name(dtype)) +
                             ", the trace declares " + std::string(dtype_name(out.dtype)));
}

// A discontinuous op reads 16-bit operands rounded to their dtype, as generated code does; so does
// a kinked one (maximum, minimum): LibTorch's gradients of these compare the operands (thunder-gen's
// rules do it with discontinuous prims), rounded, so both masks see the same values (the values do
// not change: rounding is monotone). A torch-level form's tensors are broadcast to the result's
// shape, as LibTorch would.
Tensor Operands::at(size_t i) const {
  const OpInfo& prim = op_info(op_.info->kind);
  Tensor x = in_.operand(op_.arg(i), in_.compute(dtype));
  if (torch_form_ && op_.arg(i).is_value() && !in_.trace().value(op_.arg(i).value).is_scalar)
    x = x.expand(to_vec(in_.trace().value(op_.outs[0]).shape));
  return op_.info->discontinuous || (torch_form_ && prim.discontinuous) || prim.kinked ? Interpreter::as_stored(x, dtype) : x;
}

std::vector<Tensor> unary_aten(Interpreter& in, const Op& op) { return {Interpreter::call_aten(op.info->torch_function, {Operands(in, op).at(0)})}; }

std::vector<Tensor> unary_integers_unchanged(Interpreter& in, const Op& op) {
  const Operands a(in, op);
  return {a.floating() ? Interpreter::call_aten(op.info->torch_function, {a.at(0)}) : a.at(0)};
}

std::vector<Tensor> binary_float(Interpreter& in, const Op& op) {
  const Operands a(in, op);
  const bool torch_form = is_torch_form(*op.info);
  const OpKind kind = op.info->kind;
  if (torch_form && (kind == OpKind::add || kind == OpKind::sub) && op.arg("alpha").kind != Arg::Kind::none) {
    const torch::Scalar alpha = in.scalar_of(op.arg("alpha"));
    return {kind == OpKind::add ? torch::add(a.at(0), a.at(1), alpha) : torch::sub(a.at(0), a.at(1), alpha)};
  }
  if (torch_form && kind == OpKind::div && op.arg("rounding_mode").kind == Arg::Kind::string) return {torch::div(a.at(0), a.at(1), op.arg("rounding_mode").text)};
  if (kind == OpKind::div && !a.floating()) return {torch::div(a.at(0), a.at(1), "trunc")};  // as C++ divides integers
  return {Interpreter::call_aten(op.info->torch_function, {a.at(0), a.at(1)})};
}

namespace exact {

Tensor aten(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t) { return Interpreter::call_aten(torch_function, {a, b}); }

// Shifts of `bits`-bit integers by a negative amount or by `bits` or more give `beyond_fill` (0, or
// -1 shifting a negative value right), as PyTorch 2 defines them; LibTorch 1.13's CPU kernels leave
// those to the machine (x86 masks the amount).
Tensor shift(std::string_view torch_function, const Tensor& x, const Tensor& by, int64_t bits, const Tensor& beyond_fill) {
  const Tensor beyond = (by < 0) | (by >= bits);
  const Tensor amount = torch::where(beyond, torch::zeros_like(by), by);
  return torch::where(beyond, beyond_fill, Interpreter::call_aten(torch_function, {x, amount}));
}
Tensor shift_left(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits) {
  return shift(torch_function, a, b, bits, torch::zeros_like(a));
}
Tensor shift_right(std::string_view torch_function, const Tensor& a, const Tensor& b, int64_t bits) {
  return shift(torch_function, a, b, bits, (a < 0).to(a.scalar_type()).neg());
}

}  // namespace exact

namespace {

// An op's declared ATen call, "name.overload(param, ...)".
struct AtenCall {
  std::string name, overload;
  std::vector<std::string> params;
};

AtenCall parse(const OpInfo& info) {
  static const std::regex call(R"(([a-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\(([^)]*)\))");
  std::cmatch m;
  const std::string text(info.aten);
  TG_CHECK(std::regex_match(text.c_str(), m, call), std::string(info.id) + ": its aten column \"" + text + "\" is not name.overload(params)");
  AtenCall parsed{m[1].str(), m[2].str(), {}};
  static const std::regex param(R"([a-z0-9_]+)");
  const std::string params = m[3].str();
  for (std::sregex_iterator p(params.begin(), params.end(), param), end; p != end; ++p) parsed.params.push_back(p->str());
  return parsed;
}

std::vector<int64_t> ints_of(const Arg& a) { return a.kind == Arg::Kind::integer ? std::vector<int64_t>{a.integer} : a.int_list(); }

// Parameter `i` of `op` as schema argument `to` wants it. An elementwise op's tensors are its
// prepared operands; the others' are held values.
c10::IValue argument(Interpreter& in, const Op& op, const Operands* elementwise, size_t i, const c10::Argument& to) {
  const Arg& a = op.arg(i);
  std::string type = to.type()->str();
  if (a.kind == Arg::Kind::none) return c10::IValue();
  if (type.back() == '?') type.pop_back();  // (given: not null)
  if (type == "Tensor") return elementwise ? elementwise->at(i) : a.is_value() ? in.value(a) : in.operand(a, torch::kDouble);
  if (type == "Tensor[]") {
    std::vector<Tensor> tensors;
    for (const Arg& item : a.items) tensors.push_back(in.value(item));
    return tensors;
  }
  if (type == "int[]" || type == "SymInt[]") return ints_of(a);
  if (type == "int" || type == "SymInt") return a.integer;
  if (type == "float") return a.as_double();
  if (type == "Scalar") return in.scalar_of(a);
  if (type == "bool") return a.boolean;
  if (type == "str") return a.text;
  throw InternalError("reference: " + op.symbol + ": cannot pass parameter " + std::string(op.info->params[i].name) + " as ATen's " + to.type()->str());
}

}  // namespace

std::vector<Tensor> aten_call(Interpreter& in, const Op& op) {
  const AtenCall call = parse(*op.info);
  const auto handle = c10::Dispatcher::singleton().findSchema({"aten::" + call.name, call.overload});
  TG_CHECK(handle.has_value(), std::string(op.info->id) + ": LibTorch has no aten::" + call.name + (call.overload.empty() ? "" : "." + call.overload));
  const std::vector<c10::Argument>& schema = handle->schema().arguments();
  TG_CHECK(call.params.size() <= schema.size(), std::string(op.info->id) + ": more parameters than aten::" + call.name + " takes");
  const bool elementwise = op.info->fusion == FusionClass::elementwise || is_torch_form(*op.info);
  const std::optional<Operands> operands = elementwise ? std::optional<Operands>(Operands(in, op)) : std::nullopt;
  torch::jit::Stack stack;
  for (size_t k = 0; k < schema.size(); ++k) {
    if (k >= call.params.size()) {
      TG_CHECK(schema[k].default_value().has_value(), std::string(op.info->id) + ": aten::" + call.name + " needs its argument " + schema[k].name());
      stack.push_back(*schema[k].default_value());
      continue;
    }
    const size_t i = param_index(*op.info, call.params[k]);
    TG_CHECK(i < op.info->params.size(), std::string(op.info->id) + ": its aten column names no parameter of it: " + call.params[k]);
    stack.push_back(argument(in, op, operands ? &*operands : nullptr, i, schema[k]));
  }
  handle->callBoxed(stack);
  std::vector<Tensor> out;
  for (const c10::IValue& v : stack) out.push_back(v.toTensor());
  return out;
}

}  // namespace tg::reference
