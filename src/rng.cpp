#include "rng.h"

#include <set>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

// Where an op that draws keeps its seed (then offset, then stream), or 0 for ops that do not
// draw: dropout, and attention with dropout_p above 0.
size_t seed_param(const Op& op) {
  if (!op.info) return 0;
  if (op.info->kind == OpKind::t_dropout) return 4;
  if (op.info->kind == OpKind::t_sdpa && !(op.arg(4).is_number() && op.arg(4).as_double() == 0.0)) return 7;
  return 0;
}
bool unbound_dropout(const Op& op) {
  if (op.info && op.info->kind == OpKind::uniform) return true;  // Thunder's stateful draw
  size_t s = seed_param(op);
  return s && op.arg(s).kind == Arg::Kind::none;
}

bool any_unbound(const std::vector<Op>& ops) {
  for (const Op& op : ops)
    if (unbound_dropout(op) || any_unbound(op.sub) || (op.custom && (any_unbound(op.custom->fwd.ops) || any_unbound(op.custom->bwd.ops))))
      return true;
  return false;
}

void bind(std::vector<Op>& ops, ValueId seed, ValueId offset, int64_t& stream) {
  for (Op& op : ops) {
    if (op.info && op.info->kind == OpKind::uniform) {
      op.info = find_op("prims.uniform_philox");
      op.symbol = std::string(op.info->id);
      for (Arg a : {Arg::of_value(seed), Arg::of_value(offset), Arg::of_int(stream++)}) {
        op.args.push_back(a);
        op.arg_where.push_back("");
      }
    } else if (unbound_dropout(op)) {
      size_t s = seed_param(op);
      op.args[s] = Arg::of_value(seed);
      op.args[s + 1] = Arg::of_value(offset);
      op.args[s + 2] = Arg::of_int(stream++);
    }
    bind(op.sub, seed, offset, stream);
    if (op.custom && (any_unbound(op.custom->fwd.ops) || any_unbound(op.custom->bwd.ops))) {
      auto bodies = std::make_shared<CustomGrad>(*op.custom);  // shared with other copies of the trace
      bind(bodies->fwd.ops, seed, offset, stream);
      bind(bodies->bwd.ops, seed, offset, stream);
      op.custom = std::move(bodies);
    }
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
