// JsonWriter: manifest.json's JSON, written as it goes (output/manifest.cpp).
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tg {

// Writes JSON as it goes, laid out as nlohmann's dump(2) lays it out (the manifest's layout since
// its first version: two-space indents, one member or element per line, "[]" and "{}" when
// empty). The manifest of a 100,000-op trace is megabytes; building a document first cost more
// than writing it.
class JsonWriter {
 public:
  JsonWriter& open(char bracket) {
    element();
    text_ += bracket;
    empty_.push_back(true);
    return *this;
  }
  JsonWriter& close(char bracket) {
    const bool empty = empty_.back();
    empty_.pop_back();
    if (!empty) {
      text_ += '\n';
      text_.append(2 * empty_.size(), ' ');
    }
    text_ += bracket;
    return *this;
  }
  // The next member of the open object is `k`.
  JsonWriter& key(std::string_view k) {
    element();
    quoted(k);
    text_ += ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    element();
    quoted(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t n) {
    element();
    text_ += std::to_string(n);
    return *this;
  }
  JsonWriter& value(bool b) {
    element();
    text_ += b ? "true" : "false";
    return *this;
  }
  template <class T>
  JsonWriter& member(std::string_view k, const T& v) {
    return key(k).value(v);
  }
  template <class T>
  JsonWriter& array(std::string_view k, const std::vector<T>& items) {
    key(k).open('[');
    for (const T& item : items) value(item);
    return close(']');
  }
  std::string take() { return std::move(text_); }

 private:
  std::string text_;
  std::vector<bool> empty_;  // per open container: nothing written in it yet
  bool after_key_ = false;

  // Where a value or key starts: after its key, or on a line of its own in the open container.
  void element() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (empty_.empty()) return;
    text_ += empty_.back() ? "\n" : ",\n";
    empty_.back() = false;
    text_.append(2 * empty_.size(), ' ');
  }
  void quoted(std::string_view s) {
    text_ += '"';
    for (size_t i = 0; i < s.size(); ++i) {
      // A run that needs no escape goes in whole (names and JSON pointers are all run).
      size_t run = i;
      while (run < s.size() && s[run] != '"' && s[run] != '\\' && static_cast<unsigned char>(s[run]) >= 0x20) ++run;
      if (run > i) {
        text_.append(s, i, run - i);
        i = run - 1;
        continue;
      }
      const char c = s[i];
      switch (c) {
        case '"': text_ += "\\\""; break;
        case '\\': text_ += "\\\\"; break;
        case '\b': text_ += "\\b"; break;
        case '\f': text_ += "\\f"; break;
        case '\n': text_ += "\\n"; break;
        case '\r': text_ += "\\r"; break;
        case '\t': text_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
            text_ += escaped;
          } else {
            text_ += c;
          }
      }
    }
    text_ += '"';
  }
};
}  // namespace tg
