// Decompose: lowers every op that has no rule of its own (a torch-level symbol) to its `sub`
// decomposition, recursively, and inlines the forward body of custom-gradient ops, so the result
// holds prims only. Ops produced from a tagged call inherit its tags.
#pragma once
#include "thunder_gen/ir.h"

namespace tg {

Trace decompose(const Trace& trace);

}  // namespace tg
