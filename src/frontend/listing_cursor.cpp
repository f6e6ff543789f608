#include "frontend/listing_cursor.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "support/diagnostics.h"

namespace tg::listing {
namespace {

bool is_symbol_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

}  // namespace

void Cursor::fail_at(const std::string& message, size_t pos) const {
  throw UserError(file_, std::to_string(line_), message + " (column " + std::to_string(column_ + pos + 1) + ")");
}

std::string Cursor::identifier(const char* what, bool dotted) {
  const size_t start = pos_;
  while (pos_ < s_.size() && (dotted ? is_symbol_char(s_[pos_]) : is_symbol_char(s_[pos_]) && s_[pos_] != '.')) ++pos_;
  const std::string word(s_.substr(start, pos_ - start));
  if (word.empty() || std::isdigit(static_cast<unsigned char>(word[0])) || word.back() == '.' || word.find("..") != std::string::npos) {
    pos_ = start;
    fail(std::string("expected ") + what);
  }
  return word;
}

int64_t Cursor::integer(const char* what) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), value);
  if (error == std::errc::result_out_of_range) fail(std::string(what) + " overflows 64 bits");
  if (error != std::errc()) fail(std::string("expected ") + what);
  pos_ = size_t(end - s_.data());
  return value;
}

Arg Cursor::number() {
  if (eat("float('nan')")) return Arg::of_real(std::numeric_limits<double>::quiet_NaN());
  if (eat("float('inf')")) return Arg::of_real(std::numeric_limits<double>::infinity());
  if (eat("-float('inf')")) return Arg::of_real(-std::numeric_limits<double>::infinity());
  size_t end = pos_;
  while (end < s_.size() && std::string_view("+-0123456789.eE").find(s_[end]) != std::string_view::npos) ++end;
  const std::string_view token = s_.substr(pos_, end - pos_);
  if (token.find_first_of(".eE") == std::string_view::npos) return Arg::of_int(integer("an integer"));
  double value = 0;
  auto [stop, error] = std::from_chars(token.data(), token.data() + token.size(), value);
  if (error != std::errc() || stop != token.data() + token.size()) fail("malformed number \"" + std::string(token) + "\"");
  pos_ = end;
  return Arg::of_real(value);
}

std::string Cursor::quoted() {
  expect("'");
  std::string out;
  while (!eat("'")) {
    if (done()) fail("unterminated string");
    char c = s_[pos_++];
    if (c == '\\') out += escaped();
    else out += c;
  }
  return out;
}

char Cursor::escaped() {
  if (done()) fail("unterminated string");
  const char c = s_[pos_++];
  switch (c) {
    case '\'': case '\\': return c;
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'x': {
      unsigned value = 0;
      auto [end, error] = std::from_chars(s_.data() + pos_, s_.data() + std::min(s_.size(), pos_ + 2), value, 16);
      if (error != std::errc() || end != s_.data() + pos_ + 2) fail("expected two hex digits after \\x");
      pos_ += 2;
      return char(value);
    }
    default: fail(std::string("unknown escape \\") + c);
  }
}

}  // namespace tg::listing
