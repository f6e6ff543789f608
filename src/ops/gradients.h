// Gradient rules of the prims, one per OpKind (the op table's `grad` field is filled from here).
// Each rule is written in prims, through a GradBuilder, so the backward it makes is an ordinary
// trace that fuses, emits and runs like the forward.
#pragma once
#include "ops/op_table.h"

namespace tg {

// Where a kind's gradient rule comes from: a rule of its own (gradients.cpp), a torch-level rule
// (torch_ops.cpp: a rule of the torch call, or differentiation through its lowering), Thunder's
// distributed rules (distributed.h), or none (no gradient flows).
enum class RuleSource { own, torch_level, distributed, none };
RuleSource rule_source(OpKind kind);

GradRule gradient_rule(OpKind kind);
// What that rule reads of the forward: "inputs", "output", "inputs, output", "nothing", or ""
// for an op without a gradient.
std::string_view gradient_saves(OpKind kind);

}  // namespace tg
