// Pieces the shape rules of several families share (src/ops/<family>.cpp): reading a tensor
// argument, wrapping a dim, checking a shape, PyTorch's broadcasting and promotion of arguments, the
// position a parameter name has in the op's signature (what a failure names).
#pragma once
#include <initializer_list>
#include <string_view>
#include <vector>

#include "ops/op_table.h"

namespace tg::op_rows {

// Argument i as a tensor value; nullptr for a number, a scalar value or null.
const Value* tensor_arg(const Trace& t, const Op& op, size_t i);
// Argument i, a tensor that must have a float dtype.
const Value& float_tensor(const Trace& t, const Op& op, size_t i);
// A possibly negative dim wrapped into [0, rank); a failure at argument `arg` outside it.
int64_t wrap_dim(int64_t d, size_t rank, int arg);
// No negative dimension, and not more than 2^48 elements.
void check_shape(const Shape& shape, int arg);
// The position of parameter `name` in op's signature; an internal error when it declares none.
size_t declared_position(const Op& op, std::string_view name);
// A number literal, not a scalar input.
void need_number_literal(const Op& op, std::string_view name);
// PyTorch's broadcast of the tensor arguments at `which` (aligned at the last dim).
Shape broadcast_shapes(const Trace& t, const Op& op, std::initializer_list<size_t> which);
// `out` broadcast with argument `arg`'s `shape` (refused naming it where they do not broadcast).
void broadcast_into(Shape& out, const Shape& shape, int arg);
// torch.result_type of the arguments at `which` (tensors, scalar values, number literals; null skipped).
DType promoted(const Trace& t, const Op& op, std::initializer_list<size_t> which);
// A reshape of `in` to `out` (argument `arg`) in a folder taking its sizes at run time: where both
// element counts are expressions, the same at every size the symbols allow, or refused naming
// both. (Equal at the sizes read is not enough: both counts are code, the same at the two probes
// however they differ elsewhere.)
void check_count_kept(const Trace& t, const Shape& in, const Shape& out, int arg);
// `in` without the dims listed.
Shape reduced_shape(const Shape& in, const std::vector<int64_t>& dims);

// Same shape and dtype as the float input (activations).
std::vector<OutType> like_input_rule(const Trace& t, const Op& op);
// cat(tensors, dim): prims.cat's and torch.cat's.
std::vector<OutType> cat_rule(const Trace& t, const Op& op);

}  // namespace tg::op_rows
