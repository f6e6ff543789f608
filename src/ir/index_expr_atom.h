// The parts of an IndexExpr (index_expr.h), for the files that implement it: index_expr.cpp
// (building, the numbers' rules, questions, text) and index_expr_scaled.cpp (scales with products).
#pragma once
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "ir/index_expr.h"
#include "support/diagnostics.h"

namespace tg {

// What a select atom is made of: cond ? then / divisor : 0.
struct SelectParts {
  IndexCond cond;
  IndexExpr then;
  int64_t divisor = 1;
};

struct IndexExpr::Atom {
  enum class Kind { named, quotient, remainder };
  Kind kind = Kind::named;
  std::string text;     // named: a variable's name, or a select's code (ordered by it as names are)
  int dim = -1;         // named: the loop dim it is, if it is one
  std::shared_ptr<const SelectParts> select;  // named: a select's parts, when it is one
  IndexExpr operand;    // quotient, remainder: operand / divisor, operand % divisor
  int64_t divisor = 1;
  const SizeProduct* divisor_product = nullptr;  // ... times this product
  std::optional<IndexScale> bound;  // named: a loop dim's symbolic extent (it is below it)
  IndexRange range;
  size_t size = 1;
  size_t hash = 0;
};

namespace index_detail {

inline size_t mix(size_t h, size_t x) { return h ^ (x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

inline int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  TG_CHECK(!__builtin_mul_overflow(a, b, &r), "index arithmetic overflows int64");
  return r;
}

inline int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  TG_CHECK(!__builtin_add_overflow(a, b, &r), "index arithmetic overflows int64");
  return r;
}

inline int64_t floor_div(int64_t a, int64_t n) { return a / n - (a % n != 0 && a < 0); }

inline bool within(const IndexRange& r, int64_t lo, int64_t hi) { return r.known && r.lo >= lo && r.hi <= hi; }

inline IndexRange remainder_range(const IndexRange& x, int64_t n) {
  if (x.known && x.lo >= 0) return {0, std::min(x.hi, n - 1), true};
  return {-(n - 1), n - 1, true};  // (C's remainder takes the dividend's sign)
}

}  // namespace index_detail
}  // namespace tg
