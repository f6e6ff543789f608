// Errors the tool reports. A UserError is bad input (exit 1) and names the place in the trace as a
// JSON pointer; an InternalError is a bug in thunder-gen (exit 70).
#pragma once
#include <stdexcept>
#include <string>

namespace tg {

struct UserError : std::runtime_error {
  std::string where;  // JSON pointer such as "/ops/3/args/0", or "line:col" for syntax errors
  std::string file;   // the input it is about when not the trace (an overrides file, a flag)
  UserError(std::string where_, const std::string& message)
      : std::runtime_error(message), where(std::move(where_)) {}
  UserError(std::string file_, std::string where_, const std::string& message)
      : std::runtime_error(message), where(std::move(where_)), file(std::move(file_)) {}
};

struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws InternalError when a pass breaks an invariant it promised to keep.
#define TG_CHECK(cond, msg)                                                                  \
  do {                                                                                       \
    if (!(cond)) throw ::tg::InternalError(std::string(__FILE__) + ":" +                     \
                                           std::to_string(__LINE__) + ": " + (msg));         \
  } while (0)

}  // namespace tg
