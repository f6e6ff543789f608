// A dynamic-shape export's sizes (docs/symbolic-shapes.md): the program's symbols from
// `range_constraints`, the SymInts of its graph (`sym_int_values`, sizes written as
// `sympy.srepr` text), each evaluated at the size its symbols are specialised to. Internal to
// frontend/ (the PT2 reader).
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "frontend/json_element.h"
#include "ir/size_expr.h"

namespace tg::pt2 {

using ::tg::json::Json;
using ::tg::json::Object;
using ::tg::json::Path;

// `Symbol('s0', integer=True, positive=True)`, `Integer(2)`, `Add`, `Mul`, `Pow` (to a
// non-negative integer power), `FloorDiv`, `Mod`, `Max`, `Min` as a size expression over
// `symbols`; anything else refused by name.
SizeExpr sympy_size(std::string_view srepr, const Symbols& symbols);

class SymIntSizes {
 public:
  SymIntSizes() = default;  // a static program: every SymInt an integer
  // The program's symbols (`range_constraints` of `root`), its graph's named SymInts, and the
  // size of every symbol (checked against its range: a missing one is an error at its constraint).
  SymIntSizes(Object root, const Path& root_at, Object graph, const Path& graph_at, const SymbolValues& at);

  // Adds a nested graph's named SymInts (a region's body); a name it shares with another graph
  // must be the same size there.
  void add_graph(Object graph, const Path& graph_at);
  // A SymInt (`as_int`, `as_expr`, or an Argument's `as_name` of a graph SymInt) at the sizes given.
  int64_t size(Json symint, const Path& where) const;
  // The SymInt a node names (an `as_name`): its size.
  int64_t named(std::string_view name, const Path& where) const;
  const Symbols& symbols() const { return symbols_; }
  const SymbolValues& values() const { return at_; }

 private:
  Symbols symbols_;
  std::map<std::string, SizeExpr, std::less<>> named_;
  SymbolValues at_;

  int64_t evaluate(const SizeExpr& e, const Path& where) const;
};

}  // namespace tg::pt2
