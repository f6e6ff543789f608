#include "frontend/json_symbols.h"

#include "frontend/input_file.h"

#include "support/generated_text.h"

namespace tg::json {
namespace {

constexpr size_t kMaxSymbols = 64;

int64_t bound_at(Object decl, const Path& at, std::string_view field, bool required, int64_t fallback) {
  const std::optional<Json> j = find(decl, field);
  if (!j) {
    if (required) throw UserError(at.str(), "a symbol declares \"" + std::string(field) + "\"");
    return fallback;
  }
  if (!is_int64(*j)) throw UserError(Path(at, field).str(), "expected an integer, got " + kind_name(*j));
  return int_of(*j);
}

std::string declared_symbol_names(const Symbols& symbols) {
  std::string out;
  for (const auto& [name, decl] : symbols.all()) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

}  // namespace

Symbols read_symbols(Json json, const Path& at) {
  const Object object = object_at(json, at);
  if (object.size() > kMaxSymbols) throw UserError(at.str(), "more than " + std::to_string(kMaxSymbols) + " symbols");
  Symbols symbols;
  for (const simdjson::dom::key_value_pair& member : object) {
    const std::string name(member.key);
    const Path decl_at(at, member.key);
    if (!is_size_symbol_name(name)) throw UserError(decl_at.str(), std::string("a symbol's name is ") + kSizeSymbolNameRule);
    const Object decl = object_at(member.value, decl_at);
    static constexpr std::string_view kSymbolFields[] = {"min", "max", "multiple_of"};
    check_fields(decl, decl_at, kSymbolFields);
    try {
      symbols.declare({name, bound_at(decl, decl_at, "min", true, 0), bound_at(decl, decl_at, "max", true, 0), bound_at(decl, decl_at, "multiple_of", false, 1)});
    } catch (const SizeExprError& error) {
      throw UserError(decl_at.str(), error.what());
    }
  }
  return symbols;
}

void check_specialization(const Symbols& symbols, const SymbolValues& values, const std::function<std::string(const std::string& name)>& declared_at) {
  for (const auto& [name, size] : values) {
    const SymbolDecl* d = symbols.find(name);
    if (!d) throw UserError("--specialize", "", "the trace declares no symbol '" + name + "' (its symbols: " + declared_symbol_names(symbols) + ")");
    if (!d->allows(size))
      throw UserError("--specialize", "", name + "=" + std::to_string(size) + " is not a size the trace allows: " + d->range_text() + " (" + declared_at(name) + ")");
  }
  for (const auto& [name, decl] : symbols.all()) {
    if (!values.count(name)) {
      const std::string message = "the trace's sizes depend on " + name + " (" + decl.range_text() +
                                  "); name a size for each symbol with --specialize " + name + "=<size>, or none for a folder that takes them at run time";
      if (values.empty()) throw SizesNotGiven(declared_at(name), message, symbols);
      throw UserError(declared_at(name), message);
    }
  }
}

SizeExpr size_expr_of(Json text, const Path& where, const Trace& t, bool must_be_size) {
  SizeExpr size;
  try {
    size = parse_size_expr(string_of(text), t.symbols);
  } catch (const SizeExprError& error) {
    throw UserError(where.str(), "in the size " + dump(text) + " at offset " + std::to_string(error.offset) + ": " + error.what());
  }
  if (must_be_size && !provably_ge(size, 0, t.symbols)) throw UserError(where.str(), "the size " + size.text() + " may be negative for sizes the symbols allow");
  return size;
}


int64_t size_at_specialization(const SizeExpr& size, const Path& where, const Trace& t) {
  try {
    return size.evaluate(t.specialized_at);
  } catch (const SizeExprError& error) {
    throw UserError(where.str(), "the size " + size.text() + " at " + t.specialization_text() + ": " + error.what());
  }
}

}  // namespace tg::json
