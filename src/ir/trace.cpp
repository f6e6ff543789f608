#include "ir/trace.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace tg {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const SizeExpr* interned(const SizeExpr& expr) {
  static std::mutex mutex;  // (the backward is lowered on a thread of its own)
  static std::deque<SizeExpr> pool;
  static std::map<std::string, const SizeExpr*, std::less<>> by_text;  // canonical text: one per expression
  std::string text = expr.text();
  std::lock_guard<std::mutex> lock(mutex);
  auto [at, fresh] = by_text.try_emplace(std::move(text), nullptr);
  if (fresh) at->second = &pool.emplace_back(expr);
  return at->second;
}

Dim::Dim(int64_t size, const SizeExpr& expr) : size_(size), expr_(interned(expr)) {}

const std::string& interned_text(const SizeExpr* interned) {
  thread_local std::unordered_map<const SizeExpr*, std::string> texts;
  auto at = texts.find(interned);
  if (at == texts.end()) at = texts.emplace(interned, interned->text()).first;
  return at->second;
}

Dim Dim::constant(int64_t size) {
  thread_local std::unordered_map<int64_t, const SizeExpr*> constants;  // (interning spells the text and takes a lock)
  auto at = constants.find(size);
  if (at == constants.end()) at = constants.emplace(size, interned(SizeExpr(size))).first;
  return Dim(size, at->second);
}

namespace {

enum class DimOp { add, subtract, multiply };

// The interned result of `op` on two interned expressions, null where it is too large to keep;
// remembered per thread (the same few expressions are combined over and over: every numel of a
// shape is a product).
const SizeExpr* combined(DimOp op, const SizeExpr* a, const SizeExpr* b) {
  struct KeyHash {
    size_t operator()(const std::tuple<DimOp, const SizeExpr*, const SizeExpr*>& k) const {
      const auto [o, x, y] = k;
      return std::hash<const void*>()(x) * 31 + std::hash<const void*>()(y) * 7 + size_t(o);
    }
  };
  thread_local std::unordered_map<std::tuple<DimOp, const SizeExpr*, const SizeExpr*>, const SizeExpr*, KeyHash> memo;
  const std::tuple key{op, a, b};
  if (auto at = memo.find(key); at != memo.end()) return at->second;
  const SizeExpr* result = nullptr;
  try {
    result = interned(op == DimOp::add ? *a + *b : op == DimOp::subtract ? *a - *b : *a * *b);
  } catch (const SizeExprError&) {  // (an expression too large to keep)
  }
  return memo.emplace(key, result).first->second;
}

// `op` on the two dims' expressions, when both have one (an unknown operand makes an unknown
// result: taking its size for a constant could make a wrong expression).
Dim combine(const Dim& a, const Dim& b, int64_t size, DimOp op) {
  if (!a.expr() || !b.expr()) return Dim(size);
  return Dim(size, combined(op, a.expr(), b.expr()));
}

}  // namespace

Dim add_dims(const Dim& a, const Dim& b) { return combine(a, b, int64_t(a) + int64_t(b), DimOp::add); }
Dim subtract_dims(const Dim& a, const Dim& b) { return combine(a, b, int64_t(a) - int64_t(b), DimOp::subtract); }
Dim multiply_dims(const Dim& a, const Dim& b) { return combine(a, b, int64_t(a) * int64_t(b), DimOp::multiply); }

Dim computed_from(const Dim& from, int64_t size) { return from.expr() && from.expr()->is_constant() ? Dim::constant(size) : Dim(size); }

Dim spread_dim(const Dim& count, const Dim& step) {
  return add_dims(multiply_dims(subtract_dims(count, Dim::constant(1)), step), Dim::constant(1));
}

Dim floor_div_dim(const Dim& a, int64_t divisor, const Symbols& symbols) {
  const int64_t size = int64_t(a) / divisor - (int64_t(a) % divisor < 0);
  if (!a.expr()) return Dim(size);
  try {
    return Dim(size, floor_div(*a.expr(), SizeExpr(divisor), symbols));
  } catch (const SizeExprError&) {  // (an expression too large to keep)
    return Dim(size);
  }
}

Dim numel_dim(const Shape& shape, size_t count) {
  Dim n = Dim::constant(1);
  for (size_t i = 0; i < shape.size() && i < count; ++i) n = multiply_dims(n, shape[i]);
  return n;
}

std::vector<int64_t> sizes_of(const Shape& shape) { return {shape.begin(), shape.end()}; }

void derive_reshaped_dim(Shape& out, const Shape& in, const Symbols& symbols) {
  size_t unknown = out.size();
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].expr()) {
      if (unknown != out.size()) return;  // two unknown: no one quotient
      unknown = i;
    }
  if (unknown == out.size()) return;
  Dim others = Dim::constant(1);
  for (size_t i = 0; i < out.size(); ++i)
    if (i != unknown) others = multiply_dims(others, out[i]);
  const Dim total = numel_dim(in);
  if (!total.expr() || !others.expr() || int64_t(others) == 0) return;
  try {
    const SizeExpr quotient = floor_div(*total.expr(), *others.expr(), symbols);
    if (quotient * *others.expr() == *total.expr()) out[unknown] = Dim(out[unknown], quotient);
  } catch (const SizeExprError&) {  // a divisor that may be 0, or too large an expression: unknown it stays
  }
}

int64_t numel_at(const Shape& shape, const SymbolValues& at) {
  constexpr int64_t kMostElements = int64_t(1) << 36;  // (so the cut's costs, bits times weights, stay far from int64's limit)
  if (at.empty()) return numel(shape);
  const Dim n = numel_dim(shape);
  if (!n.expr()) return n;  // unknown there: the size it has
  try {
    return std::clamp<int64_t>(n.expr()->evaluate(at), 0, kMostElements);
  } catch (const SizeExprError&) {  // past int64 there
    return kMostElements;
  }
}

int64_t stored_bytes_at(const Value& v, bool bit_packed, const SymbolValues& at) {
  if (v.is_scalar) return 0;
  const int64_t n = numel_at(v.shape, at);
  return bit_packed ? (n + 31) / 32 * 4 : n * int64_t(dtype_bytes(v.dtype));
}

std::optional<SizeExpr> stored_bytes_expr(const Value& v, const Symbols& symbols) {
  if (v.is_scalar) return SizeExpr(0);
  const Dim n = numel_dim(v.shape);
  if (!n.expr()) return std::nullopt;
  return v.bit_packed ? floor_div(*n.expr() + SizeExpr(31), SizeExpr(32), symbols) * SizeExpr(4) : *n.expr() * SizeExpr(int64_t(dtype_bytes(v.dtype)));
}

Shape Arg::dim_list() const {
  Shape out;
  for (const Arg& a : items) out.push_back(a.dim());
  return out;
}

std::vector<int64_t> Arg::int_list() const {
  std::vector<int64_t> out;
  for (const Arg& a : items) out.push_back(a.integer);
  return out;
}

std::string sizes_text(const SymbolValues& sizes) {
  std::string out;
  for (const auto& [name, size] : sizes) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  return out;
}

std::string Trace::specialization_text() const {
  std::string ranges;
  for (const auto& [name, size] : specialized_at) ranges += (ranges.empty() ? "" : "; ") + symbols.at(name).range_text();
  const std::string sizes = sizes_text(specialized_at);
  return sizes.empty() ? "" : sizes + " (" + ranges + ")";
}

}  // namespace tg
