// Words the torch-level lowerings and rules share (src/ops/torch_*.cpp, matmul_ops.cpp,
// attention_ops.cpp, ...), on top of prim_vocabulary.h: computing 16-bit floats in f32, dims as
// PyTorch names them, operands broadcast and converted as PyTorch does, and a few compound ops.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/prim_vocabulary.h"

namespace tg::vocabulary {

using Contributions = std::vector<GradContribution>;

inline bool is_16bit(DType t) { return t == DType::f16 || t == DType::bf16; }
// Thunder computes 16-bit floats in f32 and rounds the result once.
inline V upcast(G& g, V a) { return is_16bit(value_of(g, a).dtype) ? convert(g, a, DType::f32) : a; }
inline V downcast(G& g, V a, DType to) { return value_of(g, a).dtype == to ? a : convert(g, a, to); }

// A value as an op computes with it (upcast), and its own dtype (what the result is rounded to).
struct Upcast {
  V value;
  DType original;
};
inline Upcast up(G& g, V v) { return {upcast(g, v), value_of(g, v).dtype}; }

inline int64_t wrapped(int64_t d, size_t rank) { return d < 0 ? d + int64_t(rank) : d; }

// The dims a torch.sum/mean/var dim argument names (null: all), sorted.
inline std::vector<int64_t> dims_of(const Arg& dim, size_t rank) {
  std::vector<int64_t> dims;
  if (dim.kind == Arg::Kind::none) {
    for (size_t d = 0; d < rank; ++d) dims.push_back(int64_t(d));
  } else if (dim.kind == Arg::Kind::integer) {
    dims.push_back(wrapped(dim.integer, rank));
  } else {
    for (const Arg& d : dim.items) dims.push_back(wrapped(d.integer, rank));
  }
  std::sort(dims.begin(), dims.end());
  return dims;
}

// An optional tensor argument's value, or kNoValue.
inline V optional_value(const Arg& a) { return a.is_value() ? a.value : kNoValue; }

inline const Value& output_of(G& g, const Op& op, size_t i = 0) { return g.trace().value(op.outs[i]); }

// A tensor broadcast to `shape` as PyTorch broadcasts (aligned at the last dim).
inline V broadcast_to(G& g, V v, const Shape& shape) {
  const Shape s = shape_of(g, v);
  if (s == shape) return v;
  std::vector<int64_t> dims(s.size());
  for (size_t k = 0; k < s.size(); ++k) dims[k] = int64_t(shape.size() - s.size() + k);
  return broadcast(g, v, shape, dims);
}

// A tensor argument converted to `dt` and broadcast to `shape`; a number literal in dt's kind.
inline Arg operand_as(G& g, const Arg& a, DType dt, const Shape& shape) {
  if (a.is_value()) return val(broadcast_to(g, downcast(g, a.value, dt), shape));
  if (is_float(dt)) return num(a.as_double());
  if (is_bool(dt)) return Arg::of_bool(a.as_double() != 0.0);
  return Arg::of_int(a.kind == Arg::Kind::real ? int64_t(std::trunc(a.real)) : int64_t(a.as_double()));
}

// sigmoid(a) = 1 / (1 + exp(-a)), computed in a's dtype (already upcast).
inline V sigmoid_of(G& g, V a) { return unary(g, "prims.reciprocal", add(g, val(unary(g, "prims.exp", neg(g, a))), num(1.0))); }

// a @ w^T (+ b over the last dim, unless b is kNoValue).
inline V linear(G& g, V a, V w, V b) {
  V y = matmul(g, a, call(g, "prims.transpose", {val(w), int_list({1, 0})}));
  if (b != kNoValue) {
    Shape shape = shape_of(g, y);
    y = add(g, val(y), val(broadcast(g, b, shape, {int64_t(shape.size()) - 1})));
  }
  return y;
}

// The first maximum (or minimum) of `a` along dim d, NaN counting as the largest as PyTorch's
// argmax does: its position (argmax/argmin) and its value, picked by a one-hot compare with an
// iota so that the gradient goes to that element alone (torch.max(a, dim), max_pool). Both
// without dim d. (A sum of the one element and zeros: an extremum of -0.0 comes out +0.0.)
struct Extremum {
  V values, index;
};
inline Extremum first_extremum(G& g, V a, int64_t d, bool is_max) {
  const Shape shape = shape_of(g, a);
  V index = call(g, is_max ? "prims.argmax" : "prims.argmin", {val(a), Arg::of_int(d)});
  V positions = call(g, "prims.iota", {Arg::of_dim(shape[size_t(d)]), Arg::of_int(0), Arg::of_int(1), device_of(g), Arg::of_dtype(DType::i64)});
  V at_index = cmp(g, "prims.eq", val(broadcast(g, positions, shape, {d})), val(unreduce(g, index, shape, {d})));
  const DType dt = value_of(g, a).dtype;
  return {sum(g, where(g, at_index, val(a), is_float(dt) ? num(0.0) : Arg::of_int(0)), {d}), index};
}

}  // namespace tg::vocabulary
