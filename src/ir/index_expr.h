// Index arithmetic as expressions, simplified as they are built.
//
// An IndexExpr is an integer sum: a constant plus terms `coefficient * atom`, where an atom is a
// named value with a range (a kernel's loop dim d<k>, its flat index i, a named piece of index
// code) or the quotient or remainder (C's `/` and `%`) of an expression by a positive constant.
// The operators simplify with what the ranges say:
//   - constants fold; x / 1 -> x and x % 1 -> 0; for 0 <= x < n, x / n -> 0 and x % n -> x;
//   - (a*n + b) / n -> a and (a*n + b) % n -> b for 0 <= b < n; more generally, with f a factor
//     of n = f*m: (a*f + b) / n -> a / m and (a*f + b) % n -> (a % m) * f + b for 0 <= b < f;
//     and for any b >= 0, (a*n + b) / n -> a + b / n and (a*n + b) % n -> b % n;
//   - (x / a) / b -> x / (a*b), and (x % a) % b -> x % b where b divides a;
//   - x / (f*m) -> (x / f) / m and x % (f*m) -> ((x / f) % m) * f + x % f where x / f simplifies,
//     so a quotient has the form a reshape gives it, whichever way it was reached;
//   - (x / n) * n + x % n -> x (also written (y / (d*n)) * n + (y / d) % n -> y / d), and
//     ((x / a) % b) * a + x % a -> x % (a*b): the quotients and remainders of a contiguous reshape
//     recombined into the index they came from.
// Rules that hold for floor division only are applied where the operand is known non-negative
// (C's division truncates). Expressions are kept in one form (terms sorted, equal atoms merged),
// so == says whether two reads compute the same index.
//
// In a kernel taking its sizes at run time, a symbolic dim scales and divides as a product of the
// kernel's size parameters (`sz_B * sz_T`, a SizeProduct): a term's coefficient and a quotient's
// or remainder's divisor are then an IndexScale, a number times such a product, and a sum may hold
// a product alone (`sz_T * 64`, a term of the unit atom). The rules above then apply where they
// hold at every size the parameters' ranges allow: what divides a product is read off its factors,
// and `0 <= b < n` for a divisor n with a product is proved from the digits of a mixed radix
// (d1 * 64 + d0 < sz_T * 64 where d0 < 64 and d1 < sz_T), never from one size's values. Where the
// product's factors have dividers (dv_T, the runtime's tg::Divider) and the operand is not
// negative, the code divides by multiplying (tg::quot, tg::rem), as a division by a constant does.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/index_scale.h"

namespace tg {

class IndexExpr;
struct IndexCond;

class IndexExpr {
 public:
  IndexExpr() = default;  // 0
  explicit IndexExpr(int64_t constant) : constant_(constant) {}
  // A value the expression does not look into, in [lo, hi]: a variable by its name, or code.
  static IndexExpr named(std::string text, int64_t lo, int64_t hi) { return named(std::move(text), lo, hi, -1); }
  // The loop dim d<k> of a kernel, 0 <= d<k> < extent.
  static IndexExpr dim(int k, int64_t extent);
  // ... of a symbolic extent (a product), whose largest size is `largest`.
  static IndexExpr dim(int k, const IndexScale& extent, int64_t largest);
  // The scale alone (`sz_T * 64`).
  static IndexExpr of_scale(const IndexScale& s) { return IndexExpr(1) * s; }
  // `cond ? then / divisor : 0` (the division written as is, C's), in [lo, hi]: where a pad or
  // cat reads its operand, 0 where it reads none of it. Not looked into by the simplifier.
  static IndexExpr select(const IndexCond& cond, const IndexExpr& then, int64_t divisor, int64_t lo, int64_t hi);
  // A variable named `name` standing for this expression (with its range).
  IndexExpr as_variable(std::string name) const;

  IndexExpr operator+(const IndexExpr& other) const;
  static IndexExpr sum(const std::vector<IndexExpr>& parts);  // (one normalization for all of them)
  IndexExpr operator+(int64_t c) const { return *this + IndexExpr(c); }
  IndexExpr operator*(int64_t c) const;
  IndexExpr operator/(int64_t n) const;  // n > 0
  IndexExpr operator%(int64_t n) const;  // n > 0
  IndexExpr operator*(const IndexScale& s) const;
  IndexExpr operator/(const IndexScale& s) const;
  IndexExpr operator%(const IndexScale& s) const;

  std::optional<int64_t> constant() const;       // when it is one
  std::optional<int> as_dim() const;             // when it is exactly d<k>: k
  const std::string* as_named() const;           // when it is exactly one named value: its text
  bool has_div_or_mod() const;
  std::vector<int> dims() const;                 // the loop dims it mentions
  std::vector<std::string> names() const;        // the named values it mentions, d<k> among them (and
                                                 // those a select's condition and value mention)
  bool multiple_of(int64_t n) const;             // at every size (its terms' and constant's multiples)
  // The products its terms and divisors mention, and the dividers it divides by (so a kernel
  // knows its size parameters: names() has them too).
  std::vector<std::string> size_names() const;
  // Each d<k> with k < defs.size() replaced by defs[k] (what the kernel declares it as), simplified.
  IndexExpr with_dims(const std::vector<IndexExpr>& defs) const;
  // Its terms in two sums: those `first` takes (asked of each term alone), and the rest with the
  // constant.
  std::pair<IndexExpr, IndexExpr> partition(const std::function<bool(const IndexExpr& term)>& first) const;
  IndexRange range() const;
  size_t size() const;                           // atoms, counting those inside quotients and remainders
  std::string text() const;                      // as C++ (int64_t arithmetic)
  // As a term of larger code: a name or a number as it is, anything else in parentheses.
  std::string component_text() const;
  // Its value, given each named value's (tests check the simplifications with it).
  int64_t evaluate(const std::function<int64_t(const std::string& name)>& value_of) const;
  size_t hash() const;
  bool operator==(const IndexExpr& other) const;

 private:
  struct Atom;
  struct Term {
    std::shared_ptr<const Atom> atom;
    int64_t coef;
    const SizeProduct* product = nullptr;  // the term is coef * product * atom
  };
  using Terms = std::vector<Term>;
  int64_t constant_ = 0;
  Terms terms_;  // sorted by atom, each atom once, no zero coefficient

  static IndexExpr named(std::string text, int64_t lo, int64_t hi, int dim);
  static IndexExpr of_atom(std::shared_ptr<const Atom> atom);
  static const std::shared_ptr<const Atom>& unit_atom();
  static IndexExpr divided(const IndexExpr& operand, const IndexScale& divisor, bool quotient);
  static bool is_division_of(const IndexExpr& e, const IndexExpr& x);
  static int compare(const Term& a, const Term& b);
  static std::optional<IndexScale> atom_bound(const Atom& a);
  static IndexScale term_scale(const Term& t) { return {t.coef, t.product}; }
  std::vector<IndexScale> split_candidates(const IndexScale& s) const;
  std::pair<IndexExpr, IndexExpr> split_at(const IndexScale& f) const;
  std::optional<IndexScale> exclusive_bound() const;
  bool below(const IndexScale& s) const;
  static IndexExpr of_terms(int64_t constant, Terms terms);
  static int compare(const IndexExpr& a, const IndexExpr& b);
  static int compare(const Atom& a, const Atom& b);
  static bool recombine(Terms& terms, IndexExpr& extra);
  const Atom* single_atom() const;  // the atom, when the expression is exactly 1 * atom
  IndexExpr multiple(int64_t f) const;
  IndexExpr rest(int64_t f) const;
  int64_t known_multiple() const;  // what it is a multiple of at every size (0 for 0)
  static int64_t term_multiple(const Term& t);
  std::optional<std::pair<IndexExpr, IndexExpr>> split_below_multiple(const IndexScale& s) const;
  bool has_multiple(int64_t f) const;
  IndexRange rest_range(int64_t f) const;
  IndexRange partial_range(int64_t constant, int64_t f) const;
  std::vector<int64_t> factor_candidates(int64_t n) const;
  std::string term_text(const Term& t) const;
  static std::string atom_text(const Atom& a);
  static bool by_dividers(const Atom& a);
  static std::string divided_text(const Atom& a);
  static std::string operand_text(const IndexExpr& e);
};

// A condition on indexes: every clause lo <= x < hi + upper (and x % step == 0 where step > 1) holds; or
// a bool variable holding such a condition (`variable`). No clause and no variable: always true.
struct IndexCond {
  struct Clause {
    IndexExpr x;
    int64_t lo = 0, hi = 0;  // lo <= x < hi + upper
    int64_t step = 1;        // ... and x a multiple of it
    IndexExpr upper;         // 0, or where the bound is a size taken at run time, that size (sz_T_m1)
    bool operator==(const Clause& o) const = default;
  };
  std::vector<Clause> clauses;
  std::string variable;

  static IndexCond named(std::string variable);
  bool always() const { return clauses.empty() && variable.empty(); }
  std::string text() const;  // "(x >= lo && x < hi) && ...", or the variable (x as component_text writes it)
  std::vector<std::string> names() const;
  bool holds(const std::function<int64_t(const std::string& name)>& value_of) const;
  size_t hash() const;
  bool operator==(const IndexCond& o) const = default;
};

}  // namespace tg
