#include "ops/rule_helpers.h"

#include <algorithm>

#include "ops/op_rows.h"
#include "ops/symbolic_dims.h"
#include "ops/torch_elementwise.h"
#include "support/diagnostics.h"

namespace tg::op_rows {

const Value* tensor_arg(const Trace& t, const Op& op, size_t i) {
  const Arg& a = op.arg(i);
  if (!a.is_value() || t.value(a.value).is_scalar) return nullptr;
  return &t.value(a.value);
}

const Value& float_tensor(const Trace& t, const Op& op, size_t i) {
  const Value& a = t.value(op.arg(i).value);
  if (!is_float(a.dtype)) fail(int(i), "needs a float tensor, not " + std::string(dtype_name(a.dtype)));
  return a;
}

int64_t wrap_dim(int64_t d, size_t rank, int arg) {
  int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r) fail(arg, "dim " + std::to_string(d) + " is out of range for rank " + std::to_string(r));
  return d < 0 ? d + r : d;
}

void check_shape(const Shape& shape, int arg) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(arg, "negative dimension " + std::to_string(d));
    if (d > 0 && n > (int64_t(1) << 48) / d) fail(arg, "shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
}

size_t declared_position(const Op& op, std::string_view name) {
  TG_CHECK(op.info, op.symbol + " has no signature to read its argument \"" + std::string(name) + "\" by");
  const size_t i = param_index(*op.info, name);
  TG_CHECK(i < op.info->params.size(), std::string(op.info->id) + " declares no parameter \"" + std::string(name) + "\"");
  return i;
}

void need_number_literal(const Op& op, std::string_view name) {
  if (!op.arg(name).is_number()) fail(declared_position(op, name), std::string(name) + " must be a number literal (a scalar input is not supported)");
}

void broadcast_into(Shape& out, const Shape& shape, int arg) {
  if (shape.size() > out.size()) out.insert(out.begin(), shape.size() - out.size(), Dim::constant(1));
  for (size_t k = 0; k < shape.size(); ++k) {
    Dim& o = out[out.size() - shape.size() + k];
    if (shape[k] != o && shape[k] != 1 && o != 1) fail(arg, "shape " + shape_str(shape) + " does not broadcast with " + shape_str(out));
    // (Where both are 1 at the trace's sizes, specialised at 1, the one that is 1 at every size
    // is the one broadcast: B against a constant 1 is B.)
    if (o == 1 && !(o.symbolic() && !shape[k].symbolic())) o = shape[k];
  }
}

Shape broadcast_shapes(const Trace& t, const Op& op, std::initializer_list<size_t> which) {
  Shape out;
  for (size_t i : which)
    if (const Value* v = tensor_arg(t, op, i)) broadcast_into(out, v->shape, int(i));
  return out;
}

DType promoted(const Trace& t, const Op& op, std::initializer_list<size_t> which) {
  std::vector<PromotionOperand> operands;
  for (size_t i : which)
    if (op.arg(i).kind != Arg::Kind::none) operands.push_back(promotion_operand(t, op.arg(i)));
  return *result_type(operands);
}

Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!std::count(dims.begin(), dims.end(), int64_t(i))) out.push_back(in[i]);
  return out;
}

std::vector<OutType> like_input_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  return {{a.dtype, a.shape}};
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
    shape[dim] = add_dims(shape[dim], v.shape[dim]);
  }
  return {{first.dtype, shape}};
}

void check_count_kept(const Trace& t, const Shape& in, const Shape& out, int arg) {
  const Dim a = numel_dim(in), b = numel_dim(out);
  // (A count without an expression is a number in the code, which the two probes compare.)
  if (!t.sizes_at_run_time || !a.expr() || !b.expr() || (!a.symbolic() && !b.symbolic())) return;
  const SizeExpr &x = *a.expr(), &y = *b.expr();
  if (x == y || (provably_ge(x, y, t.symbols) && provably_ge(y, x, t.symbols))) return;
  std::string where = "may differ at some size the symbols allow";
  if (std::optional<SymbolValues> at = sizes_where_different(x, y, t.symbols))
    where = "differ at " + sizes_text(*at) + " (" + std::to_string(x.evaluate(*at)) + " against " + std::to_string(y.evaluate(*at)) + ")";
  throw RuleError{arg,
                  "cannot reshape " + x.text() + " elements to " + y.text() + ": the counts are the same at " + sizes_text(t.specialized_at) +
                      " but " + where + "; give the new shape as expressions of the input's sizes, or name the sizes with --specialize",
                  true};  // (about the sizes: a composite lowered to such a reshape is refused at its place)
}

}  // namespace tg::op_rows
