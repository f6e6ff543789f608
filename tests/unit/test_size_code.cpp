// SizeCode (codegen/size_code.h): the host code declaring the sizes of a folder that takes them at
// run time. Each declaration is read back here, evaluated with the runtime's own tg::SizeArith
// (templates/tg_sizes.h) and compared with SizeExpr::evaluate at sizes across the range; a size
// is declared from one just before it where that leaves less to add (workspace offsets).
#include <catch2/catch.hpp>

#include <cctype>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "codegen/size_code.h"
#include "ir/size_expr.h"
#include "tg_sizes.h"

using tg::SizeExpr;

namespace {

using Wide = tg::SizeArith::Wide;

// One declaration's code read back: integers, variables, int64_t(x), tg_arith.op(a[, b]).
class CodeReader {
 public:
  CodeReader(const std::string& code, const std::map<std::string, Wide>& variables, tg::SizeArith& arith)
      : code_(code), variables_(variables), arith_(arith) {}
  Wide read() {
    const Wide v = value();
    REQUIRE(at_ == code_.size());
    return v;
  }

 private:
  Wide value() {
    const std::string word = token();
    if (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-') return std::stoll(word);
    if (word == "int64_t") return bracketed([&] { return value(); });
    if (word.starts_with("tg_arith.")) return call(word.substr(9));
    const auto known = variables_.find(word);
    INFO("a variable used before it is declared: " << word);
    REQUIRE(known != variables_.end());
    return known->second;
  }
  Wide call(const std::string& op) {
    return bracketed([&] {
      const Wide a = value();
      if (op == "narrow") return arith_.narrow(a);
      expect(',');
      const Wide b = value();
      if (op == "add") return arith_.add(a, b);
      if (op == "mul") return arith_.mul(a, b);
      if (op == "floordiv") return arith_.floordiv(a, b);
      if (op == "max") return tg::SizeArith::max(a, b);
      REQUIRE(op == "min");
      return tg::SizeArith::min(a, b);
    });
  }
  template <class F>
  Wide bracketed(F inside) {
    expect('(');
    const Wide v = inside();
    expect(')');
    return v;
  }
  void expect(char c) {
    skip_spaces();
    REQUIRE(at_ < code_.size());
    REQUIRE(code_[at_] == c);
    ++at_;
  }
  std::string token() {
    skip_spaces();
    const size_t start = at_;
    while (at_ < code_.size() && (std::isalnum(static_cast<unsigned char>(code_[at_])) || code_[at_] == '_' || code_[at_] == '.' ||
                                  (code_[at_] == '-' && at_ == start)))
      ++at_;
    REQUIRE(at_ > start);
    return code_.substr(start, at_ - start);
  }
  void skip_spaces() {
    while (at_ < code_.size() && code_[at_] == ' ') ++at_;
  }
  const std::string& code_;
  const std::map<std::string, Wide>& variables_;
  tg::SizeArith& arith_;
  size_t at_ = 0;
};

struct Declared {
  std::string name, code;
};

// The `const int64_t NAME = CODE;  // TEXT` lines of declarations(), in order.
std::vector<Declared> declared_sizes(const std::string& declarations) {
  std::vector<Declared> out;
  std::istringstream lines(declarations);
  const std::string head = "  const int64_t ";
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(head)) continue;
    const size_t equals = line.find(" = "), end = line.rfind(";  // ");
    out.push_back({line.substr(head.size(), equals - head.size()), line.substr(equals + 3, end - equals - 3)});
  }
  return out;
}

// Every declared size at B, T: as the generated code computes it, each checked against `expected`.
void check_at(const std::vector<Declared>& declared, const std::map<std::string, SizeExpr>& expected, int64_t B, int64_t T) {
  std::map<std::string, Wide> variables = {{"tg_sizes[0]", B}, {"tg_sizes[1]", T}};
  tg::SizeArith arith;
  for (const Declared& d : declared) {
    const bool symbol = d.code.starts_with("tg_sizes[");
    const Wide v = symbol ? variables.at(d.code) : CodeReader(d.code, variables, arith).read();
    variables[d.name] = v;
    if (auto e = expected.find(d.name); e != expected.end()) {
      INFO(d.name << " = " << d.code << " at B=" << B << ", T=" << T);
      CHECK(int64_t(v) == e->second.evaluate(tg::SymbolValues{{"B", B}, {"T", T}}));
    }
  }
  CHECK_FALSE(arith.overflowed());
}

}  // namespace

TEST_CASE("size code: workspace offsets, each declared from the one before, compute their expressions", "[size_code]") {
  tg::Symbols symbols;
  symbols.declare({"B", 1, 64, 1});
  symbols.declare({"T", 1, 1024, 1});
  const SizeExpr B = SizeExpr::symbol("B"), T = SizeExpr::symbol("T");
  const SizeExpr blocks = tg::floor_div(4 * B * T + 255, SizeExpr(256), symbols);
  // Buffers of a few kinds, laid out one after another as a workspace is.
  const std::vector<SizeExpr> buffers = {256 * B * T, 1024 * blocks, SizeExpr(131072), 64 * T, 256 * B * T, SizeExpr(512), 4 * B * T * T};
  tg::SizeCode sizes(symbols, true);
  std::map<std::string, SizeExpr> expected;
  std::vector<std::string> offsets;
  SizeExpr offset = 4096 * B;
  for (int round = 0; round < 3; ++round) {
    for (const SizeExpr& bytes : buffers) {
      offsets.push_back(sizes.of(offset));
      expected.emplace(offsets.back(), offset);
      offset = offset + bytes;
    }
  }
  const std::vector<Declared> declared = declared_sizes(sizes.declarations("1"));
  for (auto [B_, T_] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {17, 100}, {64, 1024}}) check_at(declared, expected, B_, T_);
  // Each offset after the first: the one before it plus the bytes between them.
  for (size_t k = 1; k < offsets.size(); ++k) {
    const auto d = std::find_if(declared.begin(), declared.end(), [&](const Declared& x) { return x.name == offsets[k]; });
    REQUIRE(d != declared.end());
    INFO(d->name << " = " << d->code);
    CHECK(d->code.starts_with("int64_t(tg_arith.narrow(tg_arith.add(" + offsets[k - 1] + ", "));
  }
}

TEST_CASE("size code: a size no earlier one shortens is declared from its expression", "[size_code]") {
  tg::Symbols symbols;
  symbols.declare({"B", 1, 64, 1});
  symbols.declare({"T", 1, 1024, 1});
  const SizeExpr B = SizeExpr::symbol("B"), T = SizeExpr::symbol("T");
  tg::SizeCode sizes(symbols, true);
  const std::string a = sizes.of(B * T), b = sizes.of(3 * T + 2), c = sizes.of(tg::max(B, T, symbols) * 5);
  const std::vector<Declared> declared = declared_sizes(sizes.declarations("1"));
  REQUIRE(declared.size() == 5);  // B, T and the three
  CHECK_FALSE(std::regex_search(declared[4].code, std::regex("tg_size[0-9]")));  // (5*max(B, T) shares no term with 3*T + 2)
  check_at(declared, {{a, B * T}, {b, 3 * T + 2}, {c, tg::max(B, T, symbols) * 5}}, 5, 9);
}
