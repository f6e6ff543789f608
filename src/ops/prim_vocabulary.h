// A small vocabulary for writing prims programs through a GradBuilder: gradient rules and
// lowerings (src/ops/<family>.cpp, and the expressions of the declarations) are written in it. A
// number operand is an Arg literal.
#pragma once
#include <algorithm>
#include <functional>

#include "ops/op_table.h"

namespace tg::vocabulary {

using V = ValueId;
using G = GradBuilder;

inline Arg val(V v) { return Arg::of_value(v); }
inline Arg num(double d) { return Arg::of_real(d); }
// A count of elements as an operand: a number, or where it is symbolic a size with its expression,
// which code taking its sizes at run time reads from its size parameters (a mean's divisor).
inline Arg count(const Dim& n) { return n.symbolic() ? Arg::of_dim(n) : num(double(n)); }
// The elements of `shape` a reduction over `dims` takes for each result, with its expression.
inline Dim reduced_count(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape reduced;
  for (int64_t d : dims) reduced.push_back(shape[size_t(d)]);
  return numel_dim(reduced);
}

inline V call(G& g, std::string_view id, std::vector<Arg> args) { return g.emit(id, std::move(args)).at(0); }
inline V add(G& g, Arg a, Arg b) { return call(g, "prims.add", {a, b}); }
inline V sub(G& g, Arg a, Arg b) { return call(g, "prims.sub", {a, b}); }
inline V mul(G& g, Arg a, Arg b) { return call(g, "prims.mul", {a, b}); }
inline V div(G& g, Arg a, Arg b) { return call(g, "prims.div", {a, b}); }
inline V neg(G& g, V a) { return call(g, "prims.neg", {val(a)}); }
inline V unary(G& g, std::string_view id, V a) { return call(g, id, {val(a)}); }
inline V where(G& g, V pred, Arg a, Arg b) { return call(g, "prims.where", {val(pred), a, b}); }
inline V cmp(G& g, std::string_view id, Arg a, Arg b) { return call(g, id, {a, b}); }
inline V convert(G& g, V a, DType t) { return call(g, "prims.convert_element_type", {val(a), Arg::of_dtype(t)}); }

inline Arg int_list(const std::vector<int64_t>& v) {
  std::vector<Arg> items;
  for (int64_t i : v) items.push_back(Arg::of_int(i));
  return Arg::of_list(std::move(items));
}
inline Arg int_list(std::initializer_list<int64_t> v) { return int_list(std::vector<int64_t>(v)); }
// A shape as a list argument, each size with its expression.
inline Arg int_list(const Shape& shape) {
  std::vector<Arg> items;
  for (const Dim& d : shape) items.push_back(Arg::of_dim(d));
  return Arg::of_list(std::move(items));
}

// A reference into the trace's values, which move when a rule emits an op: read a field of it at
// once, and a shape that an argument emitting beside it needs through shape_of, which copies it.
inline const Value& value_of(G& g, V v) { return g.trace().value(v); }
inline Shape shape_of(G& g, V v) { return value_of(g, v).shape; }

inline V sum(G& g, V a, const std::vector<int64_t>& dims) { return dims.empty() ? a : call(g, "prims.sum", {val(a), int_list(dims)}); }
inline V reshape(G& g, V a, const Shape& shape) { return shape_of(g, a) == shape ? a : call(g, "prims.reshape", {val(a), int_list(shape)}); }
inline V broadcast(G& g, V a, const Shape& shape, const std::vector<int64_t>& dims) {
  return call(g, "prims.broadcast_in_dim", {val(a), int_list(shape), int_list(dims)});
}
// The trace's default device, as a literal for sources (full, iota, uniform_philox).
inline Arg device_of(G& g) {
  Arg device;
  device.kind = Arg::Kind::device;
  device.text = g.trace().device;
  return device;
}
inline V full(G& g, const Shape& shape, Arg fill, DType t) { return call(g, "prims.full", {int_list(shape), std::move(fill), device_of(g), Arg::of_dtype(t)}); }
inline V full(G& g, const Shape& shape, double fill, DType t) { return full(g, shape, num(fill), t); }
inline V zeros(G& g, const Shape& shape, DType t) { return full(g, shape, 0.0, t); }

// A reduced value broadcast back over the dims it lost.
inline V unreduce(G& g, V reduced, const Shape& full, const std::vector<int64_t>& reduced_dims) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < int64_t(full.size()); ++d)
    if (!std::count(reduced_dims.begin(), reduced_dims.end(), d)) kept.push_back(d);
  return broadcast(g, reduced, full, kept);
}

inline bool is_tensor(G& g, const Arg& a) { return a.is_value() && !value_of(g, a.value).is_scalar; }

// x op number where x may itself be a number literal: folded, since prims need a tensor operand.
inline Arg plus(G& g, const Arg& x, double d) { return x.is_number() ? num(x.as_double() + d) : val(add(g, x, num(d))); }
inline Arg one_minus(G& g, const Arg& x) { return x.is_number() ? num(1.0 - x.as_double()) : val(sub(g, num(1.0), x)); }
inline Arg squared(G& g, const Arg& x) { return x.is_number() ? num(x.as_double() * x.as_double()) : val(mul(g, x, x)); }

inline std::vector<int64_t> swap_last_two(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = int64_t(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}
inline V transpose_last_two(G& g, V a) { return call(g, "prims.transpose", {val(a), int_list(swap_last_two(shape_of(g, a).size()))}); }
inline V matmul(G& g, V a, V b) { return call(g, "prims.matmul", {val(a), val(b)}); }

}  // namespace tg::vocabulary
