#include "ir/index_scale.h"

#include <algorithm>
#include <mutex>
#include <numeric>
#include <set>
#include <tuple>

#include "ir/index_expr_atom.h"

namespace tg {

using namespace index_detail;

namespace {

int64_t saturating_mul(int64_t a, int64_t b) {
  constexpr int64_t kCap = int64_t(1) << 62;
  const __int128 r = __int128(a) * b;
  return r > kCap ? kCap : r < -kCap ? -kCap : int64_t(r);
}

}  // namespace

const SizeProduct* SizeProduct::of(std::vector<Factor> factors) {
  std::sort(factors.begin(), factors.end(), [](const Factor& a, const Factor& b) { return a.name < b.name; });
  std::vector<Factor> merged;
  for (Factor& f : factors) {
    if (!merged.empty() && merged.back().name == f.name) {
      merged.back().power += f.power;
      // (One size known two ways, in a run loop's code that assumes a multiple: both hold there.)
      merged.back().multiple = std::max(merged.back().multiple, f.multiple);
    } else {
      merged.push_back(std::move(f));
    }
  }
  std::erase_if(merged, [](const Factor& f) { return f.power == 0; });
  if (merged.empty()) return nullptr;
  struct Less {
    bool operator()(const SizeProduct& a, const SizeProduct& b) const {
      return std::lexicographical_compare(a.factors_.begin(), a.factors_.end(), b.factors_.begin(), b.factors_.end(), [](const Factor& x, const Factor& y) {
        return std::tie(x.name, x.power, x.lo, x.hi, x.divider, x.multiple) < std::tie(y.name, y.power, y.lo, y.hi, y.divider, y.multiple);
      });
    }
  };
  // (Products are few, one per symbolic stride of a trace; the set keeps them for the process.)
  static std::mutex mutex;
  static std::set<SizeProduct, Less> made;
  SizeProduct p;
  p.factors_ = std::move(merged);
  p.range_ = {1, 1, true};
  size_t h = 0x51ed;
  for (const Factor& f : p.factors_) {
    TG_CHECK(f.power > 0 && f.lo >= 0 && f.lo <= f.hi && f.multiple >= 1, "size product factor " + f.name);
    for (int k = 0; k < f.power; ++k) {
      p.range_.lo = saturating_mul(p.range_.lo, f.lo);
      p.range_.hi = saturating_mul(p.range_.hi, f.hi);
      p.text_ += (p.text_.empty() ? "" : " * ") + f.name;
      if (__builtin_mul_overflow(p.multiple_, f.multiple, &p.multiple_)) p.multiple_ = 1;  // (1 is always true)
    }
    h = mix(mix(mix(h, std::hash<std::string>()(f.name)), size_t(f.power)), size_t(f.multiple));
  }
  p.hash_ = h;
  std::lock_guard<std::mutex> lock(mutex);
  return &*made.insert(std::move(p)).first;
}

const SizeProduct* SizeProduct::times(const SizeProduct* a, const SizeProduct* b) {
  if (!a) return b;
  if (!b) return a;
  std::vector<Factor> all = a->factors_;
  all.insert(all.end(), b->factors_.begin(), b->factors_.end());
  return of(std::move(all));
}

bool SizeProduct::divides(const SizeProduct* b, const SizeProduct* a) {
  if (!b) return true;
  if (!a) return false;
  for (const Factor& f : b->factors_) {
    auto it = std::find_if(a->factors_.begin(), a->factors_.end(), [&](const Factor& g) { return g.name == f.name; });
    if (it == a->factors_.end() || it->power < f.power) return false;
  }
  return true;
}

const SizeProduct* SizeProduct::over(const SizeProduct* a, const SizeProduct* b) {
  TG_CHECK(divides(b, a), "size product division");
  if (!b) return a;
  std::vector<Factor> rest = a->factors_;
  for (const Factor& f : b->factors_)
    for (Factor& g : rest)
      if (g.name == f.name) g.power -= f.power;
  return of(std::move(rest));
}

int64_t SizeProduct::evaluate(const std::function<int64_t(const std::string& name)>& value_of) const {
  int64_t v = 1;
  for (const Factor& f : factors_)
    for (int k = 0; k < f.power; ++k) v = checked_mul(v, value_of(f.name));
  return v;
}

int SizeProduct::compare(const SizeProduct* a, const SizeProduct* b) {
  if (a == b) return 0;
  if (!a || !b) return a ? 1 : -1;
  if (int c = a->text_.compare(b->text_)) return c;  // (names and powers; ranges are one per name)
  for (size_t k = 0; k < a->factors_.size(); ++k)  // (a run loop's products know more multiples)
    if (a->factors_[k].multiple != b->factors_[k].multiple) return a->factors_[k].multiple < b->factors_[k].multiple ? -1 : 1;
  return a < b ? -1 : 1;
}

IndexScale IndexScale::operator*(const IndexScale& o) const { return {checked_mul(coef, o.coef), SizeProduct::times(product, o.product)}; }

bool IndexScale::multiple_of(const IndexScale& of) const {
  if (coef % of.coef != 0 || !SizeProduct::divides(of.product, product)) return false;
  const SizeProduct* rest = SizeProduct::over(product, of.product);
  return !rest || rest->range().lo >= 1;
}

IndexRange IndexScale::range() const {
  if (!product) return {coef, coef, true};
  return {saturating_mul(coef, product->range().lo), saturating_mul(coef, product->range().hi), true};
}

int64_t IndexScale::multiple() const {
  int64_t m;
  return product && !__builtin_mul_overflow(coef, product->multiple(), &m) ? m : coef;
}

std::string IndexScale::text() const {
  if (!product) return std::to_string(coef);
  return coef == 1 ? product->text() : product->text() + " * " + std::to_string(coef);
}

std::optional<IndexScale> checked_product(const IndexScale& a, const IndexScale& b) {
  int64_t coef;
  if (__builtin_mul_overflow(a.coef, b.coef, &coef)) return std::nullopt;
  return IndexScale{coef, SizeProduct::times(a.product, b.product)};
}

bool divisible(const IndexScale& a, const IndexScale& by) { return a.coef % by.coef == 0 && SizeProduct::divides(by.product, a.product); }

IndexScale quotient(const IndexScale& a, const IndexScale& by) { return {a.coef / by.coef, SizeProduct::over(a.product, by.product)}; }

IndexScale common_factor(const IndexScale& a, const IndexScale& b) {
  std::vector<SizeProduct::Factor> shared;
  if (a.product && b.product)
    for (const SizeProduct::Factor& f : a.product->factors())
      for (const SizeProduct::Factor& g : b.product->factors())
        if (f.name == g.name) {
          shared.push_back(f);
          shared.back().power = std::min(f.power, g.power);
        }
  return {std::gcd(a.coef, b.coef), SizeProduct::of(std::move(shared))};
}

}  // namespace tg
