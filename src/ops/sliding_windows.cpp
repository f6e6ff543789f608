// Sliding windows: the per-dim arguments, output sizes and columns (im2col) that convolutions and
// pooling share.
#include "ops/sliding_windows.h"

#include <algorithm>
#include <string>

namespace tg {

using namespace op_rows;
using namespace vocabulary;

std::vector<int64_t> per_spatial_dim(const Op& op, size_t i, size_t n, const char* what) {
  const Arg& a = op.arg(i);
  if (a.kind == Arg::Kind::integer) return std::vector<int64_t>(n, a.integer);
  std::vector<int64_t> v = a.int_list();
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) fail(int(i), std::string(what) + " needs " + std::to_string(n) + " values, has " + shape_str(a.int_list()));
  return v;
}

void check_windows(const Windows& w, int stride_at, int padding_at, int dilation_at) {
  for (size_t k = 0; k < w.kernel.size(); ++k) {
    if (w.stride[k] < 1) fail(stride_at, "stride " + shape_str(w.stride) + " must be positive");
    if (w.padding[k] < 0) fail(padding_at, "padding " + shape_str(w.padding) + " must not be negative");
    if (w.dilation[k] < 1) fail(dilation_at, "dilation " + shape_str(w.dilation) + " must be positive");
  }
}

std::optional<int64_t> dilated_span(const Windows& w, size_t k) {
  int64_t span = 0;
  if (__builtin_mul_overflow(w.dilation[k], int64_t(w.kernel[k]) - 1, &span) || __builtin_add_overflow(span, 1, &span)) return std::nullopt;
  return span;
}

Dim windowed_dim(const Trace& t, const Dim& in, const Windows& w, size_t k, int input_at) {
  const std::optional<int64_t> spanned = dilated_span(w, k);
  const int64_t span = spanned.value_or(0);
  int64_t padded = 0;
  if (!spanned || __builtin_mul_overflow(w.padding[k], 2, &padded) || __builtin_add_overflow(padded, int64_t(in), &padded))
    fail(input_at, "the padded size or the dilated window of spatial dim " + std::to_string(k) + " overflows 64 bits");
  const bool short_ceil = w.ceil_mode && padded < span && span - padded < w.stride[k];  // one window, past the end
  if (int64_t(w.kernel[k]) < 1 || (padded < span && !short_ceil))
    fail(input_at, "spatial dim " + std::to_string(k) + " of size " + std::to_string(int64_t(in)) + " (padded by " + std::to_string(w.padding[k]) +
                       " on each side) is smaller than the window " + shape_str(w.kernel) + " (dilated)");
  if (w.ceil_mode) {
    if (in.symbolic()) fail(input_at, "ceil_mode=True over spatial dim " + std::to_string(k) + " (" + in.expr()->text() + "): a symbolic size is not supported there");
    const int64_t past = padded - span;  // (at least 1 - stride: short_ceil)
    int64_t out = past < 0 ? 1 : past / w.stride[k] + (past % w.stride[k] != 0) + 1, reach = 0;
    if (out > 1 && (out - 1) * w.stride[k] >= int64_t(in) + w.padding[k]) --out;
    if (__builtin_mul_overflow(out - 1, w.stride[k], &reach) || __builtin_add_overflow(reach, span, &reach))
      fail(input_at, "the last window of spatial dim " + std::to_string(k) + " (ceil_mode) reaches past 64 bits");
    return computed_from(in, out);
  }
  const Dim span_dim = spread_dim(w.kernel[k], Dim::constant(w.dilation[k]));
  const Dim past_span = subtract_dims(add_dims(in, Dim::constant(2 * w.padding[k])), span_dim);
  if (!past_span.expr()) return computed_from(in, (padded - span) / w.stride[k] + 1);
  if (!provably_ge(*past_span.expr(), 0, t.symbols))
    fail(input_at, "spatial dim " + std::to_string(k) + " (" + in.expr()->text() + ", padded by " + std::to_string(w.padding[k]) +
                       " on each side) may be shorter than the window's span of " + std::to_string(span) + " (dilation included), as where it is " +
                       std::to_string(range_of(*in.expr(), t.symbols).lo) + ": raise the symbols' min");
  return add_dims(floor_div_dim(past_span, w.stride[k], t.symbols), Dim::constant(1));
}

void set_overhang(Windows& w, const Shape& in, const Shape& out) {
  const size_t n = w.kernel.size();
  w.overhang.assign(n, 0);
  if (!w.ceil_mode) return;
  for (size_t k = 0; k < n; ++k) {
    const int64_t span = dilated_span(w, k).value();  // (windowed_dim checked it)
    const int64_t reach = (int64_t(out[out.size() - n + k]) - 1) * w.stride[k] + span;
    w.overhang[k] = std::max<int64_t>(0, reach - (int64_t(in[in.size() - n + k]) + 2 * w.padding[k]));
  }
}

void check_window_tensors(const Shape& in, const Windows& w, const Shape& out, int arg) {
  Windows sized = w;
  set_overhang(sized, in, out);
  const auto elements = [](std::vector<int64_t> sizes, int64_t& n) {
    n = 1;
    for (int64_t d : sizes)
      if (__builtin_mul_overflow(n, d, &n) || n > (int64_t(1) << 48)) return false;
    return true;
  };
  std::vector<int64_t> padded{in[0], in[1]}, columns{in[0], in[1], 1, 1};
  for (size_t k = 0; k < w.kernel.size(); ++k) {
    int64_t size = 0;
    if (__builtin_add_overflow(int64_t(in[k + 2]), 2 * w.padding[k], &size) || __builtin_add_overflow(size, sized.overhang[k], &size)) size = -1;
    padded.push_back(size);
    if (__builtin_mul_overflow(columns[2], int64_t(w.kernel[k]), &columns[2])) columns[2] = -1;
    if (__builtin_mul_overflow(columns[3], int64_t(out[k + 2]), &columns[3])) columns[3] = -1;
  }
  int64_t n = 0;
  const auto fits = [&](const std::vector<int64_t>& sizes) {
    return std::all_of(sizes.begin(), sizes.end(), [](int64_t d) { return d >= 0; }) && elements(sizes, n);
  };
  if (columns[2] < 0 || columns[2] > kMostWindowOffsets)
    fail(arg, "windows of " + shape_str(w.kernel) + " elements: more than the " + std::to_string(kMostWindowOffsets) +
                  " offsets the columns are cut for (one strided slice each)");
  if (!fits(padded)) fail(arg, "the padded input " + shape_str(padded) + " would have more than 2^48 elements");
  if (!fits(columns))
    fail(arg, "the windows' columns [batch, channels, window elements, positions] " + shape_str(columns) + " would have more than 2^48 elements");
}

namespace vocabulary {

Arg constants(const std::vector<int64_t>& v) {
  std::vector<Arg> items;
  for (int64_t x : v) items.push_back(Arg::of_dim(Dim::constant(x)));
  return Arg::of_list(std::move(items));
}

V window_columns(G& g, V x, const Windows& w, const Shape& out, double pad_value) {
  const Shape in = shape_of(g, x);
  const size_t n = in.size() - 2;
  const auto positive = [](int64_t p) { return p > 0; };
  if (std::any_of(w.padding.begin(), w.padding.end(), positive) || std::any_of(w.overhang.begin(), w.overhang.end(), positive)) {
    std::vector<Arg> config{constants({0, 0, 0}), constants({0, 0, 0})};
    for (size_t k = 0; k < n; ++k) config.push_back(constants({w.padding[k], w.padding[k] + (w.overhang.empty() ? 0 : w.overhang[k]), 0}));
    x = call(g, "prims.pad", {val(x), num(pad_value), Arg::of_list(config)});
  }
  const Shape padded = shape_of(g, x);
  const Dim positions = numel_dim(Shape(out.begin() + 2, out.end()));
  std::vector<Arg> offsets;
  std::vector<int64_t> at(n, 0);
  for (bool more = true; more;) {
    std::vector<int64_t> start(in.size(), 0), step(in.size(), 1);
    Shape end = padded;
    for (size_t k = 0; k < n; ++k) {
      start[k + 2] = at[k] * w.dilation[k];
      end[k + 2] = add_dims(Dim::constant(start[k + 2]), spread_dim(out[k + 2], Dim::constant(w.stride[k])));
      step[k + 2] = w.stride[k];
    }
    V slice = call(g, "prims.slice_prim", {val(x), constants(start), int_list(end), constants(step)});
    offsets.push_back(val(reshape(g, slice, {in[0], in[1], Dim::constant(1), positions})));
    more = false;  // the next offset, the last kernel dim fastest
    for (size_t k = n; k-- > 0 && !more;) {
      if (++at[k] < int64_t(w.kernel[k])) more = true;
      else at[k] = 0;
    }
  }
  return offsets.size() == 1 ? offsets[0].value : call(g, "prims.cat", {Arg::of_list(offsets), Arg::of_int(2)});
}

}  // namespace vocabulary
}  // namespace tg
