#include "ops/prim_builder.h"

#include <map>

#include "support/diagnostics.h"

namespace tg {

std::vector<ValueId> PrimBuilder::emit(std::string_view id, std::vector<Arg> args) {
  Op op;
  op.info = find_op(id);
  TG_CHECK(op.info, "a rule uses an unknown prim: " + std::string(id));
  op.symbol = std::string(op.info->id);
  op.args = std::move(args);
  // Trailing parameters left out take their defaults, as the reader binds them.
  for (size_t i = op.args.size(); i < op.info->params.size() && op.info->params[i].has_default; ++i)
    op.args.push_back(op.info->params[i].default_value);
  op.where = where_;
  op.origin = rule_of_;
  op.tags = tags_;
  std::vector<OutType> types;
  try {
    types = op.info->rule(t_, op);
  } catch (const RuleError& e) {
    if (e.about_sizes) throw UserError(where_.empty() ? "/" : where_, rule_of_ + ", as " + std::string(id) + ": " + e.message);
    throw InternalError("the rule of " + rule_of_ + " built an ill-typed " + std::string(id) + ": " + e.message);
  }
  for (const OutType& type : types) {
    Value v;
    v.name = fresh(prefix_);
    v.dtype = type.dtype;
    v.shape = type.shape;
    v.device = t_.device;
    op.outs.push_back(t_.add_value(std::move(v)));
  }
  std::vector<ValueId> outs = op.outs;
  ops_.push_back(std::move(op));
  return outs;
}

void PrimBuilder::differentiating(const Op& op) {
  where_ = op.where;
  tags_ = op.tags;
  rule_of_ = op.symbol;
}

std::string PrimBuilder::fresh(const std::string& base) {
  std::string name;
  do name = base + std::to_string(counter_++); while (taken_.count(name));
  taken_.insert(name);
  return name;
}

std::string PrimBuilder::fresh_named(const std::string& name) {
  std::string n = name;
  // Suffixes count on from the last one given for this name: an output listed 10,000 times asks
  // for "cotangent_y" 10,000 times, and trying _2, _3 ... each time was quadratic.
  int& k = next_suffix_.try_emplace(name, 2).first->second;
  while (taken_.count(n)) n = name + "_" + std::to_string(k++);
  taken_.insert(n);
  return n;
}

std::vector<Op> lower_composite(Trace& t, NameSet& taken, const Op& op) {
  PrimBuilder b(t, taken, t.value(op.outs[0]).name + "__");
  b.differentiating(op);
  std::vector<ValueId> results = op.info->lowering(b, op);
  std::vector<Op> ops = b.take_ops();
  // Bind each result to the op's own output: the op that made it now defines the output (later
  // reads follow); a result the lowering did not make (an input returned as is) is copied.
  std::map<ValueId, ValueId> bound;
  for (size_t i = 0; i < results.size(); ++i) {
    bool made = false;
    for (Op& o : ops)
      for (ValueId& v : o.outs)
        if (v == results[i] && !bound.count(v)) {
          bound[v] = op.outs[i];
          v = op.outs[i];
          made = true;
        }
    if (made) continue;
    Op copy;
    copy.symbol = "prims.convert_element_type";
    copy.info = find_op(copy.symbol);
    copy.args = {Arg::of_value(results[i]), Arg::of_dtype(t.value(op.outs[i]).dtype)};
    copy.outs = {op.outs[i]};
    copy.where = op.where;
    copy.origin = op.symbol;
    copy.tags = op.tags;
    ops.push_back(std::move(copy));
  }
  std::function<void(Arg&)> rebind = [&](Arg& a) {
    if (a.is_value())
      if (auto it = bound.find(a.value); it != bound.end()) a.value = it->second;
    for (Arg& item : a.items) rebind(item);
  };
  for (Op& o : ops)
    for (Arg& a : o.args) rebind(a);
  return ops;
}

}  // namespace tg
