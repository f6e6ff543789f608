#include "ops/symbolic_dims.h"

#include <algorithm>
#include <exception>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

// The values a symbol is probed at: its least and largest allowed size and one between.
std::vector<int64_t> probes(const SymbolDecl& s) {
  const int64_t m = s.multiple_of;
  const int64_t lo = (s.min + m - 1) / m * m, hi = s.max / m * m, mid = (lo / m + (hi - lo) / m / 2) * m;
  return {lo, hi, mid};
}

// Calls `f` with each combination of the symbols' probes (3^n of them, n capped at 6: past it
// each symbol takes its least, largest and middle size together with the others).
template <class F>
bool any_probe(const std::vector<const SymbolDecl*>& used, F f) {
  if (used.size() > 6) {
    for (size_t k = 0; k < 3; ++k) {
      SymbolValues at;
      for (const SymbolDecl* s : used) at[s->name] = probes(*s)[k];
      if (f(at)) return true;
    }
    return false;
  }
  size_t combinations = 1;
  for (size_t i = 0; i < used.size(); ++i) combinations *= 3;
  for (size_t c = 0; c < combinations; ++c) {
    SymbolValues at;
    size_t rest = c;
    for (const SymbolDecl* s : used) at[s->name] = probes(*s)[rest % 3], rest /= 3;
    if (f(at)) return true;
  }
  return false;
}

void adopt_rule_dims(Trace& t, const Op& op) {
  std::vector<OutType> expected;
  try {
    expected = op.info->rule(t, op);
  } catch (const RuleError&) {
    return;  // the verifier says why
  } catch (const std::exception&) {
    return;  // (a rule that cannot read the op's arguments: the verifier says why too)
  }
  if (expected.size() != op.outs.size()) return;
  for (size_t i = 0; i < expected.size(); ++i) {
    Value& v = t.value(op.outs[i]);
    if (v.is_scalar || v.shape.size() != expected[i].shape.size()) continue;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      Dim& declared = v.shape[d];
      const Dim& ruled = expected[i].shape[d];
      if (int64_t(declared) != int64_t(ruled) || !ruled.expr()) continue;
      if (!declared.expr()) {
        declared = ruled;
        continue;
      }
      if (*declared.expr() == *ruled.expr()) continue;
      if (const auto at = sizes_where_different(*declared.expr(), *ruled.expr(), t.symbols)) {
        std::string sizes;
        for (const auto& [name, size] : *at) sizes += (sizes.empty() ? "" : ",") + name + "=" + std::to_string(size);
        throw UserError(op.where + "/out/" + std::to_string(i),
                        std::string(op.info->id) + " gives dim " + std::to_string(d) + " of \"" + v.name + "\" as " + ruled.expr()->text() +
                            ", declared " + declared.expr()->text() + ": equal at the trace's sizes, not at " + sizes + " (" +
                            std::to_string(ruled.expr()->evaluate(*at)) + " and " + std::to_string(declared.expr()->evaluate(*at)) + ")");
      }
    }
  }
}

}  // namespace

std::optional<SymbolValues> sizes_where_different(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) {
  std::vector<const SymbolDecl*> used;
  std::vector<std::string> names = a.symbols();
  for (const std::string& n : b.symbols()) names.push_back(n);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& n : names) used.push_back(&symbols.at(n));
  std::optional<SymbolValues> found;
  any_probe(used, [&](const SymbolValues& at) {
    try {
      if (a.evaluate(at) != b.evaluate(at)) found = at;
    } catch (const SizeExprError&) {  // past int64 there: no answer from this point
    }
    return found.has_value();
  });
  return found;
}

void infer_dims(Trace& t) {
  if (t.symbols.empty()) return;
  for_each_nested_op(t.ops, [&](Op& op) {
    if (op.info) adopt_rule_dims(t, op);
  });
}

}  // namespace tg
