// IndexExpr arithmetic by scales with a product of size parameters (index_expr.h): a kernel
// taking its sizes at run time multiplies and divides by them, and the rules of division hold at
// every size the parameters' ranges allow.
#include <algorithm>
#include <numeric>
#include <vector>

#include "ir/index_expr_atom.h"

namespace tg {

using namespace index_detail;

IndexExpr IndexExpr::operator*(const IndexScale& s) const {
  if (!s.product) return *this * s.coef;
  Terms terms;
  if (constant_ != 0) terms.push_back({unit_atom(), checked_mul(constant_, s.coef), s.product});
  for (const Term& t : terms_) terms.push_back({t.atom, checked_mul(t.coef, s.coef), SizeProduct::times(t.product, s.product)});
  return of_terms(0, std::move(terms));
}

// The scales worth splitting at for a division by s: s, and what it shares with each term's
// scale, more factors first.
std::vector<IndexScale> IndexExpr::split_candidates(const IndexScale& s) const {
  std::vector<IndexScale> out = {s};
  for (const Term& t : terms_) {
    const IndexScale c = common_factor(s, {t.coef < 0 ? -t.coef : t.coef, t.product});
    if ((c.coef > 1 || c.product) && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  auto degree = [](const IndexScale& x) {
    int n = 0;
    if (x.product)
      for (const SizeProduct::Factor& f : x.product->factors()) n += f.power;
    return n;
  };
  std::stable_sort(out.begin(), out.end(), [&](const IndexScale& a, const IndexScale& b) {
    return degree(a) != degree(b) ? degree(a) > degree(b) : a.coef > b.coef;
  });
  return out;
}

// *this = f * multiple + rest: multiple holds the terms f divides (divided by it), rest the others
// and the constant (f has a product).
std::pair<IndexExpr, IndexExpr> IndexExpr::split_at(const IndexScale& f) const {
  Terms multiple, rest;
  for (const Term& t : terms_) {
    if (divisible(term_scale(t), f)) multiple.push_back({t.atom, t.coef / f.coef, SizeProduct::over(t.product, f.product)});
    else rest.push_back(t);
  }
  return {of_terms(0, std::move(multiple)), of_terms(constant_, std::move(rest))};
}

// x / s where s has a product, by the rules the numbers' division follows, proved at every size:
// (y / a) / s is y / (a*s); x / s is 0 for 0 <= x < s; (f*m + r) / s is m / (s/f) for 0 <= r < f,
// f a factor of s, and m + r / s for f = s and r >= 0; else (x / f) / (s/f) where x / f simplifies.
IndexExpr IndexExpr::operator/(const IndexScale& s) const {
  if (!s.product) return *this / s.coef;
  if (constant() == 0) return IndexExpr(0);
  if (within(range(), 0, INT64_MAX)) {
    if (const Atom* a = single_atom(); a && a->kind == Atom::Kind::quotient)
      if (auto whole = checked_product({a->divisor, a->divisor_product}, s)) return divided(a->operand, *whole, true);
    if (below(s)) return IndexExpr(0);
    const std::vector<IndexScale> fs = split_candidates(s);
    for (const IndexScale& f : fs) {
      auto [multiple, rest] = split_at(f);
      if (rest == IndexExpr() || rest.below(f)) return f == s ? multiple : multiple / quotient(s, f);
    }
    if (auto [multiple, rest] = split_at(s); !(multiple == IndexExpr()) && within(rest.range(), 0, INT64_MAX)) return multiple + rest / s;
    for (const IndexScale& f : fs)
      if (!(f == s))
        if (IndexExpr q = *this / f; !is_division_of(q, *this)) return q / quotient(s, f);
    if (auto split = split_below_multiple(s)) return split->first / s;
  }
  return divided(*this, s, true);
}

// x % s likewise: x for 0 <= x < s; (y % (a*s)) % s is y % s; (f*m + r) % s is (m % (s/f)) * f + r
// for 0 <= r < f, and r % s for f = s and r >= 0; else ((x / f) % (s/f)) * f + x % f where x / f
// simplifies.
IndexExpr IndexExpr::operator%(const IndexScale& s) const {
  if (!s.product) return *this % s.coef;
  if (constant() == 0) return IndexExpr(0);
  if (within(range(), 0, INT64_MAX)) {
    if (below(s)) return *this;
    if (const Atom* a = single_atom(); a && a->kind == Atom::Kind::remainder && divisible({a->divisor, a->divisor_product}, s) && within(a->operand.range(), 0, INT64_MAX))
      return a->operand % s;
    const std::vector<IndexScale> fs = split_candidates(s);
    for (const IndexScale& f : fs) {
      auto [multiple, rest] = split_at(f);
      if (rest == IndexExpr() || rest.below(f)) return f == s ? rest : (multiple % quotient(s, f)) * f + rest;
    }
    if (auto [multiple, rest] = split_at(s); !(multiple == IndexExpr()) && within(rest.range(), 0, INT64_MAX)) return rest % s;
    for (const IndexScale& f : fs)
      if (!(f == s))
        if (IndexExpr q = *this / f; !is_division_of(q, *this)) return (q % quotient(s, f)) * f + *this % f;
    if (auto split = split_below_multiple(s)) return split->first % s + split->second;
  }
  return divided(*this, s, false);
}

// *this = whole + rest with whole a multiple of some m that s is a multiple of at every size and 0
// <= rest < m (rest not 0): then *this / s is whole / s and *this % s is whole % s + rest. The
// lanes of a run in a loop that assumes its sizes multiples of the run's length ((run * 4 + lane)
// / sz_T is (run * 4) / sz_T where sz_T is a multiple of 4), largest m first.
std::optional<std::pair<IndexExpr, IndexExpr>> IndexExpr::split_below_multiple(const IndexScale& s) const {
  const int64_t of_s = s.multiple();
  std::vector<int64_t> ms;
  for (const Term& t : terms_)
    if (const int64_t m = std::gcd(of_s, term_multiple(t)); m > 1) ms.push_back(m);
  std::sort(ms.rbegin(), ms.rend());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  for (int64_t m : ms) {
    const bool constant_whole = constant_ % m == 0;
    Terms whole, rest;
    for (const Term& t : terms_) (term_multiple(t) % m == 0 ? whole : rest).push_back(t);
    IndexExpr w = of_terms(constant_whole ? constant_ : 0, std::move(whole)), r = of_terms(constant_whole ? 0 : constant_, std::move(rest));
    if (!(r == IndexExpr()) && r.below({m, nullptr})) return std::pair(std::move(w), std::move(r));
  }
  return std::nullopt;
}

// Whether `e` is a quotient or remainder of `x` the rules did not look into.
bool IndexExpr::is_division_of(const IndexExpr& e, const IndexExpr& x) {
  const Atom* a = e.single_atom();
  return a && a->kind != Atom::Kind::named && a->operand == x;
}

// The quotient or remainder of `operand` by `divisor`, as an atom the rules do not look into.
IndexExpr IndexExpr::divided(const IndexExpr& operand, const IndexScale& divisor, bool quotient) {
  const IndexRange r = operand.range(), d = divisor.range();
  auto a = std::make_shared<Atom>();
  a->kind = quotient ? Atom::Kind::quotient : Atom::Kind::remainder;
  a->operand = operand;
  a->divisor = divisor.coef;
  a->divisor_product = divisor.product;
  if (quotient) a->range = r.known && r.lo >= 0 && d.lo >= 1 ? IndexRange{r.lo / d.hi, r.hi / d.lo, true} : IndexRange{0, 0, false};
  else a->range = r.known && r.lo >= 0 ? IndexRange{0, std::min(r.hi, d.hi - 1), true} : IndexRange{-(d.hi - 1), d.hi - 1, true};
  if (divisor.product && a->range.known) {
    // A quotient below a number at every size has that range (d1 / sz_T < 64 for d1 < sz_T * 64).
    if (const std::optional<IndexScale> b = atom_bound(*a); b && !b->product) a->range.hi = std::min(a->range.hi, b->coef - 1);
  }
  a->size = 1 + operand.size();
  size_t h = mix(operand.hash(), size_t(divisor.coef));  // (as the numbers' atoms hash, and the product)
  if (divisor.product) h = mix(h, divisor.product->hash());
  a->hash = mix(h, quotient ? 2 : 3);
  return of_atom(std::move(a));
}

// A bound B with 0 <= *this < B at every size, when its terms are the digits of a mixed radix:
// each coefficient a multiple of the terms' bound before it (d0 + d1 * 64 < 64 * sz_T for d0 < 64,
// d1 < sz_T). Terms are taken smallest scale first, an exact match before a multiple.
std::optional<IndexScale> IndexExpr::exclusive_bound() const {
  if (constant_ != 0) return std::nullopt;
  struct Digit {
    IndexScale scale, bound;
  };
  std::vector<Digit> digits;
  for (const Term& t : terms_) {
    const IndexRange r = t.atom->range;
    if (t.coef <= 0 || !r.known || r.lo < 0 || r.hi == INT64_MAX) return std::nullopt;
    digits.push_back({term_scale(t), atom_bound(*t.atom).value_or(IndexScale{r.hi + 1, nullptr})});
  }
  IndexScale bound{1, nullptr};
  while (!digits.empty()) {
    auto next = std::find_if(digits.begin(), digits.end(), [&](const Digit& d) { return d.scale == bound; });
    if (next == digits.end()) next = std::find_if(digits.begin(), digits.end(), [&](const Digit& d) { return d.scale.multiple_of(bound); });
    if (next == digits.end()) return std::nullopt;
    const std::optional<IndexScale> grown = checked_product(next->scale, next->bound);
    if (!grown) return std::nullopt;
    bound = *grown;
    digits.erase(next);
  }
  return bound;
}

// What an atom is below at every size, where a product says it: a loop dim's symbolic extent, a
// remainder's divisor, a quotient of what is below one.
std::optional<IndexScale> IndexExpr::atom_bound(const Atom& a) {
  if (a.kind == Atom::Kind::named) return a.bound;
  if (!within(a.operand.range(), 0, INT64_MAX)) return std::nullopt;
  const IndexScale divisor{a.divisor, a.divisor_product};
  if (a.kind == Atom::Kind::remainder) return divisor;
  // y / a < Y / a for y < Y, where a divides Y (d3 / 4 < sz_T for d3 < sz_T * 4).
  if (const std::optional<IndexScale> y = a.operand.exclusive_bound(); y && divisible(*y, divisor) && (y->product || divisor.product))
    return quotient(*y, divisor);
  return std::nullopt;
}

// 0 <= *this < s at every size.
bool IndexExpr::below(const IndexScale& s) const {
  const IndexRange r = range(), bound = s.range();
  if (!within(r, 0, INT64_MAX)) return false;
  if (r.hi < bound.lo) return true;
  const std::optional<IndexScale> b = exclusive_bound();
  return b && s.multiple_of(*b);
}

}  // namespace tg
