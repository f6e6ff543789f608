// The ATen ops the PT2 reader maps (aten_ops.def), parsed once: each row's schema (parameter names,
// which are keyword-only, their defaults) and its binding onto a trace op. Arguments and literals
// are held as trace-format JSON (docs/trace-format.md): a value by its name, {"str": ...},
// {"dtype": ...}, numbers, lists, null.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tg {

struct AtenParam {
  std::string type;  // as the schema spells it: "Tensor?", "SymInt[]", "Scalar"
  std::string name;
  bool keyword_only = false;
  std::optional<nlohmann::json> default_value;  // absent: the archive always writes it
};

// One item of a row's binding.
struct AtenBinding {
  enum class Kind { assign, condition, ignore, outputs };
  Kind kind = Kind::assign;
  std::string ours;   // assign: the trace op's parameter
  std::string param;  // assign: the ATen parameter it takes ("" for a literal or $-value); condition, ignore
  std::string special;  // assign: "$shape", "$dtype", "$device", "$expand_dims"
  nlohmann::json literal;  // assign (when param and special are empty), condition
  int outputs = 0;         // outputs
};

struct AtenRow {
  std::string target;  // "aten.linear.default"
  std::vector<AtenParam> params;
  std::string symbol;    // a trace op; "=" the value of its first argument; "" nothing
  std::string lowering;  // TG_ATEN_BY rows: the translation's name (pt2_lowerings.cpp)
  std::vector<AtenBinding> binding;
  int outputs = -1;  // how many of the node's outputs are computed; -1 all

  const AtenParam* param(std::string_view name) const;
  bool applies(const nlohmann::json& bound_args) const;  // its conditions hold
  std::string conditions() const;                        // "half_to_float==False", for messages
};

// Every row, in declaration order (rows of one target are adjacent).
const std::vector<AtenRow>& aten_rows();
// The rows declared for `target` ("aten.add.Tensor"); empty when none.
std::vector<const AtenRow*> aten_rows_for(std::string_view target);
// Whether two trace-format arguments are the same literal (1 and 1.0 are).
bool same_literal(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace tg

namespace tg {

// The Core ATen opset snapshot (core_aten_ops.def) against what aten_ops.def translates.
struct AtenCoverage {
  std::string torch_version;           // the torch the snapshot was taken from
  std::vector<std::string> core;       // every Core ATen overload, sorted
  std::vector<bool> core_translated;   // per core overload
  std::vector<std::string> beyond;     // translated targets outside Core ATen (the training IR's)
};
AtenCoverage aten_coverage();
// "torch.nn.functional.linear", or "(code: slice)" for a TG_ATEN_BY row, "(its input)" for "=".
std::string aten_translation(const AtenRow& row);

}  // namespace tg
