// What the declarations (src/ops/<family>.def, all_ops.def) are written in, and how a family's
// .cpp turns its rows into op-table rows: the parameter shorthands, the gradient and reference
// words, the row builders, the failure a shape rule reports (caught by the verifier, which names
// the op and the argument), and a shape as text.
#pragma once
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/op_table.h"

namespace tg::op_rows {

// A rule's failure at argument `arg` (-1: the op as a whole).
[[noreturn]] inline void fail(int arg, std::string message) { throw RuleError{arg, std::move(message)}; }

// Parameters: positional, keyword-only, with a default, keyword-only with a default.
inline Param p(std::string_view name, ParamKind kind) { return Param{name, kind}; }
inline Param kw(std::string_view name, ParamKind kind) { return Param{name, kind, true}; }
inline Param opt(std::string_view name, ParamKind kind, Arg def = {}) { return Param{name, kind, false, true, std::move(def)}; }
inline Param kw_opt(std::string_view name, ParamKind kind, Arg def = {}) { return Param{name, kind, true, true, std::move(def)}; }

inline Arg string_arg(std::string text) {
  Arg a;
  a.kind = Arg::Kind::string;
  a.text = std::move(text);
  return a;
}

// [2, 3, 4]
template <class Sizes>  // Shape or std::vector<int64_t>
std::string shape_str(const Sizes& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(int64_t(s[i]));
  return out + "]";
}

// The gradient column's words for "no rule of its own".
inline constexpr std::nullptr_t no_gradient = nullptr;       // no gradient flows through it
inline constexpr std::nullptr_t through_lowering = nullptr;  // a composite op: the prims' rules

// A lowering written as a function of (builder, op) giving one value or a list of them.
template <auto F>
std::vector<ValueId> lowered(GradBuilder& g, const Op& op) {
  if constexpr (std::is_same_v<decltype(F(g, op)), ValueId>) return {F(g, op)};
  else return F(g, op);
}

// The fields every declaration gives; a family's builder fills in the rest.
struct Declared {
  OpKind kind;
  std::string_view id;
  FusionClass fusion;
  DTypes accepts;
  ShapeRule rule;
  GradRule grad;
  std::string_view saves;
  std::string_view aten;
  std::string_view summary;
  std::vector<Param> params;
  std::string_view family;
};
OpInfo row(Declared d);
// A prim computed by code generation (elementwise: its code template), and a composite op.
inline OpInfo prim_row(Declared d, std::string_view code) {
  OpInfo info = row(std::move(d));
  info.code = code;
  return info;
}
inline OpInfo composite_row(Declared d, Lowering lowering) {
  OpInfo info = row(std::move(d));
  info.lowering = lowering;
  return info;
}

}  // namespace tg::op_rows

// The aten column: aten("op.overload(params)") names the ATen call, by_hand leaves it empty.
#define TG_ATEN_aten(call) call
#define TG_ATEN_by_hand ""

// The rows of TG_PRIM and TG_COMPOSITE (all_ops.def), in a family's rows function, where kFamily
// names the family and ParamKind's names are in scope (using enum ParamKind).
#define TG_PRIM_ROW(name, id, fusion, accepts, rule, code, gradient, saves, aten, summary, ...)                                  \
  ::tg::op_rows::prim_row({OpKind::name, id, FusionClass::fusion, DTypes::accepts, rule, gradient, saves, TG_ATEN_##aten, summary, \
                           {__VA_ARGS__}, kFamily},                                                                               \
                          code),
#define TG_COMPOSITE_ROW(name, id, accepts, rule, lowering, gradient, saves, aten, summary, ...)                                     \
  ::tg::op_rows::composite_row({OpKind::name, id, FusionClass::composite, DTypes::accepts, rule, gradient, saves, TG_ATEN_##aten,   \
                                summary, {__VA_ARGS__}, kFamily},                                                                    \
                               &::tg::op_rows::lowered<lowering>),
