// What Core ATen's decompositions took apart that thunder-gen computes better whole.
// run_decompositions() writes torch.nn.functional.linear(x [.., K], w [N, K], b) as
//   t = permute(w, [1, 0]);  x2 = view(x, [M, K]);  y2 = addmm(b, x2, t) (or mm(x2, t));  y = view(y2, [.., N])
// where the training IR keeps one aten.linear. The reshapes around the GEMM would keep the bias and
// the activation after it out of its epilogue, and the transposed weight's gradient would be
// transposed back by a kernel of its own. Recognised, it is the linear again: y2 takes y's shape,
// and y is y2. The view and the permute are left for dead-code elimination.
#include <optional>

#include "frontend/pt2_translator.h"

namespace tg::pt2 {
// An ATen target ("aten.view.default") or a node's ("torch.ops.aten.view.default") that reshapes.
bool is_reshape(std::string_view target) {
  if (target.rfind("torch.ops.", 0) == 0) target.remove_prefix(10);
  return target == "aten.view.default" || target == "aten._unsafe_view.default" || target == "aten.reshape.default";
}

bool feeds_patterns(std::string_view aten) { return is_reshape(aten) || aten == "aten.permute.default" || aten == "aten.t.default"; }

namespace {

bool is_one(const Doc& scalar) { return scalar.is_number() && scalar.get<double>() == 1.0; }

}  // namespace

bool Translator::fold_linear(const std::string& aten, const Doc& bound, const std::vector<std::string>& outs, const Path& at) {
  const bool addmm = aten == "aten.addmm.default";
  if ((!addmm && aten != "aten.mm.default") || outs.size() != 1) return false;
  if (addmm && (!is_one(bound.at("beta")) || !is_one(bound.at("alpha")))) return false;
  const Doc &mat1 = bound.at(addmm ? "mat1" : "self"), &mat2 = bound.at("mat2");
  if (!mat1.is_string() || !mat2.is_string()) return false;
  // The weight: mat2 is w [N, K] transposed.
  auto weight_of = producers_.find(mat2.get<std::string>());
  if (weight_of == producers_.end()) return false;
  const Producer& transpose = weight_of->second;
  const bool permuted = transpose.aten == "aten.permute.default" && transpose.bound.at("dims") == Doc({1, 0});
  if (!permuted && transpose.aten != "aten.t.default") return false;
  const Doc weight = transpose.bound.at("self");
  if (!weight.is_string() || meta(weight.get<std::string>(), at).shape.size() != 2) return false;
  // On 16-bit operands the linear's gradient launches more kernels than the GEMMs the decomposition
  // differentiates (llama_block_bf16: 68 against 62; docs/pt2.md): left as it is.
  if (meta(weight.get<std::string>(), at).dtype != DType::f32 && meta(weight.get<std::string>(), at).dtype != DType::f64) return false;
  const Shape w = meta(weight.get<std::string>(), at).shape;
  // The bias: addmm's input, one value per output feature.
  Doc bias = nullptr;
  if (addmm) {
    bias = bound.at("self");
    if (!bias.is_string() || meta(bias.get<std::string>(), at).shape != Shape{w[0]}) return false;
  }
  // The input: x itself (2-D), or the x [.., K] that mat1 flattens, when y2's one reader restores x's
  // leading dims.
  std::string x = mat1.get<std::string>();
  Shape y = meta(outs[0], at).shape;
  auto flattened = producers_.find(x);
  if (flattened != producers_.end() && is_reshape(flattened->second.aten) && flattened->second.bound.at("self").is_string()) {
    const std::string source = flattened->second.bound.at("self").get<std::string>();
    Shape restored = meta(source, at).shape;
    restored.back() = w[0];
    auto readers = consumers_.find(outs[0]);  // (its reshapes only: with one use, the one reader)
    const bool one_reshape_back = readers != consumers_.end() && readers->second.size() == 1 && uses_[outs[0]] == 1 &&
                                  !readers->second[0].out.empty() &&
                                  meta(readers->second[0].out, at).shape == restored;
    if (one_reshape_back && meta(source, at).shape.size() > 2) {
      x = source;
      y = restored;
    }
  }
  metas_.at(outs[0]).shape = y;
  if (y.size() > 2) reshaped_.insert(outs[0]);
  ops_.push_back({{"op", "torch.nn.functional.linear"}, {"kwargs", {{"a", x}, {"w", weight}, {"bias", bias}}}, {"out", {declaration(outs[0], at, false)}}});
  return true;
}

// The view restoring a folded linear's leading dims: the linear's result already has them.
bool Translator::fold_view(const std::string& aten, const Doc& bound, const std::vector<std::string>& outs, const Path& at) {
  if (!is_reshape(aten) || outs.size() != 1 || !bound.at("self").is_string()) return false;
  const std::string linear = bound.at("self").get<std::string>();
  if (!reshaped_.count(linear) || meta(linear, at).shape != meta(outs[0], at).shape) return false;
  alias_[outs[0]] = linear;
  return true;
}

}  // namespace tg::pt2
