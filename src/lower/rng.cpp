#include "lower/rng.h"

#include <set>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

// A draw still to be bound: Thunder's stateful prims.uniform, or a dropout (attention with
// dropout_p above 0) whose seed is not given.
bool unbound_draw(const Op& op) {
  if (!op.info) return false;
  if (op.info->kind == OpKind::uniform) return true;
  if (op.info->kind == OpKind::t_sdpa && op.arg("dropout_p").is_number() && op.arg("dropout_p").as_double() == 0.0) return false;
  if (op.info->kind == OpKind::t_mha && !(op.arg("training").boolean && op.arg("dropout_p").as_double() > 0.0)) return false;
  size_t s = philox_seed_param(op);
  return s && op.info->kind != OpKind::uniform_philox && op.arg(s).kind == Arg::Kind::none;
}

bool any_unbound(const std::vector<Op>& ops) {
  bool any = false;
  for_each_nested_op(ops, [&](const Op& op) { any = any || unbound_draw(op); });
  return any;
}

// Binds every unbound draw that will be lowered to (seed, offset), each with the next stream, in
// trace order.
void bind(std::vector<Op>& ops, ValueId seed, ValueId offset, int64_t& stream) {
  for_each_nested_op(ops, [&](Op& op) {
    if (!unbound_draw(op)) return;
    if (op.info->kind == OpKind::uniform) {  // becomes uniform_philox, whose last three params are these
      op.info = find_op("prims.uniform_philox");
      op.symbol = std::string(op.info->id);
      op.args.resize(op.info->params.size());
      if (!op.arg_where.empty()) op.arg_where.resize(op.info->params.size());  // (empty: all by position)
    }
    size_t s = philox_seed_param(op);
    op.args[s] = Arg::of_value(seed);
    op.args[s + 1] = Arg::of_value(offset);
    op.args[s + 2] = Arg::of_int(stream++);
  }, /*only_lowered=*/true);
}

}  // namespace

size_t philox_seed_param(const Op& op) {
  if (!op.info) return 0;
  switch (op.info->kind) {
    case OpKind::uniform_philox:
    case OpKind::t_dropout:
    case OpKind::t_sdpa:
    case OpKind::t_mha: {
      // seed, offset, stream, in that order, in each drawing row's signature (the torch-level
      // rows' extension after PyTorch's parameters)
      const std::vector<Param>& params = op.info->params;
      const size_t seed = param_index(*op.info, "seed");
      TG_CHECK(seed + 2 < params.size() && params[seed + 1].name == "offset" && params[seed + 2].name == "stream",
               std::string(op.info->id) + " does not declare seed, offset and stream");
      return seed;
    }
    default: return 0;
  }
}

bool has_unbound_draws(const Trace& trace) { return any_unbound(trace.ops); }

Trace bind_rng(Trace trace) {
  if (!any_unbound(trace.ops)) return trace;
  Trace out = std::move(trace);
  NameSet taken;
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
