// What the readers of size expressions share (the trace format's `B*T//2`, sympy's srepr text in
// a PT2 archive): a position in a text of bounded length, a bounded nesting depth, and errors
// that say where.
#pragma once
#include <string>
#include <string_view>

#include "ir/size_expr.h"

namespace tg {

class SizeTextReader {
 protected:
  static constexpr int kMaxDepth = 32;

  SizeTextReader(std::string_view text, const Symbols& symbols, size_t max_length) : text_(text), symbols_(symbols) {
    if (text.size() > max_length) throw SizeExprError("a size expression is longer than " + std::to_string(max_length) + " characters");
  }

  std::string_view text_;
  const Symbols& symbols_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& message) const { throw SizeExprError(message, pos_); }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool take(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  // Around each nested read, so that deep nesting is an error, not a stack overflow.
  void enter() {
    if (++depth_ > kMaxDepth) fail("a size expression nests deeper than " + std::to_string(kMaxDepth));
  }
  void leave() { --depth_; }

 private:
  int depth_ = 0;
};

}  // namespace tg
