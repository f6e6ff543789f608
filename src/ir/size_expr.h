// Sizes as expressions over named symbols: the dimensions of a trace captured for a range of batch
// sizes or sequence lengths (docs/symbolic-shapes.md).
//
// A SizeExpr is an integer polynomial: a constant plus terms `coefficient * monomial`, a monomial
// a product of atoms, each raised to a positive power. An atom is a symbol (`B`), or an operation
// the polynomial cannot absorb: a floor quotient `a // b`, `max(a, b)` or `min(a, b)`. Expressions
// are kept in one canonical form (terms ordered, equal monomials merged, atoms built simplified),
// so == says whether two sizes are the same expression and text() is deterministic.
//
// What the arithmetic cannot decide alone it asks the symbols' declarations (Symbols): each
// symbol's range and a multiple it is known to be. With them, floor_div, max and min simplify
// (`(2*T) // 2` is `T`, `max(B, 0)` is `B`), and range_of / known_multiple / provably_* answer
// the questions shape rules ask. Arithmetic that would overflow int64 throws SizeExprError.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tg {

// A size for each of some symbols, by name.
using SymbolValues = std::map<std::string, int64_t, std::less<>>;

// A malformed or unprovable size expression; `offset` is where in the parsed text, when parsing.
struct SizeExprError : std::runtime_error {
  size_t offset = 0;
  explicit SizeExprError(const std::string& message, size_t offset_ = 0) : std::runtime_error(message), offset(offset_) {}
};

// A symbol's name: an identifier of at most 64 characters other than max and min (the grammar's
// functions); kSizeSymbolNameRule says so in errors.
bool is_size_symbol_name(std::string_view name);
inline constexpr const char* kSizeSymbolNameRule = "an identifier of at most 64 characters, not max or min";

// The largest size a symbol may be declared to reach: ranges stay far from int64 overflow.
inline constexpr int64_t kMaxSymbolSize = int64_t(1) << 48;

// What is known of one symbol: min <= value <= max, and value % multiple_of == 0.
struct SymbolDecl {
  std::string name;
  int64_t min = 0;
  int64_t max = kMaxSymbolSize;
  int64_t multiple_of = 1;
  std::string range_text() const;  // "2 <= T <= 512, a multiple of 16"
  // The smallest size it allows from `from` up, if any (max <= 2^48: the rounding cannot overflow).
  std::optional<int64_t> smallest_from(int64_t from) const {
    const int64_t v = (std::max(from, min) + multiple_of - 1) / multiple_of * multiple_of;
    return v <= max ? std::optional(v) : std::nullopt;
  }
  int64_t largest() const { return max / multiple_of * multiple_of; }  // (declare() checked one is in range)
  bool allows(int64_t size) const { return size >= min && size <= max && size % multiple_of == 0; }
  bool operator==(const SymbolDecl&) const = default;
};

// The symbols of one trace, by name.
class Symbols {
 public:
  // Adds a declaration; throws SizeExprError when the name is taken or the declaration is empty
  // or inconsistent (min > max, no multiple of multiple_of in range, min < 0, max > kMaxSymbolSize).
  void declare(SymbolDecl decl);
  const SymbolDecl* find(std::string_view name) const;
  const SymbolDecl& at(std::string_view name) const;  // a name not declared: SizeExprError
  bool empty() const { return decls_.empty(); }
  const std::map<std::string, SymbolDecl, std::less<>>& all() const { return decls_; }
  bool operator==(const Symbols&) const = default;

 private:
  std::map<std::string, SymbolDecl, std::less<>> decls_;
};

struct SizeRange {  // lo <= x <= hi (a bound past int64 cut to its limit)
  int64_t lo = 0, hi = 0;
};

struct SizeBounds;  // size_expr.cpp: exact 128-bit bounds, behind range_of

class SizeExpr {
 public:
  SizeExpr() = default;  // 0
  SizeExpr(int64_t constant) : constant_(constant) {}  // NOLINT: a static size is a SizeExpr
  static SizeExpr symbol(std::string name);

  friend SizeExpr operator+(const SizeExpr& a, const SizeExpr& b);
  friend SizeExpr operator-(const SizeExpr& a, const SizeExpr& b);
  friend SizeExpr operator*(const SizeExpr& a, const SizeExpr& b);
  SizeExpr operator-() const;

  std::optional<int64_t> constant() const;     // when it is one
  bool is_constant() const { return terms_.empty(); }
  size_t term_count() const { return terms_.size() + (constant_ != 0); }  // (3 of `2*B*T + T + 1`)
  int64_t constant_term() const { return constant_; }  // its number apart from its terms (-1 of T - 1)
  std::vector<std::string> symbols() const;    // the symbols it mentions, sorted, each once
  // The symbol it is when it is one alone (`B`), else "".
  std::string lone_symbol() const {
    const std::vector<std::string> names = symbols();
    return names.size() == 1 && *this == symbol(names[0]) ? names[0] : "";
  }
  // Each atom of its first term that divides it exactly, with the quotient: `B*T - B` as `B` and
  // `T - 1`; `((H + 1)//2)*W - 2*((H + 1)//2)` as `(H + 1)//2` and `W - 2`. None for a constant
  // or an atom alone.
  std::vector<std::pair<SizeExpr, SizeExpr>> atom_factors() const;
  // Canonical text in the trace format's grammar: `2*B*T + T//2 + 1`, `max(B, 2)`.
  std::string text() const;
  // The expression as C++ over an object `arith` with add, mul, floordiv, max, min and narrow
  // (tg::SizeArith: 128-bit sums and products, each atom's operands narrowed to int64, as
  // evaluate() computes): `a.add(a.mul(s0, s1), 1)`, each symbol spelled by `symbol_code`. The
  // caller narrows the whole.
  std::string code(std::string_view arith, const std::function<std::string(const std::string&)>& symbol_code) const;
  // Its value with each symbol's given (floor division, as Python's //). An unbound symbol or an
  // overflow: SizeExprError.
  int64_t evaluate(const std::function<int64_t(const std::string&)>& value_of) const;
  int64_t evaluate(const SymbolValues& values) const;
  // The expression with each symbol replaced as `replace` says (nullopt: kept), re-simplified.
  SizeExpr substitute(const std::function<std::optional<SizeExpr>(const std::string&)>& replace, const Symbols& symbols) const;

  bool operator==(const SizeExpr& other) const;
  bool operator<(const SizeExpr& other) const { return compare(*this, other) < 0; }

 private:
  friend SizeExpr floor_div(const SizeExpr&, const SizeExpr&, const Symbols&);
  friend SizeExpr max(const SizeExpr&, const SizeExpr&, const Symbols&);
  friend SizeExpr min(const SizeExpr&, const SizeExpr&, const Symbols&);
  friend SizeRange range_of(const SizeExpr&, const Symbols&);
  friend int64_t known_multiple(const SizeExpr&, const Symbols&);
  friend bool provably_ge(const SizeExpr&, const SizeExpr&, const Symbols&);
  friend bool provably_positive(const SizeExpr&, const Symbols&);

  struct Atom;
  using AtomPtr = std::shared_ptr<const Atom>;
  struct Factor {
    AtomPtr atom;
    int power;
  };
  using Monomial = std::vector<Factor>;  // sorted by atom, each atom once
  struct Term {
    Monomial monomial;
    int64_t coef;
  };
  int64_t constant_ = 0;
  std::vector<Term> terms_;  // in canonical order, each monomial once, no zero coefficient

  static SizeExpr of_atom(AtomPtr atom);
  static AtomPtr checked_atom(std::shared_ptr<Atom> atom);
  static SizeExpr of_terms(int64_t constant, std::vector<Term> terms);
  static SizeExpr of_term(const Term& term);
  static int compare(const SizeExpr& a, const SizeExpr& b);
  static int compare(const Monomial& a, const Monomial& b);
  static Monomial multiply(const Monomial& a, const Monomial& b);
  static std::optional<Monomial> divide(const Monomial& a, const Monomial& b);
  static std::optional<SizeExpr> divide_exactly(const SizeExpr& a, const SizeExpr& b);
  static SizeExpr quotient_by_constant(const SizeExpr& a, int64_t c, const Symbols& symbols);
  static SizeExpr extremum(bool is_max, const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);
  static bool provably_at_least(const SizeExpr& e, int least, const Symbols& symbols);
  static bool least_at_smallest_sizes(const SizeExpr& e, int least, const Symbols& symbols);
  static SizeBounds bounds_of(const SizeExpr& e, const Symbols& symbols);
  static std::string term_text(const Term& t, bool leading);
  static std::string operand_text(const SizeExpr& e);
};

// floor(a / b). b must be provably positive (SizeExprError otherwise).
SizeExpr floor_div(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);
SizeExpr max(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);
SizeExpr min(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);

// Bounds on its value over every assignment the declarations allow.
SizeRange range_of(const SizeExpr& e, const Symbols& symbols);
// The largest n known to divide it for every assignment (0 for the expression 0).
int64_t known_multiple(const SizeExpr& e, const Symbols& symbols);
bool provably_divisible(const SizeExpr& e, int64_t n, const Symbols& symbols);
bool provably_ge(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);  // a >= b always
bool provably_positive(const SizeExpr& e, const Symbols& symbols);

// "B=64,T=128" (a flag's text; "" is none) as the sizes it names: each an identifier and an
// integer >= 0, each symbol once.
SymbolValues parse_symbol_values(std::string_view text);

// Parses `B*T`, `T//2 + 1`, `max(B, 2) - 1`: integers, declared symbols, + - * //, parentheses,
// max(a, b), min(a, b). Whitespace is free. Bounded in length and nesting; an error says where.
SizeExpr parse_size_expr(std::string_view text, const Symbols& symbols);

}  // namespace tg
