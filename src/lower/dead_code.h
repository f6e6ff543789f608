// Dead code: ops whose values no output needs. One liveness walk, used by the dead-code pass
// (after decomposition, so fusion sees only live ops) and by autograd (which builds a rule's
// contribution for every operand and keeps those a gradient output uses).
#pragma once
#include <vector>

#include "ir/trace.h"

namespace tg {

// keep[i]: some value of ops[i] is one of `roots` or read by a kept op after it. Linear in the
// ops and their arguments; `value_count` bounds the value ids.
std::vector<bool> live_ops(const std::vector<Op>& ops, size_t value_count, const std::vector<ValueId>& roots);

// The pass: `t` without the ops its outputs do not need.
Trace remove_dead_ops(Trace t);

}  // namespace tg
