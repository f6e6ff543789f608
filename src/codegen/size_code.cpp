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
  auto [at, fresh] = name_of_.try_emplace(e, "tg_size" + std::to_string(named_.size()));
  if (fresh) named_.emplace_back(e, at->second);
  return at->second;
}

std::string SizeCode::count(const SizeExpr& e) {
  std::string code = of(e);
  if (std::find(counts_.begin(), counts_.end(), code) == counts_.end()) counts_.push_back(code);
  return code;
}

std::string SizeCode::declarations(const std::string& refusal) const {
  if (!active_) return "";
  std::string out = "  // This call's sizes (tg_sizes: what <trace>_bind_sizes wrote), and the sizes the code needs of them.\n";
  size_t k = 0;
  for (const auto& [name, decl] : symbols_.all())
    out += "  const int64_t " + symbol_variable(name) + " = tg_sizes[" + std::to_string(k++) + "];  // " + decl.range_text() + "\n";
  if (!named_.empty()) out += "  tg::SizeArith tg_arith;\n";
  for (const auto& [e, name] : named_)
    out += "  const int64_t " + name + " = int64_t(tg_arith.narrow(" + e.code("tg_arith", symbol_variable) + "));  // " + e.text() + "\n";
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
