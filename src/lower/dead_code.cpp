#include "lower/dead_code.h"

namespace tg {

std::vector<bool> live_ops(const std::vector<Op>& ops, size_t value_count, const std::vector<ValueId>& roots) {
  std::vector<bool> live_value(value_count, false), keep(ops.size(), false);
  for (ValueId v : roots) live_value[size_t(v)] = true;
  for (size_t i = ops.size(); i-- > 0;) {
    for (ValueId v : ops[i].outs) keep[i] = keep[i] || live_value[size_t(v)];
    if (keep[i]) for_each_value(ops[i], [&](ValueId v) { live_value[size_t(v)] = true; });
  }
  return keep;
}

Trace remove_dead_ops(Trace t) {
  const std::vector<bool> keep = live_ops(t.ops, t.values.size(), t.outputs);
  size_t kept = 0;
  for (size_t i = 0; i < t.ops.size(); ++i)
    if (keep[i]) {
      if (kept != i) t.ops[kept] = std::move(t.ops[i]);
      ++kept;
    }
  t.ops.resize(kept);
  return t;
}

}  // namespace tg
