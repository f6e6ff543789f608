// The torch-level normalizations' op-table rows, built from torch_normalization.def: shape rules,
// gradient rules and lowerings.
#include <cstdio>

#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

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

// layer_norm(a, normalized_shape, weight=None, bias=None, eps=1e-5) and
// rms_norm(a, normalized_shape, weight=None, eps=None): normalized_shape is a's trailing dims;
// weight and bias have that shape.
std::vector<OutType> norm_rule(const Trace& t, const Op& op) {
  const Value& a = float_tensor(t, op, 0);
  Shape ns = op.arg("normalized_shape").dim_list();
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

// ---- softmax and log_softmax ------------------------------------------------------------------

// softmax / log_softmax along `dim` (in f32 for 16-bit inputs), then to the result dtype.
// softmax / log_softmax(a, dim, dtype): with a dtype, PyTorch converts `a` first and computes in
// that dtype, so an f64 result is computed in f64, not widened from an f32 one.
V softmax_like(G& g, const Op& op, bool log) {
  V a = op.arg("a").value;
  if (op.arg("dtype").kind == Arg::Kind::dtype) a = downcast(g, a, op.arg("dtype").dtype);
  a = upcast(g, a);
  Shape shape = shape_of(g, a);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size());
  V m = unreduce(g, call(g, "prims.amax", {val(a), int_list({dim})}), shape, {dim});
  V shifted = sub(g, val(a), val(m));
  V e = unary(g, "prims.exp", shifted);
  V s = unreduce(g, sum(g, e, {dim}), shape, {dim});
  V y = log ? sub(g, val(shifted), val(unary(g, "prims.log", s))) : div(g, val(e), val(s));
  return downcast(g, y, g.trace().value(op.outs[0]).dtype);
}

V lower_softmax(G& g, const Op& op) { return softmax_like(g, op, false); }
V lower_log_softmax(G& g, const Op& op) { return softmax_like(g, op, true); }

// Softmax family: read the output only. d softmax: y * (g - sum(g * y)); d log_softmax:
// g - exp(y) * sum(g).
Contributions softmax_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  auto [y, dt] = up(g, op.outs[0]);
  V c = upcast(g, cot[0]);
  Shape shape = shape_of(g, y);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size());
  V ga;
  if (op.info->kind == OpKind::t_softmax) {
    V dot = unreduce(g, sum(g, mul(g, val(c), val(y)), {dim}), shape, {dim});
    ga = mul(g, val(y), val(sub(g, val(c), val(dot))));
  } else {
    V total = unreduce(g, sum(g, c, {dim}), shape, {dim});
    ga = sub(g, val(c), val(mul(g, val(unary(g, "prims.exp", y)), val(total))));
  }
  return {{op.arg("a").value, downcast(g, ga, value_of(g, op.arg("a").value).dtype)}};
}

// ---- layer_norm and rms_norm over the trailing normalized_shape dims ----

struct Norm {
  Shape shape;                   // of the input
  std::vector<int64_t> dims;     // normalized (trailing) dims
  std::vector<int64_t> row_dims; // the others
  Dim n;                         // elements per row
  bool rms;
  double eps;
};

Norm norm_of(G& g, const Op& op) {
  Norm m;
  m.shape = shape_of(g, op.arg("a").value);
  size_t k = op.arg("normalized_shape").items.size(), r = m.shape.size();
  Shape normalized;
  for (size_t d = 0; d < r; ++d) {
    if (d + k >= r) {
      m.dims.push_back(int64_t(d));
      normalized.push_back(m.shape[d]);
    } else {
      m.row_dims.push_back(int64_t(d));
    }
  }
  m.n = numel_dim(normalized);
  m.rms = op.info->kind == OpKind::t_rms_norm;
  const Arg& eps = op.arg(m.rms ? 3 : 4);
  if (eps.is_number()) {
    m.eps = eps.as_double();
  } else {  // rms_norm's default: the machine epsilon of the input dtype
    DType t = value_of(g, op.arg("a").value).dtype;
    m.eps = t == DType::f64 ? 2.220446049250313e-16 : t == DType::f16 ? 0.0009765625 : t == DType::bf16 ? 0.0078125 : 1.1920929e-07;
  }
  return m;
}

// The normalized input x-hat (in f32 for 16-bit) and its per-element scale: rstd (layer_norm:
// (a - mean) * rstd) or 1/rms (rms_norm: a * rstd), as broadcast values.
struct Normalized {
  V xhat, rstd;
};
Normalized normalize(G& g, const Norm& m, V a) {
  V centered = a, var;
  if (m.rms) {
    var = div(g, val(sum(g, mul(g, val(a), val(a)), m.dims)), count(m.n));
  } else {
    auto vm = g.emit("prims.var_mean", {val(a), int_list(m.dims), num(0.0)});
    var = vm[0];
    centered = sub(g, val(a), val(unreduce(g, vm[1], m.shape, m.dims)));
  }
  V rstd = unary(g, "prims.rsqrt", add(g, val(unreduce(g, var, m.shape, m.dims)), num(m.eps)));
  return {mul(g, val(centered), val(rstd)), rstd};
}

// layer_norm and rms_norm: x-hat, times the weight, plus the bias (layer_norm).
V lower_norm(G& g, const Op& op) {
  Norm m = norm_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  V y = normalize(g, m, a).xhat;
  if (op.arg("weight").is_value()) y = mul(g, val(y), val(broadcast(g, upcast(g, op.arg("weight").value), m.shape, m.dims)));
  if (!m.rms && op.arg("bias").is_value()) y = add(g, val(y), val(broadcast(g, upcast(g, op.arg("bias").value), m.shape, m.dims)));
  return downcast(g, y, dt);
}

// layer_norm / rms_norm: read the input and the weight, and recompute the row statistics (a
// cheap row reduction the backward fuses) instead of saving them or x-hat:
//   gx = rstd * (g' - mean(g') - xhat * mean(g' * xhat)), g' = g * w  (rms_norm: no mean(g'))
//   gw = sum over rows of g * xhat;  gb = sum over rows of g
Contributions norm_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  Norm m = norm_of(g, op);
  auto [a, dt] = up(g, op.arg("a").value);
  V c = upcast(g, cot[0]);
  Normalized x = normalize(g, m, a);
  const Arg& w = op.arg("weight");
  V gs = w.is_value() ? mul(g, val(c), val(broadcast(g, upcast(g, w.value), m.shape, m.dims))) : c;
  auto row_mean = [&](V v) { return unreduce(g, div(g, val(sum(g, v, m.dims)), count(m.n)), m.shape, m.dims); };
  V inner = sub(g, val(gs), val(mul(g, val(x.xhat), val(row_mean(mul(g, val(gs), val(x.xhat)))))));
  if (!m.rms) inner = sub(g, val(inner), val(row_mean(gs)));
  Contributions out = {{op.arg("a").value, downcast(g, mul(g, val(x.rstd), val(inner)), dt)}};
  if (w.is_value()) out.emplace_back(w.value, downcast(g, sum(g, mul(g, val(c), val(x.xhat)), m.row_dims), dt));
  if (!m.rms && op.arg("bias").is_value()) out.emplace_back(op.arg("bias").value, downcast(g, sum(g, c, m.row_dims), dt));
  return out;
}

// ---- normalize -------------------------------------------------------------------------------

// normalize (p=2): a / max(sqrt(sum(a^2)), eps). A zero norm is 0 without a sqrt of 0, whose
// infinite derivative would make the gradient NaN (PyTorch's norm gives 0 there); a norm below
// eps gets no gradient, as clamp_min's.
V lower_normalize(G& g, const Op& op) {
  auto [a, dt] = up(g, op.arg("input").value);
  const Shape shape = shape_of(g, a);
  const std::vector<int64_t> dims = dims_of(op.arg("dim"), shape.size());
  const double eps = op.arg("eps").as_double();
  V squares = sum(g, mul(g, val(a), val(a)), dims);
  V nonzero = cmp(g, "prims.gt", val(squares), num(0.0));
  V norm = where(g, nonzero, val(unary(g, "prims.sqrt", where(g, nonzero, val(squares), num(1.0)))), num(0.0));
  V denom = where(g, cmp(g, "prims.lt", val(norm), num(eps)), num(eps), val(norm));
  return downcast(g, div(g, val(a), val(unreduce(g, denom, shape, dims))), dt);
}

}  // namespace

#define TG_FAMILY_ROWS torch_normalization_rows
#define TG_FAMILY "torch_normalization"
#define TG_FAMILY_FILE "ops/torch_normalization.def"
#include "ops/family_rows.inc"

}  // namespace tg
