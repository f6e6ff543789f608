// Reader: trace JSON (format v1, docs/trace-format.md) -> verified Trace.
// Every error is a UserError naming the JSON pointer of the offending element, or line:col for
// JSON syntax errors.
#pragma once
#include <string>
#include <string_view>

#include "ir/trace.h"

namespace tg {

// The symbol of a custom autograd function's call (docs/trace-format.md, custom functions: its forward
// and backward bodies are inlined); the listing reader refuses it too.
inline constexpr std::string_view kCustomGradOp = "torch.ops.higher_order.autograd_function_apply";

// How a symbolic trace's plain integers (an op output's dims, integer arguments) are read: as the
// same at every size, as a JSON trace writes them (a size that changes is written as an
// expression); or as sizes alone, which may depend on the symbols through arithmetic not written
// (a PT2 archive's translation evaluates its graph's size arithmetic). Inputs' integer dims are
// constants either way.
enum class PlainIntegers { constant, sizes_alone };

// Parses and verifies `text`. Deeply nested input is refused rather than recursed into. A trace
// that declares symbols is read at the sizes `specialize` gives every one of them
// (docs/symbolic-shapes.md).
Trace read_trace(const std::string& text, const SymbolValues& specialize = {}, PlainIntegers integers = PlainIntegers::constant);
Trace read_trace_file(const std::string& path, const SymbolValues& specialize = {});

}  // namespace tg
