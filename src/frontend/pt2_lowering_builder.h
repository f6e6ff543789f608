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
  std::vector<Doc> take() { return std::move(ops_); }

  const Value& input(const char* param) const { return node_.meta(node_.args.at(param).get<std::string>()); }
  int64_t integer(const char* param) const { return node_.args.at(param).get<int64_t>(); }
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

  static Doc declaration(const std::string& name, const Shape& shape, DType dtype) {
    return {{"name", name}, {"shape", symbolic_shape_json(shape)}, {"dtype", std::string(dtype_name(dtype))}};
  }
};

inline Doc dtype_literal(DType t) { return {{"dtype", std::string(dtype_name(t))}}; }

// group_norm and native_group_norm; batch_norm and the _native_batch_norm_legit forms
// (pt2_norm_lowerings.cpp).
std::vector<Doc> group_norm(Pt2Lowering& node);
std::vector<Doc> batch_norm(Pt2Lowering& node);

}  // namespace tg::pt2_lowering
