#include "ir/size_expr.h"

#include <algorithm>
#include <numeric>

namespace tg {

struct SizeExpr::Atom {
  enum class Kind { symbol, floordiv, max, min };
  Kind kind = Kind::symbol;
  std::string name;  // symbol
  SizeExpr a, b;     // floordiv: a // b; max, min: the operands, in canonical order
  std::string key;   // the atom's canonical text: atoms are ordered by it
};

// Bounds are computed in 128 bits, exactly, up to 2^100; past it a lower bound is "unbounded
// below" and an upper one "unbounded above" (kUnboundedSize, absorbing), so a bound is never cut to a
// value the expression can pass. range_of() hands out int64 bounds: every int64 value of the
// expression lies within them.
using WideSize = __int128;
constexpr WideSize kUnboundedSize = WideSize(1) << 100;

struct SizeBounds {
  WideSize lo, hi;
  bool finite() const { return lo > -kUnboundedSize && hi < kUnboundedSize; }
};

namespace {

constexpr size_t kMaxTerms = 256;
constexpr size_t kMaxAtomText = 1024;

// INT64_MIN counts as an overflow: a size's text spells -2^63 as a negated literal the grammar
// cannot read back.
int64_t size_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r == INT64_MIN) throw SizeExprError("size arithmetic overflows int64");
  return r;
}

int64_t size_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r == INT64_MIN) throw SizeExprError("size arithmetic overflows int64");
  return r;
}

int64_t floor_quotient(int64_t a, int64_t b) {
  if (b == 0) throw SizeExprError("division by zero");
  if (a == INT64_MIN && b == -1) throw SizeExprError("size arithmetic overflows int64");
  return a / b - (a % b != 0 && ((a < 0) != (b < 0)));
}

WideSize bounded(WideSize x) { return std::clamp(x, -kUnboundedSize, kUnboundedSize); }

WideSize wide_product(WideSize a, WideSize b) {
  WideSize r;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? -kUnboundedSize : kUnboundedSize;
  return bounded(r);
}

WideSize wide_floor_quotient(WideSize a, WideSize b) { return a / b - (a % b != 0 && ((a < 0) != (b < 0))); }

SizeBounds bounds_sum(SizeBounds a, SizeBounds b) {
  return {a.lo <= -kUnboundedSize || b.lo <= -kUnboundedSize ? -kUnboundedSize : bounded(a.lo + b.lo),
          a.hi >= kUnboundedSize || b.hi >= kUnboundedSize ? kUnboundedSize : bounded(a.hi + b.hi)};
}

SizeBounds bounds_product(SizeBounds a, SizeBounds b) {
  const WideSize corners[] = {wide_product(a.lo, b.lo), wide_product(a.lo, b.hi), wide_product(a.hi, b.lo), wide_product(a.hi, b.hi)};
  return {*std::min_element(std::begin(corners), std::end(corners)), *std::max_element(std::begin(corners), std::end(corners))};
}

SizeBounds bounds_quotient(SizeBounds a, SizeBounds b) {
  if (b.lo <= 0) return {-kUnboundedSize, kUnboundedSize};
  // For b > 0, floor(a / b) is monotone in each operand: its extremes are at the corners (an
  // unbounded dividend stays unbounded).
  const WideSize corners[] = {wide_floor_quotient(a.lo, b.lo), wide_floor_quotient(a.lo, b.hi), wide_floor_quotient(a.hi, b.lo), wide_floor_quotient(a.hi, b.hi)};
  return {a.lo <= -kUnboundedSize ? -kUnboundedSize : *std::min_element(std::begin(corners), std::end(corners)),
          a.hi >= kUnboundedSize ? kUnboundedSize : *std::max_element(std::begin(corners), std::end(corners))};
}

// A symbol's bounds: its range tightened to the multiples it is declared to be.
SizeBounds symbol_bounds(const SymbolDecl& d) {
  const WideSize m = d.multiple_of;
  return {(WideSize(d.min) + m - 1) / m * m, WideSize(d.max) / m * m};
}

uint64_t size_magnitude(int64_t x) { return x < 0 ? 0 - uint64_t(x) : uint64_t(x); }

}  // namespace

// ---- symbols ----------------------------------------------------------------------------------

void Symbols::declare(SymbolDecl decl) {
  const std::string& n = decl.name;
  if (decls_.count(n)) throw SizeExprError("symbol '" + n + "' is declared twice");
  if (decl.min < 0) throw SizeExprError("symbol '" + n + "': min " + std::to_string(decl.min) + " is negative");
  if (decl.max > kMaxSymbolSize) throw SizeExprError("symbol '" + n + "': max " + std::to_string(decl.max) + " is over 2^48");
  if (decl.min > decl.max) throw SizeExprError("symbol '" + n + "': min " + std::to_string(decl.min) + " is over max " + std::to_string(decl.max));
  if (decl.multiple_of < 1) throw SizeExprError("symbol '" + n + "': multiple_of " + std::to_string(decl.multiple_of) + " is not positive");
  if (const SizeBounds b = symbol_bounds(decl); b.lo > b.hi) {
    throw SizeExprError("symbol '" + n + "': no multiple of " + std::to_string(decl.multiple_of) + " lies in [" + std::to_string(decl.min) + ", " +
                        std::to_string(decl.max) + "]");
  }
  decls_.emplace(n, std::move(decl));
}

// ---- building ---------------------------------------------------------------------------------

SizeExpr SizeExpr::symbol(std::string name) {
  auto atom = std::make_shared<Atom>();
  atom->key = name;
  atom->name = std::move(name);
  return of_atom(std::move(atom));
}

SizeExpr SizeExpr::of_atom(AtomPtr atom) {
  SizeExpr e;
  e.terms_.push_back({{{std::move(atom), 1}}, 1});
  return e;
}

// An atom holds its operands whole, and its key spells them: nesting that copies an operand (a
// product of sums around a max) would grow both exponentially with the text's length.
SizeExpr::AtomPtr SizeExpr::checked_atom(std::shared_ptr<Atom> atom) {
  if (atom->key.size() > kMaxAtomText) throw SizeExprError("a size expression too large (an operand of over " + std::to_string(kMaxAtomText) + " characters)");
  return atom;
}

SizeExpr SizeExpr::of_term(const Term& term) {
  SizeExpr e;
  e.terms_.push_back(term);
  return e;
}

SizeExpr SizeExpr::of_terms(int64_t constant, std::vector<Term> terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return compare(a.monomial, b.monomial) < 0; });
  SizeExpr e(constant);
  for (Term& t : terms) {
    if (t.monomial.empty()) {  // (what an exact division leaves of a term: a constant)
      e.constant_ = size_add(e.constant_, t.coef);
      continue;
    }
    if (!e.terms_.empty() && compare(e.terms_.back().monomial, t.monomial) == 0) {
      e.terms_.back().coef = size_add(e.terms_.back().coef, t.coef);
    } else {
      e.terms_.push_back(std::move(t));
    }
    if (e.terms_.back().coef == 0) e.terms_.pop_back();
  }
  // Sizes are short; a hostile product of sums would not be.
  if (e.terms_.size() > kMaxTerms) throw SizeExprError("a size expression of more than " + std::to_string(kMaxTerms) + " terms");
  return e;
}

// Higher degree first, then by atoms (and a higher power of the same atom first).
int SizeExpr::compare(const Monomial& a, const Monomial& b) {
  auto degree = [](const Monomial& m) {
    int d = 0;
    for (const Factor& f : m) d += f.power;
    return d;
  };
  if (int da = degree(a), db = degree(b); da != db) return da > db ? -1 : 1;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (int c = a[i].atom->key.compare(b[i].atom->key)) return c < 0 ? -1 : 1;
    if (a[i].power != b[i].power) return a[i].power > b[i].power ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : a.size() < b.size() ? -1 : 1;
}

int SizeExpr::compare(const SizeExpr& a, const SizeExpr& b) {
  for (size_t i = 0; i < std::min(a.terms_.size(), b.terms_.size()); ++i) {
    if (int c = compare(a.terms_[i].monomial, b.terms_[i].monomial)) return c;
    if (a.terms_[i].coef != b.terms_[i].coef) return a.terms_[i].coef < b.terms_[i].coef ? -1 : 1;
  }
  if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
  return a.constant_ == b.constant_ ? 0 : a.constant_ < b.constant_ ? -1 : 1;
}

bool SizeExpr::operator==(const SizeExpr& other) const { return compare(*this, other) == 0; }

SizeExpr::Monomial SizeExpr::multiply(const Monomial& a, const Monomial& b) {
  Monomial out;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const int c = i == a.size() ? 1 : j == b.size() ? -1 : a[i].atom->key.compare(b[j].atom->key);
    if (c == 0) {
      if (a[i].power + b[j].power > 64) throw SizeExprError("a size expression raises a symbol past the 64th power");
      out.push_back({a[i].atom, a[i].power + b[j].power});
      ++i, ++j;
    } else {
      out.push_back(c < 0 ? a[i++] : b[j++]);
    }
  }
  return out;
}

// a / b when b's factors all divide a's.
std::optional<SizeExpr::Monomial> SizeExpr::divide(const Monomial& a, const Monomial& b) {
  Monomial out;
  size_t j = 0;
  for (const Factor& f : a) {
    if (j < b.size() && b[j].atom->key == f.atom->key) {
      if (b[j].power > f.power) return std::nullopt;
      if (f.power > b[j].power) out.push_back({f.atom, f.power - b[j].power});
      ++j;
    } else {
      out.push_back(f);
    }
  }
  if (j != b.size()) return std::nullopt;
  return out;
}

SizeExpr operator+(const SizeExpr& a, const SizeExpr& b) {
  std::vector<SizeExpr::Term> terms = a.terms_;
  terms.insert(terms.end(), b.terms_.begin(), b.terms_.end());
  return SizeExpr::of_terms(size_add(a.constant_, b.constant_), std::move(terms));
}

SizeExpr SizeExpr::operator-() const { return *this * SizeExpr(-1); }

SizeExpr operator-(const SizeExpr& a, const SizeExpr& b) { return a + (-b); }

SizeExpr operator*(const SizeExpr& a, const SizeExpr& b) {
  std::vector<SizeExpr::Term> terms;
  for (const SizeExpr::Term& t : a.terms_) {
    for (const SizeExpr::Term& u : b.terms_) terms.push_back({SizeExpr::multiply(t.monomial, u.monomial), size_mul(t.coef, u.coef)});
    if (b.constant_ != 0) terms.push_back({t.monomial, size_mul(t.coef, b.constant_)});
  }
  if (a.constant_ != 0) {
    for (const SizeExpr::Term& u : b.terms_) terms.push_back({u.monomial, size_mul(a.constant_, u.coef)});
  }
  return SizeExpr::of_terms(size_mul(a.constant_, b.constant_), std::move(terms));
}

// ---- division, max, min -----------------------------------------------------------------------

// a / b, when b is one term that divides every term of a (and a has no constant).
std::optional<SizeExpr> SizeExpr::divide_exactly(const SizeExpr& a, const SizeExpr& b) {
  if (b.terms_.size() != 1 || b.constant_ != 0 || a.constant_ != 0 || a.terms_.empty()) return std::nullopt;
  const Term& d = b.terms_[0];
  std::vector<Term> terms;
  for (const Term& t : a.terms_) {
    auto m = divide(t.monomial, d.monomial);
    if (!m || (d.coef == -1 && t.coef == INT64_MIN) || t.coef % d.coef != 0) return std::nullopt;
    terms.push_back({std::move(*m), t.coef / d.coef});
  }
  return of_terms(0, std::move(terms));
}

SizeExpr SizeExpr::quotient_by_constant(const SizeExpr& a, int64_t c, const Symbols& symbols) {
  if (c == 1) return a;
  // a = c*q + r with r's coefficients not multiples of c and its constant in [0, c): then
  // a // c == q + r // c.
  std::vector<Term> whole, rest;
  for (const Term& t : a.terms_) (t.coef % c == 0 ? whole : rest).push_back(t);
  for (Term& t : whole) t.coef /= c;
  const int64_t q_constant = floor_quotient(a.constant_, c);
  const SizeExpr q = of_terms(q_constant, std::move(whole));
  SizeExpr r = of_terms(a.constant_ - q_constant * c, std::move(rest));
  if (r == SizeExpr()) return q;
  if (const SizeBounds rb = bounds_of(r, symbols); rb.finite() && wide_floor_quotient(rb.lo, c) == wide_floor_quotient(rb.hi, c)) {
    const WideSize k = wide_floor_quotient(rb.lo, c);  // (|k| < 2^100: it may still not be an int64)
    if (k >= INT64_MIN && k <= INT64_MAX) return q + int64_t(k);
  }
  // One form for (g*x) // (g*c): x // c.
  uint64_t g = size_magnitude(c);
  for (const Term& t : r.terms_) g = std::gcd(g, size_magnitude(t.coef));
  g = std::gcd(g, size_magnitude(r.constant_));
  if (g > 1) {
    for (Term& t : r.terms_) t.coef /= int64_t(g);
    r.constant_ /= int64_t(g);
    c /= int64_t(g);
  }
  if (r.terms_.size() == 1 && r.constant_ == 0 && r.terms_[0].coef == 1 && r.terms_[0].monomial.size() == 1 && r.terms_[0].monomial[0].power == 1) {
    const Atom& inner = *r.terms_[0].monomial[0].atom;
    if (inner.kind == Atom::Kind::floordiv && inner.b.constant()) {  // (x // k) // c == x // (k*c)
      return q + quotient_by_constant(inner.a, size_mul(*inner.b.constant(), c), symbols);
    }
  }
  auto atom = std::make_shared<Atom>();
  atom->kind = Atom::Kind::floordiv;
  atom->a = std::move(r);
  atom->b = SizeExpr(c);
  atom->key = operand_text(atom->a) + "//" + std::to_string(c);
  return q + of_atom(checked_atom(std::move(atom)));
}

SizeExpr floor_div(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) {
  if (!provably_positive(b, symbols)) throw SizeExprError("the divisor " + b.text() + " may be zero or negative");
  if (auto c = b.constant()) return SizeExpr::quotient_by_constant(a, *c, symbols);
  if (a == SizeExpr()) return a;
  if (auto exact = SizeExpr::divide_exactly(a, b)) return *exact;
  if (provably_ge(a, 0, symbols) && provably_ge(b - 1, a, symbols)) return SizeExpr();
  auto atom = std::make_shared<SizeExpr::Atom>();
  atom->kind = SizeExpr::Atom::Kind::floordiv;
  atom->a = a;
  atom->b = b;
  atom->key = SizeExpr::operand_text(a) + "//" + SizeExpr::operand_text(b);
  return SizeExpr::of_atom(SizeExpr::checked_atom(std::move(atom)));
}

// max and min are associative and commutative: nested ones of the same kind are one list of
// operands, each once, none that another provably bounds, sorted (constants last) and folded as a
// balanced tree (no deeper than any grouping of them, so the text reads back within the parser's
// depth), so max(max(a, b), c) and max(a, max(c, b)) are the same expression wherever the ranges
// decide the same operands away (provably_ge is not transitive: one grouping may drop an operand
// the other keeps; both stay equal in value).
SizeExpr SizeExpr::extremum(bool is_max, const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) {
  const Atom::Kind kind = is_max ? Atom::Kind::max : Atom::Kind::min;
  std::vector<SizeExpr> operands;
  const std::function<void(const SizeExpr&)> gather = [&](const SizeExpr& e) {
    const bool nested = e.constant_ == 0 && e.terms_.size() == 1 && e.terms_[0].coef == 1 && e.terms_[0].monomial.size() == 1 &&
                        e.terms_[0].monomial[0].power == 1 && e.terms_[0].monomial[0].atom->kind == kind;
    if (!nested) {
      operands.push_back(e);
      return;
    }
    gather(e.terms_[0].monomial[0].atom->a);
    gather(e.terms_[0].monomial[0].atom->b);
  };
  gather(a);
  gather(b);
  auto before = [](const SizeExpr& x, const SizeExpr& y) { return x.is_constant() != y.is_constant() ? y.is_constant() : compare(x, y) < 0; };
  std::sort(operands.begin(), operands.end(), before);
  operands.erase(std::unique(operands.begin(), operands.end(), [](const SizeExpr& x, const SizeExpr& y) { return compare(x, y) == 0; }),
                 operands.end());
  // x decides y where x >= y (max; x <= y for min) over every size in range; of two that decide
  // each other (equal there, spelled differently), the one first in order stays.
  auto decides = [&](const SizeExpr& x, const SizeExpr& y) { return is_max ? provably_ge(x, y, symbols) : provably_ge(y, x, symbols); };
  std::vector<SizeExpr> kept;
  for (size_t i = 0; i < operands.size(); ++i) {
    bool dropped = false;
    for (size_t j = 0; j < operands.size() && !dropped; ++j)
      dropped = j != i && decides(operands[j], operands[i]) && (j < i || !decides(operands[i], operands[j]));
    if (!dropped) kept.push_back(operands[i]);
  }
  const std::function<SizeExpr(size_t, size_t)> fold = [&](size_t from, size_t to) -> SizeExpr {
    if (to - from == 1) return kept[from];
    const size_t middle = from + (to - from) / 2;
    auto atom = std::make_shared<Atom>();
    atom->kind = kind;
    atom->a = fold(from, middle);
    atom->b = fold(middle, to);
    atom->key = std::string(is_max ? "max(" : "min(") + atom->a.text() + ", " + atom->b.text() + ")";
    return of_atom(checked_atom(std::move(atom)));
  };
  return fold(0, kept.size());
}

SizeExpr max(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) { return SizeExpr::extremum(true, a, b, symbols); }
SizeExpr min(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) { return SizeExpr::extremum(false, a, b, symbols); }

// ---- what is known ----------------------------------------------------------------------------

SizeBounds SizeExpr::bounds_of(const SizeExpr& e, const Symbols& symbols) {
  auto atom_bounds = [&](const Atom& atom) -> SizeBounds {
    switch (atom.kind) {
      case Atom::Kind::symbol: {
        const SymbolDecl* d = symbols.find(atom.name);
        return d ? symbol_bounds(*d) : SizeBounds{-kUnboundedSize, kUnboundedSize};
      }
      case Atom::Kind::floordiv: return bounds_quotient(bounds_of(atom.a, symbols), bounds_of(atom.b, symbols));
      case Atom::Kind::max:
      case Atom::Kind::min: {
        const SizeBounds x = bounds_of(atom.a, symbols), y = bounds_of(atom.b, symbols);
        if (atom.kind == Atom::Kind::max) return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
        return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
      }
    }
    return {-kUnboundedSize, kUnboundedSize};
  };
  SizeBounds total{e.constant_, e.constant_};
  for (const Term& t : e.terms_) {
    SizeBounds r{t.coef, t.coef};
    for (const Factor& f : t.monomial) {
      const SizeBounds x = atom_bounds(*f.atom);
      for (int p = 0; p < f.power; ++p) r = bounds_product(r, x);
    }
    total = bounds_sum(total, r);
  }
  return total;
}

SizeRange range_of(const SizeExpr& e, const Symbols& symbols) {
  const SizeBounds b = SizeExpr::bounds_of(e, symbols);
  return {int64_t(std::clamp<WideSize>(b.lo, INT64_MIN, INT64_MAX)), int64_t(std::clamp<WideSize>(b.hi, INT64_MIN, INT64_MAX))};
}

int64_t known_multiple(const SizeExpr& e, const Symbols& symbols) {
  uint64_t g = size_magnitude(e.constant_);
  for (const SizeExpr::Term& t : e.terms_) {
    uint64_t m = size_magnitude(t.coef);
    for (const SizeExpr::Factor& f : t.monomial) {
      const SymbolDecl* d = f.atom->kind == SizeExpr::Atom::Kind::symbol ? symbols.find(f.atom->name) : nullptr;
      for (int p = 0; d && p < f.power; ++p) {
        if (__builtin_mul_overflow(m, uint64_t(d->multiple_of), &m)) m = size_magnitude(t.coef);  // (still a divisor of the term)
      }
    }
    g = std::gcd(g, m);
  }
  return g > uint64_t(INT64_MAX) ? 1 : int64_t(g);
}

bool provably_divisible(const SizeExpr& e, int64_t n, const Symbols& symbols) {
  const int64_t g = known_multiple(e, symbols);
  return g == 0 || (n != 0 && g % n == 0);
}

std::vector<std::pair<SizeExpr, SizeExpr>> SizeExpr::atom_factors() const {
  std::vector<std::pair<SizeExpr, SizeExpr>> out;
  if (constant_ != 0 || terms_.empty()) return out;
  for (const Factor& f : terms_[0].monomial) {
    SizeExpr factor = of_atom(f.atom);
    std::optional<SizeExpr> rest = divide_exactly(*this, factor);
    if (rest && rest->constant() != 1) out.emplace_back(std::move(factor), std::move(*rest));
  }
  return out;
}

// e >= least (0 or 1): by its bounds, or, since interval arithmetic forgets that B*T - B is
// B*(T - 1), as an atom every term shares times the rest, each at least `least`.
bool SizeExpr::provably_at_least(const SizeExpr& e, int least, const Symbols& symbols) {
  if (bounds_of(e, symbols).lo >= least) return true;
  for (const auto& [factor, rest] : e.atom_factors())
    if (bounds_of(factor, symbols).lo >= least) return provably_at_least(rest, least, symbols);
  return least_at_smallest_sizes(e, least, symbols);
}

// e >= least where e never shrinks as a symbol grows by its step (each e(s + step) - e(s) at
// least 0 by its bounds) and is at least `least` at the symbols' smallest sizes: (H + 1)*(W - 1),
// expanded to H*W - H + W - 1, which interval arithmetic alone bounds below 1.
bool SizeExpr::least_at_smallest_sizes(const SizeExpr& e, int least, const Symbols& symbols) {
  SymbolValues smallest;
  try {
    for (const std::string& name : e.symbols()) {
      const SymbolDecl* d = symbols.find(name);
      if (!d) return false;
      const SizeExpr grown = e.substitute([&](const std::string& n) { return n == name ? std::optional(symbol(n) + d->multiple_of) : std::nullopt; }, symbols);
      if (bounds_of(grown - e, symbols).lo < 0) return false;
      smallest[name] = d->smallest_from(d->min).value_or(d->min);
    }
    return e.evaluate(smallest) >= least;
  } catch (const SizeExprError&) {  // (past int64)
    return false;
  }
}

bool provably_ge(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols) {
  try { return SizeExpr::provably_at_least(a - b, 0, symbols); } catch (const SizeExprError&) { return false; }  // (a - b past int64)
}

bool provably_positive(const SizeExpr& e, const Symbols& symbols) { return SizeExpr::provably_at_least(e, 1, symbols); }

// ---- reading it -------------------------------------------------------------------------------

std::optional<int64_t> SizeExpr::constant() const {
  if (!terms_.empty()) return std::nullopt;
  return constant_;
}

std::vector<std::string> SizeExpr::symbols() const {
  std::vector<std::string> out;
  for (const Term& t : terms_) {
    for (const Factor& f : t.monomial) {
      if (f.atom->kind == Atom::Kind::symbol) {
        out.push_back(f.atom->name);
        continue;
      }
      for (const SizeExpr* operand : {&f.atom->a, &f.atom->b}) {
        auto inner = operand->symbols();
        out.insert(out.end(), inner.begin(), inner.end());
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string SizeExpr::operand_text(const SizeExpr& e) {
  if (auto c = e.constant()) return *c >= 0 ? std::to_string(*c) : "(" + std::to_string(*c) + ")";
  const bool single_atom = e.constant_ == 0 && e.terms_.size() == 1 && e.terms_[0].coef == 1 && e.terms_[0].monomial.size() == 1 &&
                           e.terms_[0].monomial[0].power == 1;
  if (single_atom && e.terms_[0].monomial[0].atom->kind != Atom::Kind::floordiv) return e.text();
  return "(" + e.text() + ")";
}

// A floor quotient is written bare only where nothing binds to it first: `a*b//c` reads as
// (a*b)//c and a leading `-b//c` as (-b)//c.
std::string SizeExpr::term_text(const Term& t, bool leading) {
  const bool alone = size_magnitude(t.coef) == 1 && t.monomial.size() == 1 && t.monomial[0].power == 1 && !(leading && t.coef < 0);
  std::string out;
  if (size_magnitude(t.coef) != 1) out = std::to_string(size_magnitude(t.coef));
  for (const Factor& f : t.monomial) {
    const bool bracket = !alone && f.atom->kind == Atom::Kind::floordiv;
    for (int p = 0; p < f.power; ++p) out += (out.empty() ? "" : "*") + (bracket ? "(" + f.atom->key + ")" : f.atom->key);
  }
  return out;
}

std::string SizeExpr::text() const {
  if (terms_.empty()) return std::to_string(constant_);
  std::string out;
  for (const Term& t : terms_) {
    const bool leading = out.empty();
    out += leading ? (t.coef < 0 ? "-" : "") : (t.coef < 0 ? " - " : " + ");
    out += term_text(t, leading);
  }
  if (constant_ != 0) out += (constant_ < 0 ? " - " : " + ") + std::to_string(size_magnitude(constant_));
  return out;
}

int64_t SizeExpr::evaluate(const std::function<int64_t(const std::string&)>& value_of) const {
  auto atom_value = [&](const Atom& atom) -> int64_t {
    switch (atom.kind) {
      case Atom::Kind::symbol: return value_of(atom.name);
      case Atom::Kind::floordiv: return floor_quotient(atom.a.evaluate(value_of), atom.b.evaluate(value_of));
      case Atom::Kind::max: return std::max(atom.a.evaluate(value_of), atom.b.evaluate(value_of));
      case Atom::Kind::min: return std::min(atom.a.evaluate(value_of), atom.b.evaluate(value_of));
    }
    return 0;
  };
  // In 128 bits: the canonical order of terms must not decide whether a sum that fits int64
  // overflows on the way (2^62*P + 2^62*R - 2^62*Q).
  auto overflow = [] { return SizeExprError("size arithmetic overflows int64"); };
  WideSize total = constant_;
  for (const Term& t : terms_) {
    WideSize v = t.coef;
    for (const Factor& f : t.monomial) {
      const int64_t x = atom_value(*f.atom);
      for (int p = 0; p < f.power; ++p)
        if (__builtin_mul_overflow(v, WideSize(x), &v)) throw overflow();
    }
    if (__builtin_add_overflow(total, v, &total)) throw overflow();
  }
  if (total < INT64_MIN || total > INT64_MAX) throw overflow();
  return int64_t(total);
}

std::string SizeExpr::code(std::string_view arith, const std::function<std::string(const std::string&)>& symbol_code) const {
  auto call = [&](std::string_view op, const std::string& a, const std::string& b) { return std::string(arith) + "." + std::string(op) + "(" + a + ", " + b + ")"; };
  // As evaluate() does: an atom's operands are sizes of their own, each within int64.
  auto operand = [&](const SizeExpr& e) { return e.is_constant() ? e.code(arith, symbol_code) : std::string(arith) + ".narrow(" + e.code(arith, symbol_code) + ")"; };
  auto atom_code = [&](const Atom& atom) -> std::string {
    switch (atom.kind) {
      case Atom::Kind::symbol: return symbol_code(atom.name);
      case Atom::Kind::floordiv: return call("floordiv", operand(atom.a), operand(atom.b));
      case Atom::Kind::max: return call("max", operand(atom.a), operand(atom.b));
      case Atom::Kind::min: return call("min", operand(atom.a), operand(atom.b));
    }
    return {};
  };
  // -2^63 has no literal of its own in C++ (it is the negation of a literal too large).
  auto literal = [](int64_t c) { return c == INT64_MIN ? std::string("INT64_MIN") : std::to_string(c); };
  std::string total = terms_.empty() || constant_ != 0 ? literal(constant_) : "";
  for (const Term& t : terms_) {
    std::string product = t.coef == 1 ? "" : literal(t.coef);
    for (const Factor& f : t.monomial)
      for (int p = 0; p < f.power; ++p) product = product.empty() ? atom_code(*f.atom) : call("mul", product, atom_code(*f.atom));
    total = total.empty() ? product : call("add", total, product);
  }
  return total;
}

int64_t SizeExpr::evaluate(const SymbolValues& values) const {
  return evaluate([&](const std::string& name) {
    auto it = values.find(name);
    if (it == values.end()) throw SizeExprError("no value for symbol '" + name + "'");
    return it->second;
  });
}

SizeExpr SizeExpr::substitute(const std::function<std::optional<SizeExpr>(const std::string&)>& replace, const Symbols& symbols) const {
  auto atom_value = [&](const AtomPtr& atom) -> SizeExpr {
    switch (atom->kind) {
      case Atom::Kind::symbol: return replace(atom->name).value_or(of_atom(atom));
      case Atom::Kind::floordiv: return floor_div(atom->a.substitute(replace, symbols), atom->b.substitute(replace, symbols), symbols);
      case Atom::Kind::max: return max(atom->a.substitute(replace, symbols), atom->b.substitute(replace, symbols), symbols);
      case Atom::Kind::min: return min(atom->a.substitute(replace, symbols), atom->b.substitute(replace, symbols), symbols);
    }
    return of_atom(atom);
  };
  SizeExpr total(constant_);
  for (const Term& t : terms_) {
    SizeExpr v(t.coef);
    for (const Factor& f : t.monomial) {
      const SizeExpr x = atom_value(f.atom);
      for (int p = 0; p < f.power; ++p) v = v * x;
    }
    total = total + v;
  }
  return total;
}

}  // namespace tg
