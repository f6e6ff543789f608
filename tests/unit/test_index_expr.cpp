// Index expressions: each simplification, that simplified expressions keep their values (random
// expressions evaluated everywhere), and that a contiguous reshape read at a kernel's flat index
// is that index.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>

#include "ir/index_expr.h"

using tg::IndexExpr;

namespace {

// A kernel's loop dims over `shape`, and what each is in its flat index i (as the emitter declares them).
std::vector<IndexExpr> dims_of(const std::vector<int64_t>& shape) {
  std::vector<IndexExpr> dims;
  for (size_t k = 0; k < shape.size(); ++k) dims.push_back(IndexExpr::dim(int(k), shape[k]));
  return dims;
}

// The row-major index over `shape` of the element at `flat`: its quotients and remainders.
std::vector<IndexExpr> unflatten(const IndexExpr& flat, const std::vector<int64_t>& shape) {
  std::vector<IndexExpr> index(shape.size());
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = k > 0 ? (flat / stride) % shape[k] : flat / stride;
    stride *= shape[k];
  }
  return index;
}

std::vector<IndexExpr> flat_definitions(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return unflatten(IndexExpr::named("i", 0, n - 1), shape);
}

IndexExpr linear(const std::vector<IndexExpr>& index, const std::vector<int64_t>& shape) {
  IndexExpr sum;
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    sum = sum + index[k] * stride;
    stride *= shape[k];
  }
  return sum;
}

// The index into a value of shape `to` that element `index` of its reshape to `from` reads.
std::vector<IndexExpr> reshaped(const std::vector<IndexExpr>& index, const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  return unflatten(linear(index, from), to);
}

const IndexExpr d0 = IndexExpr::dim(0, 64), d1 = IndexExpr::dim(1, 3072);

}  // namespace

TEST_CASE("index expressions: constants fold, with C's truncating division") {
  CHECK((IndexExpr(17) * 3 + 4) / 5 == IndexExpr(11));
  CHECK((IndexExpr(17) * 3 + 4) % 5 == IndexExpr(0));
  CHECK(IndexExpr(-7) / 2 == IndexExpr(-3));
  CHECK(IndexExpr(-7) % 2 == IndexExpr(-1));
  CHECK((d0 * 0 + 5).constant() == 5);
  CHECK((d0 / 1) == d0);
  CHECK((d0 % 1) == IndexExpr(0));
}

TEST_CASE("index expressions: (a*n + b) / n is a and % n is b for 0 <= b < n") {
  const IndexExpr flat = d0 * 3072 + d1;
  CHECK(flat / 3072 == d0);
  CHECK(flat % 3072 == d1);
  CHECK((flat / 3072).as_dim() == 0);
  // With a factor of n: (a*f + b) / (f*m) is a / m, and the remainder (a % m) * f + b.
  CHECK((flat / 49152).text() == "d0 / 16");
  CHECK((flat % 49152).text() == "(d0 % 16) * 3072 + d1");
  // 0 <= x < n: x / n is 0, x % n is x.
  CHECK(d1 / 3072 == IndexExpr(0));
  CHECK(d1 % 3072 == d1);
  CHECK((d0 / 4) / 4 == d0 / 16);
  CHECK((d0 % 16) % 4 == d0 % 4);
}

TEST_CASE("index expressions: no rule where its condition may fail") {
  const IndexExpr b = IndexExpr::dim(1, 8);  // b can reach n = 4
  CHECK_FALSE((d0 * 4 + b) / 4 == d0);
  CHECK_FALSE((d0 * 4 + b) % 4 == b);
  CHECK((d0 * 4 + b).has_div_or_mod() == false);
  // A possibly negative operand: C truncates towards zero, so (x - 2) / 4 keeps its division.
  const IndexExpr shifted = d0 + -2;
  CHECK((shifted / 4).text() == "(d0 - 2) / 4");
  CHECK((shifted % 4).text() == "(d0 - 2) % 4");
  CHECK((shifted / 4).has_div_or_mod());
}

TEST_CASE("index expressions: quotients and remainders recombine") {
  const IndexExpr i = IndexExpr::named("i", 0, 196607);
  CHECK((i / 3072) * 3072 + i % 3072 == i);
  CHECK(((i / 3072) % 16) * 3072 + i % 3072 == i % 49152);
  CHECK((i / 49152) * 49152 + ((i / 3072) % 16) * 3072 + i % 3072 == i);
  CHECK(((i / 3072) % 16).text() == "(i / 3072) % 16");
  // Another coefficient: not a recombination.
  CHECK((i / 3072) * 3071 + i % 3072 != i);
  // The quotient of a quotient, written as one: d0 * 3 + d1 for d0 = i / 192, d1 = (i / 64) % 3
  // (a [B*T] row statistic read in a [B, T, 64] kernel) is the row, i / 64, at every size.
  CHECK((i / 192) * 3 + (i / 64) % 3 == i / 64);
  CHECK((i / 192) * 3 + (i / 32) % 3 != i / 32);  // 32 * 3 is not 192
  CHECK((i / 192) * 2 + (i / 64) % 3 != i / 64);
  for (int64_t x : {0, 1, 63, 64, 191, 192, 12345, 196607})
    CHECK(((i / 192) * 3 + (i / 64) % 3).evaluate([&](const std::string&) { return x; }) == x / 64);
}

TEST_CASE("index expressions: gpt2_mlp's reshape of t17, read at a pointwise kernel's element, is i") {
  // [64, 3072] read from [4, 16, 3072]: ix = (d0*3072 + d1) / 49152, ... / 3072 % 16, % 3072.
  const std::vector<IndexExpr> ix = reshaped(dims_of({64, 3072}), {64, 3072}, {4, 16, 3072});
  const IndexExpr offset = linear(ix, {4, 16, 3072});
  CHECK(offset == d0 * 3072 + d1);
  CHECK(offset.with_dims(flat_definitions({64, 3072})).text() == "i");
}

TEST_CASE("index expressions: a reshape between any two shapes, read at the flat index, is i") {
  std::mt19937 rng(7);
  const std::vector<int64_t> factors = {2, 3, 4, 5, 6, 8};
  for (int trial = 0; trial < 500; ++trial) {
    // Two shapes of one size: its prime factors shuffled and grouped into dims at random, so the
    // dims of one need not nest in the other's ([6, 8] and [4, 3, 4]).
    std::vector<int64_t> primes;
    for (int k = 0, rank = 2 + int(rng() % 4); k < rank; ++k)
      for (int64_t x = factors[rng() % factors.size()], p = 2; x > 1; p += x % p != 0)
        if (x % p == 0) {
          primes.push_back(p);
          x /= p;
        }
    auto random_shape = [&] {
      std::shuffle(primes.begin(), primes.end(), rng);
      std::vector<int64_t> shape;
      for (int64_t p : primes) {
        if (!shape.empty() && rng() % 2) shape.back() *= p;
        else shape.push_back(p);
      }
      return shape;
    };
    const std::vector<int64_t> from = random_shape(), to = random_shape();
    INFO("trial " << trial);
    const IndexExpr offset = linear(reshaped(dims_of(from), from, to), to);
    CHECK(offset == linear(dims_of(from), from));
    CHECK(offset.with_dims(flat_definitions(from)).text() == "i");
  }
}

TEST_CASE("index expressions: simplified expressions keep their values (random expressions, every point)") {
  std::mt19937 rng(11);
  const int64_t extents[2] = {7, 12};
  const IndexExpr vars[2] = {IndexExpr::dim(0, extents[0]), IndexExpr::dim(1, extents[1])};
  // A random expression, built twice: simplified, and as a function computing it plainly.
  struct Built {
    IndexExpr expr;
    std::function<int64_t(int64_t, int64_t)> plain;
  };
  std::function<Built(int)> build = [&](int depth) -> Built {
    const int pick = depth == 0 ? int(rng() % 3) : int(rng() % 7);
    if (pick == 0) return {vars[0], [](int64_t a, int64_t) { return a; }};
    if (pick == 1) return {vars[1], [](int64_t, int64_t b) { return b; }};
    if (pick == 2) {
      const int64_t c = int64_t(rng() % 41) - 10;
      return {IndexExpr(c), [c](int64_t, int64_t) { return c; }};
    }
    Built x = build(depth - 1);
    if (pick == 3) {
      Built y = build(depth - 1);
      return {x.expr + y.expr, [x, y](int64_t a, int64_t b) { return x.plain(a, b) + y.plain(a, b); }};
    }
    if (pick == 4) {
      const int64_t c = int64_t(rng() % 9) - 3;
      return {x.expr * c, [x, c](int64_t a, int64_t b) { return x.plain(a, b) * c; }};
    }
    const int64_t n = 1 + int64_t(rng() % 16);
    if (pick == 5) return {x.expr / n, [x, n](int64_t a, int64_t b) { return x.plain(a, b) / n; }};
    return {x.expr % n, [x, n](int64_t a, int64_t b) { return x.plain(a, b) % n; }};
  };
  for (int trial = 0; trial < 3000; ++trial) {
    const Built e = build(4);
    for (int64_t a = 0; a < extents[0]; ++a)
      for (int64_t b = 0; b < extents[1]; ++b) {
        const int64_t got = e.expr.evaluate([&](const std::string& name) { return name == "d0" ? a : b; });
        if (got != e.plain(a, b)) FAIL("trial " << trial << ": " << e.expr.text() << " at d0=" << a << ", d1=" << b << " is " << got << ", not " << e.plain(a, b));
      }
    const tg::IndexRange r = e.expr.range();
    if (r.known)
      for (int64_t a = 0; a < extents[0]; ++a)
        for (int64_t b = 0; b < extents[1]; ++b) {
          const int64_t v = e.plain(a, b);
          if (v < r.lo || v > r.hi) FAIL("trial " << trial << ": " << e.expr.text() << " = " << v << " outside its range");
        }
  }
}

// ---- sizes taken at run time: dims that scale and divide by products of size parameters --------

namespace {

using tg::IndexScale;
using tg::SizeProduct;

IndexScale size_param(const std::string& name, int64_t lo, int64_t hi) { return {1, SizeProduct::of({{"sz_" + name, lo, hi, 1}})}; }
IndexScale number(int64_t n) { return {n, nullptr}; }

using ScaledShape = std::vector<IndexScale>;

std::vector<IndexExpr> scaled_unflatten(const IndexExpr& flat, const ScaledShape& shape) {
  std::vector<IndexExpr> index(shape.size());
  IndexScale stride = number(1);
  for (size_t k = shape.size(); k-- > 0;) {
    index[k] = k > 0 ? (flat / stride) % shape[k] : flat / stride;
    stride = stride * shape[k];
  }
  return index;
}

IndexExpr scaled_linear(const std::vector<IndexExpr>& index, const ScaledShape& shape) {
  IndexExpr sum;
  IndexScale stride = number(1);
  for (size_t k = shape.size(); k-- > 0;) {
    sum = sum + index[k] * stride;
    stride = stride * shape[k];
  }
  return sum;
}

std::vector<IndexExpr> scaled_dims(const ScaledShape& shape) {
  std::vector<IndexExpr> dims;
  for (size_t k = 0; k < shape.size(); ++k) dims.push_back(IndexExpr::dim(int(k), shape[k], shape[k].range().hi));
  return dims;
}

int64_t size_at(const IndexScale& s, const std::map<std::string, int64_t>& at) {
  return s.product ? s.coef * s.product->evaluate([&](const std::string& n) { return at.at(n); }) : s.coef;
}

}  // namespace

TEST_CASE("index expressions: a symbolic stride and divisor print as the size parameters") {
  const IndexScale T = size_param("T", 1, 64);
  const IndexExpr d1 = IndexExpr::dim(1, T, 64), d0 = IndexExpr::dim(0, number(8), 8);
  CHECK((d0 * (T * number(16)) + d1 * number(16)).text() == "d0 * sz_T * 16 + d1 * 16");
  CHECK((d1 % T) == d1);                    // d1 < sz_T at every size
  CHECK((d1 / T) == IndexExpr(0));
  CHECK(((d0 * T + d1) / T) == d0);         // a digit of the radix below it
  CHECK(((d0 * T + d1) % T) == d1);
  CHECK((IndexExpr(3) * T).text() == "sz_T * 3");
  const IndexExpr i = IndexExpr::named("i", 0, 1000);
  CHECK((i / (T * number(4))).text() == "i / (sz_T * 4)");
  CHECK(((i / 4) % T).text() == "(i / 4) % sz_T");
  // Nothing proved from one size: d0 (< 8) is not below sz_T, whose least size is 1.
  CHECK((d0 % T).text() == "d0 % sz_T");
}

TEST_CASE("index expressions: partition splits the terms, the constant going with the rest") {
  const IndexScale T = size_param("T", 1, 64);
  const IndexExpr d2 = IndexExpr::dim(2, T, 64), d3 = IndexExpr::dim(3, number(16), 16), d0 = IndexExpr::dim(0, number(8), 8);
  const IndexExpr offset = d0 * (T * number(192)) + d2 * number(192) + d3 + IndexExpr(64) + IndexExpr(1) * (T * number(2));
  auto [row, element] = offset.partition([](const IndexExpr& term) { return term.dims() != std::vector<int>{3} && !term.dims().empty(); });
  CHECK(row.text() == "d0 * sz_T * 192 + d2 * 192");
  CHECK(element.text() == "sz_T * 2 + d3 + 64");
  // The two parts add up to the offset, at every size and element.
  for (int64_t t : {1, 7, 64})
    for (int64_t x : {0, 3, 5}) {
      auto value = [&](const std::string& n) { return n == "sz_T" ? t : n == "d3" ? x : x % t; };
      CHECK(row.evaluate(value) + element.evaluate(value) == offset.evaluate(value));
    }
  auto [none, all] = offset.partition([](const IndexExpr&) { return false; });
  CHECK(none == IndexExpr(0));
  CHECK(all == offset);
}

TEST_CASE("index expressions: a divisor whose factors have dividers divides by multiplying, where the operand is not negative") {
  const IndexScale T{1, SizeProduct::of({{"sz_T", 1, 64, 1, "dv_T"}})};
  const IndexScale B{1, SizeProduct::of({{"sz_B", 1, 8, 1, "dv_B"}})};
  const IndexExpr i = IndexExpr::named("i", 0, 1000), wide = IndexExpr::named("w", 0, int64_t(1) << 40);
  CHECK((i / T).text() == "tg::quot32(i, dv_T)");  // (i < 2^31 at every size)
  CHECK((i % T).text() == "tg::rem32(i, dv_T)");
  CHECK((wide / T).text() == "tg::quot(w, dv_T)");
  CHECK((wide % T).text() == "tg::rem(w, dv_T)");
  CHECK((i / (T * number(4))).text() == "tg::quot32(i / 4, dv_T)");
  CHECK((i / (B * T)).text() == "tg::quot32(tg::quot32(i, dv_B), dv_T)");
  CHECK((i % (T * number(4))).text() == "(i - tg::quot32(i / 4, dv_T) * sz_T * 4)");
  CHECK((i % (T * number(4))).size_names() == std::vector<std::string>{"dv_T", "sz_T"});
  CHECK(((i / 4) % T * 3 + i).text() == "tg::rem32(i / 4, dv_T) * 3 + i");
  // C's division of a negative operand truncates: the plain operator, not the multiply.
  const IndexExpr signed_x = IndexExpr::named("x", -5, 1000);
  CHECK((signed_x / T).text() == "x / sz_T");
  CHECK((signed_x / T).size_names() == std::vector<std::string>{"sz_T"});
}

TEST_CASE("index expressions: a reshape between shapes with symbolic dims, read at the flat index, is i") {
  std::mt19937 rng(5);
  const IndexScale B = size_param("B", 1, 16), T = size_param("T", 1, 40);
  const std::vector<IndexScale> factors = {B, T, number(4), number(16), number(3), T};  // (T twice: [B, H, T, T])
  for (int trial = 0; trial < 400; ++trial) {
    // One order of the factors, grouped into dims two ways ([B*T, 64] and [B, T, 4, 16]).
    std::vector<IndexScale> order = factors;
    std::shuffle(order.begin(), order.end(), rng);
    auto grouped = [&] {
      ScaledShape shape;
      for (const IndexScale& f : order) {
        if (!shape.empty() && rng() % 2) shape.back() = shape.back() * f;
        else shape.push_back(f);
      }
      return shape;
    };
    const ScaledShape from = grouped(), to = grouped();
    auto text = [](const ScaledShape& s) {
      std::string out;
      for (const IndexScale& d : s) out += (out.empty() ? "" : ", ") + d.text();
      return "[" + out + "]";
    };
    INFO("trial " << trial << ": " << text(from) << " read from " << text(to));
    const IndexExpr offset = scaled_linear(scaled_unflatten(scaled_linear(scaled_dims(from), from), to), to);
    INFO("offset " << offset.text());
    CHECK(offset == scaled_linear(scaled_dims(from), from));
    const IndexExpr i = IndexExpr::named("i", 0, (int64_t(1) << 40) - 1);
    CHECK(offset.with_dims(scaled_unflatten(i, from)).text() == "i");
  }
}

TEST_CASE("index expressions: a transpose over symbolic dims reads what plain arithmetic reads, at every size") {
  const IndexScale B = size_param("B", 1, 5), T = size_param("T", 1, 7);
  const ScaledShape out = {B, T, number(3), number(4)}, in = {B, number(3), T, number(4)};  // out = in.transpose(1, 2)
  const IndexExpr i = IndexExpr::named("i", 0, 5 * 7 * 12 - 1);
  const std::vector<IndexExpr> d = scaled_unflatten(i, out);
  const IndexExpr offset = scaled_linear({d[0], d[2], d[1], d[3]}, in);
  for (int64_t b = 1; b <= 5; ++b)
    for (int64_t t = 1; t <= 7; ++t) {
      const std::map<std::string, int64_t> at = {{"sz_B", b}, {"sz_T", t}};
      for (int64_t flat = 0; flat < b * t * 12; ++flat) {
        const int64_t k3 = flat % 4, k1 = flat / 12 % t, k2 = flat / 4 % 3, k0 = flat / (12 * t);
        const int64_t want = ((k0 * 3 + k2) * t + k1) * 4 + k3;
        const int64_t got = offset.evaluate([&](const std::string& n) { return n == "i" ? flat : at.at(n); });
        if (got != want) FAIL(offset.text() << " at i=" << flat << ", B=" << b << ", T=" << t << " is " << got << ", not " << want);
      }
    }
  CHECK(size_at(T * number(4), {{"sz_T", 7}}) == 28);
}

TEST_CASE("index expressions: simplified expressions with size parameters keep their values (random expressions, every size)") {
  std::mt19937 rng(13);
  const IndexScale P = size_param("P", 1, 6), Q = size_param("Q", 2, 4);
  const IndexExpr vars[2] = {IndexExpr::dim(0, P, 6), IndexExpr::dim(1, Q * number(3), 12)};
  struct Built {
    IndexExpr expr;
    std::function<int64_t(int64_t, int64_t, int64_t, int64_t)> plain;  // (d0, d1, P, Q)
  };
  std::function<Built(int)> build = [&](int depth) -> Built {
    const int pick = depth == 0 ? int(rng() % 3) : int(rng() % 9);
    if (pick == 0) return {vars[0], [](int64_t a, int64_t, int64_t, int64_t) { return a; }};
    if (pick == 1) return {vars[1], [](int64_t, int64_t b, int64_t, int64_t) { return b; }};
    if (pick == 2) {
      const int64_t c = int64_t(rng() % 21) - 5;
      return {IndexExpr(c), [c](int64_t, int64_t, int64_t, int64_t) { return c; }};
    }
    Built x = build(depth - 1);
    if (pick == 3) {
      Built y = build(depth - 1);
      return {x.expr + y.expr, [x, y](int64_t a, int64_t b, int64_t p, int64_t q) { return x.plain(a, b, p, q) + y.plain(a, b, p, q); }};
    }
    if (pick == 4) {
      const int64_t c = int64_t(rng() % 7) - 2;
      return {x.expr * c, [x, c](int64_t a, int64_t b, int64_t p, int64_t q) { return x.plain(a, b, p, q) * c; }};
    }
    // A scale: a number, P, Q or P*Q, times 1 to 4.
    const int64_t n = 1 + int64_t(rng() % 4);
    const int which = int(rng() % 4);
    IndexScale s = number(n);
    if (which & 1) s = s * P;
    if (which & 2) s = s * Q;
    auto value = [n, which](int64_t p, int64_t q) { return n * (which & 1 ? p : 1) * (which & 2 ? q : 1); };
    if (pick == 5 || pick == 6) return {x.expr * s, [x, value](int64_t a, int64_t b, int64_t p, int64_t q) { return x.plain(a, b, p, q) * value(p, q); }};
    if (pick == 7) return {x.expr / s, [x, value](int64_t a, int64_t b, int64_t p, int64_t q) { return x.plain(a, b, p, q) / value(p, q); }};
    return {x.expr % s, [x, value](int64_t a, int64_t b, int64_t p, int64_t q) { return x.plain(a, b, p, q) % value(p, q); }};
  };
  for (int trial = 0; trial < 3000; ++trial) {
    const Built e = build(4);
    const tg::IndexRange r = e.expr.range();
    for (int64_t p = 1; p <= 6; ++p)
      for (int64_t q = 2; q <= 4; ++q)
        for (int64_t a = 0; a < p; ++a)
          for (int64_t b = 0; b < 3 * q; ++b) {
            const int64_t got = e.expr.evaluate([&](const std::string& name) { return name == "d0" ? a : name == "d1" ? b : name == "sz_P" ? p : q; });
            const int64_t want = e.plain(a, b, p, q);
            if (got != want) FAIL("trial " << trial << ": " << e.expr.text() << " at d0=" << a << ", d1=" << b << ", P=" << p << ", Q=" << q << " is " << got << ", not " << want);
            if (r.known && (want < r.lo || want > r.hi)) FAIL("trial " << trial << ": " << e.expr.text() << " = " << want << " outside its range");
          }
  }
}

TEST_CASE("index expressions: a flat index's quotient and remainder by a scale recombine, and keep their values") {
  const IndexScale T = size_param("T", 1, 64), B = size_param("B", 0, 8);  // (B may be 0)
  const IndexExpr i = IndexExpr::named("i", 0, 1 << 20);
  const IndexScale s = T * number(4);
  CHECK((i / s) * s + i % s == i);
  CHECK(((i / 4) / T) * T + (i / 4) % T == i / 4);
  // Over B, whose least size is 0: nothing is proved below it, and the values hold where B > 0.
  const IndexExpr d = IndexExpr::dim(0, B * number(3), 24);
  const IndexExpr e = (d / B) * B + d % B + (d % (B * number(3))) / 3;
  for (int64_t b = 1; b <= 8; ++b)
    for (int64_t x = 0; x < 3 * b; ++x) {
      const int64_t got = e.evaluate([&](const std::string& n) { return n == "d0" ? x : b; });
      CHECK(got == (x / b) * b + x % b + (x % (3 * b)) / 3);
    }
  CHECK(!(d % B == d));
}

// A size known to be a multiple of 4 (declared, or checked by a run loop's guard): the lanes of a
// run of 4 share their quotients by it.
TEST_CASE("index expressions: by a size known to be a multiple, a run's lanes share the quotient") {
  const IndexScale T{1, SizeProduct::of({{"sz_T", 4, 64, 1, "", 4}})}, plain_T = size_param("T", 1, 64);
  const IndexExpr run = IndexExpr::named("run", 0, 1000), lane = IndexExpr::named("lane", 0, 3);
  const IndexExpr x = run * 4 + lane;
  CHECK((x / T).text() == "(run * 4) / sz_T");
  CHECK((x % T).text() == "lane + (run * 4) % sz_T");
  CHECK((x / plain_T).text() == "(run * 4 + lane) / sz_T");  // nothing known: nothing shared
  // A run's start is a multiple of 4 where its pieces are (a broadcast row of T elements).
  CHECK((((run * 4) / (T * T)) * T + (run * 4) % T).multiple_of(4));
  CHECK(!(((run * 4) / (plain_T * plain_T)) * plain_T + (run * 4) % plain_T).multiple_of(4));
  CHECK(!(run * 4 + 2).multiple_of(4));
  // Not where the rest may reach the multiple: lane in [0, 4] is not below 4.
  const IndexExpr wide_lane = IndexExpr::named("lane", 0, 4);
  CHECK(((run * 4 + wide_lane) / T).text() == "(run * 4 + lane) / sz_T");
  // Every value, at every multiple of 4 (and of 8 where a term's coefficient is): random sums.
  std::mt19937 rng(7);
  const IndexScale T8{1, SizeProduct::of({{"sz_T", 8, 64, 1, "", 8}})};
  for (int trial = 0; trial < 400; ++trial) {
    const bool by8 = rng() % 2;
    const IndexScale size = by8 ? T8 : T;
    const int64_t a = int64_t(4) << (rng() % 2), c = int64_t(rng() % 3), k = 1 + int64_t(rng() % 3);
    const IndexExpr e = run * a + lane + IndexExpr::of_scale(size) * c;
    const IndexScale divisor = rng() % 3 == 0 ? size * size : size * number(k);
    const IndexExpr q = e / divisor, r = e % divisor;
    for (int64_t t = by8 ? 8 : 4; t <= 24; t += by8 ? 8 : 4)
      for (int64_t ru = 0; ru < 40; ++ru)
        for (int64_t l = 0; l < 4; ++l) {
          auto at = [&](const std::string& n) { return n == "run" ? ru : n == "lane" ? l : t; };
          const int64_t value = ru * a + l + t * c, d = size_at(divisor, {{"sz_T", t}});
          if (q.evaluate(at) != value / d || r.evaluate(at) != value % d)
            FAIL(e.text() << " by " << divisor.text() << " at T=" << t << ", run=" << ru << ", lane=" << l << ": " << q.text() << ", " << r.text());
        }
  }
}
