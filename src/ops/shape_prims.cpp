// The shape prims' op-table rows, built from shape_prims.def, with their shape rules and gradient
// rules (each moves the cotangent back to where its elements came from).
#include <algorithm>
#include <set>

#include "ops/family.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;
using Contributions = std::vector<GradContribution>;

// ---- shape rules ------------------------------------------------------------------------------

std::vector<OutType> broadcast_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  Shape shape = op.arg("shape").dim_list();
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
  Shape shape = op.arg("shape").dim_list();
  check_shape(shape, 1);
  if (numel(shape) != numel(a.shape))
    fail(1, "cannot reshape " + shape_str(a.shape) + " (" + std::to_string(numel(a.shape)) + " elements) to " + shape_str(shape));
  derive_reshaped_dim(shape, a.shape, t.symbols);
  check_count_kept(t, a.shape, shape, 1);
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
  const Shape start = op.arg("start_indices").dim_list(), end = op.arg("end_indices").dim_list();
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
    // (with its expression, when both bounds have one: (len - 1)//stride + 1 is 0 at len 0)
    const Dim len = subtract_dims(end[i], start[i]);
    shape.push_back(strides[i] == 1 ? len : add_dims(floor_div_dim(subtract_dims(len, Dim::constant(1)), strides[i], t.symbols), Dim::constant(1)));
  }
  return {{a.dtype, shape}};
}

// A padded dim, `out` long: with its expression when the input and the three pads have one, and
// the input is never 0 where there is interior padding (len + (len - 1) * interior is not 0 there).
Dim padded_dim(const Dim& len, const Shape& lo_hi_interior, int64_t out, const Symbols& symbols) {
  const Dim &lo = lo_hi_interior[0], &hi = lo_hi_interior[1], &interior = lo_hi_interior[2];
  const bool never_empty = len.expr() && provably_positive(*len.expr(), symbols);
  if (!interior.expr() || (interior != 0 && !never_empty)) return Dim(out);
  const Dim spread = interior == 0 ? len : spread_dim(len, add_dims(interior, Dim::constant(1)));
  return add_dims(add_dims(spread, lo), hi);
}

std::vector<OutType> pad_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  const Arg& config = op.arg("padding_config");
  if (config.items.size() != a.shape.size()) fail(2, "needs one (lo, hi, interior) triple per dimension");
  Shape shape;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const Shape triple = config.items[i].dim_list();
    if (triple[2] < 0) fail(2, "interior padding must not be negative");
    int64_t len = a.shape[i], out = 0, interior = 0;
    if (__builtin_mul_overflow(len > 0 ? len - 1 : 0, int64_t(triple[2]), &interior) || __builtin_add_overflow(int64_t(triple[0]), int64_t(triple[1]), &out) ||
        __builtin_add_overflow(out, len, &out) || __builtin_add_overflow(out, interior, &out))
      fail(2, "padding of dimension " + std::to_string(i) + " overflows 64 bits");
    if (out < 0) fail(2, "dimension " + std::to_string(i) + " would have negative length " + std::to_string(out));
    shape.push_back(padded_dim(a.shape[i], triple, out, t.symbols));
  }
  return {{a.dtype, shape}};
}

std::vector<OutType> flip_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  std::vector<bool> flipped(a.shape.size());
  for (int64_t d : op.arg("dims").int_list()) {
    const int64_t w = wrap_dim(d, a.shape.size(), 1);
    if (flipped[size_t(w)]) fail(1, "dim " + std::to_string(w) + " listed twice");
    flipped[size_t(w)] = true;
  }
  return {{a.dtype, a.shape}};
}

// ---- gradient rules ---------------------------------------------------------------------------

// The cotangent flipped back.
Contributions flip_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  return {{op.arg("a").value, call(g, "prims.flip", {val(cot[0]), op.arg("dims")})}};
}


// A crop keeps `kept` input positions (its gradient slices them from the cotangent): in a folder
// for every size, at least one at every size or none at any, or the gradient would be the slice
// at some sizes and zeros at others. Refused, naming the expression, where the ranges do not say.
void refuse_unless_kept_at_every_size(G& g, const Op& op, const Dim& kept) {
  const Trace& t = g.trace();
  if (!t.sizes_at_run_time || !kept.symbolic() || provably_positive(*kept.expr(), t.symbols) || range_of(*kept.expr(), t.symbols).hi <= 0) return;
  throw UserError(op.where.empty() ? "/" : op.where, "prims.pad: a crop keeps " + kept.expr()->text() +
                                                    " input positions, which may be 0 at some sizes the symbols allow; raise their min, or name the sizes with --specialize");
}

// The input positions a slice or pad reads: for output/input lengths and out = lo + p * step.
Contributions pad_gradient(G& g, const Op& op, const std::vector<V>& cot) {
  V a = op.arg("a").value;
  const Shape& in = shape_of(g, a);
  const Shape& out = shape_of(g, op.outs[0]);
  Shape start, end;
  std::vector<int64_t> strides;
  std::vector<Arg> repad;
  bool empty = false;
  for (size_t d = 0; d < in.size(); ++d) {
    const Shape lhi = op.arg("padding_config").items[d].dim_list();
    const int64_t lo = lhi[0], step = lhi[2] + 1, len = in[d];
    strides.push_back(step);
    if (lo >= 0 && lhi[1] >= 0) {  // every input position is in the output: lo + (len - 1) * step + 1 its end, with its expression
      start.push_back(lhi[0]);
      end.push_back(add_dims(lhi[0], spread_dim(in[d], Dim::constant(step))));
      repad.push_back(int_list(Shape(3, Dim::constant(0))));
      continue;
    }
    if (step == 1) {  // positions max(0, -lo) up to len - max(0, -hi), with their expressions
      const Dim none = Dim::constant(0);
      const Dim cut_lo = lo >= 0 ? none : subtract_dims(none, lhi[0]), cut_hi = lhi[1] >= 0 ? none : subtract_dims(none, lhi[1]);
      const Dim p1 = subtract_dims(in[d], cut_hi);
      refuse_unless_kept_at_every_size(g, op, subtract_dims(p1, cut_lo));
      if (p1 <= cut_lo) { empty = true; break; }
      start.push_back(add_dims(lhi[0], cut_lo));
      end.push_back(add_dims(lhi[0], p1));
      repad.push_back(Arg::of_list({Arg::of_dim(cut_lo), Arg::of_dim(cut_hi), Arg::of_dim(none)}));
      continue;
    }
    // input positions p whose padded position lo + p * step lands inside the output
    if (g.trace().sizes_at_run_time && in[d].symbolic())  // (computed in integers: which positions, at one size)
      throw UserError(op.where.empty() ? "/" : op.where, "prims.pad: the gradient of a pad that crops, with interior padding, along dim " + std::to_string(d) +
                                                        ", " + in[d].expr()->text() + ", is taken at one size only; name the sizes with --specialize");
    int64_t p0 = lo >= 0 ? 0 : (-lo + step - 1) / step;
    int64_t p1 = len;
    while (p1 > p0 && lo + (p1 - 1) * step >= out[d]) --p1;
    if (p1 <= p0) { empty = true; break; }
    start.push_back(lo + p0 * step);
    end.push_back(lo + (p1 - 1) * step + 1);
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
  const Shape start = op.arg("start_indices").dim_list();
  std::vector<int64_t> strides(in.size(), 1);
  if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
  std::vector<Arg> config;
  for (size_t d = 0; d < in.size(); ++d) {
    if (out[d] == 0) return {{a, zeros(g, in, value_of(g, a).dtype)}};
    // The pads with their expressions: start before, in - start - spread after, where the
    // output spreads over (out - 1) * stride + 1 of the input; stride - 1 between.
    const Dim spread = spread_dim(out[d], Dim::constant(strides[d]));
    config.push_back(int_list(Shape{start[d], subtract_dims(subtract_dims(in[d], start[d]), spread), Dim::constant(strides[d] - 1)}));
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
  Dim offset = Dim::constant(0);  // (with its expression: the pieces' sizes keep theirs)
  for (const Arg& piece : op.arg("tensors").items) {
    const Shape& s = shape_of(g, piece.value);
    Shape start(out.size(), Dim::constant(0)), end = out;
    start[size_t(dim)] = offset;
    end[size_t(dim)] = add_dims(offset, s[size_t(dim)]);
    result.emplace_back(piece.value, call(g, "prims.slice_prim", {val(cot[0]), int_list(start), int_list(end), Arg{}}));
    offset = add_dims(offset, s[size_t(dim)]);
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

}  // namespace

#define TG_FAMILY_ROWS shape_prim_rows
#define TG_FAMILY "shape_prims"
#define TG_FAMILY_FILE "ops/shape_prims.def"
#include "ops/family_rows.inc"

}  // namespace tg
