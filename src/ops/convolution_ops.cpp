// Convolutions' op-table rows, built from convolution_ops.def: the shape rule and the lowering,
// to one matmul for a patch embedding (kernel == stride) and to padded, strided slices (im2col)
// and a GEMM per group for any other.
#include <algorithm>

#include "ops/sliding_windows.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

// conv1d / conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) and
// prims.convolution(a, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups): a convolution as PyTorch computes it, not transposed. Its windows are the weight's
// spatial dims; where its arguments sit: conv1d/2d's and prims.convolution's signatures differ
// after bias.
struct ConvolutionArgs {
  Windows windows;
  int64_t groups;
};

ConvolutionArgs convolution_args(const Op& op, const Shape& weight) {
  const bool prim = op.info->kind == OpKind::t_convolution;
  const size_t n = weight.size() - 2, groups_at = prim ? 8 : 6;
  ConvolutionArgs c{{Shape(weight.begin() + 2, weight.end()), per_spatial_dim(op, 3, n, "stride"), per_spatial_dim(op, 4, n, "padding"),
                     per_spatial_dim(op, 5, n, "dilation")},
                    op.arg(groups_at).integer};
  if (c.groups < 1) fail(int(groups_at), "groups must be positive, not " + std::to_string(c.groups));
  check_windows(c.windows, 3, 4, 5);
  if (prim && op.arg("transposed").boolean) fail(6, "a transposed convolution is not supported");
  if (prim)
    for (int64_t p : per_spatial_dim(op, 7, n, "output_padding"))
      if (p != 0) fail(7, "output_padding must be 0");
  return c;
}

// The elements of `s`'s dims from `from` on, with their expression (docs/symbolic-shapes.md).
Dim numel_from(const Shape& s, size_t from) { return numel_dim(Shape(s.begin() + std::ptrdiff_t(from), s.end())); }

// A patch embedding (kernel == stride, no padding, dilation 1, one group): one matmul, no columns.
bool is_patch_convolution(const ConvolutionArgs& c) {
  const Windows& w = c.windows;
  const size_t n = w.kernel.size();
  return c.groups == 1 && w.stride == std::vector<int64_t>(w.kernel.begin(), w.kernel.end()) && w.padding == std::vector<int64_t>(n, 0) &&
         w.dilation == std::vector<int64_t>(n, 1);
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
  if (numel(in.shape) == 0) fail(0, "shape " + shape_str(in.shape) + " is empty: convolutions of empty tensors are not supported");
  if (numel(w.shape) == 0) fail(1, "shape " + shape_str(w.shape) + " is empty: convolutions of empty tensors are not supported");
  const ConvolutionArgs c = convolution_args(op, w.shape);
  const int groups_at = prim ? 8 : 6;
  if (in.shape[1] % c.groups != 0 || w.shape[0] % c.groups != 0)
    fail(groups_at, "groups " + std::to_string(c.groups) + " must divide the input's " + std::to_string(in.shape[1]) + " channels and the weight's " +
                        std::to_string(w.shape[0]) + " filters");
  if (w.shape[1] * c.groups != in.shape[1])
    fail(1, "shape " + shape_str(w.shape) + " needs " + std::to_string(in.shape[1] / c.groups) + " input channels (dim 1), as the input has " +
                (c.groups == 1 ? "" : "per group: " + std::to_string(in.shape[1]) + " in " + std::to_string(c.groups) + " groups"));
  if (const Value* b = tensor_arg(t, op, 2)) {
    if (b->shape != Shape{w.shape[0]}) fail(2, "shape " + shape_str(b->shape) + " is not [" + std::to_string(w.shape[0]) + "], the weight's output channels");
    if (b->dtype != in.dtype) fail(2, "has dtype " + std::string(dtype_name(b->dtype)) + ", not " + std::string(dtype_name(in.dtype)));
  }
  Shape out{in.shape[0], w.shape[0]};
  for (size_t k = 0; k < n; ++k) out.push_back(windowed_dim(t, in.shape[k + 2], c.windows, k, 0));
  if (!is_patch_convolution(c)) check_window_tensors(in.shape, c.windows, out, 0);
  return {{in.dtype, out}};
}

// A patch convolution (kernel == stride, no padding, dilation 1, one group): x [B, C, S1..Sn] is
// cut to whole patches, reshaped to [B, C, O1, K1, .., On, Kn], permuted to [B, O1..On, C,
// K1..Kn] and flattened to one row per patch, which multiplies the weight [F, C*K1*..*Kn]
// transposed; then + bias, and back to [B, F, O1..On].
V patch_convolution(G& g, V x, V w, const Shape& out) {
  const Shape in = shape_of(g, x), ws = shape_of(g, w);
  const int64_t n = int64_t(in.size()) - 2;
  Shape whole = in, patches{in[0], in[1]};
  std::vector<int64_t> perm{0}, start(in.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    whole[size_t(k + 2)] = multiply_dims(out[size_t(k + 2)], ws[size_t(k + 2)]);
    patches.push_back(out[size_t(k + 2)]);
    patches.push_back(ws[size_t(k + 2)]);
    perm.push_back(2 + 2 * k);  // the patch index along spatial dim k
  }
  perm.push_back(1);
  for (int64_t k = 0; k < n; ++k) perm.push_back(3 + 2 * k);  // the offset inside the patch
  if (whole != in) x = call(g, "prims.slice_prim", {val(x), constants(start), int_list(whole)});
  V rows = call(g, "prims.transpose", {val(reshape(g, x, patches)), int_list(perm)});
  const Dim patch_size = numel_from(ws, 1);
  return matmul(g, reshape(g, rows, {multiply_dims(out[0], numel_from(out, 2)), patch_size}),
                call(g, "prims.transpose", {val(reshape(g, w, {ws[0], patch_size})), int_list({1, 0})}));
}

// out[b, f, o] = sum over the group's channels c and kernel offsets k of w[f, c, k] * columns[b,
// c, k, o]: one GEMM per group, the groups as a batch dim of the weight [G, F/G, C/G*K] against the
// columns [B, G, C/G*K, P].
V general_convolution(G& g, V x, V w, const ConvolutionArgs& c, const Shape& out) {
  const Shape in = shape_of(g, x), ws = shape_of(g, w);
  const Dim groups = Dim::constant(c.groups), positions = numel_from(out, 2), depth = numel_from(ws, 1);
  const Dim filters_per_group = computed_from(ws[0], ws[0] / c.groups);
  V columns = reshape(g, window_columns(g, x, c.windows, out, 0.0), {in[0], groups, depth, positions});
  V weights = broadcast(g, reshape(g, w, {groups, filters_per_group, depth}), {in[0], groups, filters_per_group, depth}, {1, 2, 3});
  Shape channels_first{out[0], out[1]};
  channels_first.insert(channels_first.end(), out.begin() + 2, out.end());
  return reshape(g, matmul(g, weights, columns), channels_first);
}

V lower_convolution(G& g, const Op& op) {
  V x = op.arg(0).value, w = op.arg("weight").value;  // x: conv1d/2d's input, prims.convolution's a
  const Shape ws = shape_of(g, w), out = output_of(g, op).shape;
  const ConvolutionArgs c = convolution_args(op, ws);
  const size_t n = ws.size() - 2;
  if (!is_patch_convolution(c)) {
    V y = general_convolution(g, x, w, c, out);
    if (!op.arg("bias").is_value()) return y;
    return add(g, val(y), val(broadcast(g, op.arg("bias").value, out, {1})));
  }
  V y = patch_convolution(g, x, w, out);
  if (op.arg("bias").is_value()) y = add(g, val(y), val(broadcast(g, op.arg("bias").value, shape_of(g, y), {1})));
  Shape channels_last{out[0]};
  for (size_t k = 0; k < n; ++k) channels_last.push_back(out[k + 2]);
  channels_last.push_back(ws[0]);
  std::vector<int64_t> to_channels_first{0, int64_t(n) + 1};
  for (size_t k = 0; k < n; ++k) to_channels_first.push_back(int64_t(k) + 1);
  return call(g, "prims.transpose", {val(reshape(g, y, channels_last)), int_list(to_channels_first)});
}

}  // namespace

#define TG_FAMILY_ROWS convolution_op_rows
#define TG_FAMILY "convolution_ops"
#define TG_FAMILY_FILE "ops/convolution_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
