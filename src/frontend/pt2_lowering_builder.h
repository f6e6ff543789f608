// The builder the PT2 reader's lowerings (TG_ATEN_BY rows) make their trace ops with, and the
// lowerings of pt2_norm_lowerings.cpp (internal to frontend/).
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "frontend/pt2_lowerings.h"
#include "support/diagnostics.h"

namespace tg::pt2_lowering {

using Doc = nlohmann::json;

// Builds a node's trace ops: temporaries are named after its first output ("<out>__1", ...).
class Builder {
 public:
  explicit Builder(Pt2Lowering& node) : node_(node) {}

  // One op; its output is `out` (a node output) or a new temporary of `shape` and `dtype`.
  std::string op(const std::string& symbol, Doc kwargs, const Shape& shape, DType dtype, std::string out = "") {
    if (out.empty()) out = node_.outs.at(0) + "__" + std::to_string(++temporaries_);
    ops_.push_back({{"op", symbol}, {"kwargs", std::move(kwargs)}, {"out", Doc::array({declaration(out, shape, dtype)})}});
    return out;
  }
  // The op computing output `i` as the node declares it.
  std::string output(size_t i, const std::string& symbol, Doc kwargs) {
    const Value& v = node_.meta(node_.outs.at(i));
    return op(symbol, std::move(kwargs), v.shape, v.dtype, node_.outs.at(i));
  }
  // Output `i` computed by `symbol` into `shape` and `dtype`, then reshaped to the node's output
  // where that is declared otherwise (a reduction's keepdim, a flattened argmax).
  std::string output_reshaped(size_t i, const std::string& symbol, Doc kwargs, const Shape& shape, DType dtype) {
    const Value& v = node_.meta(node_.outs.at(i));
    if (v.shape == shape && v.dtype == dtype) return output(i, symbol, std::move(kwargs));
    const std::string made = op(symbol, std::move(kwargs), shape, dtype);
    return output(i, "torch.reshape", {{"a", made}, {"shape", size_list_json(v.shape)}});
  }
  std::vector<Doc> take() { return std::move(ops_); }

  // The node's arguments as the schema types them; an archive giving another JSON value (a hostile
  // one: a float for an int, a string for a number) is refused, naming the argument.
  const std::string& tensor(const char* param) const { return typed(param, "a tensor", &Doc::is_string).get_ref<const std::string&>(); }
  const Value& input(const char* param) const { return node_.meta(tensor(param)); }
  int64_t integer(const char* param) const { return typed(param, "an integer", &Doc::is_number_integer).get<int64_t>(); }
  double number(const char* param) const { return typed(param, "a number", &Doc::is_number).get<double>(); }
  bool flag(const char* param) const { return typed(param, "true or false", &Doc::is_boolean).get<bool>(); }
  std::vector<int64_t> integers(const char* param) const {
    const Doc& v = typed(param, "a list of integers", &Doc::is_array);
    for (const Doc& item : v)
      if (!item.is_number_integer()) refuse(std::string("argument ") + param + " must be a list of integers, not " + v.dump());
    return v.get<std::vector<int64_t>>();
  }
  int64_t dim(const char* param) const {
    const int64_t rank = int64_t(input("self").shape.size()), d = integer(param);
    if (d < -std::max<int64_t>(rank, 1) || d >= std::max<int64_t>(rank, 1))
      throw UserError(node_.where, "dim " + std::to_string(d) + " is out of range for a rank-" + std::to_string(rank) + " tensor");
    return d < 0 ? d + rank : d;
  }
  [[noreturn]] void refuse(const std::string& message) const { throw UserError(node_.where, message); }

 private:
  Pt2Lowering& node_;
  std::vector<Doc> ops_;
  int temporaries_ = 0;

  const Doc& typed(const char* param, const char* what, bool (Doc::*is)() const noexcept) const {
    const Doc& v = node_.args.at(param);
    if (!(v.*is)()) refuse(std::string("argument ") + param + " must be " + what + ", not " + v.dump());
    return v;
  }
  static Doc declaration(const std::string& name, const Shape& shape, DType dtype) {
    return {{"name", name}, {"shape", symbolic_shape_json(shape)}, {"dtype", std::string(dtype_name(dtype))}};
  }
};

inline Doc dtype_literal(DType t) { return {{"dtype", std::string(dtype_name(t))}}; }

// group_norm and native_group_norm; batch_norm and the _native_batch_norm_legit forms
// (pt2_norm_lowerings.cpp).
std::vector<Doc> group_norm(Pt2Lowering& node);
std::vector<Doc> batch_norm(Pt2Lowering& node);
// upsample_nearest1d/2d/3d.vec (pt2_resize_lowerings.cpp).
std::vector<Doc> upsample_nearest(Pt2Lowering& node);

}  // namespace tg::pt2_lowering
