// The torch-level shape calls' op-table rows, built from torch_shape_ops.def: shape rules and
// lowerings.
#include <algorithm>

#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// ---- shape rules ------------------------------------------------------------------------------

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
  Shape shape = op.arg("shape").dim_list();
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
  derive_reshaped_dim(shape, a.shape, t.symbols);
  check_count_kept(t, a.shape, shape, 1);
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
  out.insert(out.begin() + d, Dim::constant(1));
  return {{a.dtype, out}};
}

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
  // Pieces of a dim the same at every size are too (sizes listed are taken as written).
  std::vector<OutType> out;
  for (int64_t s : sizes) {
    Shape shape = a.shape;
    shape[size_t(dim)] = computed_from(a.shape[size_t(dim)], s);
    out.push_back({a.dtype, shape});
  }
  return out;
}

// tril / triu(input [..., rows, cols], diagonal=0, *, fill_value=None): fill_value is Thunder's.
std::vector<OutType> triangle_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("input").value);
  if (a.shape.size() < 2) fail(0, "needs at least 2 dims, has shape " + shape_str(a.shape));
  if (op.arg("fill_value").is_value()) fail(2, "fill_value must be a number literal or null");
  if (op.arg("fill_value").kind == Arg::Kind::real && !is_float(a.dtype)) fail(2, "a float fill_value for an integer input is not supported");
  return {{a.dtype, a.shape}};
}

// gather(a, dim, index): index has a's rank, integer elements and at most a's size in every dim
// but `dim`; the result has index's shape.
std::vector<OutType> gather_rule(const Trace& t, const Op& op) {
  const Value& a = t.value(op.arg("a").value);
  const Value& index = t.value(op.arg("index").value);
  const int64_t rank = int64_t(std::max<size_t>(a.shape.size(), 1));
  const int64_t dim = op.arg("dim").integer;
  if (dim < -rank || dim >= rank) fail(1, "dim " + std::to_string(dim) + " is out of range for shape " + shape_str(a.shape));
  if (index.dtype != DType::i64 && index.dtype != DType::i32) fail(2, "needs integer indices (i64 or i32), not " + std::string(dtype_name(index.dtype)));
  if (index.shape.size() != a.shape.size()) fail(2, "needs the input's rank " + std::to_string(a.shape.size()) + ", has shape " + shape_str(index.shape));
  const size_t d = size_t(wrapped(dim, a.shape.size()));
  if (numel(a.shape) == 0 || numel(index.shape) == 0) fail(0, "an empty input or index (a dim of size 0) is not supported");
  for (size_t k = 0; k < a.shape.size(); ++k)
    if (k != d && index.shape[k] > a.shape[k])
      fail(2, "shape " + shape_str(index.shape) + " is larger than the input's " + shape_str(a.shape) + " in dim " + std::to_string(k));
  return {{a.dtype, index.shape}};
}

// ---- lowerings --------------------------------------------------------------------------------

// reshape, unsqueeze and the layout-only prims: a reshape to the output's shape.
V reshape_to_output(G& g, const Op& op) {
  return call(g, "prims.reshape", {val(op.arg("a").value), int_list(g.trace().value(op.outs[0]).shape)});
}

V lower_permute(G& g, const Op& op) {
  std::vector<int64_t> perm = op.arg("dims").int_list();
  for (int64_t& d : perm) d = wrapped(d, perm.size());
  return call(g, "prims.transpose", {val(op.arg("a").value), int_list(perm)});
}

// transpose(a, d0, d1): the permutation swapping two dims.
V lower_transpose(G& g, const Op& op) {
  size_t rank = shape_of(g, op.arg("a").value).size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(i);
  std::swap(perm[size_t(wrapped(op.arg("dim0").integer, rank))], perm[size_t(wrapped(op.arg("dim1").integer, rank))]);
  return call(g, "prims.transpose", {val(op.arg("a").value), int_list(perm)});
}

V lower_cat(G& g, const Op& op) {
  std::vector<Arg> items = op.arg("tensors").items;
  size_t rank = shape_of(g, items[0].value).size();
  return call(g, "prims.cat", {Arg::of_list(items), Arg::of_int(wrapped(op.arg("dim").integer, rank))});
}

// split: one slice along the dim per output, each as long as that output.
std::vector<ValueId> lower_split(G& g, const Op& op) {
  V a = op.arg("a").value;
  Shape shape = shape_of(g, a);
  int64_t dim = wrapped(op.arg("dim").integer, shape.size());
  Dim at = Dim::constant(0);
  std::vector<ValueId> pieces;
  for (ValueId out : op.outs) {
    const Dim len = g.trace().value(out).shape[size_t(dim)];
    Shape start(shape.size(), Dim::constant(0)), end = shape;  // (with their expressions: the slices' sizes keep theirs)
    start[size_t(dim)] = at;
    end[size_t(dim)] = add_dims(at, len);
    pieces.push_back(call(g, "prims.slice_prim", {val(a), int_list(start), int_list(end), Arg{}}));
    at = add_dims(at, len);
  }
  return pieces;
}

// tril keeps column - row <= diagonal, triu column - row >= diagonal; the rest is fill_value (0).
V lower_triangle(G& g, const Op& op) {
  V a = op.arg("input").value;
  const Shape shape = shape_of(g, a);
  const int64_t r = int64_t(shape.size());
  const Dim rows = shape[size_t(r - 2)], cols = shape[size_t(r - 1)];
  auto positions = [&](const Dim& n, int64_t dim) {
    V i = call(g, "prims.iota", {Arg::of_dim(n), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
    return broadcast(g, i, {rows, cols}, {dim});
  };
  V offset = sub(g, val(positions(cols, 1)), val(positions(rows, 0)));
  V keep = cmp(g, op.info->kind == OpKind::t_tril ? "prims.le" : "prims.ge", val(offset), op.arg("diagonal"));
  const DType dt = value_of(g, a).dtype;
  Arg fill = op.arg("fill_value").kind == Arg::Kind::none ? Arg::of_int(0) : op.arg("fill_value");
  return where(g, broadcast(g, keep, shape, {r - 2, r - 1}), val(a), operand_as(g, fill, dt, shape));
}

// gather: a (sliced to index's extent in the other dims, `dim` moved last) broadcast over index's
// shape plus a last axis of a's size at dim; the element whose position equals the index kept, the
// last axis summed away.
V lower_gather(G& g, const Op& op) {
  V a = op.arg("a").value, index = op.arg("index").value;
  const Shape in = shape_of(g, a), out = shape_of(g, index);
  if (in.empty()) return a;  // a 0-d input: index is 0-d and must be 0
  const size_t rank = in.size(), d = size_t(wrapped(op.arg("dim").integer, rank));
  const Dim k = in[d];  // (with its expression: the iota and the summed axis are as long at every size)
  Shape extent = out;
  extent[d] = k;
  if (extent != in) a = call(g, "prims.slice_prim", {val(a), int_list(std::vector<int64_t>(rank, 0)), int_list(extent)});
  std::vector<int64_t> dim_last, kept;
  for (size_t i = 0; i < rank; ++i)
    if (i != d) dim_last.push_back(int64_t(i));
  kept = dim_last;
  dim_last.push_back(int64_t(d));
  kept.push_back(int64_t(rank));
  Shape wide = out;
  wide.push_back(k);
  V source = broadcast(g, call(g, "prims.transpose", {val(a), int_list(dim_last)}), wide, kept);
  std::vector<int64_t> leading(rank);
  for (size_t i = 0; i < rank; ++i) leading[i] = int64_t(i);
  V positions = call(g, "prims.iota", {Arg::of_dim(k), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(value_of(g, index).dtype)});
  V chosen = cmp(g, "prims.eq", val(broadcast(g, index, wide, leading)), val(broadcast(g, positions, wide, {int64_t(rank)})));
  const DType dt = value_of(g, a).dtype;
  return sum(g, where(g, chosen, val(source), operand_as(g, Arg::of_int(0), dt, wide)), {int64_t(rank)});
}

}  // namespace

#define TG_FAMILY_ROWS torch_shape_op_rows
#define TG_FAMILY "torch_shape_ops"
#define TG_FAMILY_FILE "ops/torch_shape_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
