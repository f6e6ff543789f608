// Sizes in the host code of a folder that takes them at run time (docs/symbolic-shapes.md): each
// symbol read from the `sizes` array the folder's <trace>_bind_sizes writes, in its order, and each
// size that depends on them computed once at the top of the function that needs it, with
// tg::SizeArith (tg_sizes.h: an overflow is a refusal, never a wrapped size). A size that does not
// depend on them stays a number, as in every other folder.
#pragma once
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tg {

class SizeCode {
 public:
  // `symbols`: the trace's, in the binder's order (by name); `active`: the code takes its sizes at
  // run time (else every size is its number).
  SizeCode(const Symbols& symbols, bool active) : symbols_(symbols), active_(active) {}
  bool active() const { return active_; }
  // A size as code: its number, or the variable holding it.
  std::string of(const Dim& d);
  std::string of(const SizeExpr& e);
  std::string of(int64_t n) { return std::to_string(n); }
  // ... a kernel's count (elements, rows), which the declarations also refuse past
  // 2^46 (tg::count_fits): the bound the kernel's index arithmetic was simplified under.
  std::string count(const SizeExpr& e);
  // The lines (indented by two) declaring what of() named, ending in the refusal of a size
  // outside its symbol's declaration, an overflow or a count past its bound: `return <refusal>;`.
  std::string declarations(const std::string& refusal) const;

 private:
  std::string code_for(const SizeExpr& e);
  const Symbols& symbols_;
  bool active_;
  struct Named {
    SizeExpr expr;
    std::string name;
    std::string code;  // (tg::SizeArith calls over the symbols and sizes named before it)
  };
  std::vector<Named> named_;             // in the order named
  std::map<SizeExpr, size_t> index_of_;  // ... found by expression
  std::unordered_map<const SizeExpr*, std::string> of_interned_;  // of() a Dim's interned expression, remembered
  std::vector<std::string> counts_;  // the variables of those that are counts
};

// The variable holding a symbol's size in generated host code: tg_size_<name> (no parameter starts with tg_).
std::string symbol_variable(const std::string& name);

}  // namespace tg
