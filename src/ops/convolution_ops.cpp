// Patch convolutions' op-table rows, built from convolution_ops.def: the shape rule, which admits
// only the patch embedding, and the lowering to a matmul.
#include "ops/family.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

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

// A patch convolution (kernel == stride, no padding; convolution_rule above checks the
// rest): x [B, C, S1..Sn] is cut to whole patches, reshaped to [B, C, O1, K1, .., On, Kn],
// permuted to [B, O1..On, C, K1..Kn] and flattened to one row per patch, which multiplies the
// weight [F, C*K1*..*Kn] transposed; then + bias, and back to [B, F, O1..On]. Its gradient is
// the prims' (matmul, transpose, reshape, slice).
V lower_convolution(G& g, const Op& op) {
  V x = op.arg(0).value, w = op.arg("weight").value;  // x: conv1d/2d's input, prims.convolution's a
  const Shape in = shape_of(g, x), ws = shape_of(g, w), out = output_of(g, op).shape;
  const int64_t n = int64_t(in.size()) - 2;
  Shape whole = in, patches{in[0], in[1]};
  std::vector<int64_t> perm{0}, start(in.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    whole[size_t(k + 2)] = out[size_t(k + 2)] * ws[size_t(k + 2)];
    patches.push_back(out[size_t(k + 2)]);
    patches.push_back(ws[size_t(k + 2)]);
    perm.push_back(2 + 2 * k);  // the patch index along spatial dim k
  }
  perm.push_back(1);
  for (int64_t k = 0; k < n; ++k) perm.push_back(3 + 2 * k);  // the offset inside the patch
  if (whole != in) x = call(g, "prims.slice_prim", {val(x), int_list(start), int_list(whole)});
  V rows = call(g, "prims.transpose", {val(reshape(g, x, patches)), int_list(perm)});
  const int64_t patch_size = numel(ws) / ws[0];
  V y = matmul(g, reshape(g, rows, {numel(out) / ws[0], patch_size}),
               call(g, "prims.transpose", {val(reshape(g, w, {ws[0], patch_size})), int_list({1, 0})}));
  if (op.arg("bias").is_value()) y = add(g, val(y), val(broadcast(g, op.arg("bias").value, shape_of(g, y), {1})));
  Shape channels_last{out[0]};
  for (int64_t k = 0; k < n; ++k) channels_last.push_back(out[size_t(k + 2)]);
  channels_last.push_back(ws[0]);
  std::vector<int64_t> to_channels_first{0, n + 1};
  for (int64_t k = 0; k < n; ++k) to_channels_first.push_back(k + 1);
  return call(g, "prims.transpose", {val(reshape(g, y, channels_last)), int_list(to_channels_first)});
}

}  // namespace

#define TG_FAMILY_ROWS convolution_op_rows
#define TG_FAMILY "convolution_ops"
#define TG_FAMILY_FILE "ops/convolution_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
