#include "ir/index_expr_atom.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <tuple>

#include "support/diagnostics.h"

namespace tg {

using namespace index_detail;

// ---- building -------------------------------------------------------------------------------

IndexExpr IndexExpr::named(std::string text, int64_t lo, int64_t hi, int dim) {
  auto a = std::make_shared<Atom>();
  a->hash = mix(mix(std::hash<std::string>()(text), size_t(lo)), size_t(hi));
  a->text = std::move(text);
  a->dim = dim;
  a->range = {lo, hi, true};
  return of_atom(std::move(a));
}

IndexExpr IndexExpr::dim(int k, int64_t extent) {
  // (Made once per thread and shared: fusion's walks and the emitters ask for them at every read.)
  thread_local std::map<std::pair<int, int64_t>, IndexExpr> made;
  if (made.size() > 10000) made.clear();  // (a bound, for a process generating many traces)
  auto [it, fresh] = made.try_emplace({k, extent});
  if (fresh) it->second = named("d" + std::to_string(k), 0, std::max<int64_t>(extent - 1, 0), k);
  return it->second;
}

IndexExpr IndexExpr::dim(int k, const IndexScale& extent, int64_t largest) {
  if (!extent.product) return dim(k, extent.coef);
  IndexExpr e = named("d" + std::to_string(k), 0, std::max<int64_t>(largest - 1, 0), k);
  auto atom = std::make_shared<Atom>(*e.terms_[0].atom);
  atom->bound = extent;
  atom->hash = mix(atom->hash, extent.product->hash());
  return of_atom(std::move(atom));
}

// The atom a product alone multiplies (`sz_T * 64` is 64 * sz_T * 1).
const std::shared_ptr<const IndexExpr::Atom>& IndexExpr::unit_atom() {
  static const std::shared_ptr<const Atom> unit = [] {
    auto a = std::make_shared<Atom>();
    a->text = "1";
    a->range = {1, 1, true};
    a->hash = 0x1u;
    return a;
  }();
  return unit;
}

IndexExpr IndexExpr::select(const IndexCond& cond, const IndexExpr& then, int64_t divisor, int64_t lo, int64_t hi) {
  const std::string value = divisor == 1 ? then.component_text() : "(" + then.component_text() + ") / " + std::to_string(divisor);
  IndexExpr e = named("(" + cond.text() + " ? " + value + " : 0)", lo, hi, -1);
  auto atom = std::make_shared<Atom>(*e.terms_[0].atom);
  atom->select = std::make_shared<const SelectParts>(SelectParts{cond, then, divisor});
  return of_atom(std::move(atom));
}

IndexExpr IndexExpr::sum(const std::vector<IndexExpr>& parts) {
  int64_t constant = 0;
  Terms terms;
  for (const IndexExpr& p : parts) {
    constant = checked_add(constant, p.constant_);
    terms.insert(terms.end(), p.terms_.begin(), p.terms_.end());
  }
  return of_terms(constant, std::move(terms));
}

IndexExpr IndexExpr::as_variable(std::string name) const {
  const IndexRange r = range();
  return r.known ? named(std::move(name), r.lo, r.hi) : named(std::move(name), INT64_MIN, INT64_MAX);
}

IndexExpr IndexExpr::of_atom(std::shared_ptr<const Atom> atom) {
  IndexExpr e;
  e.terms_.push_back({std::move(atom), 1});
  return e;
}

// Sorts and merges `terms` (a product alone joins the constant when it is 1), then recombines
// quotient/remainder pairs.
IndexExpr IndexExpr::of_terms(int64_t constant, Terms terms) {
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return compare(a, b) < 0; });
  Terms merged;
  for (Term& t : terms) {
    if (t.atom == unit_atom() && !t.product) {
      constant = checked_add(constant, t.coef);
      continue;
    }
    if (!merged.empty() && compare(merged.back(), t) == 0) merged.back().coef = checked_add(merged.back().coef, t.coef);
    else merged.push_back(std::move(t));
    if (merged.back().coef == 0) merged.pop_back();
  }
  IndexExpr extra;
  if (recombine(merged, extra)) return of_terms(constant, std::move(merged)) + extra;
  IndexExpr e(constant);
  e.terms_ = std::move(merged);
  return e;
}

// Finds c * x % m beside (c*m) * (x / m) (for x = y / d, also written y / (d*m)), or beside
// (c*m) * ((x / m) % k) for x >= 0, removes the pair from `terms` and sets `extra` to c * x, or
// c * (x % (m*k)). (c and m are scales: a number, times a product of size parameters.)
bool IndexExpr::recombine(Terms& terms, IndexExpr& extra) {
  for (size_t a = 0; a < terms.size(); ++a) {
    const Atom& rem = *terms[a].atom;
    if (rem.kind != Atom::Kind::remainder) continue;
    const IndexScale m{rem.divisor, rem.divisor_product};
    const std::optional<IndexScale> outer = checked_product(term_scale(terms[a]), m);
    if (!outer) continue;
    const IndexExpr& x = rem.operand;
    for (size_t b = 0; b < terms.size(); ++b) {
      if (b == a || !(term_scale(terms[b]) == *outer)) continue;
      const Atom& other = *terms[b].atom;
      const IndexScale other_divisor{other.divisor, other.divisor_product};
      std::optional<IndexExpr> found;
      const Atom* x_quotient = x.single_atom();  // x = y / d, with (x / m) written y / (d*m)
      if (other.kind == Atom::Kind::quotient && other_divisor == m && other.operand == x) {
        found = x;
      } else if (other.kind == Atom::Kind::quotient && x_quotient && x_quotient->kind == Atom::Kind::quotient && other.operand == x_quotient->operand) {
        const std::optional<IndexScale> whole = checked_product({x_quotient->divisor, x_quotient->divisor_product}, m);
        if (whole && other_divisor == *whole) found = x;
      } else if (other.kind == Atom::Kind::remainder && within(x.range(), 0, INT64_MAX)) {
        const Atom* inner = other.operand.single_atom();
        if (inner && inner->kind == Atom::Kind::quotient && IndexScale{inner->divisor, inner->divisor_product} == m && inner->operand == x)
          if (const std::optional<IndexScale> span = checked_product(m, other_divisor)) found = x % *span;
      }
      if (!found) continue;
      extra = *found * term_scale(terms[a]);
      terms.erase(terms.begin() + long(std::max(a, b)));
      terms.erase(terms.begin() + long(std::min(a, b)));
      return true;
    }
  }
  return false;
}

IndexExpr IndexExpr::operator+(const IndexExpr& other) const {
  if (other.terms_.empty()) {
    IndexExpr e = *this;
    e.constant_ = checked_add(constant_, other.constant_);
    return e;
  }
  Terms terms = terms_;
  terms.insert(terms.end(), other.terms_.begin(), other.terms_.end());
  return of_terms(checked_add(constant_, other.constant_), std::move(terms));
}

IndexExpr IndexExpr::operator*(int64_t c) const {
  if (c == 0) return IndexExpr();
  IndexExpr e = *this;  // (scaling keeps the order, and what recombined stays recombined)
  e.constant_ = checked_mul(constant_, c);
  for (Term& t : e.terms_) t.coef = checked_mul(t.coef, c);
  return e;
}


// *this = f * multiple(f) + rest(f): rest holds the terms whose coefficient f does not divide and
// the constant's remainder in [0, f). (Parts of a sorted, merged, recombined list, scaled alike, are
// all of that already.)
IndexExpr IndexExpr::multiple(int64_t f) const {
  IndexExpr e(floor_div(constant_, f));
  for (const Term& t : terms_)
    if (t.coef % f == 0) e.terms_.push_back({t.atom, t.coef / f, t.product});
  return e;
}

IndexExpr IndexExpr::rest(int64_t f) const {
  IndexExpr e(constant_ - floor_div(constant_, f) * f);
  for (const Term& t : terms_)
    if (t.coef % f != 0) e.terms_.push_back(t);
  return e;
}

bool IndexExpr::has_multiple(int64_t f) const {
  if (floor_div(constant_, f) != 0) return true;
  for (const Term& t : terms_)
    if (t.coef % f == 0) return true;
  return false;
}

// The factors f of n worth splitting at (n, and its common factors with the coefficients), largest first.
std::vector<int64_t> IndexExpr::factor_candidates(int64_t n) const {
  std::vector<int64_t> fs = {n};
  for (const Term& t : terms_) fs.push_back(std::gcd(n, t.coef < 0 ? -t.coef : t.coef));
  std::sort(fs.begin(), fs.end(), std::greater<>());
  fs.erase(std::unique(fs.begin(), fs.end()), fs.end());
  std::erase_if(fs, [](int64_t f) { return f <= 1; });
  return fs;
}

IndexExpr IndexExpr::operator/(int64_t n) const {
  TG_CHECK(n > 0, "index division by " + std::to_string(n));
  if (n == 1) return *this;
  if (auto c = constant()) return IndexExpr(*c / n);
  const IndexRange r = range();
  if (r.known && r.lo >= 0) {
    if (r.hi < n) return IndexExpr(0);
    int64_t nested;
    if (const Atom* a = single_atom(); a && a->kind == Atom::Kind::quotient && !__builtin_mul_overflow(a->divisor, n, &nested))
      return a->divisor_product ? divided(a->operand, {nested, a->divisor_product}, true) : a->operand / nested;
    const std::vector<int64_t> fs = factor_candidates(n);
    for (int64_t f : fs)
      if (within(rest_range(f), 0, f - 1)) return f == n ? multiple(f) : multiple(f) / (n / f);
    if (has_multiple(n) && within(rest_range(n), 0, INT64_MAX)) return multiple(n) + rest(n) / n;
    // By a factor first where that simplifies, so x / (f*m) is (x / f) / m as a reshape computes it.
    for (int64_t f : fs)
      if (f < n && within(rest_range(f), 0, INT64_MAX)) return (*this / f) / (n / f);
  }
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Kind::quotient;
  a->operand = *this;
  a->divisor = n;
  a->range = r.known ? IndexRange{r.lo / n, r.hi / n, true} : IndexRange{0, 0, false};
  a->size = 1 + size();
  a->hash = mix(mix(hash(), size_t(n)), 2);
  return of_atom(std::move(a));
}

IndexExpr IndexExpr::operator%(int64_t n) const {
  TG_CHECK(n > 0, "index remainder by " + std::to_string(n));
  if (n == 1) return IndexExpr(0);
  if (auto c = constant()) return IndexExpr(*c % n);
  const IndexRange r = range();
  if (r.known && r.lo >= 0) {
    if (r.hi < n) return *this;
    if (const Atom* a = single_atom(); a && a->kind == Atom::Kind::remainder && a->divisor % n == 0 && within(a->operand.range(), 0, INT64_MAX))
      return a->operand % n;
    const std::vector<int64_t> fs = factor_candidates(n);
    for (int64_t f : fs)
      if (within(rest_range(f), 0, f - 1)) return f == n ? rest(f) : (multiple(f) % (n / f)) * f + rest(f);
    if (has_multiple(n) && within(rest_range(n), 0, INT64_MAX)) return rest(n) % n;
    for (int64_t f : fs)
      if (f < n && within(rest_range(f), 0, INT64_MAX)) return ((*this / f) % (n / f)) * f + *this % f;
  }
  auto a = std::make_shared<Atom>();
  a->kind = Atom::Kind::remainder;
  a->operand = *this;
  a->divisor = n;
  a->range = remainder_range(r, n);
  a->size = 1 + size();
  a->hash = mix(mix(hash(), size_t(n)), 3);
  return of_atom(std::move(a));
}

IndexExpr IndexExpr::with_dims(const std::vector<IndexExpr>& defs) const {
  std::vector<IndexExpr> parts = {IndexExpr(constant_)};
  for (const Term& t : terms_) {
    const Atom& a = *t.atom;
    IndexExpr replaced;
    if (a.kind == Atom::Kind::named) replaced = a.dim >= 0 && size_t(a.dim) < defs.size() ? defs[size_t(a.dim)] : of_atom(t.atom);
    else if (a.kind == Atom::Kind::quotient) replaced = a.operand.with_dims(defs) / IndexScale{a.divisor, a.divisor_product};
    else replaced = a.operand.with_dims(defs) % IndexScale{a.divisor, a.divisor_product};
    parts.push_back(replaced * term_scale(t));
  }
  return sum(parts);
}

// ---- questions ------------------------------------------------------------------------------

const IndexExpr::Atom* IndexExpr::single_atom() const {
  return constant_ == 0 && terms_.size() == 1 && terms_[0].coef == 1 && !terms_[0].product ? terms_[0].atom.get() : nullptr;
}

std::pair<IndexExpr, IndexExpr> IndexExpr::partition(const std::function<bool(const IndexExpr& term)>& first) const {
  Terms taken, rest;
  for (const Term& t : terms_) (first(of_terms(0, {t})) ? taken : rest).push_back(t);
  return {of_terms(0, std::move(taken)), of_terms(constant_, std::move(rest))};
}

std::optional<int64_t> IndexExpr::constant() const {
  if (terms_.empty()) return constant_;
  return std::nullopt;
}

std::optional<int> IndexExpr::as_dim() const {
  const Atom* a = single_atom();
  if (a && a->dim >= 0) return a->dim;
  return std::nullopt;
}

const std::string* IndexExpr::as_named() const {
  const Atom* a = single_atom();
  return a && a->kind == Atom::Kind::named ? &a->text : nullptr;
}

bool IndexExpr::has_div_or_mod() const {
  for (const Term& t : terms_)
    if (t.atom->kind != Atom::Kind::named) return true;
  return false;
}

std::vector<int> IndexExpr::dims() const {
  std::vector<int> out;
  for (const Term& t : terms_) {
    if (t.atom->dim >= 0) out.push_back(t.atom->dim);
    if (t.atom->kind != Atom::Kind::named)
      for (int d : t.atom->operand.dims()) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> IndexExpr::names() const {
  std::vector<std::string> out;
  for (const Term& t : terms_) {
    const Atom& a = *t.atom;
    if (a.select) {
      for (std::string& n : a.select->cond.names()) out.push_back(std::move(n));
      for (std::string& n : a.select->then.names()) out.push_back(std::move(n));
    } else if (a.kind == Atom::Kind::named) {
      if (t.atom != unit_atom()) out.push_back(a.text);
    } else {
      for (std::string& n : a.operand.names()) out.push_back(std::move(n));
    }
  }
  for (std::string& n : size_names()) out.push_back(std::move(n));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> IndexExpr::size_names() const {
  std::vector<std::string> out;
  auto add = [&out](const SizeProduct* p) {
    if (p)
      for (const SizeProduct::Factor& f : p->factors()) out.push_back(f.name);
  };
  for (const Term& t : terms_) {
    add(t.product);
    const Atom& a = *t.atom;
    if (a.kind != Atom::Kind::named) {
      add(a.divisor_product);
      if (by_dividers(a))
        for (const SizeProduct::Factor& f : a.divisor_product->factors()) out.push_back(f.divider);
      for (std::string& n : a.operand.size_names()) out.push_back(std::move(n));
    }
    if (a.select)
      for (const IndexExpr* e : {&a.select->then})
        for (std::string& n : e->size_names()) out.push_back(std::move(n));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool IndexExpr::multiple_of(int64_t n) const { return known_multiple() % n == 0; }

int64_t IndexExpr::known_multiple() const {
  int64_t m = constant_ < 0 ? -constant_ : constant_;
  for (const Term& t : terms_) m = std::gcd(m, term_multiple(t));
  return m;
}

// coef * product * atom: a remainder of a multiple of m by a multiple of m is one too (C's as
// floor's: x % d = x - (x / d) * d).
int64_t IndexExpr::term_multiple(const Term& t) {
  const Atom& a = *t.atom;
  int64_t of_atom = 1;
  if (a.kind == Atom::Kind::remainder) of_atom = std::gcd(a.operand.known_multiple(), IndexScale{a.divisor, a.divisor_product}.multiple());
  int64_t m;
  if (__builtin_mul_overflow(IndexScale{t.coef < 0 ? -t.coef : t.coef, t.product}.multiple(), of_atom, &m)) return t.coef < 0 ? -t.coef : t.coef;
  return m;
}

IndexRange IndexExpr::range() const { return partial_range(constant_, 0); }

IndexRange IndexExpr::rest_range(int64_t f) const { return partial_range(constant_ - floor_div(constant_, f) * f, f); }

// The range of `constant` plus the terms whose coefficient f does not divide (all of them for f = 0).
IndexRange IndexExpr::partial_range(int64_t constant, int64_t f) const {
  __int128 lo = constant, hi = constant;
  for (const Term& t : terms_) {
    if (f != 0 && t.coef % f == 0) continue;
    IndexRange r = t.atom->range;
    if (!r.known) return {0, 0, false};
    if (t.product) {  // (a product's range is positive: the atom's bounds times its ends)
      const IndexRange p = t.product->range();
      const __int128 ends[4] = {__int128(r.lo) * p.lo, __int128(r.lo) * p.hi, __int128(r.hi) * p.lo, __int128(r.hi) * p.hi};
      const __int128 least = *std::min_element(ends, ends + 4), most = *std::max_element(ends, ends + 4);
      if (least < INT64_MIN || most > INT64_MAX) return {0, 0, false};
      r = {int64_t(least), int64_t(most), true};
    }
    const __int128 a = __int128(r.lo) * t.coef, b = __int128(r.hi) * t.coef;
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
  if (lo < INT64_MIN || hi > INT64_MAX) return {0, 0, false};
  return {int64_t(lo), int64_t(hi), true};
}

size_t IndexExpr::size() const {
  size_t n = 0;
  for (const Term& t : terms_) n += t.atom->size;
  return n;
}

size_t IndexExpr::hash() const {
  size_t h = std::hash<int64_t>()(constant_);
  for (const Term& t : terms_) {
    h = mix(mix(h, t.atom->hash), std::hash<int64_t>()(t.coef));
    if (t.product) h = mix(h, t.product->hash());
  }
  return h;
}

bool IndexExpr::operator==(const IndexExpr& other) const { return compare(*this, other) == 0; }

int IndexExpr::compare(const IndexExpr& a, const IndexExpr& b) {
  if (a.constant_ != b.constant_) return a.constant_ < b.constant_ ? -1 : 1;
  if (a.terms_.size() != b.terms_.size()) return a.terms_.size() < b.terms_.size() ? -1 : 1;
  for (size_t i = 0; i < a.terms_.size(); ++i) {
    if (int c = compare(a.terms_[i], b.terms_[i])) return c;
    if (a.terms_[i].coef != b.terms_[i].coef) return a.terms_[i].coef < b.terms_[i].coef ? -1 : 1;
  }
  return 0;
}

// By atom, then product (the order terms are kept in; the coefficient aside).
int IndexExpr::compare(const Term& a, const Term& b) {
  if (int c = compare(*a.atom, *b.atom)) return c;
  return SizeProduct::compare(a.product, b.product);
}

int IndexExpr::compare(const Atom& a, const Atom& b) {
  if (&a == &b) return 0;
  if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
  if (a.kind == Atom::Kind::named) {  // (one name may stand for other code, with another range, elsewhere)
    if (int c = a.text.compare(b.text)) return c;
    if (a.range.lo != b.range.lo) return a.range.lo < b.range.lo ? -1 : 1;
    if (a.range.hi != b.range.hi) return a.range.hi < b.range.hi ? -1 : 1;
    if (a.bound.has_value() != b.bound.has_value()) return a.bound ? 1 : -1;
    if (!a.bound || *a.bound == *b.bound) return 0;
    if (a.bound->coef != b.bound->coef) return a.bound->coef < b.bound->coef ? -1 : 1;
    return SizeProduct::compare(a.bound->product, b.bound->product);
  }
  if (a.divisor != b.divisor) return a.divisor < b.divisor ? -1 : 1;
  if (int c = SizeProduct::compare(a.divisor_product, b.divisor_product)) return c;
  return compare(a.operand, b.operand);
}

int64_t IndexExpr::evaluate(const std::function<int64_t(const std::string& name)>& value_of) const {
  int64_t v = constant_;
  for (const Term& t : terms_) {
    const Atom& a = *t.atom;
    const int64_t scale = t.product ? t.coef * t.product->evaluate(value_of) : t.coef;
    if (a.select) {
      const SelectParts& p = *a.select;
      v += scale * (p.cond.holds(value_of) ? p.then.evaluate(value_of) / p.divisor : 0);
      continue;
    }
    if (t.atom == unit_atom()) {
      v += scale;
      continue;
    }
    const int64_t x = a.kind == Atom::Kind::named ? value_of(a.text) : a.operand.evaluate(value_of);
    const int64_t divisor = a.divisor_product ? a.divisor * a.divisor_product->evaluate(value_of) : a.divisor;
    v += scale * (a.kind == Atom::Kind::named ? x : a.kind == Atom::Kind::quotient ? x / divisor : x % divisor);
  }
  return v;
}

// ---- text -----------------------------------------------------------------------------------

// Terms by decreasing coefficient (a row-major offset: outer dims first), the constant last.
std::string IndexExpr::text() const {
  if (terms_.empty()) return std::to_string(constant_);
  std::vector<const Term*> order;
  for (const Term& t : terms_) order.push_back(&t);
  auto magnitude = [](const Term* t) { return t->coef < 0 ? -__int128(t->coef) : __int128(t->coef); };
  std::sort(order.begin(), order.end(), [&](const Term* a, const Term* b) {
    return magnitude(a) != magnitude(b) ? magnitude(a) > magnitude(b) : a < b;  // (ties: in canonical order)
  });
  std::string s;
  for (const Term* t : order) {
    if (s.empty()) s = (t->coef < 0 ? "-" : "") + term_text(*t);
    else s += (t->coef < 0 ? " - " : " + ") + term_text(*t);
  }
  if (constant_ > 0) s += " + " + std::to_string(constant_);
  if (constant_ < 0) s += " - " + std::to_string(constant_).substr(1);
  return s;
}

std::string IndexExpr::component_text() const {
  return as_named() || constant() ? text() : "(" + text() + ")";
}

// `atom * product * |coef|` (the product alone for the unit atom), as C++ computes it left to right.
std::string IndexExpr::term_text(const Term& t) const {
  const bool unit = t.coef == 1 || t.coef == -1;
  const std::string magnitude = std::to_string(t.coef).substr(t.coef < 0 ? 1 : 0);
  if (t.atom == unit_atom()) return t.product->text() + (unit ? "" : " * " + magnitude);
  std::string a = atom_text(*t.atom);
  if (t.atom->kind != Atom::Kind::named && !by_dividers(*t.atom) && (!unit || t.product)) a = "(" + a + ")";  // (a call, or in parentheses)
  if (t.product) a += " * " + t.product->text();
  return unit ? a : a + " * " + magnitude;
}

std::string IndexExpr::atom_text(const Atom& a) {
  if (a.kind == Atom::Kind::named) return a.text;
  const IndexScale divisor{a.divisor, a.divisor_product};
  if (by_dividers(a)) return divided_text(a);
  const bool one_name = !a.divisor_product || (a.divisor == 1 && a.divisor_product->factors().size() == 1 && a.divisor_product->factors()[0].power == 1);
  const std::string d = one_name ? divisor.text() : "(" + divisor.text() + ")";
  return operand_text(a.operand) + (a.kind == Atom::Kind::quotient ? " / " : " % ") + d;
}

// Whether a quotient or remainder divides by its product's dividers (each factor a kernel's
// tg::Divider, x >= 0): a multiply-high and a shift each, where `/` by a run-time value is a
// division routine of some 40 instructions.
bool IndexExpr::by_dividers(const Atom& a) {
  if (!a.divisor_product || a.kind == Atom::Kind::named) return false;
  const IndexRange r = a.operand.range();
  if (!r.known || r.lo < 0) return false;
  for (const SizeProduct::Factor& f : a.divisor_product->factors())
    if (f.divider.empty()) return false;
  return true;
}

// x / (c * sz_A * sz_B) as tg::quot(tg::quot(x / c, dv_A), dv_B); x % sz_A as tg::rem(x, dv_A),
// and x % (c * sz_A ...) as x less the quotient times the divisor; in 32 bits (quot32, rem32) where
// x < 2^31 at every size.
std::string IndexExpr::divided_text(const Atom& a) {
  const std::string x = operand_text(a.operand);
  const std::vector<SizeProduct::Factor>& factors = a.divisor_product->factors();
  const std::string bits = a.operand.range().hi < (int64_t(1) << 31) ? "32" : "";
  if (a.kind == Atom::Kind::remainder && a.divisor == 1 && factors.size() == 1 && factors[0].power == 1)
    return "tg::rem" + bits + "(" + a.operand.text() + ", " + factors[0].divider + ")";
  std::string q = a.divisor == 1 ? a.operand.text() : x + " / " + std::to_string(a.divisor);
  for (const SizeProduct::Factor& f : factors)
    for (int k = 0; k < f.power; ++k) q = "tg::quot" + bits + "(" + q + ", " + f.divider + ")";
  if (a.kind == Atom::Kind::quotient) return q;
  return "(" + x + " - " + q + " * " + IndexScale{a.divisor, a.divisor_product}.text() + ")";
}

std::string IndexExpr::operand_text(const IndexExpr& e) {
  if (const std::string* name = e.as_named()) return *name;
  if (const Atom* a = e.single_atom(); a && by_dividers(*a)) return e.text();  // (a call, or in parentheses)
  return "(" + e.text() + ")";
}

// ---- conditions -----------------------------------------------------------------------------

IndexCond IndexCond::named(std::string variable) {
  IndexCond c;
  c.variable = std::move(variable);
  return c;
}

std::string IndexCond::text() const {
  if (!variable.empty()) return variable;
  std::string s;
  for (const Clause& c : clauses) {
    const std::string x = c.x.component_text();
    const std::string hi = c.upper == IndexExpr() ? std::to_string(c.hi) : (c.upper + c.hi).component_text();
    std::string clause = "(" + x + " >= " + std::to_string(c.lo) + " && " + x + " < " + hi + ")";
    if (c.step != 1) clause = "(" + clause + " && " + x + " % " + std::to_string(c.step) + " == 0)";
    s += (s.empty() ? "" : " && ") + clause;
  }
  return s;
}

std::vector<std::string> IndexCond::names() const {
  if (!variable.empty()) return {variable};
  std::vector<std::string> out;
  for (const Clause& c : clauses)
    for (const IndexExpr* e : {&c.x, &c.upper})
      for (std::string& n : e->names()) out.push_back(std::move(n));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool IndexCond::holds(const std::function<int64_t(const std::string& name)>& value_of) const {
  if (!variable.empty()) return value_of(variable) != 0;
  for (const Clause& c : clauses) {
    const int64_t x = c.x.evaluate(value_of);
    if (x < c.lo || x >= c.hi + c.upper.evaluate(value_of) || x % c.step != 0) return false;
  }
  return true;
}

size_t IndexCond::hash() const {
  size_t h = std::hash<std::string>()(variable);
  for (const Clause& c : clauses) h = mix(mix(mix(h, c.x.hash()), size_t(c.lo)), mix(mix(size_t(c.hi), size_t(c.step)), c.upper.hash()));
  return h;
}

}  // namespace tg
