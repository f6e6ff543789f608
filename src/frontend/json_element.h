// The JSON reader's access to a document (simdjson's DOM): an element's kind in words, typed
// access to an element already checked, object members, and Path, the JSON pointer an error
// names, spelled out only when a message needs it. Internal to frontend/ (the JSON reader).
#pragma once
#include <cstdint>
#include <optional>
#include <simdjson.h>
#include <span>
#include <string>
#include <string_view>

#include "support/diagnostics.h"

namespace tg::json {

// The document is read with simdjson's DOM (a flat tape: no allocation per node, strings as
// views). nlohmann's parser (several times slower, and its DOM a map per object) only words the
// message when simdjson refuses the text (json_document.h).
using Json = simdjson::dom::element;
using Object = simdjson::dom::object;
using Array = simdjson::dom::array;
using simdjson::dom::element_type;

constexpr int kMaxDepth = 64;  // JSON nesting deeper than any real trace; refused, never recursed

// A JSON pointer token: "~" as "~0", "/" as "~1".
std::string escape_pointer_token(std::string_view s);
// "null", "a boolean", "an integer", ..., for messages.
std::string kind_name(Json j);
// The element as JSON text, for messages.
inline std::string dump(Json j) { return simdjson::minify(j); }

// simdjson stores integers that fit int64 as INT64 and larger ones (below 2^64) as UINT64. (Its
// is_int64() and is_uint64() ask whether the value fits, not how it is stored.)
inline bool is_int64(Json j) { return j.type() == element_type::INT64; }
inline bool is_too_large(Json j) { return j.type() == element_type::UINT64; }
inline bool is_json_integer(Json j) { return is_int64(j) || is_too_large(j); }
// The element as a T, which the caller has checked it is (the type tests come first, for messages).
template <class T>
T as(Json j) {
  T value{};
  TG_CHECK(j.get(value) == simdjson::SUCCESS, "a JSON element read as the wrong type");
  return value;
}
inline std::string_view string_of(Json j) { return as<std::string_view>(j); }
inline int64_t int_of(Json j) { return as<int64_t>(j); }
inline Array array_of(Json j) { return as<Array>(j); }
inline Object object_of(Json j) { return as<Object>(j); }

// A member of an object, if present (objects are short: a linear search).
inline std::optional<Json> find(Object o, std::string_view key) {
  for (const simdjson::dom::key_value_pair& member : o)
    if (member.key == key) return member.value;
  return std::nullopt;
}
// The i-th element of a list (linear: only for messages).
Json item(Json list, size_t i);

// A JSON pointer spelled out only when a message, or an op's stored location, needs it: one
// already spelled, or a parent's and one more token. Parents are the callers' locals and outlive
// their children, so a Path is passed down, never stored. (Building every pointer eagerly was a
// sixth of reading.)
class Path {
 public:
  explicit Path(const std::string& spelled) : spelled_(&spelled) {}
  Path(std::string&&) = delete;  // would dangle
  Path(const Path& parent, std::string_view key) : parent_(&parent), key_(key) {}
  Path(const Path& parent, size_t index) : parent_(&parent), index_(index), is_index_(true) {}
  std::string str() const;
  std::string str_or_root() const;  // "/" for the document itself

 private:
  const std::string* spelled_ = nullptr;
  const Path* parent_ = nullptr;
  std::string_view key_;
  size_t index_ = 0;
  bool is_index_ = false;
};

// The element at `where` as what the trace format says it is, else a UserError naming its place
// and what it is instead.
Object object_at(Json j, const Path& where);
Array list_at(Json j, const Path& where);
std::string string_at(Json j, const Path& where);
// The member `key` of an object, which the format requires.
Json require(Object obj, const Path& where, const char* key);
// An object's members must be among `known`: a misspelt field ("requires_gard", "tag") would
// otherwise be ignored, and with it what it says.
void check_fields(Object obj, const Path& where, std::span<const std::string_view> known);

}  // namespace tg::json
