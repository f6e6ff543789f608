// The ATen ops whose translation into trace ops is code rather than a binding (TG_ATEN_BY rows of
// aten_ops.def): slices, chunks, ranges, reductions with keepdim, logical ops. Internal to
// frontend/ (the PT2 reader).
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "frontend/pt2_program.h"
#include "ir/trace.h"

namespace tg {

struct Pt2Lowering {
  const nlohmann::json& args;            // the node's arguments by ATen parameter name, defaults filled
  const std::set<std::string>& literals;  // ... those it gives as integer literals (not SymInts)
  const std::map<std::string, nlohmann::json>& sized;  // ... those it gives as SymInts naming a symbol: {"size": expression}
  const std::vector<std::string>& outs;  // the node's outputs
  std::function<const Value&(const std::string&)> meta;  // a tensor's shape and dtype, by name
  std::string where;                                      // the node's JSON pointer, for errors
  std::map<std::string, std::string> aliases;             // set: outputs that are another value
  std::map<std::string, std::string> writes;              // set: a tensor the op updates in place -> its value after (running statistics)
};

// The trace ops (JSON) that compute the node `lowering` names.
std::vector<nlohmann::json> lower_aten(const std::string& lowering, Pt2Lowering& node);
// The TG_ATEN_BY names lower_aten knows, for checking aten_ops.def.
bool has_aten_lowering(const std::string& lowering);

}  // namespace tg
