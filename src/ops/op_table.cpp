// One row per op. To add an op: add its OpKind, a row here, its case in the reference interpreter
// (reference/reference.cpp; the compiler insists) and, for elementwise ops, the device function its
// code template calls (templates/tg_runtime.cuh). The op-table tests then cover it automatically.
// Op::arg and Op::has_arg (declared with the IR, src/ir/trace.h) are defined here: binding by name
// is the signatures' business.
#include "ops/op_table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "ops/distributed.h"
#include "ops/gradients.h"
#include "ops/op_rows.h"
#include "ops/torch_elementwise.h"
#include "support/diagnostics.h"

namespace tg {

// A short scan over string_views: the longest signature (multi_head_attention_forward) has 28.
// Every named argument read goes through here (160,000 times for 36 stacked Llama blocks), so
// the length and first letter rule most parameters out before a whole comparison does.
size_t param_index(const OpInfo& info, std::string_view name) {
  auto is_named = [name](const Param& p) { return p.name.size() == name.size() && (name.empty() || p.name[0] == name[0]) && p.name == name; };
  size_t i = 0;
  while (i < info.params.size() && !is_named(info.params[i])) ++i;
  return i;
}

namespace {

// The position of parameter `name` in op's signature (what a RuleError names); an internal error
// when the op has no signature or its signature declares no such parameter.
size_t declared_position(const Op& op, std::string_view name) {
  TG_CHECK(op.info, op.symbol + " has no signature to read its argument \"" + std::string(name) + "\" by");
  const size_t i = param_index(*op.info, name);
  TG_CHECK(i < op.info->params.size(), std::string(op.info->id) + " declares no parameter \"" + std::string(name) + "\"");
  return i;
}
}  // namespace

namespace {
// Why op.arg(name) has nothing to return: an internal error, since callers name the parameters
// the op's signature declares. (Out of line: arg() is called for nearly every op of every pass.)
[[noreturn, gnu::cold]] void no_argument(const Op& op, std::string_view name) {
  const size_t i = declared_position(op, name);
  TG_CHECK(false, std::string(op.info->id) + "'s parameter \"" + std::string(name) + "\" is not bound (" + std::to_string(op.args.size()) +
                      " arguments, it is number " + std::to_string(i) + ")");
}
}  // namespace

const Arg& Op::arg(std::string_view name) const {
  if (info) {
    const size_t i = param_index(*info, name);
    if (i < info->params.size() && i < args.size()) return args[i];
  }
  no_argument(*this, name);
}

bool Op::has_arg(std::string_view name) const { return info && param_index(*info, name) < args.size(); }

std::string_view fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::elementwise: return "elementwise";
    case FusionClass::shape: return "shape";
    case FusionClass::source: return "source";
    case FusionClass::reduction: return "reduction";
    case FusionClass::library: return "library";
    case FusionClass::composite: return "composite";
    case FusionClass::partial: return "partial";
    case FusionClass::kernel: return "kernel";
  }
  return "?";
}

bool dtypes_accept(DTypes set, DType t) {
  switch (set) {
    case DTypes::floats: return is_float(t);
    case DTypes::numbers: return !is_bool(t);
    case DTypes::numbers_and_bool: return true;
    case DTypes::integers_and_bool: return !is_float(t);
    case DTypes::integers: return is_integer(t);
    case DTypes::any: return true;
  }
  return false;
}

std::string_view dtypes_name(DTypes set) {
  switch (set) {
    case DTypes::floats: return "floats";
    case DTypes::numbers: return "numbers";
    case DTypes::numbers_and_bool: return "numbers_and_bool";
    case DTypes::integers_and_bool: return "integers_and_bool";
    case DTypes::integers: return "integers";
    case DTypes::any: return "any";
  }
  return "?";
}

namespace {

using K = ParamKind;
using namespace op_rows;

const Value* tensor_arg(const Trace& t, const Op& op, size_t i) {
  const Arg& a = op.arg(i);
  if (!a.is_value() || t.value(a.value).is_scalar) return nullptr;
  return &t.value(a.value);
}

// Wraps a possibly negative dim into [0, rank).
int64_t wrap_dim(int64_t d, size_t rank, int arg) {
  int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r) fail(arg, "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(r));
  return d < 0 ? d + r : d;
}

// ---- shape rules --------------------------------------------------------------------------

// Elementwise: tensor operands share one shape and dtype; numbers broadcast.
ShapeRule elementwise_rule(bool bool_result) {
  return [bool_result](const Trace& t, const Op& op) -> std::vector<OutType> {
    const Value* first = nullptr;
    for (size_t i = 0; i < op.args.size(); ++i) {
      const Value* v = tensor_arg(t, op, i);
      if (!v) continue;
      if (!dtypes_accept(op.info->accepts, v->dtype))
        fail(int(i), "does not accept dtype " + std::string(dtype_name(v->dtype)));
      if (!first) { first = v; continue; }
      if (v->shape != first->shape)
        fail(int(i), "shape " + shape_str(v->shape) + " does not match " + shape_str(first->shape) +
                         " (elementwise prims need equal shapes; broadcast with prims.broadcast_in_dim)");
      if (v->dtype != first->dtype)
        fail(int(i), "dtype " + std::string(dtype_name(v->dtype)) + " does not match " + std::string(dtype_name(first->dtype)) +
                         " (convert with prims.convert_element_type)");
    }
    if (!first) fail(-1, "needs at least one tensor operand (scalar-only arithmetic is not supported)");
    return {{bool_result ? DType::b8 : first->dtype, first->shape}};
  };
}

std::vector<OutType> where_rule(const Trace& t, const Op& op) {
  const Value* pred = tensor_arg(t, op, 0);
  if (pred && pred->dtype != DType::b8) fail(0, "the condition must be b8, not " + std::string(dtype_name(pred->dtype)));
  const Value* a = tensor_arg(t, op, 1);
  const Value* b = tensor_arg(t, op, 2);
  if (!a && !b) fail(-1, "needs a tensor among its two branches");
  if (a && b && a->dtype != b->dtype) fail(2, "branch dtypes differ: " + std::string(dtype_name(a->dtype)) + " and " + std::string(dtype_name(b->dtype)));
  const Value* like = a ? a : b;
  for (int i = 0; i < 3; ++i)
    if (const Value* v = tensor_arg(t, op, i); v && v->shape != like->shape)
      fail(i, "shape " + shape_str(v->shape) + " does not match " + shape_str(like->shape));
  return {{like->dtype, like->shape}};
}

std::vector<OutType> convert_rule(const Trace& t, const Op& op) {
  return {{op.arg("dtype").dtype, t.value(op.arg("a").value).shape}};
}

void check_shape(const std::vector<int64_t>& shape, int arg) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(arg, "negative dimension " + std::to_string(d));
    if (d > 0 && n > (int64_t(1) << 48) / d) fail(arg, "shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
}

std::vector<OutType> full_rule(const Trace&, const Op& op) {
  Shape shape = op.arg("shape").int_list();
  check_shape(shape, 0);
  return {{op.arg("dtype").dtype, shape}};
}

std::vector<OutType> uniform_rule(const Trace&, const Op& op) {
  Shape shape = op.arg("shape").int_list();
  check_shape(shape, 0);
  if (!is_float(op.arg("dtype").dtype)) fail(4, std::string(op.info->id) + " makes floats, not " + std::string(dtype_name(op.arg("dtype").dtype)));
  return {{op.arg("dtype").dtype, shape}};
}

std::vector<OutType> iota_rule(const Trace&, const Op& op) {
  int64_t n = op.arg("length").integer;
  if (n < 0) fail(0, "length must not be negative");
  if (op.arg("step").integer == 0) fail(2, "step must not be zero");
  DType dt = op.arg("dtype").dtype;
  if (is_bool(dt)) fail(4, "iota cannot make b8");
  return {{dt, Shape{n}}};
}

std::vector<OutType> broadcast_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = op.arg("shape").int_list();
  check_shape(shape, 1);
  std::vector<int64_t> bdims = op.arg("broadcast_dimensions").int_list();
  if (bdims.size() != a.shape.size())
    fail(2, "needs one broadcast dimension per input dimension (" + std::to_string(a.shape.size()) + "), got " + std::to_string(bdims.size()));
  int64_t last = -1;
  for (size_t i = 0; i < bdims.size(); ++i) {
    int64_t d = bdims[i];
    if (d < 0 || d >= int64_t(shape.size())) fail(2, "broadcast dimension " + std::to_string(d) + " is out of range for rank " + std::to_string(shape.size()));
    if (d <= last) fail(2, "broadcast dimensions must be strictly increasing");
    last = d;
    if (a.shape[i] != 1 && a.shape[i] != shape[d])
      fail(1, "input dimension " + std::to_string(i) + " of length " + std::to_string(a.shape[i]) + " cannot broadcast to length " + std::to_string(shape[d]));
  }
  return {{a.dtype, shape}};
}

std::vector<OutType> reshape_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = op.arg("shape").int_list();
  check_shape(shape, 1);
  if (numel(shape) != numel(a.shape))
    fail(1, "cannot reshape " + shape_str(a.shape) + " (" + std::to_string(numel(a.shape)) + " elements) to " + shape_str(shape));
  return {{a.dtype, shape}};
}

std::vector<OutType> transpose_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<int64_t> perm = op.arg("permutation").int_list();
  if (perm.size() != a.shape.size()) fail(1, "permutation has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(a.shape.size()));
  std::vector<bool> seen(perm.size());
  Shape shape;
  for (int64_t d : perm) {
    int64_t w = wrap_dim(d, perm.size(), 1);
    if (seen[w]) fail(1, "permutation repeats dim " + std::to_string(w));
    seen[w] = true;
    shape.push_back(a.shape[w]);
  }
  return {{a.dtype, shape}};
}

std::vector<OutType> squeeze_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::set<int64_t> dims;
  for (int64_t d : op.arg("dims").int_list()) {
    int64_t w = wrap_dim(d, a.shape.size(), 1);
    if (a.shape[w] != 1) fail(1, "cannot squeeze dim " + std::to_string(w) + " of length " + std::to_string(a.shape[w]));
    if (!dims.insert(w).second) fail(1, "dim " + std::to_string(w) + " listed twice");
  }
  Shape shape;
  for (size_t i = 0; i < a.shape.size(); ++i)
    if (!dims.count(int64_t(i))) shape.push_back(a.shape[i]);
  return {{a.dtype, shape}};
}

std::vector<OutType> slice_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  auto start = op.arg("start_indices").int_list(), end = op.arg("end_indices").int_list();
  std::vector<int64_t> strides(a.shape.size(), 1);
  if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
  if (start.size() != a.shape.size()) fail(1, "needs one start index per dimension");
  if (end.size() != a.shape.size()) fail(2, "needs one end index per dimension");
  if (strides.size() != a.shape.size()) fail(3, "needs one stride per dimension");
  Shape shape;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    if (start[i] < 0 || start[i] > a.shape[i]) fail(1, "start index " + std::to_string(start[i]) + " is out of range for dim " + std::to_string(i) + " of length " + std::to_string(a.shape[i]));
    if (end[i] < start[i] || end[i] > a.shape[i]) fail(2, "end index " + std::to_string(end[i]) + " is out of range for dim " + std::to_string(i));
    if (strides[i] < 1) fail(3, "strides must be positive");
    int64_t len = end[i] - start[i];
    shape.push_back(len == 0 ? 0 : 1 + (len - 1) / strides[i]);  // no overflow for huge strides
  }
  return {{a.dtype, shape}};
}

std::vector<OutType> pad_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  const Arg& config = op.arg("padding_config");
  if (config.items.size() != a.shape.size()) fail(2, "needs one (lo, hi, interior) triple per dimension");
  Shape shape;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    auto triple = config.items[i].int_list();
    if (triple[2] < 0) fail(2, "interior padding must not be negative");
    int64_t len = a.shape[i], out = 0, interior = 0;
    if (__builtin_mul_overflow(len > 0 ? len - 1 : 0, triple[2], &interior) || __builtin_add_overflow(triple[0], triple[1], &out) ||
        __builtin_add_overflow(out, len, &out) || __builtin_add_overflow(out, interior, &out))
      fail(2, "padding of dimension " + std::to_string(i) + " overflows 64 bits");
    if (out < 0) fail(2, "dimension " + std::to_string(i) + " would have negative length " + std::to_string(out));
    shape.push_back(out);
  }
  return {{a.dtype, shape}};
}

std::vector<OutType> cat_rule(const Trace& t, const Op& op) {
  const Arg& list = op.arg("tensors");
  if (list.items.empty()) fail(0, "needs at least one tensor");
  const Value& first = t.value(list.items[0].value);
  if (first.shape.empty()) fail(0, "cannot concatenate 0-d tensors");
  int64_t dim = wrap_dim(op.arg("dim").integer, first.shape.size(), 1);
  Shape shape = first.shape;
  for (size_t i = 1; i < list.items.size(); ++i) {
    const Value& v = t.value(list.items[i].value);
    if (v.dtype != first.dtype) fail(0, "tensor " + std::to_string(i) + " has dtype " + std::string(dtype_name(v.dtype)) + ", not " + std::string(dtype_name(first.dtype)));
    if (v.shape.size() != first.shape.size()) fail(0, "tensor " + std::to_string(i) + " has rank " + std::to_string(v.shape.size()));
    for (size_t d = 0; d < shape.size(); ++d)
      if (int64_t(d) != dim && v.shape[d] != first.shape[d]) fail(0, "tensor " + std::to_string(i) + " has shape " + shape_str(v.shape) + ", incompatible with " + shape_str(first.shape));
    shape[dim] += v.shape[dim];
  }
  return {{first.dtype, shape}};
}

// a [..., M, K] @ b [K, N] or [..., K, N] (the same batch dims) -> [..., M, N]. prims.matmul's
// transpose_a / transpose_b (2-D operands only) say a is [K, M] / b is [N, K] in memory.
std::vector<OutType> matmul_rule(const Trace& t, const Op& op) {
  Value a = t.value(op.arg("a").value);
  Value b = t.value(op.arg("b").value);
  // A transposed operand's shape as the messages below show it: stored, then as read.
  auto shape_str = [&](const Shape& s) {
    bool read_transposed = (&s == &a.shape && op.has_arg("transpose_a") && op.arg("transpose_a").boolean) || (&s == &b.shape && op.has_arg("transpose_b") && op.arg("transpose_b").boolean);
    return read_transposed ? tg::shape_str({s[1], s[0]}) + " read transposed as " + tg::shape_str(s) : tg::shape_str(s);
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

// ---- torch-level shape rules ----

const Value& float_tensor(const Trace& t, const Op& op, size_t i) {
  const Value& a = t.value(op.arg(i).value);
  if (!is_float(a.dtype)) fail(int(i), "needs a float tensor, not " + std::string(dtype_name(a.dtype)));
  return a;
}

// Same shape and dtype as the float input (activations).
std::vector<OutType> like_input_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  return {{a.dtype, a.shape}};
}

// softmax / log_softmax(a, dim, dtype=None).
std::vector<OutType> softmax_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  if (a.shape.empty()) fail(0, "needs at least one dim");
  wrap_dim(op.arg("dim").integer, a.shape.size(), 1);
  if (op.arg("dtype").kind == Arg::Kind::dtype) {
    if (!is_float(op.arg("dtype").dtype)) fail(2, "must be a float dtype");
    return {{op.arg("dtype").dtype, a.shape}};
  }
  return {{a.dtype, a.shape}};
}

std::vector<OutType> gelu_rule(const Trace& t, const Op& op) {
  const std::string& mode = op.arg("approximate").text;
  if (mode != "none" && mode != "tanh") fail(1, "approximate must be \"none\" or \"tanh\", not \"" + mode + "\"");
  return like_input_rule(t, op);
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

// shallow_copy(a), stride_order(a, order): the same values (thunder-gen chooses layouts itself).
std::vector<OutType> same_as_input_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  if (op.info->kind == OpKind::stride_order) {
    std::vector<int64_t> order = op.arg("order").int_list(), sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted.size() != a.shape.size() || sorted[i] != int64_t(i)) fail(1, "must be a permutation of the input's " + std::to_string(a.shape.size()) + " dims");
  }
  return {{a.dtype, a.shape}};
}

// reshape(a, shape) with at most one -1.
std::vector<OutType> torch_reshape_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = op.arg("shape").int_list();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail(1, "at most one dim may be -1");
      infer = int64_t(i);
    } else if (shape[i] < 0) {
      fail(1, "negative dim " + std::to_string(shape[i]));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel(a.shape) % known) fail(1, "cannot infer the -1 dim of " + shape_str(shape) + " for " + shape_str(a.shape));
    shape[size_t(infer)] = numel(a.shape) / known;
  }
  if (numel(shape) != numel(a.shape)) fail(1, "shape " + shape_str(shape) + " has a different number of elements than " + shape_str(a.shape));
  return {{a.dtype, shape}};
}

std::vector<OutType> permute_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<int64_t> perm = op.arg("dims").int_list();
  if (perm.size() != a.shape.size()) fail(1, "needs " + std::to_string(a.shape.size()) + " dims");
  std::vector<bool> seen(perm.size());
  Shape out;
  for (int64_t d : perm) {
    int64_t w = wrap_dim(d, perm.size(), 1);
    if (seen[size_t(w)]) fail(1, "dim " + std::to_string(d) + " appears twice");
    seen[size_t(w)] = true;
    out.push_back(a.shape[size_t(w)]);
  }
  return {{a.dtype, out}};
}

std::vector<OutType> torch_transpose_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape out = a.shape;
  std::swap(out[size_t(wrap_dim(op.arg("dim0").integer, a.shape.size(), 1))], out[size_t(wrap_dim(op.arg("dim1").integer, a.shape.size(), 2))]);
  return {{a.dtype, out}};
}

std::vector<OutType> unsqueeze_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape out = a.shape;
  int64_t d = wrap_dim(op.arg("dim").integer, a.shape.size() + 1, 1);
  out.insert(out.begin() + d, 1);
  return {{a.dtype, out}};
}

// sum / mean(a, dim=None, keepdim=False, *, dtype=None).
std::vector<OutType> torch_reduction_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<bool> reduced(a.shape.size(), op.arg("dim").kind == Arg::Kind::none);
  auto mark = [&](int64_t d) {
    int64_t w = wrap_dim(d, a.shape.size(), 1);
    if (reduced[size_t(w)] && op.arg("dim").kind != Arg::Kind::none) fail(1, "dim " + std::to_string(d) + " appears twice");
    reduced[size_t(w)] = true;
  };
  if (op.arg("dim").kind == Arg::Kind::integer) mark(op.arg("dim").integer);
  if (op.arg("dim").kind == Arg::Kind::list)
    for (const Arg& d : op.arg("dim").items) mark(d.integer);
  DType dt = op.arg("dtype").kind == Arg::Kind::dtype ? op.arg("dtype").dtype : a.dtype;
  if (op.info->kind == OpKind::t_mean && !is_float(dt)) fail(0, "mean needs a float dtype, not " + std::string(dtype_name(dt)));
  if (op.info->kind == OpKind::t_sum && !is_float(dt) && dt != DType::i64) dt = DType::i64;  // torch.sum promotes integers
  Shape out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(a.shape[d]);
    else if (op.arg("keepdim").boolean) out.push_back(1);
  }
  return {{dt, out}};
}

// layer_norm(a, normalized_shape, weight=None, bias=None, eps=1e-5) and
// rms_norm(a, normalized_shape, weight=None, eps=None): normalized_shape is a's trailing dims;
// weight and bias have that shape.
std::vector<OutType> norm_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  Shape ns = op.arg("normalized_shape").int_list();
  if (ns.empty() || ns.size() > a.shape.size() || !std::equal(ns.begin(), ns.end(), a.shape.end() - ptrdiff_t(ns.size())))
    fail(1, "normalized_shape " + shape_str(ns) + " must be the trailing dims of " + shape_str(a.shape));
  size_t affine = op.info->kind == OpKind::t_layer_norm ? 2 : 1;  // weight (and bias)
  for (size_t i = 2; i < 2 + affine; ++i)
    if (op.arg(i).is_value()) {
      const Value& p = t.value(op.arg(i).value);
      if (p.shape != ns || p.dtype != a.dtype) fail(int(i), "must be " + std::string(dtype_name(a.dtype)) + shape_str(ns));
    }
  return {{a.dtype, a.shape}};
}

// cross_entropy(a [N, C], target [N] class indices, weight=None, size_average=None,
// ignore_index=-100, reduce=None, reduction="mean", label_smoothing=0.0);
// nll_loss(a, target, weight=None, ignore_index=None, reduction="mean").
std::vector<OutType> class_loss_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  const Value& target = t.value(op.arg("target").value);
  if (a.shape.size() != 2) fail(0, "needs [N, C] scores, has shape " + shape_str(a.shape));
  if (target.dtype != DType::i64 && target.dtype != DType::i32) fail(1, "needs class indices (i64 or i32), not " + std::string(dtype_name(target.dtype)));
  if (target.shape != Shape{a.shape[0]}) fail(1, "needs shape [" + std::to_string(a.shape[0]) + "], has " + shape_str(target.shape));
  if (op.arg("weight").is_value()) {
    const Value& w = t.value(op.arg("weight").value);
    if (w.shape != Shape{a.shape[1]} || w.dtype != a.dtype) fail(2, "class weights must be " + std::string(dtype_name(a.dtype)) + "[" + std::to_string(a.shape[1]) + "]");
  }
  const bool ce = op.info->kind == OpKind::t_cross_entropy;
  if (ce && op.arg("size_average").kind != Arg::Kind::none) fail(3, "the deprecated size_average must be null");
  if (ce && op.arg("reduce").kind != Arg::Kind::none) fail(5, "the deprecated reduce must be null");
  const std::string reduction = class_loss_args(op).reduction;
  if (reduction != "mean" && reduction != "sum" && reduction != "none") fail(ce ? 6 : 4, "reduction must be \"mean\", \"sum\" or \"none\", not \"" + reduction + "\"");
  if (ce && (op.arg("label_smoothing").as_double() < 0 || op.arg("label_smoothing").as_double() > 1)) fail(7, "label_smoothing must be in [0, 1]");
  return {{a.dtype, reduction == "none" ? Shape{a.shape[0]} : Shape{}}};
}

// cat(tensors, dim=0).
std::vector<OutType> torch_cat_rule(const Trace& t, const Op& op) { return cat_rule(t, op); }

// split(a, split_size_or_sections, dim=0): pieces of a size (the last may be shorter) or of
// the listed sizes.
std::vector<OutType> split_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  if (a.shape.empty()) fail(0, "cannot split a 0-d tensor");
  int64_t dim = wrap_dim(op.arg("dim").integer, a.shape.size(), 2);
  int64_t len = a.shape[size_t(dim)];
  std::vector<int64_t> sizes;
  if (op.arg("split_size_or_sections").kind == Arg::Kind::integer) {
    int64_t size = op.arg("split_size_or_sections").integer;
    if (size <= 0) fail(1, "split size must be positive");
    for (int64_t at = 0; at < len || (len == 0 && sizes.empty()); at += size) sizes.push_back(std::min(size, len - at));
  } else {
    sizes = op.arg("split_size_or_sections").int_list();
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0) fail(1, "section sizes must not be negative");
      total += s;
    }
    if (total != len) fail(1, "sections add up to " + std::to_string(total) + ", not " + std::to_string(len));
  }
  std::vector<OutType> out;
  for (int64_t s : sizes) {
    Shape shape = a.shape;
    shape[size_t(dim)] = s;
    out.push_back({a.dtype, shape});
  }
  return out;
}

// var(a, dim=None, unbiased=None, keepdim=False, *, correction=None).
std::vector<OutType> torch_var_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  if (op.arg("unbiased").kind != Arg::Kind::none && op.arg("correction").kind != Arg::Kind::none) fail(4, "give unbiased or correction, not both");
  std::vector<bool> reduced(a.shape.size(), op.arg("dim").kind == Arg::Kind::none);
  if (op.arg("dim").kind == Arg::Kind::integer) reduced[size_t(wrap_dim(op.arg("dim").integer, a.shape.size(), 1))] = true;
  if (op.arg("dim").kind == Arg::Kind::list)
    for (const Arg& d : op.arg("dim").items) reduced[size_t(wrap_dim(d.integer, a.shape.size(), 1))] = true;
  Shape out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(a.shape[d]);
    else if (op.arg("keepdim").boolean) out.push_back(1);
  }
  return {{a.dtype, out}};
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

// scaled_dot_product_attention(q [..., L, E], k [..., S, E], v [..., S, Ev], attn_mask=None,
// dropout_p=0.0, is_causal=False, scale=None) -> [..., L, Ev]; the math form.
std::vector<OutType> sdpa_rule(const Trace& t, const Op& op) {
  const Value& q = float_tensor(t, op, 0);
  const Value& k = t.value(op.arg("key").value);
  const Value& v = t.value(op.arg("value").value);
  size_t r = q.shape.size();
  if (r < 2 || k.shape.size() != r || v.shape.size() != r) fail(0, "q, k and v need the same rank, at least 2");
  if (k.dtype != q.dtype || v.dtype != q.dtype) fail(1, "q, k and v need the same dtype");
  // enable_gqa: k and v may have fewer heads (dim -3), each serving a group of q's.
  const bool gqa = op.arg("enable_gqa").boolean && r >= 3 && k.shape[r - 3] != q.shape[r - 3];
  if (gqa && (k.shape[r - 3] == 0 || q.shape[r - 3] % k.shape[r - 3] != 0 || v.shape[r - 3] != k.shape[r - 3]))
    fail(1, "with enable_gqa, k and v need a number of heads (dim -3) dividing q's " + std::to_string(q.shape[r - 3]));
  for (const Value* kv : {&k, &v})
    for (size_t d = 0; d + 2 < r; ++d)
      if (kv->shape[d] != q.shape[d] && !(gqa && d + 3 == r)) fail(kv == &k ? 1 : 2, "batch dims of q, k and v differ");
  if (k.shape[r - 1] != q.shape[r - 1]) fail(1, "k's last dim must equal q's");
  if (v.shape[r - 2] != k.shape[r - 2]) fail(2, "v's sequence dim must equal k's");
  if (op.arg("attn_mask").is_value()) {
    const Value& m = t.value(op.arg("attn_mask").value);
    Shape want(q.shape.begin(), q.shape.end() - 1);
    want.push_back(k.shape[r - 2]);
    if (m.shape != want || (m.dtype != DType::b8 && m.dtype != q.dtype)) fail(3, "attn_mask must be b8 or " + std::string(dtype_name(q.dtype)) + shape_str(want));
  }
  if (op.arg("dropout_p").is_number() && (op.arg("dropout_p").as_double() < 0.0 || op.arg("dropout_p").as_double() >= 1.0)) fail(4, "dropout_p must be in [0, 1)");
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  return {{q.dtype, out}};
}

std::vector<OutType> dropout_rule(const Trace& t, const Op& op) {
  double p = op.arg("p").as_double();
  if (op.arg("p").is_number() && (p < 0 || p > 1)) fail(1, "p must be in [0, 1]");
  return like_input_rule(t, op);
}

// ---- torch calls real models make (docs/torch-ops.md) ----

// PyTorch's broadcast of the tensor arguments at `which` (aligned at the last dim).
Shape broadcast_shapes(const Trace& t, const Op& op, std::initializer_list<size_t> which) {
  Shape out;
  for (size_t i : which) {
    const Value* v = tensor_arg(t, op, i);
    if (!v) continue;
    if (v->shape.size() > out.size()) out.insert(out.begin(), v->shape.size() - out.size(), 1);
    for (size_t k = 0; k < v->shape.size(); ++k) {
      int64_t& o = out[out.size() - v->shape.size() + k];
      if (v->shape[k] != o && v->shape[k] != 1 && o != 1) fail(int(i), "shape " + shape_str(v->shape) + " does not broadcast with " + shape_str(out));
      if (o == 1) o = v->shape[k];
    }
  }
  return out;
}

// torch.result_type of the arguments at `which` (tensors, scalar values, number literals; null skipped).
DType promoted(const Trace& t, const Op& op, std::initializer_list<size_t> which) {
  std::vector<PromotionOperand> operands;
  for (size_t i : which)
    if (op.arg(i).kind != Arg::Kind::none) operands.push_back(promotion_operand(t, op.arg(i)));
  return *result_type(operands);
}

void need_number_literal(const Op& op, std::string_view name) {
  if (!op.arg(name).is_number()) fail(declared_position(op, name), std::string(name) + " must be a number literal (a scalar input is not supported)");
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

// addcmul / addcdiv(input, tensor1, tensor2, *, value=1): broadcast and promoted together.
std::vector<OutType> addc_rule(const Trace& t, const Op& op) {
  const DType dt = promoted(t, op, {0, 1, 2});
  if (!is_float(dt)) fail(0, "needs float operands (they promote to " + std::string(dtype_name(dt)) + ")");
  need_number_literal(op, "value");
  return {{dt, broadcast_shapes(t, op, {0, 1, 2})}};
}

// max / min(input, dim=None, keepdim=False, *, other=None): with a tensor `dim` (or `other`),
// elementwise; with no dim, over everything; with an integer dim, (values, indices) along it.
std::vector<OutType> extremum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  const bool tensor_dim = op.arg("dim").is_value(), has_other = op.arg("other").is_value();
  if (tensor_dim && has_other) fail(3, "give other or a tensor dim, not both");
  if (tensor_dim || has_other) {
    if (op.arg("keepdim").boolean) fail(2, "keepdim must be false for the elementwise form");
    const size_t other = tensor_dim ? 1 : 3;
    Op m = torch_form_call(op.info->kind == OpKind::t_max ? "torch.maximum" : "torch.minimum", {op.arg("input"), op.arg(other)}, op.outs);
    try {
      return m.info->rule(t, m);
    } catch (const RuleError& e) {
      throw RuleError{e.arg == 1 ? int(other) : e.arg, e.message};
    }
  }
  if (is_bool(a.dtype)) fail(0, "does not accept dtype b8");
  if (numel(a.shape) == 0) fail(0, "cannot reduce an empty tensor");
  if (op.arg("dim").kind == Arg::Kind::none) {
    if (op.arg("keepdim").boolean) fail(2, "keepdim must be false without a dim");
    return {{a.dtype, {}}};
  }
  if (a.shape.empty()) fail(0, "needs at least one dim to reduce along dim");
  const int64_t d = wrap_dim(op.arg("dim").integer, a.shape.size(), 1);
  Shape out = a.shape;
  if (op.arg("keepdim").boolean) out[size_t(d)] = 1;
  else out.erase(out.begin() + d);
  return {{a.dtype, out}, {DType::i64, out}};
}

// clamp(input, min=None, max=None): bounds are tensors (broadcast) or numbers, promoted as
// PyTorch promotes them.
std::vector<OutType> clamp_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  if (op.arg("min").kind == Arg::Kind::none && op.arg("max").kind == Arg::Kind::none) fail(1, "at least one of min and max must not be null");
  for (size_t i : {size_t(1), size_t(2)})
    if (op.arg(i).is_value() && t.value(op.arg(i).value).is_scalar) fail(int(i), "a scalar input as a bound is not supported (a number literal or a tensor is)");
  const DType dt = promoted(t, op, {0, 1, 2});
  if (is_bool(dt)) fail(0, "does not accept dtype b8");
  if (is_float(dt) && !is_float(a.dtype)) fail(0, "a float bound of an integer tensor is not supported");
  return {{dt, broadcast_shapes(t, op, {0, 1, 2})}};
}

// masked_fill(input, mask, value): mask b8, broadcast with input; value a number or a 0-dim tensor.
std::vector<OutType> masked_fill_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  const Value& mask = t.value(op.arg("mask").value);
  if (mask.dtype != DType::b8) fail(1, "the mask must be b8, not " + std::string(dtype_name(mask.dtype)));
  const Arg& value = op.arg("value");
  if (value.is_value() && t.value(value.value).is_scalar) fail(2, "a scalar input as the value is not supported (a number literal or a 0-dim tensor is)");
  if (value.is_value() && !t.value(value.value).shape.empty()) fail(2, "the value must be a number or a 0-dim tensor, not shape " + shape_str(t.value(value.value).shape));
  if (value.is_value() && is_float(t.value(value.value).dtype) && !is_float(a.dtype)) fail(2, "a float value tensor for an integer input is not supported");
  return {{a.dtype, broadcast_shapes(t, op, {0, 1})}};
}

// tril / triu(input [..., rows, cols], diagonal=0, *, fill_value=None): fill_value is Thunder's.
std::vector<OutType> triangle_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  if (a.shape.size() < 2) fail(0, "needs at least 2 dims, has shape " + shape_str(a.shape));
  if (op.arg("fill_value").is_value()) fail(2, "fill_value must be a number literal or null");
  if (op.arg("fill_value").kind == Arg::Kind::real && !is_float(a.dtype)) fail(2, "a float fill_value for an integer input is not supported");
  return {{a.dtype, a.shape}};
}

// cumsum(input, dim, *, dtype=None): integers and bools sum in i64 unless a dtype is given.
std::vector<OutType> cumsum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  wrap_dim(op.arg("dim").integer, std::max<size_t>(a.shape.size(), 1), 1);
  if (op.arg("dtype").kind == Arg::Kind::dtype) {
    if (is_bool(op.arg("dtype").dtype)) fail(2, "must not be b8");
    return {{op.arg("dtype").dtype, a.shape}};
  }
  return {{is_float(a.dtype) ? a.dtype : DType::i64, a.shape}};
}

// normalize(input, p=2.0, dim=1, eps=1e-12, out=None): input / max(norm over dim, eps).
std::vector<OutType> normalize_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  need_number_literal(op, "p");
  if (op.arg("p").as_double() != 2.0) {
    char p[32];
    std::snprintf(p, sizeof p, "%g", op.arg("p").as_double());
    fail(1, std::string("only p=2 is supported, not ") + p);
  }
  if (op.arg("dim").kind == Arg::Kind::none) fail(2, "dim must be an integer or a list of integers");
  std::vector<bool> seen(a.shape.size());
  for (const Arg& d : op.arg("dim").kind == Arg::Kind::integer ? std::vector<Arg>{op.arg("dim")} : op.arg("dim").items) {
    int64_t w = wrap_dim(d.integer, a.shape.size(), 2);
    if (seen[size_t(w)]) fail(2, "dim " + std::to_string(d.integer) + " appears twice");
    seen[size_t(w)] = true;
  }
  need_number_literal(op, "eps");
  if (op.arg("out").kind != Arg::Kind::none) fail(4, "out must be null");
  return {{a.dtype, a.shape}};
}

// ---- multi_head_attention_forward (nn.MultiheadAttention) ----

// A tensor argument of exactly `shape` and `dt`; `required`: null is refused too.
void need_typed(const Trace& t, const Op& op, std::string_view name, const Shape& shape, DType dt, bool required) {
  if (op.arg(name).kind == Arg::Kind::none) {
    if (required) fail(declared_position(op, name), std::string(name) + " is required here");
    return;
  }
  const Value* v = tensor_arg(t, op, declared_position(op, name));
  if (!v || v->shape != shape || v->dtype != dt)
    fail(declared_position(op, name), std::string(name) + " must be " + std::string(dtype_name(dt)) + shape_str(shape));
}

void need_null(const Op& op, std::string_view name, const std::string& why) {
  if (op.arg(name).kind != Arg::Kind::none) fail(declared_position(op, name), why);
}

// The in-projection (packed [3E, E], or q/k/v weights with use_separate_proj_weight, where key and
// value may have their own widths) and the out-projection [E', E].
void check_mha_projections(const Trace& t, const Op& op, const Value& q, const Value& k, const Value& v) {
  const int64_t e = q.shape.back();
  if (op.arg("use_separate_proj_weight").boolean) {
    need_null(op, "in_proj_weight", "in_proj_weight must be null with use_separate_proj_weight (PyTorch would ignore it)");
    need_typed(t, op, "q_proj_weight", {e, e}, q.dtype, true);
    need_typed(t, op, "k_proj_weight", {e, k.shape.back()}, q.dtype, true);
    need_typed(t, op, "v_proj_weight", {e, v.shape.back()}, q.dtype, true);
  } else {
    if (k.shape.back() != e || v.shape != k.shape) fail(declared_position(op, "value"), "key and value need query's embedding dim and one shape (other widths need use_separate_proj_weight)");
    need_typed(t, op, "in_proj_weight", {3 * e, e}, q.dtype, true);
    for (std::string_view name : {"q_proj_weight", "k_proj_weight", "v_proj_weight"})
      need_null(op, name, std::string(name) + " must be null without use_separate_proj_weight (PyTorch would ignore it)");
  }
  need_typed(t, op, "in_proj_bias", {3 * e}, q.dtype, false);
  const Value* out = tensor_arg(t, op, declared_position(op, "out_proj_weight"));
  if (!out || out->shape.size() != 2 || out->shape[1] != e || out->dtype != q.dtype)
    fail(declared_position(op, "out_proj_weight"), "out_proj_weight must be " + std::string(dtype_name(q.dtype)) + "[E', " + std::to_string(e) + "]");
  need_typed(t, op, "out_proj_bias", {out->shape[0]}, q.dtype, false);
}

// attn_mask [L, S] or [N * heads, L, S], key_padding_mask [N, S] (unbatched: [heads, L, S] and
// [S]), each b8 (true: not attended) or query's dtype (added); is_causal needs attn_mask.
void check_mha_masks(const Trace& t, const Op& op, const Value& q, const Value& k) {
  const bool batched = q.shape.size() == 3;
  const int64_t l = q.shape[0], s = k.shape[0], n = batched ? q.shape[1] : 1, heads = op.arg("num_heads").integer;
  auto check = [&](std::string_view name, const std::vector<Shape>& shapes) {
    if (op.arg(name).kind == Arg::Kind::none) return;
    const Value* m = tensor_arg(t, op, declared_position(op, name));
    std::string allowed;
    for (const Shape& shape : shapes) allowed += (allowed.empty() ? "" : " or ") + shape_str(shape);
    if (!m || std::find(shapes.begin(), shapes.end(), m->shape) == shapes.end() || (m->dtype != DType::b8 && m->dtype != q.dtype))
      fail(declared_position(op, name), std::string(name) + " must be b8 or " + std::string(dtype_name(q.dtype)) + ", of shape " + allowed);
  };
  check("attn_mask", {{l, s}, {n * heads, l, s}});
  check("key_padding_mask", {batched ? Shape{n, s} : Shape{s}});
  if (op.arg("is_causal").boolean && op.arg("attn_mask").kind == Arg::Kind::none)
    fail(declared_position(op, "is_causal"), "is_causal needs attn_mask (it is a hint that attn_mask is the causal mask; PyTorch raises without one)");
}

// dropout_p a number in [0, 1); what thunder-gen does not do: bias_k/bias_v, add_zero_attn,
// static_k/static_v.
void refuse_unsupported_mha(const Op& op) {
  need_number_literal(op, "dropout_p");
  const double p = op.arg("dropout_p").as_double();
  if (p < 0.0 || p >= 1.0) fail(declared_position(op, "dropout_p"), "dropout_p must be in [0, 1)");
  need_null(op, "bias_k", "bias_k (add_bias_kv) is not supported");
  need_null(op, "bias_v", "bias_v (add_bias_kv) is not supported");
  if (op.arg("add_zero_attn").boolean) fail(declared_position(op, "add_zero_attn"), "add_zero_attn is not supported");
  need_null(op, "static_k", "static_k is not supported");
  need_null(op, "static_v", "static_v is not supported");
}

// multi_head_attention_forward(query [L, N, E] or unbatched [L, E], key [S, N, kdim], value
// [S, N, vdim], ...) -> attn_output [L, N, E'] and, with need_weights, the attention weights
// [N, L, S] averaged over heads or [N, heads, L, S] (unbatched: without N). Without need_weights
// PyTorch returns None for them, which is no value: the op has one output.
std::vector<OutType> mha_rule(const Trace& t, const Op& op) {
  const Value& q = float_tensor(t, op, declared_position(op, "query"));
  const Value& k = t.value(op.arg("key").value);
  const Value& v = t.value(op.arg("value").value);
  const size_t rank = q.shape.size();
  if (rank != 2 && rank != 3) fail(declared_position(op, "query"), "query must be [L, N, E] or unbatched [L, E], not " + shape_str(q.shape));
  for (std::string_view name : {"key", "value"}) {
    const Value& kv = t.value(op.arg(name).value);
    if (kv.shape.size() != rank || kv.dtype != q.dtype) fail(declared_position(op, name), std::string(name) + " needs query's rank and dtype");
    if (rank == 3 && kv.shape[1] != q.shape[1]) fail(declared_position(op, name), std::string(name) + "'s batch dim differs from query's");
  }
  if (v.shape[0] != k.shape[0]) fail(declared_position(op, "value"), "value's sequence dim differs from key's");
  const int64_t e = q.shape.back(), heads = op.arg("num_heads").integer;
  if (op.arg("embed_dim_to_check").integer != e)
    fail(declared_position(op, "embed_dim_to_check"), "embed_dim_to_check is " + std::to_string(op.arg("embed_dim_to_check").integer) + ", query's embedding dim " + std::to_string(e));
  if (heads <= 0 || e % heads != 0) fail(declared_position(op, "num_heads"), "num_heads must divide the embedding dim " + std::to_string(e));
  check_mha_projections(t, op, q, k, v);
  check_mha_masks(t, op, q, k);
  refuse_unsupported_mha(op);
  Shape out = q.shape;
  out.back() = t.value(op.arg("out_proj_weight").value).shape[0];
  if (!op.arg("need_weights").boolean) return {{q.dtype, out}};
  Shape weights = {q.shape[0], k.shape[0]};
  if (!op.arg("average_attn_weights").boolean) weights.insert(weights.begin(), heads);
  if (rank == 3) weights.insert(weights.begin(), q.shape[1]);
  return {{q.dtype, out}, {q.dtype, weights}};
}

// conv1d / conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) and
// prims.convolution(a, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups): only the patch embedding (kernel == stride, no padding, dilation 1, groups 1), which
// lowers to a matmul (docs/torch-ops.md); any other argument is refused by name.
std::vector<int64_t> per_spatial_dim(const Op& op, size_t i, size_t n, const char* what) {
  const Arg& a = op.arg(i);
  if (a.kind == Arg::Kind::integer) return std::vector<int64_t>(n, a.integer);
  std::vector<int64_t> v = a.int_list();
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) fail(int(i), std::string(what) + " needs " + std::to_string(n) + " values, has " + shape_str(a.int_list()));
  return v;
}

std::vector<OutType> convolution_rule(const Trace& t, const Op& op) {
  const bool prim = op.info->kind == OpKind::t_convolution;
  const Value& in = float_tensor(t, op, 0);
  const Value& w = t.value(op.arg("weight").value);
  const size_t rank = prim ? w.shape.size() : (op.info->kind == OpKind::t_conv1d ? 3 : 4), n = rank - 2;
  if (rank < 3) fail(1, "needs at least 3 dims (out channels, in channels, kernel), has shape " + shape_str(w.shape));
  if (in.shape.size() != rank) fail(0, "needs " + std::to_string(rank) + " dims (batch, channels, " + std::to_string(n) + " spatial), has shape " + shape_str(in.shape));
  if (w.shape.size() != rank) fail(1, "needs " + std::to_string(rank) + " dims, has shape " + shape_str(w.shape));
  if (w.dtype != in.dtype) fail(1, "has dtype " + std::string(dtype_name(w.dtype)) + ", not " + std::string(dtype_name(in.dtype)));
  const size_t groups_at = prim ? 8 : 6;
  if (op.arg(groups_at).integer != 1) fail(int(groups_at), "groups " + std::to_string(op.arg(groups_at).integer) + " is not supported (only groups=1)");
  if (w.shape[1] != in.shape[1]) fail(1, "shape " + shape_str(w.shape) + " needs " + std::to_string(in.shape[1]) + " input channels (dim 1), as the input has");
  if (const Value* b = tensor_arg(t, op, 2)) {
    if (b->shape != Shape{w.shape[0]}) fail(2, "shape " + shape_str(b->shape) + " is not [" + std::to_string(w.shape[0]) + "], the weight's output channels");
    if (b->dtype != in.dtype) fail(2, "has dtype " + std::string(dtype_name(b->dtype)) + ", not " + std::string(dtype_name(in.dtype)));
  }
  const Shape kernel(w.shape.begin() + 2, w.shape.end());
  if (per_spatial_dim(op, 3, n, "stride") != kernel)
    fail(3, "stride " + shape_str(per_spatial_dim(op, 3, n, "stride")) + " is not supported: it must equal the kernel size " + shape_str(kernel) + " (non-overlapping patches)");
  for (int64_t pad : per_spatial_dim(op, 4, n, "padding"))
    if (pad != 0) fail(4, "padding " + shape_str(per_spatial_dim(op, 4, n, "padding")) + " is not supported (only 0)");
  for (int64_t d : per_spatial_dim(op, 5, n, "dilation"))
    if (d != 1) fail(5, "dilation " + shape_str(per_spatial_dim(op, 5, n, "dilation")) + " is not supported (only 1)");
  if (prim && op.arg("transposed").boolean) fail(6, "a transposed convolution is not supported");
  if (prim)
    for (int64_t p : per_spatial_dim(op, 7, n, "output_padding"))
      if (p != 0) fail(7, "output_padding must be 0");
  Shape out{in.shape[0], w.shape[0]};
  for (size_t k = 0; k < n; ++k) {
    if (kernel[k] < 1 || in.shape[k + 2] < kernel[k]) fail(0, "shape " + shape_str(in.shape) + " is smaller than the kernel " + shape_str(kernel));
    out.push_back(in.shape[k + 2] / kernel[k]);
  }
  return {{in.dtype, out}};
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!std::count(dims.begin(), dims.end(), int64_t(i))) out.push_back(in[i]);
  return out;
}

ShapeRule reduction_rule(int outputs, bool index_result) {
  return [outputs, index_result](const Trace& t, const Op& op) -> std::vector<OutType> {
    const Value& a = t.value(op.arg("a").value);
    std::vector<int64_t> dims = reduction_dims(t, op);
    for (int64_t d : dims)
      if (a.shape[d] == 0 && op.info->kind != OpKind::sum && op.info->kind != OpKind::prod)
        fail(1, "cannot reduce over the empty dim " + std::to_string(d));
    if (!dtypes_accept(op.info->accepts, a.dtype)) fail(0, "does not accept dtype " + std::string(dtype_name(a.dtype)));
    Shape shape = reduced_shape(a.shape, dims);
    std::vector<OutType> out(outputs, OutType{index_result ? DType::i64 : a.dtype, shape});
    return out;
  };
}

std::vector<OutType> partial_sum_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = reduced_shape(a.shape, reduction_dims(t, op));
  shape.insert(shape.begin(), op.arg("parts").integer);
  return {{dtype_bytes(a.dtype) < 4 ? DType::f32 : a.dtype, shape}};
}

// ---- row builders ---------------------------------------------------------------------------

OpInfo unary_row(OpKind k, std::string_view id, std::string_view code, DTypes accepts, bool bool_result = false) {
  OpInfo op{k, id, FusionClass::elementwise, {p("a", K::tensor)}, elementwise_rule(bool_result), code, accepts, ""};
  op.bool_result = bool_result;
  return op;
}
OpInfo binary(OpKind k, std::string_view id, std::string_view code, DTypes accepts, bool bool_result = false) {
  OpInfo op{k, id, FusionClass::elementwise, {p("a", K::tensor_or_number), p("b", K::tensor_or_number)},
            elementwise_rule(bool_result), code, accepts, ""};
  op.bool_result = bool_result;
  return op;
}
OpInfo declared_unary_float(OpKind k, std::string_view id, std::string_view code, std::string_view torch, double lo, double hi) {
  OpInfo op = unary_row(k, id, code, DTypes::floats);
  op.family = "unary_float";
  op.torch_function = torch;
  op.domains = {{lo, hi}};
  return op;
}
// binary_float_prims.def's `continuity` column.
enum class Continuity { smooth, kinked, discontinuous };
OpInfo declared_binary_float(OpKind k, std::string_view id, std::string_view code, std::string_view integer_code, DTypes accepts,
                             Continuity continuity, std::string_view torch, Domain a, Domain b) {
  OpInfo op = binary(k, id, code, accepts);
  op.integer_code = integer_code;
  op.discontinuous = continuity == Continuity::discontinuous;
  op.kinked = continuity == Continuity::kinked;
  op.family = "binary_float";
  op.torch_function = torch;
  op.domains = {a, b};
  return op;
}
// binary_exact_prims.def's `result` column.
enum class ExactResult { boolean, operands };
// An exact prim that reads floats (a comparison) jumps where they do.
OpInfo declared_binary_exact(OpKind k, std::string_view id, std::string_view code, DTypes accepts, ExactResult result,
                             std::string_view torch) {
  OpInfo op = binary(k, id, code, accepts, result == ExactResult::boolean);
  op.discontinuous = dtypes_accept(accepts, DType::f32);
  op.family = "binary_exact";
  op.torch_function = torch;
  return op;
}
OpInfo discontinuous(OpInfo op) {
  op.discontinuous = true;
  return op;
}
OpInfo wrapping_on_integers(OpInfo op, std::string_view integer_code) {
  op.integer_code = integer_code;
  return op;
}
OpInfo reduction(OpKind k, std::string_view id, DTypes accepts) {
  return OpInfo{k, id, FusionClass::reduction, {p("a", K::tensor), p("dims", K::int_list)}, reduction_rule(1, false), "", accepts, ""};
}

std::vector<OpInfo> build_table() {
  using D = DTypes;
  std::vector<OpInfo> rows = {
#define TG_UNARY_FLOAT(name, torch, saves, derivative, lo, hi) declared_unary_float(OpKind::name, "prims." #name, "tg::" #name "({0})", torch, lo, hi),
#include "ops/unary_float_prims.def"
#undef TG_UNARY_FLOAT
      unary_row(OpKind::abs, "prims.abs", "tg::abs({0})", D::numbers),
      wrapping_on_integers(unary_row(OpKind::neg, "prims.neg", "(-{0})", D::numbers), "tg::wrapping_neg({0})"),
      discontinuous(unary_row(OpKind::floor, "prims.floor", "tg::floor({0})", D::numbers)),
      discontinuous(unary_row(OpKind::ceil, "prims.ceil", "tg::ceil({0})", D::numbers)),
      discontinuous(unary_row(OpKind::round, "prims.round", "tg::round({0})", D::numbers)),
      discontinuous(unary_row(OpKind::trunc, "prims.trunc", "tg::trunc({0})", D::numbers)),
      discontinuous(unary_row(OpKind::sign, "prims.sign", "tg::sign({0})", D::numbers)),
      unary_row(OpKind::signbit, "prims.signbit", "tg::signbit({0})", D::numbers, true),
      discontinuous(unary_row(OpKind::isfinite, "prims.isfinite", "tg::isfinite({0})", D::numbers_and_bool, true)),
      unary_row(OpKind::bitwise_not, "prims.bitwise_not", "tg::bitwise_not({0})", D::integers_and_bool),

#define TG_BINARY_FLOAT(name, torch, code, integer_code, accepts, continuity, saves, shared, grad_a, grad_b, a_lo, a_hi, b_lo, b_hi) \
  declared_binary_float(OpKind::name, "prims." #name, code, integer_code, D::accepts, Continuity::continuity, torch, {a_lo, a_hi}, {b_lo, b_hi}),
#include "ops/binary_float_prims.def"
#undef TG_BINARY_FLOAT
#define TG_BINARY_EXACT(name, torch, code, accepts, result, reference) \
  declared_binary_exact(OpKind::name, "prims." #name, code, D::accepts, ExactResult::result, torch),
#include "ops/binary_exact_prims.def"
#undef TG_BINARY_EXACT

      OpInfo{OpKind::where, "prims.where", FusionClass::elementwise,
             {p("pred", K::tensor_or_number), p("a", K::tensor_or_number), p("b", K::tensor_or_number)},
             where_rule, "({0} ? {1} : {2})", D::any, ""},
      OpInfo{OpKind::lerp, "prims.lerp", FusionClass::elementwise,
             {p("start", K::tensor), p("end", K::tensor), p("weight", K::tensor_or_number)},
             elementwise_rule(false), "tg::lerp({0}, {1}, {2})", D::floats, ""},
      OpInfo{OpKind::convert_element_type, "prims.convert_element_type", FusionClass::elementwise,
             {p("a", K::tensor), p("dtype", K::dtype)}, convert_rule, "", D::any, ""},

      OpInfo{OpKind::full, "prims.full", FusionClass::source,
             {p("shape", K::int_list), p("fill_value", K::number), kw("device", K::device), kw("dtype", K::dtype)},
             full_rule, "", D::any, ""},
      OpInfo{OpKind::iota, "prims.iota", FusionClass::source,
             {p("length", K::integer), kw("start", K::integer), kw("step", K::integer), kw("device", K::device), kw("dtype", K::dtype)},
             iota_rule, "", D::any, ""},
      // Thunder's stateful draw: the RNG pass (src/lower/rng.cpp) binds it to the trace's Philox seed and
      // offset, as prims.uniform_philox with a stream of its own, before anything else runs.
      OpInfo{OpKind::uniform, "prims.uniform", FusionClass::source,
             {p("shape", K::int_list), p("minval", K::number), p("maxval", K::number), kw("device", K::device), kw("dtype", K::dtype)},
             uniform_rule, "", D::any, "bound to prims.uniform_philox by the RNG pass"},
      OpInfo{OpKind::uniform_philox, "prims.uniform_philox", FusionClass::source,
             {p("shape", K::int_list), p("minval", K::number), p("maxval", K::number), kw("device", K::device), kw("dtype", K::dtype),
              kw("seed", K::number), kw("offset", K::number), Param{"stream", K::integer, true, true, Arg::of_int(0)}},
             uniform_rule, "", D::any, "Philox4x32-10 counter-based draws: element i of (seed, offset) is the same everywhere"},

      OpInfo{OpKind::broadcast_in_dim, "prims.broadcast_in_dim", FusionClass::shape,
             {p("a", K::tensor), p("shape", K::int_list), p("broadcast_dimensions", K::int_list)}, broadcast_rule, "", D::any, ""},
      OpInfo{OpKind::reshape, "prims.reshape", FusionClass::shape, {p("a", K::tensor), p("shape", K::int_list)}, reshape_rule, "", D::any, ""},
      OpInfo{OpKind::transpose, "prims.transpose", FusionClass::shape, {p("a", K::tensor), p("permutation", K::int_list)}, transpose_rule, "", D::any, ""},
      OpInfo{OpKind::squeeze, "prims.squeeze", FusionClass::shape, {p("a", K::tensor), p("dims", K::int_list)}, squeeze_rule, "", D::any, ""},
      OpInfo{OpKind::slice, "prims.slice_prim", FusionClass::shape,
             {p("a", K::tensor), p("start_indices", K::int_list), p("end_indices", K::int_list), opt("strides", K::optional_int_list)},
             slice_rule, "", D::any, ""},
      OpInfo{OpKind::pad, "prims.pad", FusionClass::shape,
             {p("a", K::tensor), p("padding_value", K::number), p("padding_config", K::padding_config)}, pad_rule, "", D::any, ""},
      OpInfo{OpKind::cat, "prims.cat", FusionClass::shape, {p("tensors", K::tensor_list), p("dim", K::integer)}, cat_rule, "", D::any, ""},

      reduction(OpKind::sum, "prims.sum", D::numbers),
      reduction(OpKind::prod, "prims.prod", D::numbers),
      reduction(OpKind::amax, "prims.amax", D::numbers_and_bool),
      reduction(OpKind::amin, "prims.amin", D::numbers_and_bool),
      OpInfo{OpKind::var, "prims.var", FusionClass::reduction, {p("a", K::tensor), p("dims", K::int_list), kw("correction", K::number)},
             reduction_rule(1, false), "", D::floats, ""},
      OpInfo{OpKind::var_mean, "prims.var_mean", FusionClass::reduction, {p("a", K::tensor), p("dims", K::int_list), kw("correction", K::number)},
             reduction_rule(2, false), "", D::floats, ""},
      discontinuous(OpInfo{OpKind::argmax, "prims.argmax", FusionClass::reduction, {p("a", K::tensor), p("dim", K::optional_integer)},
                           reduction_rule(1, true), "", D::numbers, ""}),
      discontinuous(OpInfo{OpKind::argmin, "prims.argmin", FusionClass::reduction, {p("a", K::tensor), p("dim", K::optional_integer)},
                           reduction_rule(1, true), "", D::numbers, ""}),

      // bias, epilogue, transpose_a and transpose_b are thunder-gen extensions, written by the
      // GEMM-epilogue pass (transpose_a: a holds the transpose of the left operand, [k, m]).
      OpInfo{OpKind::matmul, "prims.matmul", FusionClass::library,
             {p("a", K::tensor), p("b", K::tensor), Param{"bias", K::optional_tensor, true, true, Arg{}},
              Param{"epilogue", K::string, true, true, string_arg("none")},
              Param{"transpose_a", K::boolean, true, true, Arg::of_bool(false)},
              Param{"transpose_b", K::boolean, true, true, Arg::of_bool(false)}},
             matmul_rule, "", D::floats, "cuBLASLt on the GPU, a reference GEMM under host emulation"},

      // Torch-level ops with Thunder's ids and signatures (see src/ops/torch_ops.cpp).
      OpInfo{OpKind::t_softmax, "torch.softmax", FusionClass::composite,
             {p("a", K::tensor), p("dim", K::integer), opt("dtype", K::optional_dtype)}, softmax_rule, "", D::floats, "gradient reads its output"},
      OpInfo{OpKind::t_log_softmax, "torch.log_softmax", FusionClass::composite,
             {p("a", K::tensor), p("dim", K::integer), opt("dtype", K::optional_dtype)}, softmax_rule, "", D::floats, "gradient reads its output"},
      OpInfo{OpKind::t_relu, "torch.relu", FusionClass::composite, {p("a", K::tensor), opt("inplace", K::boolean, Arg::of_bool(false))},
             like_input_rule, "", D::floats, ""},
      OpInfo{OpKind::t_sigmoid, "torch.sigmoid", FusionClass::composite, {p("a", K::tensor)}, like_input_rule, "", D::floats, ""},
      OpInfo{OpKind::t_tanh, "torch.tanh", FusionClass::composite, {p("a", K::tensor)}, like_input_rule, "", D::floats, ""},
      OpInfo{OpKind::t_silu, "torch.nn.functional.silu", FusionClass::composite,
             {p("a", K::tensor), opt("inplace", K::boolean, Arg::of_bool(false))}, like_input_rule, "", D::floats, ""},
      OpInfo{OpKind::t_gelu, "torch.nn.functional.gelu", FusionClass::composite,
             {p("a", K::tensor), Param{"approximate", K::string, true, true, string_arg("none")}}, gelu_rule, "", D::floats, ""},
      OpInfo{OpKind::t_linear, "torch.nn.functional.linear", FusionClass::composite,
             {p("a", K::tensor), p("w", K::tensor), opt("bias", K::optional_tensor)}, linear_rule, "", D::floats, ""},
      // Thunder's autocast records F.linear as this prim, with no decomposition (bias required, maybe null).
      OpInfo{OpKind::t_prim_linear, "prims.linear", FusionClass::composite,
             {p("a", K::tensor), p("w", K::tensor), p("bias", K::optional_tensor)}, linear_rule, "", D::floats, "as torch.nn.functional.linear"},
      OpInfo{OpKind::t_matmul, "torch.matmul", FusionClass::composite, {p("a", K::tensor), p("b", K::tensor)}, matmul_rule, "", D::floats,
             "operands of at least 2 dims"},
      OpInfo{OpKind::t_reshape, "torch.reshape", FusionClass::composite, {p("a", K::tensor), p("shape", K::int_list)}, torch_reshape_rule, "",
             D::any, "shape as one list"},
      OpInfo{OpKind::t_permute, "torch.permute", FusionClass::composite, {p("a", K::tensor), p("dims", K::int_list)}, permute_rule, "", D::any,
             "dims as one list"},
      OpInfo{OpKind::t_transpose, "torch.transpose", FusionClass::composite,
             {p("a", K::tensor), p("dim0", K::integer), p("dim1", K::integer)}, torch_transpose_rule, "", D::any, ""},
      OpInfo{OpKind::t_unsqueeze, "torch.unsqueeze", FusionClass::composite, {p("a", K::tensor), p("dim", K::integer)}, unsqueeze_rule, "",
             D::any, ""},
      OpInfo{OpKind::t_sum, "torch.sum", FusionClass::composite,
             {p("a", K::tensor), opt("dim", K::dims), opt("keepdim", K::boolean, Arg::of_bool(false)), Param{"dtype", K::optional_dtype, true, true, {}}},
             torch_reduction_rule, "", D::numbers, ""},
      OpInfo{OpKind::t_mean, "torch.mean", FusionClass::composite,
             {p("a", K::tensor), opt("dim", K::dims), opt("keepdim", K::boolean, Arg::of_bool(false)), Param{"dtype", K::optional_dtype, true, true, {}}},
             torch_reduction_rule, "", D::floats, ""},

      OpInfo{OpKind::shallow_copy, "prims.shallow_copy", FusionClass::composite, {p("a", K::tensor)}, same_as_input_rule, "", D::any, ""},
      OpInfo{OpKind::stride_order, "prims.stride_order", FusionClass::composite, {p("a", K::tensor), p("order", K::int_list)},
             same_as_input_rule, "", D::any, "the layout is thunder-gen's own: the values pass through"},

      OpInfo{OpKind::t_layer_norm, "torch.nn.functional.layer_norm", FusionClass::composite,
             {p("a", K::tensor), p("normalized_shape", K::int_list), opt("weight", K::optional_tensor), opt("bias", K::optional_tensor),
              opt("eps", K::number, Arg::of_real(1e-5))},
             norm_rule, "", D::floats, "gradient recomputes the row statistics instead of saving them"},
      OpInfo{OpKind::t_rms_norm, "torch.nn.functional.rms_norm", FusionClass::composite,
             {p("a", K::tensor), p("normalized_shape", K::int_list), opt("weight", K::optional_tensor), opt("eps", K::optional_number)},
             norm_rule, "", D::floats, "eps null: the dtype's machine epsilon"},

      OpInfo{OpKind::t_cross_entropy, "torch.nn.functional.cross_entropy", FusionClass::composite,
             {p("a", K::tensor), p("target", K::tensor), opt("weight", K::optional_tensor), opt("size_average", K::optional_number),
              opt("ignore_index", K::integer, Arg::of_int(-100)), opt("reduce", K::optional_number), opt("reduction", K::string, string_arg("mean")),
              opt("label_smoothing", K::number, Arg::of_real(0.0))},
             class_loss_rule, "", D::floats, "class-index targets; gradient recomputes the softmax"},
      OpInfo{OpKind::t_nll_loss, "torch.nn.functional.nll_loss", FusionClass::composite,
             {p("a", K::tensor), p("target", K::tensor), opt("weight", K::optional_tensor), opt("ignore_index", K::optional_integer),
              opt("reduction", K::string, string_arg("mean"))},
             class_loss_rule, "", D::floats, "class-index targets; Thunder's signature: ignore_index null means -1"},

      OpInfo{OpKind::t_cat, "torch.cat", FusionClass::composite, {p("tensors", K::tensor_list), opt("dim", K::integer, Arg::of_int(0))},
             torch_cat_rule, "", D::any, ""},
      OpInfo{OpKind::t_split, "torch.split", FusionClass::composite,
             {p("a", K::tensor), p("split_size_or_sections", K::int_or_int_list), opt("dim", K::integer, Arg::of_int(0))}, split_rule, "", D::any, ""},
      OpInfo{OpKind::t_var, "torch.var", FusionClass::composite,
             {p("a", K::tensor), opt("dim", K::dims), opt("unbiased", K::optional_number), opt("keepdim", K::boolean, Arg::of_bool(false)),
              Param{"correction", K::optional_number, true, true, {}}},
             torch_var_rule, "", D::floats, "correction defaults to 1"},
      OpInfo{OpKind::t_embedding, "torch.nn.functional.embedding", FusionClass::composite,
             {p("a", K::tensor), p("weight", K::tensor), opt("padding_idx", K::optional_number), opt("max_norm", K::optional_number),
              opt("norm_type", K::number, Arg::of_real(2.0)), opt("scale_grad_by_freq", K::boolean, Arg::of_bool(false)),
              opt("sparse", K::boolean, Arg::of_bool(false))},
             embedding_rule, "", D::any, "a one-hot matmul: exact, but O(ids x vocabulary x dim)"},
      OpInfo{OpKind::t_sdpa, "torch.nn.functional.scaled_dot_product_attention", FusionClass::composite,
             {p("query", K::tensor), p("key", K::tensor), p("value", K::tensor), opt("attn_mask", K::optional_tensor),
              opt("dropout_p", K::number, Arg::of_real(0.0)), opt("is_causal", K::boolean, Arg::of_bool(false)), Param{"scale", K::optional_number, true, true, {}},
              Param{"seed", K::optional_number, true, true, {}}, Param{"offset", K::optional_number, true, true, {}},
              Param{"stream", K::integer, true, true, Arg::of_int(0)}, Param{"enable_gqa", K::boolean, true, true, Arg::of_bool(false)}},
             sdpa_rule, "", D::floats, "the math form; attention dropout draws like dropout; enable_gqa repeats k and v heads"},

      // Torch calls real models make, with PyTorch's parameter names (docs/torch-ops.md).
      OpInfo{OpKind::t_addmm, "torch.addmm", FusionClass::composite,
             {p("input", K::tensor), p("mat1", K::tensor), p("mat2", K::tensor), Param{"beta", K::number, true, true, Arg::of_int(1)},
              Param{"alpha", K::number, true, true, Arg::of_int(1)}},
             addmm_rule, "", D::floats, "beta * input + alpha * (mat1 @ mat2); beta 0 ignores input"},
      OpInfo{OpKind::t_baddbmm, "torch.baddbmm", FusionClass::composite,
             {p("input", K::tensor), p("batch1", K::tensor), p("batch2", K::tensor), Param{"beta", K::number, true, true, Arg::of_int(1)},
              Param{"alpha", K::number, true, true, Arg::of_int(1)}, Param{"out", K::optional_tensor, true, true, {}}},
             addmm_rule, "", D::floats, "beta * input + alpha * (batch1 @ batch2); beta 0 ignores input"},
      OpInfo{OpKind::t_bmm, "torch.bmm", FusionClass::composite, {p("input", K::tensor), p("mat2", K::tensor)}, bmm_rule, "", D::floats, ""},
      OpInfo{OpKind::t_addcmul, "torch.addcmul", FusionClass::composite,
             {p("input", K::tensor), p("tensor1", K::tensor), p("tensor2", K::tensor), Param{"value", K::number, true, true, Arg::of_int(1)}},
             addc_rule, "", D::floats, "input + value * tensor1 * tensor2, broadcast and promoted"},
      OpInfo{OpKind::t_addcdiv, "torch.addcdiv", FusionClass::composite,
             {p("input", K::tensor), p("tensor1", K::tensor), p("tensor2", K::tensor), Param{"value", K::number, true, true, Arg::of_int(1)}},
             addc_rule, "", D::floats, "input + value * tensor1 / tensor2, broadcast and promoted"},
      OpInfo{OpKind::t_max, "torch.max", FusionClass::composite,
             {p("input", K::tensor), opt("dim", K::dim_or_tensor), opt("keepdim", K::boolean, Arg::of_bool(false)),
              Param{"other", K::optional_tensor, true, true, {}}},
             extremum_rule, "", D::numbers, "a tensor dim (or other): torch.maximum; no dim: amax; a dim: (values, indices)"},
      OpInfo{OpKind::t_min, "torch.min", FusionClass::composite,
             {p("input", K::tensor), opt("dim", K::dim_or_tensor), opt("keepdim", K::boolean, Arg::of_bool(false)),
              Param{"other", K::optional_tensor, true, true, {}}},
             extremum_rule, "", D::numbers, "a tensor dim (or other): torch.minimum; no dim: amin; a dim: (values, indices)"},
      OpInfo{OpKind::t_clamp, "torch.clamp", FusionClass::composite,
             {p("input", K::tensor), opt("min", K::optional_tensor_or_number), opt("max", K::optional_tensor_or_number)}, clamp_rule, "",
             D::numbers, "bounds are tensors (broadcast) or numbers"},
      OpInfo{OpKind::t_masked_fill, "torch.masked_fill", FusionClass::composite,
             {p("input", K::tensor), p("mask", K::tensor), p("value", K::tensor_or_number)}, masked_fill_rule, "", D::any,
             "value: a number or a 0-dim tensor"},
      OpInfo{OpKind::t_tril, "torch.tril", FusionClass::composite,
             {p("input", K::tensor), opt("diagonal", K::integer, Arg::of_int(0)), Param{"fill_value", K::optional_number, true, true, {}}},
             triangle_rule, "", D::any, "fill_value: Thunder's extension"},
      OpInfo{OpKind::t_triu, "torch.triu", FusionClass::composite,
             {p("input", K::tensor), opt("diagonal", K::integer, Arg::of_int(0)), Param{"fill_value", K::optional_number, true, true, {}}},
             triangle_rule, "", D::any, "fill_value: Thunder's extension"},
      OpInfo{OpKind::t_cumsum, "torch.cumsum", FusionClass::composite,
             {p("input", K::tensor), p("dim", K::integer), Param{"dtype", K::optional_dtype, true, true, {}}}, cumsum_rule, "", D::numbers_and_bool,
             "a masked sum over a second copy of the dim: O(n^2) along it"},
      OpInfo{OpKind::t_normalize, "torch.nn.functional.normalize", FusionClass::composite,
             {p("input", K::tensor), opt("p", K::number, Arg::of_real(2.0)), opt("dim", K::dims, Arg::of_int(1)), opt("eps", K::number, Arg::of_real(1e-12)),
              opt("out", K::optional_tensor)},
             normalize_rule, "", D::floats, "p=2 only"},

      OpInfo{OpKind::t_mha, "torch.nn.functional.multi_head_attention_forward", FusionClass::composite,
             {p("query", K::tensor), p("key", K::tensor), p("value", K::tensor), p("embed_dim_to_check", K::integer), p("num_heads", K::integer),
              p("in_proj_weight", K::optional_tensor), p("in_proj_bias", K::optional_tensor), p("bias_k", K::optional_tensor),
              p("bias_v", K::optional_tensor), p("add_zero_attn", K::boolean), p("dropout_p", K::number), p("out_proj_weight", K::tensor),
              p("out_proj_bias", K::optional_tensor), opt("training", K::boolean, Arg::of_bool(true)), opt("key_padding_mask", K::optional_tensor),
              opt("need_weights", K::boolean, Arg::of_bool(true)), opt("attn_mask", K::optional_tensor),
              opt("use_separate_proj_weight", K::boolean, Arg::of_bool(false)), opt("q_proj_weight", K::optional_tensor),
              opt("k_proj_weight", K::optional_tensor), opt("v_proj_weight", K::optional_tensor), opt("static_k", K::optional_tensor),
              opt("static_v", K::optional_tensor), opt("average_attn_weights", K::boolean, Arg::of_bool(true)),
              opt("is_causal", K::boolean, Arg::of_bool(false)), Param{"seed", K::optional_number, true, true, {}},
              Param{"offset", K::optional_number, true, true, {}}, Param{"stream", K::integer, true, true, Arg::of_int(0)}},
             mha_rule, "", D::floats, "nn.MultiheadAttention: projections, heads, masks and the attention row's math; dropout draws like dropout"},
      OpInfo{OpKind::t_conv1d, "torch.nn.functional.conv1d", FusionClass::composite,
             {p("input", K::tensor), p("weight", K::tensor), opt("bias", K::optional_tensor), opt("stride", K::int_or_int_list, Arg::of_int(1)),
              opt("padding", K::int_or_int_list, Arg::of_int(0)), opt("dilation", K::int_or_int_list, Arg::of_int(1)), opt("groups", K::integer, Arg::of_int(1))},
             convolution_rule, "", D::floats, "patches only (kernel == stride, no padding, dilation 1, groups 1): a matmul"},
      OpInfo{OpKind::t_conv2d, "torch.nn.functional.conv2d", FusionClass::composite,
             {p("input", K::tensor), p("weight", K::tensor), opt("bias", K::optional_tensor), opt("stride", K::int_or_int_list, Arg::of_int(1)),
              opt("padding", K::int_or_int_list, Arg::of_int(0)), opt("dilation", K::int_or_int_list, Arg::of_int(1)), opt("groups", K::integer, Arg::of_int(1))},
             convolution_rule, "", D::floats, "patches only (kernel == stride, no padding, dilation 1, groups 1): a matmul"},
      OpInfo{OpKind::t_convolution, "prims.convolution", FusionClass::composite,
             {p("a", K::tensor), p("weight", K::tensor), p("bias", K::optional_tensor), p("stride", K::int_list), p("padding", K::int_list),
              p("dilation", K::int_list), p("transposed", K::boolean), p("output_padding", K::int_list), p("groups", K::integer)},
             convolution_rule, "", D::floats, "patches only, any number of spatial dims (what conv3d and torch.convolution decompose to)"},

      // seed and offset are an extension: thunder-gen's RNG pass (src/lower/rng.cpp) binds them to the
      // trace's Philox seed and offset inputs; Thunder's traces do not pass them.
      OpInfo{OpKind::t_dropout, "torch.nn.functional.dropout", FusionClass::composite,
             {p("a", K::tensor), opt("p", K::number, Arg::of_real(0.5)), opt("training", K::boolean, Arg::of_bool(true)),
              opt("inplace", K::boolean, Arg::of_bool(false)), Param{"seed", K::optional_number, true, true, {}},
              Param{"offset", K::optional_number, true, true, {}}, Param{"stream", K::integer, true, true, Arg::of_int(0)}},
             dropout_rule, "", D::floats, "draws from the trace's Philox seed and offset inputs; the backward keeps the b8 mask"},

      // partial_sum(a, dims, parts): out[p, ...] sums a over `dims` (a row kernel's rows, the
      // leading dims) at the rows r with r % parts == p, in f32 for 16-bit floats. Fusion puts
      // one in a row kernel for a sum over its rows (LayerNorm's weight gradient beside the
      // input gradient), and a sum over dim 0 of `out` after it (see fuse.cpp).
      OpInfo{OpKind::partial_sum, "thunder_gen.partial_sum", FusionClass::partial,
             {p("a", K::tensor), p("dims", K::int_list), p("parts", K::integer)}, partial_sum_rule, "", D::floats, ""},
      OpInfo{OpKind::fused_kernel, "thunder_gen.kernel", FusionClass::kernel, {}, nullptr, "", D::any, ""},
  };
  for (OpInfo& row : distributed_rows()) rows.push_back(std::move(row));
  return rows;
}

// After the rows indexed by kind: `torch.<name>` for every elementwise prim `prims.<name>` that
// has no torch-level row of its own (torch.tanh has: it reads its output for the gradient).
void add_torch_forms(std::vector<OpInfo>& rows) {
  std::set<std::string_view> ids;
  for (const OpInfo& r : rows) ids.insert(r.id);
  const size_t prims = rows.size();
  for (size_t i = 0; i < prims; ++i) {
    const OpInfo& prim = rows[i];
    if (prim.fusion != FusionClass::elementwise || prim.kind == OpKind::convert_element_type) continue;
    OpInfo form = torch_form_of(prim);
    if (!ids.count(form.id)) rows.push_back(std::move(form));
  }
}

}  // namespace

bool is_torch_form(const OpInfo& info) {
  return info.fusion == FusionClass::composite && op_info(info.kind).fusion == FusionClass::elementwise;
}

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> rows = build_table();
    // Index by kind so op_info(kind) is a lookup; every kind must have exactly one row.
    std::vector<OpInfo> by_kind(rows.size());
    std::vector<bool> seen(rows.size());
    for (OpInfo& r : rows) {
      size_t k = static_cast<size_t>(r.kind);
      TG_CHECK(k < rows.size() && !seen[k], "op table: kind declared twice or out of range: " + std::string(r.id));
      seen[k] = true;
      r.grad = gradient_rule(r.kind);
      r.grad_saves = gradient_saves(r.kind);
      by_kind[k] = std::move(r);
    }
    TG_CHECK(static_cast<size_t>(OpKind::fused_kernel) + 1 == by_kind.size(), "op table: a kind has no row");
    add_torch_forms(by_kind);
    return by_kind;
  }();
  return table;
}

const OpInfo& op_info(OpKind kind) { return op_table().at(static_cast<size_t>(kind)); }

bool is_collective(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::all_gather || kind == OpKind::reduce_scatter || kind == OpKind::broadcast;
}

ClassLossArgs class_loss_args(const Op& op) {
  if (op.info->kind == OpKind::t_nll_loss)  // Thunder's ignore_index=None means -1
    return {op.arg("ignore_index").kind == Arg::Kind::none ? -1 : op.arg("ignore_index").integer, op.arg("reduction").text};
  return {op.arg("ignore_index").integer, op.arg("reduction").text};
}

bool mha_causal_replaces_mask(const Op& op) {
  return op.arg("is_causal").boolean && op.arg("key_padding_mask").kind == Arg::Kind::none && !op.arg("need_weights").boolean;
}

// Other ids Thunder gives an op of the table, as {the row's id, the other id}.
constexpr std::pair<std::string_view, std::string_view> kOtherIds[] = {
    {"torch.nn.functional.layer_norm", "torch.layer_norm"},  // what nn.LayerNorm records
};

// (Hashed: the reader looks up every op it reads, and the prim builder every prim it makes.)
const OpInfo* find_op(std::string_view id) {
  static const std::unordered_map<std::string_view, const OpInfo*> index = [] {
    std::unordered_map<std::string_view, const OpInfo*> m;
    for (const OpInfo& r : op_table())
      if (!r.made_by_fusion()) m[r.id] = &r;
    for (auto [row, other] : kOtherIds) m[other] = m.at(row);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

DType operand_dtype(const Trace& t, const Op& op) {
  size_t first = op.info->kind == OpKind::where ? 1 : 0;  // where's condition is always b8
  for (size_t i = first; i < op.args.size(); ++i)
    if (op.args[i].is_value() && !t.value(op.args[i].value).is_scalar) return t.value(op.args[i].value).dtype;
  return t.value(op.outs[0]).dtype;
}

std::vector<int64_t> reduction_dims(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<int64_t> dims;
  if (op.info->kind == OpKind::argmax || op.info->kind == OpKind::argmin) {
    if (op.arg("dim").kind == Arg::Kind::none) {
      dims.resize(a.shape.size());
      std::iota(dims.begin(), dims.end(), 0);
    } else {
      dims.push_back(wrap_dim(op.arg("dim").integer, a.shape.size(), 1));
    }
  } else {
    for (int64_t d : op.arg("dims").int_list()) {
      int64_t w = wrap_dim(d, a.shape.size(), 1);
      if (std::count(dims.begin(), dims.end(), w)) fail(1, "dim " + std::to_string(w) + " listed twice");
      dims.push_back(w);
    }
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

}  // namespace tg
