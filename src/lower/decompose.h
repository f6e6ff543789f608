// Decompose: lowers every op that has no rule of its own (a torch-level symbol) to its `sub`
// decomposition, recursively, and inlines the forward body of custom-gradient ops, so the result
// holds prims only. Ops produced from a tagged call inherit its tags.
//
// With keep_custom (the training path), custom-gradient ops stay as they are, with their fwd and
// bwd bodies lowered in place, and so do torch-level ops with rows of their own (composite):
// autograd needs the op boundary to use the user's backward or the op's own rule. Otherwise
// composite ops are lowered to prims (their lowerings, src/ops/<family>.cpp).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tg {

Trace decompose(const Trace& trace, bool keep_custom = false);

// Inlines a lowered sub-trace body into `t`: body input i becomes `inputs[i]`, body output i
// becomes `outputs[i]` (or keeps a fresh value where that is kNoValue), and every other body
// value becomes a fresh value named prefix + its name (unique against `taken`, which is updated).
// A body output that is one of its inputs, or that it returns twice, is bound through a copy so
// each bound output is defined exactly once. Returns the inlined ops; `rename` maps every body
// value to its value in `t`.
std::vector<Op> inline_body(Trace& t, NameSet& taken, const SubTrace& body, const std::vector<ValueId>& inputs,
                            const std::vector<ValueId>& outputs, const std::string& prefix, const std::string& where,
                            std::map<ValueId, ValueId>& rename);

// The tensor arguments of an op, in order (what a custom op's fwd inputs bind to).
std::vector<ValueId> tensor_args(const Trace& t, const Op& op);

}  // namespace tg
