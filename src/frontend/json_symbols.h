// The JSON trace's symbolic sizes (docs/symbolic-shapes.md): the top-level "symbols" object, the
// size each symbol is specialised to (--specialize), and shape entries and {"size": ...}
// literals written as expressions over the symbols. Internal to frontend/ (the JSON reader).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "frontend/json_element.h"
#include "ir/trace.h"

namespace tg::json {

// {"B": {"min": 1, "max": 4096, "multiple_of": 8}, ...}: each symbol's name (an identifier) and
// what is known of it (min and max required, multiple_of 1 unless given).
Symbols read_symbols(Json symbols, const Path& at);

// Checks that `values` gives every symbol of `symbols` a size its declaration allows, and names
// no symbol the trace does not declare. A symbol left without a size is an error at its
// declaration (`<declared_at>B`: "/symbols/B"); a size the declaration refuses is an error of the
// flag.
void check_specialization(const Symbols& symbols, const SymbolValues& values, const std::function<std::string(const std::string& name)>& declared_at);

// A size written as an expression over the trace's symbols (a string: "B*T", "T//2 + 1"). With
// `must_be_size`, the expression must be a size for every value of its symbols, not only at the
// trace's specialization: never negative. And its value at the trace's specialization.
SizeExpr size_expr_of(Json text, const Path& where, const Trace& t, bool must_be_size = true);
int64_t size_at_specialization(const SizeExpr& size, const Path& where, const Trace& t);

}  // namespace tg::json
