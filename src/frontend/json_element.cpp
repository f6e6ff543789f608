#include "frontend/json_element.h"

#include <algorithm>

#include "support/spelling.h"

namespace tg::json {

std::string escape_pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string kind_name(Json j) {
  switch (j.type()) {
    case element_type::NULL_VALUE: return "null";
    case element_type::BOOL: return "a boolean";
    case element_type::INT64: return "an integer";
    case element_type::UINT64: return "an integer past int64";  // (simdjson's type of one above 2^63 - 1)
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::ARRAY: return "a list";
    case element_type::OBJECT: return "an object";
  }
  return "an unexpected value";
}

Json item(Json list, size_t i) {
  Json element;
  TG_CHECK(array_of(list).at(i).get(element) == simdjson::SUCCESS, "a list element past the end");
  return element;
}

std::string Path::str() const {
  if (spelled_) return *spelled_;
  std::string s = parent_->str();
  s += '/';
  s += is_index_ ? std::to_string(index_) : escape_pointer_token(key_);
  return s;
}

std::string Path::str_or_root() const {
  std::string s = str();
  return s.empty() ? "/" : s;
}

Object object_at(Json j, const Path& where) {
  if (!j.is_object()) throw UserError(where.str_or_root(), "expected an object, got " + kind_name(j));
  return object_of(j);
}

Array list_at(Json j, const Path& where) {
  if (!j.is_array()) throw UserError(where.str(), "expected a list, got " + kind_name(j));
  return array_of(j);
}

std::string string_at(Json j, const Path& where) {
  if (!j.is_string()) throw UserError(where.str(), "expected a string, got " + kind_name(j));
  return std::string(string_of(j));
}

Json require(Object obj, const Path& where, const char* key) {
  std::optional<Json> member = find(obj, key);
  if (!member) throw UserError(where.str_or_root(), std::string("missing required field \"") + key + "\"");
  return *member;
}

void check_fields(Object obj, const Path& where, std::span<const std::string_view> known) {
  for (const simdjson::dom::key_value_pair& member : obj)
    if (std::find(known.begin(), known.end(), member.key) == known.end())
      throw UserError(Path(where, member.key).str(), "unknown field \"" + std::string(member.key) + "\" (did you mean \"" +
                                                        std::string(closest_word(member.key, known)) + "\"?)");
}

}  // namespace tg::json
