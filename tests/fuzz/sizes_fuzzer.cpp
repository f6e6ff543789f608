// libFuzzer target: the input bytes as a size expression (src/ir/size_expr*.cpp), in the trace
// format's grammar (`B*T//2 + max(B, 3)`) or, after a first byte 'S', as sympy srepr text in a PT2
// archive (src/frontend/pt2_sizes.cpp), over the symbols B in [0, 40], T in [1, 24] (a multiple of
// 3), s0 and s1. A SizeExprError is the expected answer to bad input. What parses must keep its
// promises: its canonical text reads back as the same expression, and at points of the declared
// ranges its value lies in range_of() and is a multiple of known_multiple(); a broken promise, any
// other exception, or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontend/pt2_sizes.h"
#include "ir/size_expr.h"

namespace {

const tg::Symbols& symbols() {
  static const tg::Symbols s = [] {
    tg::Symbols out;
    out.declare({"B", 0, 40, 1});
    out.declare({"T", 1, 24, 3});
    out.declare({"s0", 2, 9, 1});
    out.declare({"s1", 1, 5, 1});
    return out;
  }();
  return s;
}

[[noreturn]] void finding(const std::string& what, const tg::SizeExpr& e) {
  std::fprintf(stderr, "sizes_fuzzer: %s: %s\n", what.c_str(), e.text().c_str());
  std::abort();
}

void check_promises(const tg::SizeExpr& e) {
  if (!(tg::parse_size_expr(e.text(), symbols()) == e)) finding("text() does not read back as the same expression", e);
  const tg::SizeRange range = tg::range_of(e, symbols());
  const int64_t multiple = tg::known_multiple(e, symbols());
  for (int64_t b : {0, 1, 17, 40}) {
    for (int64_t t : {3, 12, 24}) {
      const tg::SymbolValues at{{"B", b}, {"T", t}, {"s0", 2 + b % 8}, {"s1", 1 + t % 5}};
      int64_t v = 0;
      try {
        v = e.evaluate(at);
      } catch (const tg::SizeExprError&) {
        continue;  // overflow at this point: refused, not wrapped
      }
      if (v < range.lo || v > range.hi) finding("a value outside range_of()", e);
      if (multiple != 0 && v % multiple != 0) finding("a value that is no multiple of known_multiple()", e);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const bool srepr = !text.empty() && text[0] == 'S';
    const tg::SizeExpr e = srepr ? tg::pt2::sympy_size(std::string_view(text).substr(1), symbols()) : tg::parse_size_expr(text, symbols());
    check_promises(e);
  } catch (const tg::SizeExprError&) {
  }
  return 0;
}
