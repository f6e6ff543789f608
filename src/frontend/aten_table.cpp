#include "frontend/aten_table.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "support/diagnostics.h"

namespace tg {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Splits at commas outside brackets and quotes.
std::vector<std::string_view> split_items(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      if (std::string_view item = trim(text.substr(start, i - start)); !item.empty()) items.push_back(item);
      start = i + 1;
    }
  }
  return items;
}

// A literal as the schemas and bindings spell it, as trace-format JSON.
json parse_literal(std::string_view text, std::string_view row) {
  text = trim(text);
  TG_CHECK(!text.empty(), "aten_ops.def: an empty literal in " + std::string(row));
  if (text == "None") return nullptr;
  if (text == "True") return true;
  if (text == "False") return false;
  if (text.front() == '\'' || text.front() == '"') return json{{"str", std::string(text.substr(1, text.size() - 2))}};
  if (text.front() == '[') {
    json list = json::array();
    for (std::string_view item : split_items(text.substr(1, text.size() - 2))) list.push_back(parse_literal(item, row));
    return list;
  }
  const std::string digits(text);
  char* end = nullptr;
  const long long integer = std::strtoll(digits.c_str(), &end, 10);
  if (*end == '\0') return integer;
  const double real = std::strtod(digits.c_str(), &end);
  TG_CHECK(*end == '\0', "aten_ops.def: \"" + digits + "\" is not a literal (" + std::string(row) + ")");
  return real;
}

std::vector<AtenParam> parse_schema(std::string_view schema, std::string_view row) {
  std::vector<AtenParam> params;
  bool keyword_only = false;
  for (std::string_view item : split_items(schema)) {
    if (item == "*") {
      keyword_only = true;
      continue;
    }
    AtenParam p;
    p.keyword_only = keyword_only;
    const size_t eq = item.find('=');
    std::string_view declaration = trim(item.substr(0, eq));
    if (eq != std::string_view::npos) p.default_value = parse_literal(item.substr(eq + 1), row);
    const size_t space = declaration.rfind(' ');
    TG_CHECK(space != std::string_view::npos, "aten_ops.def: \"" + std::string(item) + "\" has no type (" + std::string(row) + ")");
    p.type = std::string(declaration.substr(0, space));
    p.name = std::string(declaration.substr(space + 1));
    params.push_back(std::move(p));
  }
  return params;
}

AtenBinding parse_binding_item(std::string_view item, const AtenRow& row) {
  AtenBinding b;
  auto check_param = [&](std::string_view name) {
    TG_CHECK(row.param(name), "aten_ops.def: " + row.target + " has no parameter \"" + std::string(name) + "\"");
    return std::string(name);
  };
  if (item.front() == '~') {
    b.kind = AtenBinding::Kind::ignore;
    b.param = check_param(item.substr(1));
  } else if (const size_t eqeq = item.find("=="); eqeq != std::string_view::npos) {
    b.kind = AtenBinding::Kind::condition;
    b.param = check_param(trim(item.substr(0, eqeq)));
    b.literal = parse_literal(item.substr(eqeq + 2), row.target);
  } else if (item.rfind("outs=", 0) == 0) {
    b.kind = AtenBinding::Kind::outputs;
    b.outputs = std::atoi(std::string(item.substr(5)).c_str());
  } else {
    const size_t eq = item.find('=');
    TG_CHECK(eq != std::string_view::npos, "aten_ops.def: \"" + std::string(item) + "\" binds nothing (" + row.target + ")");
    b.ours = std::string(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    if (value.front() == '$') b.special = std::string(value);
    else if (row.param(value)) b.param = std::string(value);
    else b.literal = parse_literal(value, row.target);
  }
  return b;
}

AtenRow make_row(std::string target, std::string_view schema, std::string symbol, std::string lowering, std::string_view binding) {
  AtenRow row;
  row.target = std::move(target);
  row.params = parse_schema(schema, row.target);
  row.symbol = std::move(symbol);
  row.lowering = std::move(lowering);
  for (std::string_view item : split_items(binding)) {
    row.binding.push_back(parse_binding_item(item, row));
    if (row.binding.back().kind == AtenBinding::Kind::outputs) row.outputs = row.binding.back().outputs;
  }
  return row;
}

std::vector<AtenRow> build_rows() {
  std::vector<AtenRow> rows;
#define TG_ATEN(target, schema, symbol, binding) rows.push_back(make_row(target, schema, symbol, "", binding));
#define TG_ATEN_BY(target, schema, lowering) rows.push_back(make_row(target, schema, "", #lowering, ""));
#include "frontend/aten_ops.def"
#undef TG_ATEN
#undef TG_ATEN_BY
  return rows;
}

}  // namespace

const AtenParam* AtenRow::param(std::string_view name) const {
  for (const AtenParam& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

bool same_literal(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_literal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

bool AtenRow::applies(const json& bound_args) const {
  for (const AtenBinding& b : binding)
    if (b.kind == AtenBinding::Kind::condition && !same_literal(bound_args.at(b.param), b.literal)) return false;
  return true;
}

std::string AtenRow::conditions() const {
  std::string text;
  for (const AtenBinding& b : binding)
    if (b.kind == AtenBinding::Kind::condition) text += (text.empty() ? "" : ", ") + b.param + "==" + b.literal.dump();
  return text;
}

const std::vector<AtenRow>& aten_rows() {
  static const std::vector<AtenRow> rows = build_rows();
  return rows;
}

std::vector<const AtenRow*> aten_rows_for(std::string_view target) {
  static const std::multimap<std::string, const AtenRow*, std::less<>> by_target = [] {
    std::multimap<std::string, const AtenRow*, std::less<>> m;
    for (const AtenRow& row : aten_rows()) m.emplace(row.target, &row);
    return m;
  }();
  std::vector<const AtenRow*> rows;
  for (auto [it, end] = by_target.equal_range(target); it != end; ++it) rows.push_back(it->second);
  return rows;
}

}  // namespace tg

namespace tg {

AtenCoverage aten_coverage() {
  AtenCoverage c;
#define TG_CORE_ATEN_VERSION(version) c.torch_version = version;
#define TG_CORE_ATEN(target) c.core.push_back(target);
#include "frontend/core_aten_ops.def"
#undef TG_CORE_ATEN
#undef TG_CORE_ATEN_VERSION
  for (const std::string& target : c.core) c.core_translated.push_back(!aten_rows_for(target).empty());
  for (const AtenRow& row : aten_rows())
    if (!std::binary_search(c.core.begin(), c.core.end(), row.target) && (c.beyond.empty() || c.beyond.back() != row.target))
      c.beyond.push_back(row.target);
  return c;
}

std::string aten_translation(const AtenRow& row) {
  if (!row.lowering.empty()) return "(code: " + row.lowering + ")";
  if (row.symbol == "=") return "(its input's value)";
  if (row.symbol.empty()) return "(a check: nothing computed)";
  return row.symbol;
}

}  // namespace tg
