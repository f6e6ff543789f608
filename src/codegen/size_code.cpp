#include "codegen/size_code.h"

#include <algorithm>

#include "support/generated_text.h"

namespace tg {

std::string symbol_variable(const std::string& name) { return "tg_size_" + name; }

std::string SizeCode::of(const Dim& d) {
  if (!active_ || !d.symbolic()) return std::to_string(int64_t(d));
  auto [at, fresh] = of_interned_.try_emplace(d.expr());
  if (fresh) at->second = of(*d.expr());
  return at->second;
}

std::string SizeCode::of(const SizeExpr& e) {
  if (std::optional<int64_t> n = e.constant()) return std::to_string(*n);
  if (const std::string name = e.lone_symbol(); !name.empty()) return symbol_variable(name);
  if (auto at = index_of_.find(e); at != index_of_.end()) return named_[at->second].name;
  std::string code = code_for(e);  // (which may name the part it adds first)
  index_of_.emplace(e, named_.size());
  named_.push_back({e, "tg_size" + std::to_string(named_.size()), std::move(code)});
  return named_.back().name;
}

std::string SizeCode::count(const SizeExpr& e) {
  std::string code = of(e);
  if (std::find(counts_.begin(), counts_.end(), code) == counts_.end()) counts_.push_back(code);
  return code;
}

// The code computing a size about to be named: its expression, or where one of the sizes named
// just before it leaves fewer terms to add (each workspace offset is the one before it plus a
// buffer's bytes), that size plus the rest, the rest named too. The sum is exact: SizeArith adds in
// 128 bits, and an earlier size that overflowed refuses the call anyway.
std::string SizeCode::code_for(const SizeExpr& e) {
  constexpr size_t kEarlierTried = 2;
  std::optional<std::pair<size_t, SizeExpr>> best;
  for (size_t d = named_.size(); d-- > 0 && named_.size() - d <= kEarlierTried;) {
    try {
      SizeExpr rest = e - named_[d].expr;
      if (rest.term_count() < (best ? best->second.term_count() : e.term_count())) best.emplace(d, std::move(rest));
    } catch (const SizeExprError&) {  // (a coefficient of the difference past int64: not this one)
    }
  }
  if (!best) return e.code("tg_arith", symbol_variable);
  const std::string earlier = named_[best->first].name;
  return "tg_arith.add(" + earlier + ", " + of(best->second) + ")";
}

std::string SizeCode::declarations(const std::string& refusal) const {
  if (!active_) return "";
  std::string out = "  // This call's sizes (tg_sizes: what <trace>_bind_sizes wrote), and the sizes the code needs of them.\n";
  size_t k = 0;
  for (const auto& [name, decl] : symbols_.all())
    out += "  const int64_t " + symbol_variable(name) + " = tg_sizes[" + std::to_string(k++) + "];  // " + decl.range_text() + "\n";
  if (!named_.empty()) out += "  tg::SizeArith tg_arith;\n";
  for (const Named& size : named_)
    out += "  const int64_t " + size.name + " = int64_t(tg_arith.narrow(" + size.code + "));  // " + size.expr.text() + "\n";
  // Sizes outside the symbols' declarations are refused too: the kernels' index arithmetic was
  // simplified under their ranges, and a column kernel's rows rely on their multiples.
  std::string refused;
  for (const auto& [name, decl] : symbols_.all()) {
    const std::string v = symbol_variable(name);
    refused += (refused.empty() ? "" : " || ") + v + " < " + std::to_string(decl.min) + " || " + v + " > " + std::to_string(decl.max);
    if (decl.multiple_of > 1) refused += " || " + v + " % " + std::to_string(decl.multiple_of) + " != 0";
  }
  if (!named_.empty()) refused += " || tg_arith.overflowed()";
  for (const std::string& c : counts_) refused += (refused.empty() ? "" : " || ") + ("!tg::count_fits(" + c + ")");
  if (!refused.empty()) out += "  if (" + refused + ") return " + refusal + ";\n";
  return out;
}

}  // namespace tg
