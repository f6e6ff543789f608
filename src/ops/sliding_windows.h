// Windows sliding over a tensor's spatial dims, what convolutions and pooling share
// (convolution_ops.cpp, pooling_ops.cpp): their per-dim arguments, the output size of a dim, and
// the columns (im2col) of every window, cut from the padded input by strided slices.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/family.h"

namespace tg {

// Per spatial dim: the window's size, its stride, the padding on each side and the dilation. With
// ceil_mode (pooling's), the last window may start in the input's last stride and reach past the
// padding: `overhang` more padding on the high side (set_overhang) holds it.
struct Windows {
  Shape kernel;
  std::vector<int64_t> stride, padding, dilation;
  bool ceil_mode = false;
  std::vector<int64_t> overhang = {};
};

// Argument `i` of `op` as one value per spatial dim (an int, or a list of one or `n`).
std::vector<int64_t> per_spatial_dim(const Op& op, size_t i, size_t n, const char* what);

// Checks each dim's stride and dilation positive and padding not negative (at arguments
// `stride_at`, `padding_at`, `dilation_at`: -1 where the op has none).
void check_windows(const Windows& w, int stride_at, int padding_at, int dilation_at);

// Spatial output dim k: (in + 2 padding - span) // stride + 1, span the dilated kernel's; with
// its expression where `in` has one (a symbolic dim must cover the span at every size). Checks
// that the padded dim covers the span, naming argument `input_at`. In ceil_mode, rounded up, less
// a last window that would start past the input and its low padding (PyTorch's rule); a symbolic
// dim is refused there.
Dim windowed_dim(const Trace& t, const Dim& in, const Windows& w, size_t k, int input_at);
// The elements window k spans, dilation * (kernel - 1) + 1; none past 64 bits.
std::optional<int64_t> dilated_span(const Windows& w, size_t k);
// Sets w.overhang from the spatial dims of the input and the output (zeros without ceil_mode).
void set_overhang(Windows& w, const Shape& in, const Shape& out);
// Checks that the tensors the windows are cut through, the padded input and the columns
// [B, C, K, P] (batched `in` and `out`), have at most the 2^48 elements a shape may have, and
// that a window has at most kMostWindowOffsets elements (the lowering cuts a slice for each); a
// failure names argument `arg`.
inline constexpr int64_t kMostWindowOffsets = 4096;
void check_window_tensors(const Shape& in, const Windows& w, const Shape& out, int arg);

namespace vocabulary {

// Integers a lowering fixes (offsets, steps, widths) as an argument: the same at every size.
Arg constants(const std::vector<int64_t>& v);

// The columns of every window of x [B, C, S1..Sn], padded by `pad_value` (and past its end by the
// overhang, with the same value) (im2col): for each
// kernel offset, row-major as a convolution's weight lays its kernel out, the strided, dilated
// slice of every output position, stacked to [B, C, K, P] (K kernel offsets, P output positions,
// `out` the output's shape [B, F, O1..On]). K times x's size.
V window_columns(G& g, V x, const Windows& w, const Shape& out, double pad_value);

}  // namespace vocabulary
}  // namespace tg
