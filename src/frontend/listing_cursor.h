// One line of a stage listing, read left to right: words, identifiers, integers, numbers and
// Python string literals as the printer (src/ops/printer.h) writes them. Every error names the
// file, the line and the column. Internal to frontend/ (the listing reader).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/trace.h"

namespace tg::listing {

constexpr int kMaxNesting = 64;  // list and decomposition depth: refused past this, never recursed

class Cursor {
 public:
  // `text` is line `line` of the listing from its column `column` + 1 on.
  Cursor(std::string_view text, const std::string& file, size_t line, size_t column = 0)
      : s_(text), file_(file), line_(line), column_(column) {}

  [[noreturn]] void fail(const std::string& message) const { fail_at(message, pos_); }
  [[noreturn]] void fail_at(const std::string& message, size_t pos) const;
  size_t pos() const { return pos_; }
  bool done() const { return pos_ == s_.size(); }
  bool at(std::string_view word) const { return s_.substr(pos_, word.size()) == word; }
  bool eat(std::string_view word) {
    if (!at(word)) return false;
    pos_ += word.size();
    return true;
  }
  void expect(std::string_view word) {
    if (!eat(word)) fail("expected \"" + std::string(word) + "\"");
  }
  std::string_view rest() const { return s_.substr(pos_); }
  void skip_to_end() { pos_ = s_.size(); }

  // Identifiers joined by dots when `dotted` (a symbol id).
  std::string identifier(const char* what, bool dotted = false);
  int64_t integer(const char* what);
  // A number as print_literal writes one: an integer, or a float (with ".", "e", inf or nan).
  Arg number();
  // A Python string literal as python_string writes one: '...' with \' \\ \n \r \t \xNN.
  std::string quoted();

 private:
  char escaped();

  std::string_view s_;
  const std::string& file_;
  size_t line_;
  size_t column_;
  size_t pos_ = 0;
};

}  // namespace tg::listing
