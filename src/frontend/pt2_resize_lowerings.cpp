// The PT2 reader's translations of resizing: nearest-neighbour upsampling by whole factors, as a
// repetition of each element.
#include <algorithm>
#include <cmath>

#include "frontend/pt2_lowering_builder.h"

namespace tg::pt2_lowering {
namespace {

// PyTorch's source index of output element `dst` along a dim upsampled from `in` to `out`
// elements by nearest neighbour (ATen's nearest_idx): `dst` at the same size, dst >> 1 at twice
// it, else floor(dst * scale) in float, scale 1 / the given factor (or in / out), at most in - 1.
int64_t nearest_source(int64_t dst, int64_t in, int64_t out, double factor) {
  if (out == in) return dst;
  if (out == 2 * in) return dst >> 1;
  const float scale = factor > 0 ? float(1.0 / factor) : float(in) / float(out);
  return std::min(int64_t(std::floor(float(dst) * scale)), in - 1);
}

// Past 2^24 output elements a float no longer holds every index, and checking each would take
// long: such dims are refused (but at the same size, or twice it, which ATen computes exactly).
constexpr int64_t kMostCheckedElements = int64_t(1) << 24;

// How many copies of each element a dim of `in` elements upsampled to `out` makes: out / in where
// PyTorch's source index of every output element is dst / (out / in), else 0. A symbolic dim: 2
// where out is 2 * in (PyTorch's dst >> 1 at every size), 1 where they are the same, else 0.
int64_t whole_factor(const Dim& in, const Dim& out, double factor) {
  if (in.symbolic() || out.symbolic()) {
    if (!in.expr() || !out.expr()) return 0;
    if (*out.expr() == *in.expr()) return 1;
    const Dim twice = multiply_dims(in, Dim::constant(2));
    return twice.expr() && *twice.expr() == *out.expr() ? 2 : 0;
  }
  if (int64_t(in) <= 0) return 0;
  if (int64_t(out) == int64_t(in) || int64_t(out) == 2 * int64_t(in)) return int64_t(out) / int64_t(in);  // (checked at any size)
  if (int64_t(out) > kMostCheckedElements || int64_t(out) % int64_t(in) != 0) return 0;
  const int64_t copies = int64_t(out) / int64_t(in);
  for (int64_t dst = 0; dst < int64_t(out); ++dst)
    if (nearest_source(dst, in, out, factor) != dst / copies) return 0;
  return copies;
}

}  // namespace

// upsample_nearest1d/2d/3d.vec(input, output_size, scale_factors): each spatial dim repeated by a
// whole factor ([.., S, ..] -> [.., S, f, ..] broadcast -> [.., S*f, ..]), which gives PyTorch's
// nearest source index wherever whole_factor says so; the gradient sums the copies (the
// broadcast's). A factor that is not whole, or whose float scale would round an index down, is
// refused naming the dim.
std::vector<Doc> upsample_nearest(Pt2Lowering& node) {
  Builder b(node);
  const Value& in = b.input("input");
  const Shape& out = node.meta(node.outs.at(0)).shape;
  if (in.shape.size() < 3 || out.size() != in.shape.size()) b.refuse("upsampling needs a [N, C, spatial...] input");
  const size_t n = in.shape.size() - 2;
  std::vector<double> factors(n, 0.0);
  if (const Doc& given = node.args.at("scale_factors"); !given.is_null()) {
    if (!given.is_array() || given.size() != n) b.refuse("scale_factors must list " + std::to_string(n) + " numbers, not " + given.dump());
    for (size_t k = 0; k < n; ++k) {
      if (!given[k].is_number()) b.refuse("scale_factors must list numbers, not " + given.dump());
      factors[k] = given[k].get<double>();
    }
  }
  Shape single{in.shape[0], in.shape[1]}, copied{in.shape[0], in.shape[1]};  // [N, C, S1, 1, ..] and [N, C, S1, f1, ..]
  const auto text = [](const Dim& d) { return d.expr() ? d.expr()->text() : std::to_string(int64_t(d)); };
  for (size_t k = 0; k < n; ++k) {
    const Dim &from = in.shape[k + 2], &to = out[k + 2];
    const int64_t copies = whole_factor(from, to, factors[k]);
    if (copies == 0)
      b.refuse("nearest upsampling of spatial dim " + std::to_string(k) + " from " + text(from) + " to " + text(to) +
               " elements: only whole factors whose every source index PyTorch computes as dst / factor are supported, up to " +
               std::to_string(kMostCheckedElements) + " elements");
    single.insert(single.end(), {from, Dim::constant(1)});
    copied.insert(copied.end(), {from, Dim::constant(copies)});
  }
  const std::string spread = b.op("torch.reshape", {{"a", b.tensor("input")}, {"shape", size_list_json(single)}}, single, in.dtype);
  std::vector<int64_t> kept(single.size());
  for (size_t d = 0; d < kept.size(); ++d) kept[d] = int64_t(d);
  const std::string repeated = b.op("prims.broadcast_in_dim", {{"a", spread}, {"shape", size_list_json(copied)}, {"broadcast_dimensions", kept}}, copied, in.dtype);
  b.output(0, "torch.reshape", {{"a", repeated}, {"shape", size_list_json(out)}});
  return b.take();
}

}  // namespace tg::pt2_lowering
