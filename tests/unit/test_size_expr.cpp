// Size expressions: the canonical form, each simplification, what the declarations prove, the
// parser's diagnostics, and (random expressions evaluated at random points) that building and
// simplifying never changes a value and that text() reads back as the same expression.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <random>

#include "ir/size_expr.h"
#include "ir/trace.h"
#include "schedule/index_map.h"

using tg::SizeExpr;
using tg::SizeExprError;
using tg::Symbols;

namespace {

Symbols batch_and_time() {
  Symbols s;
  s.declare({"B", 1, 4096, 1});
  s.declare({"T", 2, 512, 16});
  return s;
}

SizeExpr parse(const std::string& text) { return tg::parse_size_expr(text, batch_and_time()); }

std::string error_of(const std::string& text) {
  try {
    tg::parse_size_expr(text, batch_and_time());
  } catch (const SizeExprError& e) {
    return std::to_string(e.offset) + ": " + e.what();
  }
  return "(parsed)";
}

}  // namespace

TEST_CASE("size expressions: one canonical form", "[size_expr]") {
  const SizeExpr B = SizeExpr::symbol("B"), T = SizeExpr::symbol("T");
  CHECK(B * T == T * B);
  CHECK((B + 1) * (B - 1) == B * B - 1);
  CHECK((B + T) - T == B);
  CHECK(((B + 1) * (B - 1)).text() == "B*B - 1");
  CHECK((2 * B * T + T + 3).text() == "2*B*T + T + 3");
  CHECK((SizeExpr(0) - B).text() == "-B");
  CHECK((B * 0).constant() == 0);
  CHECK(SizeExpr(7).constant() == 7);
  CHECK_FALSE(B.constant());
  CHECK((T * B + B).symbols() == std::vector<std::string>{"B", "T"});
}

TEST_CASE("size expressions: floor division simplifies with what is known", "[size_expr]") {
  const Symbols s = batch_and_time();
  CHECK(parse("(2*T)//2") == parse("T"));
  CHECK(parse("(2*T + 1)//2") == parse("T"));     // 1 // 2 is 0
  CHECK(parse("(4*B + 6)//4") == parse("B + 1"));  // (4*B + 4 + 2) // 4
  CHECK(parse("(B*T)//T") == parse("B"));
  CHECK(parse("(6*T)//T + 1") == parse("7"));  // (a fuzzer's find: the quotient's constant kept as a term)
  CHECK(parse("(6*T)//T + 1").constant() == 7);
  CHECK(parse("B//2//3") == parse("B//6"));
  CHECK(parse("(2*B + 2)//4") == parse("(B + 1)//2"));
  CHECK(parse("B//16").text() == "B//16");
  CHECK(parse("(B - 1)//4096") == parse("0"));  // 0 <= B - 1 < 4096
  CHECK(parse("(B + T)//2").text() == "(B + T)//2");
  CHECK(parse("17//5") == parse("3"));
  CHECK(parse("(0-7)//2") == parse("-4"));  // floor, as Python's //
  CHECK_THROWS_AS(tg::floor_div(parse("B"), parse("T - 16"), s), SizeExprError);  // T - 16 may be 0
}

TEST_CASE("size expressions: max and min decide where the ranges do", "[size_expr]") {
  CHECK(parse("max(B, 0)") == parse("B"));
  CHECK(parse("min(B, 4096)") == parse("B"));
  CHECK(parse("max(B, T + 4096)") == parse("T + 4096"));
  CHECK(parse("max(B, 2)") == parse("max(2, B)"));
  CHECK(parse("max(B, 2)").text() == "max(B, 2)");
  CHECK_FALSE(parse("max(B, 2)") == parse("min(B, 2)"));
}

TEST_CASE("size expressions: nested max and min are one list of operands", "[size_expr]") {
  CHECK(parse("max(max(B, T//16), 7)") == parse("max(7, max(T//16, B))"));
  CHECK(parse("min(min(B, T//16), 7)") == parse("min(B, min(7, T//16))"));
  CHECK(parse("max(max(B, T//16), 7)").text() == parse("max(B, max(7, T//16))").text());
  CHECK(parse("max(B, max(B, T//16))") == parse("max(B, T//16)"));  // each operand once
  CHECK(parse("max(max(B, 3), B + 1)") == parse("max(B + 1, 3)"));  // B + 1 bounds B: B goes
  CHECK(parse("min(max(B, 3), 5)") == parse("min(5, max(3, B))"));  // different kinds nest
  const SizeExpr three = parse("max(max(B, T//16), 7)");
  CHECK(tg::parse_size_expr(three.text(), batch_and_time()) == three);  // the folded text reads back
  // 33 operands undecided against each other, grouped as a balanced tree: the canonical text
  // nests no deeper (folded as a chain it nested 32 levels and did not read back).
  Symbols s;
  s.declare({"B", 0, 40, 1});
  s.declare({"T", 1, 24, 3});
  std::vector<std::string> level;
  for (int k = 1; k <= 33; ++k) level.push_back(std::to_string(k) + "*B + " + std::to_string(41 - k) + "*T");
  while (level.size() > 1) {
    std::vector<std::string> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) next.push_back("max(" + level[i] + ", " + level[i + 1] + ")");
    if (level.size() % 2) next.push_back(level.back());
    level = next;
  }
  const SizeExpr wide = tg::parse_size_expr(level[0], s);
  CHECK(tg::parse_size_expr(wide.text(), s) == wide);
}

TEST_CASE("size expressions: ranges, multiples and proofs", "[size_expr]") {
  const Symbols s = batch_and_time();
  const tg::SizeRange r = tg::range_of(parse("B*T - 1"), s);
  CHECK(r.lo == 15);  // T >= 16: its least multiple of 16
  CHECK(r.hi == 4096 * 512 - 1);
  CHECK(tg::known_multiple(parse("2*T"), s) == 32);
  CHECK(tg::known_multiple(parse("B*T + 8"), s) == 8);
  CHECK(tg::known_multiple(parse("B + 1"), s) == 1);
  CHECK(tg::provably_divisible(parse("B*T"), 16, s));
  CHECK_FALSE(tg::provably_divisible(parse("B*T"), 32, s));
  CHECK(tg::provably_ge(parse("B*T"), parse("B"), s));
  CHECK_FALSE(tg::provably_ge(parse("B"), parse("T"), s));
  CHECK(tg::provably_ge(parse("B*T*T - B*T"), parse("0"), s));  // B*T*(T - 1)
  CHECK_FALSE(tg::provably_ge(parse("B*T - T*T"), parse("0"), s));
  CHECK(tg::provably_positive(parse("T//2"), s));
  CHECK(tg::provably_positive(parse("T//4"), s));         // T >= 2 and a multiple of 16: T >= 16
  CHECK_FALSE(tg::provably_positive(parse("T//32"), s));
  // A product each of whose factors is at least 1, which interval arithmetic alone bounds below 1:
  // a convolution's output rows times its columns, (H + 1)//2 * (W - 2).
  CHECK(tg::provably_positive(parse("B*T - B"), s));            // B*(T - 1), T >= 16
  CHECK(tg::range_of(parse("B*T - B"), s).lo < 1);
  CHECK_FALSE(tg::provably_positive(parse("B*T - 16*B"), s));   // B*(T - 16): 0 at T = 16
  CHECK(tg::provably_ge(parse("B*T - 16*B"), parse("0"), s));
}

TEST_CASE("size expressions: an atom every term shares splits off", "[size_expr]") {
  const Symbols s = batch_and_time();
  const auto split = parse("B*T - B").atom_factors();
  REQUIRE(split.size() == 1);
  CHECK(split[0].first == parse("B"));
  CHECK(split[0].second == parse("T - 1"));
  const auto halves = parse("((T + 1)//2)*B - 2*((T + 1)//2)").atom_factors();
  REQUIRE(halves.size() == 1);
  CHECK(halves[0].first * halves[0].second == parse("((T + 1)//2)*(B - 2)"));
  CHECK(parse("B*T").atom_factors().size() == 2);    // B and T, each with the other
  CHECK(parse("(T + 1)//2").atom_factors().empty());  // an atom alone is no product
  CHECK(parse("B + T").atom_factors().empty());
  CHECK(parse("4").atom_factors().empty());
}

TEST_CASE("size expressions: a size that never shrinks as a symbol grows is least at the smallest sizes", "[size_expr]") {
  Symbols s;
  s.declare({"H", 2, 5, 1});
  s.declare({"W", 2, 5, 1});
  s.declare({"T", 6, 64, 2});
  auto at_least_one = [&](const std::string& text) { return tg::provably_positive(tg::parse_size_expr(text, s), s); };
  CHECK(tg::range_of(tg::parse_size_expr("H*W - H + W - 1", s), s).lo < 1);  // intervals alone: 4 - 5 + 2 - 1
  CHECK(at_least_one("H*W - H + W - 1"));        // (H + 1)*(W - 1), at least 3
  CHECK_FALSE(at_least_one("H*W - 2*H - W + 2"));  // (H - 1)*(W - 2): 0 at W = 2
  CHECK(at_least_one("T*T - 5*T"));              // T*(T - 5): grows by steps of 2 from 6 up, 6 there
  CHECK_FALSE(at_least_one("T*T - 7*T"));        // 6*(6 - 7) at T = 6
  CHECK_FALSE(at_least_one("64 - T"));           // 0 at T = 64: it shrinks as T grows
}

TEST_CASE("dims: a floor quotient keeps its expression", "[size_expr]") {
  const Symbols s = batch_and_time();
  const tg::Dim t(48, parse("T"));
  const tg::Dim q = tg::floor_div_dim(tg::subtract_dims(t, tg::Dim::constant(1)), 2, s);  // a stride-2 slice of T: (T - 1)//2 + 1
  CHECK(int64_t(q) == 23);
  REQUIRE(q.expr());
  CHECK(q.expr()->evaluate(tg::SymbolValues{{"B", 1}, {"T", 48}}) == 23);
  CHECK(*q.expr() == parse("(T - 1)//2"));  // (kept as (T + 1)//2 - 1)
  CHECK(int64_t(tg::floor_div_dim(tg::Dim(-3), 2, s)) == -2);  // floor, as the expression's //
  CHECK_FALSE(tg::floor_div_dim(tg::Dim(47), 2, s).expr());     // an unknown dim stays unknown
}

TEST_CASE("size expressions: declarations are checked", "[size_expr]") {
  Symbols s;
  s.declare({"B", 1, 8, 1});
  CHECK_THROWS_WITH(s.declare({"B", 1, 8, 1}), "symbol 'B' is declared twice");
  CHECK_THROWS_WITH(s.declare({"C", 9, 8, 1}), "symbol 'C': min 9 is over max 8");
  CHECK_THROWS_WITH(s.declare({"C", -1, 8, 1}), "symbol 'C': min -1 is negative");
  CHECK_THROWS_WITH(s.declare({"C", 1, 7, 8}), "symbol 'C': no multiple of 8 lies in [1, 7]");
  CHECK_THROWS_WITH(s.declare({"C", 1, int64_t(1) << 50, 1}), Catch::Contains("is over 2^48"));
  CHECK_THROWS_WITH(s.at("D"), "unknown symbol 'D'");
}

TEST_CASE("size expressions: the parser says what is wrong and where", "[size_expr]") {
  CHECK(error_of("B/2") == "2: '/' is true division: sizes divide with '//'");
  CHECK(error_of("B + X") == "5: unknown symbol 'X' (declare it under \"symbols\")");
  CHECK(error_of("B +") == "3: the expression ends where a size was expected");
  CHECK(error_of("(B") == "2: expected ')'");
  CHECK(error_of("B B") == "2: unexpected 'B'");
  CHECK(error_of("max(B)") == "5: 'max' takes two arguments");
  CHECK(error_of("99999999999999999999") == "18: the integer overflows int64");
  CHECK(error_of("B // (T - 16)") == "5: the divisor T - 16 may be zero or negative");
  CHECK(error_of(std::string(40, '(') + "B" + std::string(40, ')')).find("nests deeper than 32") != std::string::npos);
  CHECK(error_of(std::string(2000, '1')).find("longer than 1024") != std::string::npos);
  CHECK(error_of("4611686018427387904 * 4").find("overflows int64") != std::string::npos);
  std::string sums = "(B + T + 1)";
  for (int i = 1; i < 22; ++i) sums += "*(B + T + 1)";  // (B + T + 1)^22: 276 terms
  CHECK(error_of(sums).find("of more than 256 terms") != std::string::npos);
}

TEST_CASE("size expressions: what review and fuzzing found stays fixed", "[size_expr]") {
  Symbols s;
  for (const char* name : {"P", "Q", "R", "S"}) s.declare({name, 1, 2, 1});
  s.declare({"E", 3, 10, 1});
  s.declare({"F", 3, 10, 1});
  auto at = [](int64_t v) { return tg::SymbolValues{{"P", v}, {"Q", v}, {"R", v}, {"S", v}, {"E", 3}, {"F", 3}}; };
  // Bounds cut at int64's limits once decided a quotient wrongly: exact bounds now.
  CHECK(tg::parse_size_expr("(4611686018427387904*P - 4611686018427387900*Q + 4611686018427387904*R - S)//7", s).evaluate(at(1)) ==
        658812288346769701);
  CHECK(tg::parse_size_expr("(4611686018427387904*E - 4611686018427387904*F)//3 + 1", s).evaluate(at(1)) == 1);
  // -2^63 as a constant: its text could not be read back (and a division by -1 of it trapped).
  CHECK_THROWS_WITH(tg::parse_size_expr("-9223372036854775807 - 1", s), Catch::Contains("overflows int64"));
  CHECK_THROWS_WITH(tg::parse_size_expr("((-9223372036854775807-1)*((1-E)//2)) // (-((1-E)//2))", s), Catch::Contains("overflows int64"));
  // An operand copied at every level of nesting: refused while short, not exponential.
  std::string x = "E";
  for (int i = 0; i < 16; ++i) x = "max(" + x + "*(E+F+P)-Q, F)";
  CHECK_THROWS_WITH(tg::parse_size_expr(x, s), Catch::Contains("too large"));
  // A multiple_of near int64's limit: no multiple in range, not an overflow.
  CHECK_THROWS_WITH(s.declare({"M", 2, 10, INT64_MAX}), "symbol 'M': no multiple of 9223372036854775807 lies in [2, 10]");
}

namespace {

// A random expression as text, and its value at `at` computed independently of SizeExpr
// (nullopt where a division by a non-positive divisor makes it invalid).
struct Sample {
  std::string text;
  std::function<int64_t(const std::map<std::string, int64_t>&)> value;
};

int64_t floor_div_ref(int64_t a, int64_t b) { return a / b - (a % b != 0 && ((a < 0) != (b < 0))); }

Sample random_sample(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 2 : 8);
  switch (pick(rng)) {
    case 0: return {"B", [](const auto& at) { return at.at("B"); }};
    case 1: return {"T", [](const auto& at) { return at.at("T"); }};
    case 2: {
      const int64_t c = std::uniform_int_distribution<int64_t>(0, 9)(rng);
      return {std::to_string(c), [c](const auto&) { return c; }};
    }
    default: break;
  }
  Sample a = random_sample(rng, depth - 1), b = random_sample(rng, depth - 1);
  switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
    case 0: return {"(" + a.text + " + " + b.text + ")", [a, b](const auto& at) { return a.value(at) + b.value(at); }};
    case 1: return {"(" + a.text + " - " + b.text + ")", [a, b](const auto& at) { return a.value(at) - b.value(at); }};
    case 2: return {"(" + a.text + " * " + b.text + ")", [a, b](const auto& at) { return a.value(at) * b.value(at); }};
    case 3: {  // divisors kept positive: T + c, or a constant 1..6
      const int64_t c = std::uniform_int_distribution<int64_t>(1, 6)(rng);
      if (c % 2) return {"(" + a.text + " // (T + " + std::to_string(c) + "))", [a, c](const auto& at) { return floor_div_ref(a.value(at), at.at("T") + c); }};
      return {"(" + a.text + " // " + std::to_string(c) + ")", [a, c](const auto& at) { return floor_div_ref(a.value(at), c); }};
    }
    case 4: return {"max(" + a.text + ", " + b.text + ")", [a, b](const auto& at) { return std::max(a.value(at), b.value(at)); }};
    default: return {"min(" + a.text + ", " + b.text + ")", [a, b](const auto& at) { return std::min(a.value(at), b.value(at)); }};
  }
}

}  // namespace

TEST_CASE("size expressions: simplification keeps every value, and text reads back", "[size_expr]") {
  Symbols s;
  s.declare({"B", 0, 40, 1});
  s.declare({"T", 1, 24, 3});
  std::mt19937 rng(20261204);
  for (int round = 0; round < 3000; ++round) {
    const Sample sample = random_sample(rng, 4);
    INFO(sample.text);
    const SizeExpr e = tg::parse_size_expr(sample.text, s);
    INFO(e.text());
    CHECK(tg::parse_size_expr(e.text(), s) == e);
    const tg::SizeRange range = tg::range_of(e, s);
    for (int64_t b : {0, 1, 7, 40}) {
      for (int64_t t : {3, 12, 24}) {
        const std::map<std::string, int64_t> at{{"B", b}, {"T", t}};
        const int64_t expected = sample.value(at);
        REQUIRE(e.evaluate(std::map<std::string, int64_t, std::less<>>(at.begin(), at.end())) == expected);
        CHECK(expected >= range.lo);
        CHECK(expected <= range.hi);
        if (int64_t m = tg::known_multiple(e, s)) CHECK(expected % m == 0);
      }
    }
  }
}

TEST_CASE("size expressions: substitution re-simplifies", "[size_expr]") {
  const Symbols s = batch_and_time();
  const SizeExpr e = parse("max(B, 2) + (B*T)//4");
  const SizeExpr at = e.substitute([](const std::string& n) -> std::optional<SizeExpr> { return n == "B" ? std::optional<SizeExpr>(8) : std::nullopt; }, s);
  CHECK(at == parse("8 + 2*T"));
  CHECK(e.substitute([](const std::string&) -> std::optional<SizeExpr> { return std::nullopt; }, s) == e);
}

TEST_CASE("size expressions: a size of its own as a kernel parameter reads back as the expression", "[size_expr]") {
  Symbols s;
  s.declare({"B", 1, 40, 1});
  s.declare({"T", 2, 24, 1});
  std::mt19937 rng(20261205);
  int derived = 0;
  for (int round = 0; round < 2000; ++round) {
    const SizeExpr e = tg::parse_size_expr(random_sample(rng, 3).text, s);
    INFO(e.text());
    if (!e.lone_symbol().empty()) continue;  // (a symbol is its own parameter, sz_T)
    const std::optional<tg::SizeProduct::Factor> f = tg::derived_size_factor(e, s);
    const tg::SizeRange range = tg::range_of(e, s);
    REQUIRE(f.has_value() == tg::provably_positive(e, s));
    if (!f) continue;
    ++derived;
    CHECK(f->lo == std::max<int64_t>(range.lo, 1));
    CHECK(f->hi == range.hi);
    CHECK(tg::parameter_size(f->name, s) == e);
    CHECK(tg::parameter_size(f->divider, s) == e);
  }
  CHECK(derived > 100);
  CHECK(tg::derived_size_factor(tg::parse_size_expr("T - 1", s), s)->name == "sz_T_m1");
  CHECK(tg::parameter_size("sz_T", s) == SizeExpr::symbol("T"));
  // A symbol spelled as another size's parameter would be: that size gets none (its code then
  // differs at the probes, and is refused).
  s.declare({"T_m1", 1, 8, 1});
  CHECK_FALSE(tg::derived_size_factor(tg::parse_size_expr("T - 1", s), s).has_value());
  CHECK(tg::parameter_size("sz_T_m1", s) == SizeExpr::symbol("T_m1"));
}
