// Reading sizes from text: size expressions (`B*T`, `T//2 + 1`) and a flag's symbol sizes
// (`B=64,T=128`); symbols' names and their declarations' text. The arithmetic is size_expr.cpp's.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "ir/size_expr.h"
#include "ir/size_text.h"
#include "support/generated_text.h"

namespace tg {

bool is_size_symbol_name(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (name.empty() || name.size() > 64 || !letter(name[0]) || name == "max" || name == "min") return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

std::string SymbolDecl::range_text() const {
  std::string out = std::to_string(min) + " <= " + name + " <= " + std::to_string(max);
  return multiple_of > 1 ? out + ", a multiple of " + std::to_string(multiple_of) : out;
}

const SymbolDecl* Symbols::find(std::string_view name) const {
  auto it = decls_.find(name);
  return it == decls_.end() ? nullptr : &it->second;
}

const SymbolDecl& Symbols::at(std::string_view name) const {
  if (const SymbolDecl* d = find(name)) return *d;
  throw SizeExprError("unknown symbol '" + std::string(name) + "'");
}

namespace {

class SizeParser : SizeTextReader {
 public:
  SizeParser(std::string_view text, const Symbols& symbols) : SizeTextReader(text, symbols, 1024) {}

  SizeExpr parse() {
    try {
      SizeExpr e = sum();
      if (!at_end()) fail(std::string("unexpected '") + text_[pos_] + "'");
      return e;
    } catch (const SizeExprError& error) {
      if (error.offset != 0) throw;
      throw SizeExprError(error.what(), pos_);  // (arithmetic that overflowed: where it got to)
    }
  }

 private:

  SizeExpr sum() {
    SizeExpr e = product();
    for (;;) {
      if (take("+")) {
        e = e + product();
      } else if (take("-")) {
        e = e - product();
      } else {
        return e;
      }
    }
  }

  SizeExpr product() {
    SizeExpr e = factor();
    for (;;) {
      if (take("//")) {
        skip_space();
        const size_t at = pos_;
        const SizeExpr divisor = factor();
        try {
          e = floor_div(e, divisor, symbols_);
        } catch (const SizeExprError& error) {
          throw SizeExprError(error.what(), at);
        }
      } else if (take("/")) {
        fail("'/' is true division: sizes divide with '//'");
      } else if (take("*")) {
        e = e * factor();
      } else {
        return e;
      }
    }
  }

  SizeExpr factor() {
    enter();
    SizeExpr e = unnested_factor();
    leave();
    return e;
  }

  SizeExpr unnested_factor() {
    skip_space();
    if (take("-")) return -factor();
    if (take("(")) return closed(sum());
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) return integer();
    const std::string name = identifier();
    if (name == "max" || name == "min") {
      if (!take("(")) fail("'" + name + "' takes two arguments in parentheses");
      const SizeExpr a = sum();
      if (!take(",")) fail("'" + name + "' takes two arguments");
      const SizeExpr b = closed(sum());
      return name == "max" ? max(a, b, symbols_) : min(a, b, symbols_);
    }
    if (!symbols_.find(name)) fail("unknown symbol '" + name + "' (declare it under \"symbols\")");
    return SizeExpr::symbol(name);
  }

  SizeExpr closed(SizeExpr e) {
    if (!take(")")) fail("expected ')'");
    return e;
  }

  SizeExpr integer() {
    int64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, text_[pos_] - '0', &value)) fail("the integer overflows int64");
      ++pos_;
    }
    return SizeExpr(value);
  }

  std::string identifier() {
    auto is_start = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
    if (pos_ >= text_.size()) fail("the expression ends where a size was expected");
    if (!is_start(text_[pos_])) fail(std::string("unexpected '") + text_[pos_] + "'");
    const size_t start = pos_;
    while (pos_ < text_.size() && (is_start(text_[pos_]) || std::isdigit(static_cast<unsigned char>(text_[pos_])))) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
};

}  // namespace

SymbolValues parse_symbol_values(std::string_view text) {
  SymbolValues values;
  for (size_t start = 0; start < text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq), digits = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    int64_t size = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    if (!is_identifier(name) || digits.empty() || error != std::errc() || end != digits.data() + digits.size() || size < 0)
      throw SizeExprError("expected <symbol>=<size>[,<symbol>=<size>...], got \"" + std::string(item) + "\"", start);
    if (!values.emplace(std::string(name), size).second) throw SizeExprError(std::string(name) + " is given twice", start);
    start = comma + 1;
  }
  return values;
}

SizeExpr parse_size_expr(std::string_view text, const Symbols& symbols) { return SizeParser(text, symbols).parse(); }

}  // namespace tg
