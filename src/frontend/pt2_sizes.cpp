#include "frontend/pt2_sizes.h"

#include <cctype>
#include <set>
#include <vector>

#include "frontend/json_document.h"
#include "frontend/json_symbols.h"
#include "frontend/pt2_schema.h"
#include "ir/size_text.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::pt2 {
namespace {

using namespace ::tg::json;

// sympy.srepr text: calls `Name(arg, ...)` whose arguments are calls, integers, quoted strings
// and keyword assumptions (`integer=True`), read into a size expression.
class SreprReader : SizeTextReader {
 public:
  SreprReader(std::string_view text, const Symbols& symbols, const SymbolNames& names) : SizeTextReader(text, symbols, 4096), names_(names) {}

  SizeExpr read() {
    SizeExpr e = call();
    if (!at_end()) fail("text after the expression");
    return e;
  }

 private:
  void expect(std::string_view token) {
    if (!take(token)) fail("expected '" + std::string(token) + "'");
  }
  std::string name() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip_space();
    const bool negative = take("-");
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_]))) fail("expected an integer");
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_++] - '0', &v)) fail("an integer over int64");
    }
    return negative ? -v : v;
  }
  std::string quoted() {
    if (!take("'")) fail("expected a quoted name");
    const size_t end = text_.find('\'', pos_);
    if (end == std::string_view::npos) fail("an unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  // The rest of an argument list after a symbol's name: its assumptions, which sizes do not need.
  void skip_assumptions() {
    while (take(",")) {
      name();
      expect("=");
      name();
    }
    expect(")");
  }
  std::vector<SizeExpr> arguments() {
    std::vector<SizeExpr> args{call()};
    while (take(",")) args.push_back(call());
    expect(")");
    return args;
  }

  SizeExpr call() {
    enter();
    const std::string f = name();
    expect("(");
    SizeExpr e = apply(f);
    leave();
    return e;
  }

  SizeExpr apply(const std::string& f) {
    if (f == "Integer") {
      const int64_t v = integer();
      expect(")");
      return v;
    }
    if (f == "Symbol") {
      const size_t at = pos_;
      const std::string s = quoted();
      skip_assumptions();
      return symbol(s, at);
    }
    static const std::set<std::string, std::less<>> kFunctions = {"Add", "Mul", "Max", "Min", "FloorDiv", "CleanDiv", "Mod", "PythonMod", "Pow"};
    if (!kFunctions.count(f))
      fail("the sympy function '" + printable_line(f) + "' in a size (thunder-gen reads Integer, Symbol, Add, Mul, Pow, FloorDiv, Mod, Max, Min)");
    const std::vector<SizeExpr> args = arguments();
    if (f == "Add" || f == "Mul" || f == "Max" || f == "Min") return fold(f, args);
    if (args.size() != 2) fail("'" + f + "' with " + std::to_string(args.size()) + " arguments");
    if (f == "FloorDiv" || f == "CleanDiv") return floor_div(args[0], args[1], symbols_);
    if (f == "Mod" || f == "PythonMod") return args[0] - args[1] * floor_div(args[0], args[1], symbols_);
    if (f == "Pow") {
      const auto power = args[1].constant();
      if (!power || *power < 0 || *power > 64) fail("a power other than a constant from 0 to 64");
      SizeExpr e = 1;
      for (int64_t p = 0; p < *power; ++p) e = e * args[0];
      return e;
    }
    TG_CHECK(false, "a sympy function in the list without a reading: " + f);
  }

  SizeExpr fold(const std::string& f, const std::vector<SizeExpr>& args) {
    SizeExpr e = args[0];
    for (size_t i = 1; i < args.size(); ++i) {
      if (f == "Add") e = e + args[i];
      else if (f == "Mul") e = e * args[i];
      else if (f == "Max") e = max(e, args[i], symbols_);
      else e = min(e, args[i], symbols_);
    }
    return e;
  }

  const SymbolNames& names_;

  SizeExpr symbol(const std::string& s, size_t at) {
    if (const std::string name = names_.name_of(s); symbols_.find(name)) return SizeExpr::symbol(name);
    pos_ = at;
    if (s.size() > 1 && s[0] == 'u' && std::isdigit(static_cast<unsigned char>(s[1])))
      fail("a data-dependent size (" + printable_line(s) + "): thunder-gen generates code whose sizes follow from its inputs' sizes");
    fail("the symbol " + printable_line(s) + " has no entry in range_constraints");
  }
};

int64_t constraint_bound(Object constraint, const Path& at, std::string_view field, int64_t unbounded) {
  const std::optional<Json> j = find(constraint, field);
  if (!j || j->is_null()) return unbounded;
  if (!is_json_integer(*j)) throw UserError(Path(at, field).str(), "expected an integer or null, got " + kind_name(*j));
  if (is_too_large(*j)) return kMaxSymbolSize;
  if (int_of(*j) < 0) throw UserError(Path(at, field).str(), "a size bound below 0: " + std::to_string(int_of(*j)));
  return std::min(int_of(*j), kMaxSymbolSize);  // (torch writes int_oo's stand-in as a huge max: the largest size declared)
}

// The symbols, named as `names` says; every symbol `names` renames must be one of them.
Symbols read_range_constraints(Object root, const Path& root_at, const SymbolNames& names) {
  Symbols symbols;
  std::set<std::string, std::less<>> seen;
  const std::optional<Json> constraints = find(root, "range_constraints");
  const Path at(root_at, "range_constraints");
  if (!constraints && !names.by_symbol.empty())
    throw UserError(names.file, "/" + escape_pointer_token(names.by_symbol.begin()->first), "names a symbol, but the program has no range_constraints");
  if (!constraints) return symbols;
  for (auto [key, value] : object_at(*constraints, at)) {
    // Derived sizes ("2*s47") are bounded by their symbols; unbacked symbols (u0) are refused
    // where a size names them.
    const std::string name(key);
    if (!is_identifier(name) || name == "max" || name == "min" || (name[0] == 'u' && name.size() > 1 && std::isdigit(static_cast<unsigned char>(name[1])))) continue;
    const Path constraint_at(at, key);
    const Object constraint = object_at(value, constraint_at);
    const std::string given = names.name_of(name);
    if (symbols.find(given)) {  // a name given to one symbol that another has (given or its own)
      for (const auto& [symbol, other] : names.by_symbol)
        if (other == given) throw UserError(names.file, "/" + escape_pointer_token(symbol), "the name '" + given + "' is taken by another symbol of the program");
    }
    seen.insert(name);
    try {
      symbols.declare({given, constraint_bound(constraint, constraint_at, "min_val", 0), constraint_bound(constraint, constraint_at, "max_val", kMaxSymbolSize), 1});
    } catch (const SizeExprError& e) {
      throw UserError(constraint_at.str(), e.what());
    }
  }
  for (const auto& [symbol, given] : names.by_symbol)
    if (!seen.count(symbol)) throw UserError(names.file, "/" + escape_pointer_token(symbol), "names a symbol the program's range_constraints do not have");
  return symbols;
}

SizeExpr expression_of(Json symint_expr, const Path& where, const Symbols& symbols, const SymbolNames& names) {
  const Object o = object_at(symint_expr, where);
  const Path text_at(where, "expr_str");
  const std::string text = string_at(require(o, where, "expr_str"), text_at);
  try {
    return sympy_size(text, symbols, names);
  } catch (const SizeExprError& e) {
    throw UserError(text_at.str(), "at offset " + std::to_string(e.offset) + " of the size: " + e.what());
  }
}

}  // namespace

std::string SymbolNames::name_of(std::string_view symbol) const {
  auto it = by_symbol.find(symbol);
  return it == by_symbol.end() ? std::string(symbol) : it->second;
}

SymbolNames read_symbol_names(const std::string& text, const std::string& file) {
  SymbolNames names;
  names.file = file;
  try {
    simdjson::dom::parser parser;
    const simdjson::padded_string padded(text);
    const Json doc = parse_document(parser, padded);
    check_duplicate_keys(doc);
    if (!doc.is_object()) throw UserError("", "expected a JSON object of torch's symbols and the names given them ({\"s17\": \"batch\"})");
    std::set<std::string, std::less<>> taken;
    const std::string document;  // the root's pointer: ""
    for (auto [key, name] : object_at(doc, Path(document))) {
      const std::string symbol(key), at = "/" + escape_pointer_token(symbol);
      if (!name.is_string()) throw UserError(at, "expected a name (a string), got " + kind_name(name));
      const std::string given(string_of(name));
      if (!is_size_symbol_name(given))
        throw UserError(at, "the name '" + printable_line(given.substr(0, 64)) + "' is not a size symbol's (" + kSizeSymbolNameRule + ")");
      if (!taken.insert(given).second) throw UserError(at, "the name '" + given + "' is given to two symbols");
      names.by_symbol[symbol] = given;
    }
  } catch (UserError& e) {
    if (e.file.empty()) e.file = file;
    throw;
  }
  return names;
}

SizeExpr sympy_size(std::string_view srepr, const Symbols& symbols, const SymbolNames& names) { return SreprReader(srepr, symbols, names).read(); }

SymIntSizes::SymIntSizes(Object root, const Path& root_at, Object graph, const Path& graph_at, const SymbolValues& at, const SymbolNames& names)
    : symbols_(read_range_constraints(root, root_at, names)), names_(names), at_(at) {
  // A symbol is declared in range_constraints under torch's name, whatever it is called here.
  std::map<std::string, std::string, std::less<>> symbol_of;
  for (const auto& [symbol, given] : names_.by_symbol) symbol_of[given] = symbol;
  ::tg::json::check_specialization(symbols_, at_, [&](const std::string& name) {
    auto it = symbol_of.find(name);
    return "/range_constraints/" + escape_pointer_token(it == symbol_of.end() ? name : it->second);
  });
  add_graph(graph, graph_at);
}

void SymIntSizes::add_graph(Object graph, const Path& graph_at) {
  const std::optional<Json> values = find(graph, "sym_int_values");
  if (!values) return;
  const Path values_at(graph_at, "sym_int_values");
  for (auto [name, symint] : object_at(*values, values_at)) {
    const Path value_at(values_at, name);
    auto [member, value] = member_of(symint, value_at, "SymInt");
    SizeExpr size;
    if (member == "as_int" && is_int64(value)) size = int_of(value);
    else if (member == "as_expr") size = expression_of(value, Path(value_at, member), symbols_, names_);
    else throw UserError(value_at.str(), "a SymInt is {\"as_int\": n} or {\"as_expr\": ...}, not \"" + printable_line(member) + "\"");
    auto [it, fresh] = named_.emplace(std::string(name), size);
    if (!fresh && !(it->second == size))
      throw UserError(value_at.str(), "the SymInt \"" + printable_line(name) + "\" is " + size.text() + " here and " + it->second.text() + " in another graph");
  }
}

int64_t SymIntSizes::evaluate(const SizeExpr& e, const Path& where) const {
  try {
    return e.evaluate(at_);
  } catch (const SizeExprError& error) {
    throw UserError(where.str(), std::string("the size ") + e.text() + ": " + error.what());
  }
}

int64_t SymIntSizes::named(std::string_view name, const Path& where) const {
  auto it = named_.find(name);
  if (it == named_.end()) throw UserError(where.str(), "no SymInt named \"" + printable_line(name) + "\" in the graph's sym_int_values");
  return evaluate(it->second, where);
}

SizeExpr SymIntSizes::expression(Json symint, const Path& where) const {
  auto [member, value] = member_of(symint, where, "SymInt");
  const Path at(where, member);
  if (member == "as_expr") return expression_of(value, at, symbols_, names_);
  if (member == "as_name") {
    auto it = named_.find(string_at(value, at));
    if (it != named_.end()) return it->second;
  }
  return size(symint, where);
}

int64_t SymIntSizes::size(Json symint, const Path& where) const {
  auto [member, value] = member_of(symint, where, "SymInt");
  const Path at(where, member);
  if (member == "as_int") {
    if (!is_int64(value)) throw UserError(at.str(), "expected an integer, got " + kind_name(value));
    return int_of(value);
  }
  if (member == "as_expr") return evaluate(expression_of(value, at, symbols_, names_), at);
  if (member == "as_name") return named(string_at(value, at), at);
  throw UserError(where.str(), "unknown SymInt member \"" + printable_line(member) + "\"");
}

}  // namespace tg::pt2
