#include "rng.h"

#include <set>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

bool unbound_dropout(const Op& op) { return op.info && op.info->kind == OpKind::t_dropout && op.arg(4).kind == Arg::Kind::none; }

bool any_unbound(const std::vector<Op>& ops) {
  for (const Op& op : ops)
    if (unbound_dropout(op) || any_unbound(op.sub)) return true;
  return false;
}

void bind(std::vector<Op>& ops, ValueId seed, ValueId offset, int64_t& stream) {
  for (Op& op : ops) {
    if (unbound_dropout(op)) {
      op.args[4] = Arg::of_value(seed);
      op.args[5] = Arg::of_value(offset);
      op.args[6] = Arg::of_int(stream++);
    }
    bind(op.sub, seed, offset, stream);
  }
}

}  // namespace

Trace bind_rng(const Trace& trace) {
  if (!any_unbound(trace.ops)) return trace;
  Trace out = trace;
  std::set<std::string> taken;
  for (const Value& v : out.values) taken.insert(v.name);
  auto scalar_input = [&](std::string name) {
    while (taken.count(name)) name += "_";
    taken.insert(name);
    Value v;
    v.name = name;
    v.is_scalar = true;
    v.dtype = DType::i64;
    ValueId id = out.add_value(std::move(v));
    out.inputs.push_back(id);
    return id;
  };
  ValueId seed = scalar_input("philox_seed"), offset = scalar_input("philox_offset");
  int64_t stream = 0;
  bind(out.ops, seed, offset, stream);
  return out;
}

}  // namespace tg
