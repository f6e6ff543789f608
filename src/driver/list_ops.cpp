#include "driver/list_ops.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "frontend/aten_table.h"
#include "ops/op_listing.h"

namespace tg {

// The op table as src/ops/op_listing.h writes it: readable, or as JSON for the Python tools.
int list_ops_json() {
  std::cout << op_table_json();
  return 0;
}

int list_ops() {
  std::cout << op_table_text();
  return 0;
}

namespace {

// Each row of `target` as "cond: translation", joined.
std::string translations_of(const std::string& target) {
  std::string text;
  for (const AtenRow* row : aten_rows_for(target)) {
    const std::string conditions = row->conditions();
    text += (text.empty() ? "" : "; ") + (conditions.empty() ? "" : conditions + ": ") + aten_translation(*row);
  }
  return text;
}

}  // namespace

int list_aten_ops(bool as_json) {
  const AtenCoverage c = aten_coverage();
  size_t translated = 0;
  for (bool t : c.core_translated) translated += t;
  if (as_json) {
    nlohmann::ordered_json out = {{"core_aten_torch", c.torch_version}, {"core_translated", translated}, {"core_total", c.core.size()}};
    for (size_t i = 0; i < c.core.size(); ++i)
      out["core"].push_back({{"target", c.core[i]}, {"translation", c.core_translated[i] ? translations_of(c.core[i]) : ""}});
    for (const std::string& target : c.beyond) out["beyond_core"].push_back({{"target", target}, {"translation", translations_of(target)}});
    std::cout << out.dump(1) << "\n";
    return 0;
  }
  std::cout << "thunder-gen translates " << translated << " of the " << c.core.size() << " Core ATen overloads of torch " << c.torch_version
            << " (PT2 archives; docs/pt2.md)\n";
  for (size_t i = 0; i < c.core.size(); ++i)
    std::cout << "  " << c.core[i] << "  " << (c.core_translated[i] ? translations_of(c.core[i]) : "-- not translated") << "\n";
  std::cout << "and " << c.beyond.size() << " ops of the default (training) export beyond Core ATen:\n";
  for (const std::string& target : c.beyond) std::cout << "  " << target << "  " << translations_of(target) << "\n";
  return 0;
}

}  // namespace tg
