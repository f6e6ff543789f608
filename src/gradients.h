// Gradient rules of the prims, one per OpKind (the op table's `grad` field is filled from here).
// Each rule is written in prims, through a GradBuilder, so the backward it makes is an ordinary
// trace that fuses, emits and runs like the forward.
#pragma once
#include "thunder_gen/op_table.h"

namespace tg {

GradRule gradient_rule(OpKind kind);
// What that rule reads of the forward: "inputs", "output", "inputs, output", "nothing", or ""
// for an op without a gradient.
std::string_view gradient_saves(OpKind kind);

}  // namespace tg
