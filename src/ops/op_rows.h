// Helpers for writing op table rows and their shape rules (src/ops/op_table.cpp, src/ops/distributed.cpp,
// src/ops/torch_elementwise.cpp): the parameter shorthands, a string literal argument, the failure a
// rule reports (caught by the verifier, which names the op and the argument), and a shape as text.
#pragma once
#include <string>
#include <string_view>
#include <utility>

#include "ops/op_table.h"

namespace tg::op_rows {

// A rule's failure at argument `arg` (-1: the op as a whole).
[[noreturn]] inline void fail(int arg, std::string message) { throw RuleError{arg, std::move(message)}; }

inline Param p(std::string_view name, ParamKind kind) { return Param{name, kind}; }
inline Param kw(std::string_view name, ParamKind kind) { return Param{name, kind, true}; }
inline Param opt(std::string_view name, ParamKind kind, Arg def = {}) { return Param{name, kind, false, true, std::move(def)}; }

inline Arg string_arg(std::string text) {
  Arg a;
  a.kind = Arg::Kind::string;
  a.text = std::move(text);
  return a;
}

// [2, 3, 4]
inline std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace tg::op_rows
