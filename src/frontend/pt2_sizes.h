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
// The names thunder_gen.export gave torch's symbols, from the names the user gave `Dim` (the
// archive's extra/thunder_gen_symbols.json: {"s17": "batch"}); a symbol not named keeps its own.
struct SymbolNames {
  std::map<std::string, std::string, std::less<>> by_symbol;
  std::string file;  // "model.pt2:model/extra/thunder_gen_symbols.json", for errors
  std::string name_of(std::string_view symbol) const;
};
// Reads that entry's text: an object of symbol -> name, each name an identifier used once.
SymbolNames read_symbol_names(const std::string& text, const std::string& file);

SizeExpr sympy_size(std::string_view srepr, const Symbols& symbols, const SymbolNames& names = {});

class SymIntSizes {
 public:
  SymIntSizes() = default;  // a static program: every SymInt an integer
  // The program's symbols (`range_constraints` of `root`), its graph's named SymInts, and the
  // size of every symbol (checked against its range: a missing one is an error at its constraint).
  // Symbols are named as `names` says.
  SymIntSizes(Object root, const Path& root_at, Object graph, const Path& graph_at, const SymbolValues& at, const SymbolNames& names = {});

  // Adds a nested graph's named SymInts (a region's body); a name it shares with another graph
  // must be the same size there.
  void add_graph(Object graph, const Path& graph_at);
  // A SymInt (`as_int`, `as_expr`, or an Argument's `as_name` of a graph SymInt) at the sizes given.
  int64_t size(Json symint, const Path& where) const;
  // ... as an expression over the symbols, not evaluated.
  SizeExpr expression(Json symint, const Path& where) const;
  // The SymInt a node names (an `as_name`): its size.
  int64_t named(std::string_view name, const Path& where) const;
  const Symbols& symbols() const { return symbols_; }
  const SymbolValues& values() const { return at_; }

 private:
  Symbols symbols_;
  SymbolNames names_;
  std::map<std::string, SizeExpr, std::less<>> named_;
  SymbolValues at_;

  int64_t evaluate(const SizeExpr& e, const Path& where) const;
};

}  // namespace tg::pt2
