// A symbolic trace's folder binds the sizes of a call: <trace>_bind_sizes reads each symbol from
// the inputs' shapes and checks them (templates/tg_sizes.h; docs/symbolic-shapes.md). Its
// declaration in the public header, its definition at the end of forward.cu and the harness's call
// are all made here from one SizeBinding, so they cannot disagree.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/entry_points.h"
#include "ir/trace.h"

namespace tg {

struct SizeBinding {
  struct Input {
    std::string name;             // the trace's input
    std::string param;            // its entry-point parameter (x, g_X), which the binder's are named after
    std::vector<SizeExpr> sizes;  // a symbol in at least one
  };
  std::string function;               // <trace>_bind_sizes
  std::vector<Input> inputs;          // in the trace's input order
  std::vector<SymbolDecl> symbols;    // by name: the order of the sizes the binder writes
  SymbolValues specialized_at;
  bool at_run_time = false;           // the folder runs at every size in range, not at specialized_at only
};

// The binding of a trace whose inputs are sized with symbols; nullopt for a static one.
std::optional<SizeBinding> size_binding(const Trace& t, const EntryPoint& forward, const std::string& trace_name);

// The header's part: the status, and the prototypes (each input's dims as arguments, or in arrays).
std::string bind_sizes_declaration(const SizeBinding& b);
// Its definition, for forward.cu.
std::string bind_sizes_definition(const SizeBinding& b);
// A call of the binder's array form on `dims` and `ranks` (the dims of each of b.inputs), writing
// no sizes and its words to (message, bytes): for the harness.
std::string bind_sizes_call(const SizeBinding& b, const std::string& dims, const std::string& ranks);

}  // namespace tg
