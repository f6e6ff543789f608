// Scales of index arithmetic: a number times a product of a kernel's size parameters (`sz_T *
// 64`), the strides and divisors of a kernel taking its sizes at run time (index_expr.h).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tg {

struct IndexRange {  // lo <= x <= hi, when known
  int64_t lo = 0, hi = 0;
  bool known = true;
};

// A product of kernel size parameters, each in its declared range: `sz_B * sz_T * sz_T`. Interned
// (one object per product for the process), so two are the same product exactly when their
// pointers are equal; the empty product is nullptr.
class SizeProduct {
 public:
  struct Factor {
    std::string name;  // the parameter (sz_<symbol>)
    int64_t lo = 1, hi = 1;
    int power = 1;
    std::string divider;  // the kernel's tg::Divider of it (dv_<symbol>), when it has one: x / name is then a multiply
    int64_t multiple = 1;  // the size is a multiple of it (declared, or checked by the run loop that assumes it)
    bool operator==(const Factor&) const = default;
  };
  static const SizeProduct* of(std::vector<Factor> factors);  // (nullptr for none)
  static const SizeProduct* times(const SizeProduct* a, const SizeProduct* b);
  // a / b where b's factors are among a's (nullptr when b is a), else whether it is not:
  static bool divides(const SizeProduct* b, const SizeProduct* a);
  static const SizeProduct* over(const SizeProduct* a, const SizeProduct* b);
  const std::vector<Factor>& factors() const { return factors_; }
  IndexRange range() const { return range_; }  // (hi saturates at 2^62)
  int64_t multiple() const { return multiple_; }  // what it is a multiple of at every size (its factors' multiples)
  const std::string& text() const { return text_; }  // "sz_B * sz_T * sz_T"
  size_t hash() const { return hash_; }
  int64_t evaluate(const std::function<int64_t(const std::string& name)>& value_of) const;
  static int compare(const SizeProduct* a, const SizeProduct* b);  // by content (nullptr first)

 private:
  std::vector<Factor> factors_;  // sorted by name, each name once
  IndexRange range_;
  int64_t multiple_ = 1;
  std::string text_;
  size_t hash_ = 0;
};

// coef * product (coef > 0): a stride or a divisor, a number where product is nullptr.
struct IndexScale {
  int64_t coef = 1;
  const SizeProduct* product = nullptr;
  IndexScale operator*(const IndexScale& o) const;
  // Whether it is a multiple of `of` at every size (its number a multiple, its product a product
  // of more factors, each at least 1): the scales of a mixed radix.
  bool multiple_of(const IndexScale& of) const;
  IndexRange range() const;
  int64_t multiple() const;  // what it is a multiple of at every size (coef times its product's)
  std::string text() const;  // "64", "sz_T", "sz_T * 64"
  bool operator==(const IndexScale&) const = default;
};

// a * b, unless the numbers' product overflows.
std::optional<IndexScale> checked_product(const IndexScale& a, const IndexScale& b);
// a is `by` times a scale (its number a multiple, its product holding by's factors).
bool divisible(const IndexScale& a, const IndexScale& by);
IndexScale quotient(const IndexScale& a, const IndexScale& by);  // (where divisible)
// The largest scale dividing both: their numbers' gcd, times the factors they share.
IndexScale common_factor(const IndexScale& a, const IndexScale& b);

}  // namespace tg
