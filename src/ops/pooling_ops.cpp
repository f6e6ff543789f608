// Pooling's op-table rows, built from pooling_ops.def: the shape rules and the lowerings, to the
// windows' columns (sliding_windows.h) and their first maximum or their mean.
#include <algorithm>
#include <limits>

#include "ops/sliding_windows.h"

namespace tg {
namespace {

using namespace op_rows;
using namespace vocabulary;

bool is_max_pool(const Op& op) {
  const OpKind k = op.info->kind;
  return k == OpKind::t_max_pool1d || k == OpKind::t_max_pool2d || k == OpKind::t_max_pool3d;
}

// The spatial dims an op pools: the digit of its id (max_pool2d: 2).
size_t spatial_dims(const Op& op) { return size_t(op.info->id[op.info->id.size() - 2] - '0'); }

// The input as [B, C, S1..Sn]: an unbatched one ([C, S1..Sn], as PyTorch accepts) gets a batch of 1.
Shape batched(const Shape& in, size_t n) {
  if (in.size() == n + 2) return in;
  Shape b{Dim::constant(1)};
  b.insert(b.end(), in.begin(), in.end());
  return b;
}

// The input: a float tensor of n spatial dims, batched or not, none of them empty.
const Value& pooled_input(const Trace& t, const Op& op, size_t n) {
  const Value& in = float_tensor(t, op, 0);
  if (in.shape.size() != n + 1 && in.shape.size() != n + 2)
    fail(0, "needs " + std::to_string(n + 1) + " or " + std::to_string(n + 2) + " dims ([batch,] channels, " + std::to_string(n) +
                " spatial), has shape " + shape_str(in.shape));
  if (numel(in.shape) == 0) fail(0, "shape " + shape_str(in.shape) + " is empty: pooling an empty tensor is not supported");
  return in;
}

// max_pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
// return_indices=False) and avg_pool(input, kernel_size, stride=None, padding=0, ceil_mode=False,
// count_include_pad=True[, divisor_override=None]): the windows, checked as PyTorch checks them
// (padding at most half the window), and return_indices refused.
Windows pooling_windows(const Op& op, size_t n) {
  const bool max = is_max_pool(op);
  const std::vector<int64_t> kernel = per_spatial_dim(op, 1, n, "kernel_size");
  Windows w{Shape(kernel.begin(), kernel.end()), op.arg(2).kind == Arg::Kind::none ? kernel : per_spatial_dim(op, 2, n, "stride"),
            per_spatial_dim(op, 3, n, "padding"), max ? per_spatial_dim(op, 4, n, "dilation") : std::vector<int64_t>(n, 1)};
  for (int64_t k : kernel)
    if (k < 1) fail(1, "kernel_size " + shape_str(kernel) + " must be positive");
  check_windows(w, 2, 3, max ? 4 : -1);
  // ATen checks max_pool2d's padding against the dilated window, the others' against the window.
  const bool dilated_half = op.info->kind == OpKind::t_max_pool2d;
  for (size_t k = 0; k < n; ++k) {
    const std::optional<int64_t> span = dilated_span(w, k);
    if (!span) fail(1, "the dilated window " + shape_str(kernel) + " of spatial dim " + std::to_string(k) + " overflows 64 bits");
    if (w.padding[k] > (dilated_half ? *span : kernel[k]) / 2)
      fail(3, "padding " + shape_str(w.padding) + " must be at most half the window " + shape_str(kernel) + (dilated_half ? " (dilated)" : "") +
                  ", as PyTorch requires");
  }
  w.ceil_mode = op.arg(max ? 5 : 4).boolean;
  if (max && op.arg(6).boolean) fail(6, "return_indices=True is not supported: the positions of the maxima");
  if (!max && op.info->params.size() > 6 && op.arg(6).kind == Arg::Kind::integer && op.arg(6).integer == 0)
    fail(6, "divisor_override must not be 0");
  return w;
}

std::vector<OutType> pooling_rule(const Trace& t, const Op& op) {
  const size_t n = spatial_dims(op);
  const Value& in = pooled_input(t, op, n);
  const Windows w = pooling_windows(op, n);
  Shape out(in.shape.begin(), in.shape.end() - std::ptrdiff_t(n));
  for (size_t k = 0; k < n; ++k) {
    const Dim& size = in.shape[in.shape.size() - n + k];
    if (op.info->kind == OpKind::t_avg_pool3d && int64_t(size) < int64_t(w.kernel[k]))
      fail(0, "spatial dim " + std::to_string(k) + " of size " + std::to_string(int64_t(size)) + " is smaller than the window " + shape_str(w.kernel) +
                  ", which PyTorch's avg_pool3d refuses");
    out.push_back(windowed_dim(t, size, w, k, 0));
  }
  check_window_tensors(batched(in.shape, n), w, batched(out, n), 0);
  return {{in.dtype, out}};
}

// The pooled output [B, C, P] (P the output positions, flattened) as the op's output.
V as_output(G& g, const Op& op, V pooled) { return reshape(g, pooled, output_of(g, op).shape); }

V lower_max_pool(G& g, const Op& op) {
  const size_t n = spatial_dims(op);
  V x = op.arg(0).value;
  x = reshape(g, x, batched(shape_of(g, x), n));
  const Shape out = batched(output_of(g, op).shape, n);
  Windows w = pooling_windows(op, n);
  set_overhang(w, shape_of(g, x), out);
  V columns = window_columns(g, x, w, out, -std::numeric_limits<double>::infinity());
  return as_output(g, op, first_extremum(g, columns, 2, true).values);
}

// How many of a window's elements avg_pool divides by at each output position: divisor_override,
// the window's size, or, where windows differ, [B, C, P] of the elements each covers inside the
// input (count_include_pad=False) or inside the padded input (ceil_mode's overhang is never
// counted), by pooling a tensor of ones padded with zeros.
Arg avg_pool_divisor(G& g, const Op& op, const Windows& w, const Shape& x, const Shape& out, DType dt) {
  if (op.info->params.size() > 6 && op.arg(6).kind == Arg::Kind::integer) return num(double(op.arg(6).integer));
  const auto positive = [](int64_t p) { return p > 0; };
  const bool padded = std::any_of(w.padding.begin(), w.padding.end(), positive);
  const bool count_padding = op.arg(5).boolean;
  if (!std::any_of(w.overhang.begin(), w.overhang.end(), positive) && (count_padding || !padded)) return num(double(numel(w.kernel)));
  Shape counted = x;  // one plane of the elements counted: the input's, or the padded input's
  counted[0] = counted[1] = Dim::constant(1);
  Windows counting = w;
  if (count_padding) {
    for (size_t k = 0; k < w.padding.size(); ++k) counted[k + 2] = add_dims(counted[k + 2], Dim::constant(2 * w.padding[k]));
    counting.padding.assign(w.padding.size(), 0);
  }
  Shape one_out = out;
  one_out[0] = one_out[1] = Dim::constant(1);
  V inside = sum(g, window_columns(g, full(g, counted, 1.0, dt), counting, one_out, 0.0), {2});
  return val(broadcast(g, inside, {out[0], out[1], shape_of(g, inside)[2]}, {0, 1, 2}));
}

V lower_avg_pool(G& g, const Op& op) {
  const size_t n = spatial_dims(op);
  const Upcast x = up(g, op.arg(0).value);
  const Shape in = batched(shape_of(g, x.value), n), out = batched(output_of(g, op).shape, n);
  Windows w = pooling_windows(op, n);
  set_overhang(w, in, out);
  V columns = window_columns(g, reshape(g, x.value, in), w, out, 0.0);
  V mean = div(g, val(sum(g, columns, {2})), avg_pool_divisor(g, op, w, in, out, value_of(g, columns).dtype));
  return as_output(g, op, downcast(g, mean, x.original));
}

// adaptive_avg_pool(input, output_size): per spatial dim, the output's size, 1 (the mean over
// the dim) or one dividing the input's (windows of in / out elements, no overlap).
std::vector<int64_t> adaptive_sizes(const Trace& t, const Op& op, const Shape& in, size_t n) {
  const std::vector<int64_t> sizes = per_spatial_dim(op, 1, n, "output_size");
  for (size_t k = 0; k < n; ++k) {
    const Dim& d = in[in.size() - n + k];
    if (sizes[k] < 1) fail(1, "output_size " + shape_str(sizes) + " must be positive");
    if (sizes[k] == 1) continue;
    if (d.symbolic() ? !provably_divisible(*d.expr(), sizes[k], t.symbols) : int64_t(d) % sizes[k] != 0)
      fail(1, "output_size " + shape_str(sizes) + ": spatial dim " + std::to_string(k) + " of size " + (d.symbolic() ? d.expr()->text() : std::to_string(int64_t(d))) +
                  " is not a multiple of " + std::to_string(sizes[k]) + (d.symbolic() ? " at every size its symbols allow" : "") +
                  " (windows of unequal widths are not supported)");
  }
  return sizes;
}

std::vector<OutType> adaptive_pooling_rule(const Trace& t, const Op& op) {
  const size_t n = spatial_dims(op);
  const Value& in = pooled_input(t, op, n);
  const std::vector<int64_t> sizes = adaptive_sizes(t, op, in.shape, n);
  Shape out(in.shape.begin(), in.shape.end() - std::ptrdiff_t(n));
  for (int64_t s : sizes) out.push_back(Dim::constant(s));
  return {{in.dtype, out}};
}

// Each spatial dim S pooled to O splits into [O, S / O] and the window dims are summed: a
// reshape and one reduction, in f32 for 16-bit floats.
V lower_adaptive_avg_pool(G& g, const Op& op) {
  const size_t n = spatial_dims(op);
  const Upcast x = up(g, op.arg(0).value);
  const Shape in = shape_of(g, x.value);
  const std::vector<int64_t> sizes = adaptive_sizes(g.trace(), op, in, n);
  const size_t lead = in.size() - n;
  Shape split(in.begin(), in.begin() + std::ptrdiff_t(lead));
  std::vector<int64_t> window_dims;
  Dim window_size = Dim::constant(1);
  for (size_t k = 0; k < n; ++k) {
    const Dim& d = in[lead + k];
    const Dim width = sizes[k] == 1 ? d : floor_div_dim(d, sizes[k], g.trace().symbols);
    split.push_back(Dim::constant(sizes[k]));
    window_dims.push_back(int64_t(split.size()));
    split.push_back(width);
    window_size = multiply_dims(window_size, width);
  }
  V sums = sum(g, reshape(g, x.value, split), window_dims);
  Arg divisor = window_size.symbolic() ? val(full(g, shape_of(g, sums), count(window_size), value_of(g, sums).dtype)) : num(double(window_size));
  V mean = div(g, val(sums), divisor);
  return as_output(g, op, downcast(g, mean, x.original));
}

}  // namespace

#define TG_FAMILY_ROWS pooling_op_rows
#define TG_FAMILY "pooling_ops"
#define TG_FAMILY_FILE "ops/pooling_ops.def"
#include "ops/family_rows.inc"

}  // namespace tg
