// Gradient rules of the prims, one per OpKind (the op table's `grad` field is filled from here).
// Each rule is written in prims, through a GradBuilder, so the backward it makes is an ordinary
// trace that fuses, emits and runs like the forward.
#pragma once
#include "thunder_gen/op_table.h"

namespace tg {

GradRule gradient_rule(OpKind kind);

}  // namespace tg
