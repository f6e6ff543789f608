#include "frontend/json_document.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/diagnostics.h"

namespace tg::json {
namespace {

// line:col of a byte offset, for syntax errors.
std::string line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Nesting deeper than kMaxDepth (at the bracket that goes too deep) and integers beyond 64 bits,
// refused at their line and column; run when simdjson refuses the text, which it does for both
// (with no position). Strings are skipped; syntax errors are left to the parser.
void scan_lexically(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) throw UserError(line_col(text, i), "JSON nests deeper than " + std::to_string(kMaxDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i, end = i + (c == '-');
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      bool integer = end == text.size() || (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
      std::string digits(text.substr(start, end - start));
      if (integer && digits.size() > 1) {
        errno = 0;
        if (c == '-') (void)std::strtoll(digits.c_str(), nullptr, 10);
        else (void)std::strtoull(digits.c_str(), nullptr, 10);
        if (errno == ERANGE) throw UserError(line_col(text, start), "integer " + digits + " overflows 64 bits");
      }
      i = end - 1;
    }
  }
}

// The message for text simdjson refuses, worded by nlohmann's parser: what the syntax error is,
// at its line and column. (Only ever run on invalid input.)
class SyntaxError : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte = byte;
    error = e.what();
    return false;
  }
  size_t error_byte = 0;
  std::string error;
};

[[noreturn]] void throw_syntax_error(std::string_view text, simdjson::error_code refused) {
  SyntaxError handler;
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &handler))  // accepted here: say what simdjson said
    throw UserError("/", "invalid JSON: " + std::string(simdjson::error_message(refused)));
  // The library's message after its "[json.exception.<kind>.<id>] " tag; for a syntax error, from
  // "syntax error" on (its "parse error at line L, column C" repeats our position).
  std::string message = handler.error;
  if (message.rfind("[json.exception.", 0) == 0 && message.find("] ") != std::string::npos) message.erase(0, message.find("] ") + 2);
  if (auto pos = message.find("syntax error"); pos != std::string::npos) message.erase(0, pos);
  throw UserError(line_col(text, handler.error_byte > 0 ? handler.error_byte - 1 : 0), "invalid JSON: " + message);
}

class DuplicateKeys {
 public:
  void check(Json j) {
    if (j.is_array()) {
      size_t i = 0;
      for (Json element : array_of(j)) {
        path_.push_back({true, {}, i++});
        check(element);
        path_.pop_back();
      }
    } else if (j.is_object()) {
      const size_t mark = keys_.size();  // this object's keys are keys_[mark, end)
      for (const simdjson::dom::key_value_pair& member : object_of(j)) {
        if (std::find(keys_.begin() + ptrdiff_t(mark), keys_.end(), member.key) != keys_.end())  // (objects are short)
          throw UserError(pointer() + "/" + escape_pointer_token(std::string(member.key)), "duplicate key \"" + std::string(member.key) + "\"");
        keys_.push_back(member.key);
        path_.push_back({false, member.key, 0});
        check(member.value);
        path_.pop_back();
      }
      keys_.resize(mark);
    }
  }

 private:
  struct Step {  // into a list at `index`, or into an object at `key`
    bool in_list;
    std::string_view key;
    size_t index;
  };
  std::vector<Step> path_;  // from the root down to the element being checked
  std::vector<std::string_view> keys_;

  std::string pointer() const {
    std::string p;
    for (const Step& step : path_) p += "/" + (step.in_list ? std::to_string(step.index) : escape_pointer_token(std::string(step.key)));
    return p;
  }
};

}  // namespace

Json parse_document(simdjson::dom::parser& parser, const simdjson::padded_string& padded) {
  // simdjson refuses what scan_lexically would (nesting past kMaxDepth, integers past 64 bits);
  // the error path runs it first, for its line:col messages.
  const std::string_view text(padded);
  Json doc;
  simdjson::error_code error = parser.allocate(padded.size(), kMaxDepth);
  if (!error) error = parser.parse(padded).get(doc);
  if (error) {
    scan_lexically(text);
    throw_syntax_error(text, error);
  }
  return doc;
}

void check_duplicate_keys(Json document) { DuplicateKeys().check(document); }

}  // namespace tg::json
