// The op table as `thunder-gen list-ops` prints it: one line per op for people, or JSON for tools
// (tools/op_declarations.py reads it; tools/ops_table.py writes docs/ops.md from it).
#pragma once
#include <string>

namespace tg {

// "thunder-gen VERSION: N ops", then each op readable from a trace: id(signature) [fusion class],
// what its gradient saves, and its code template.
std::string op_table_text();

// Every op readable from a trace, in kind order, as a JSON array of objects:
//   id, kind, family, fusion, accepts (the dtypes its operands may have), params (each with name,
//   kind, keyword_only and, if it has one, default as a trace literal), gradient ("rule": a rule of
//   its own; "lowering": its lowering's prims are differentiated; "refused": differentiating
//   through it is an error; "none": no gradient flows), grad_saves (what its rule reads: "inputs",
//   "output", "inputs, output", "nothing"; "" without a rule), discontinuous, kinked;
//   and where they apply: bool_result (elementwise ops and their torch forms), code and
//   integer_code (elementwise code templates), torch (the PyTorch function giving its value),
//   form_of (a torch form: the prim it is a form of), domains ([lo, hi] per operand: where tests
//   draw it), aten (the ATen call LibTorch's reference makes: "name.overload(params)"), summary.
std::string op_table_json();

}  // namespace tg
