#include "autograd.h"

#include <map>
#include <set>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

class JointBuilder : public GradBuilder {
 public:
  explicit JointBuilder(Trace& t) : t_(t) {
    for (const Value& v : t.values) taken_.insert(v.name);
  }

  const Trace& trace() const override { return t_; }

  std::vector<ValueId> emit(std::string_view id, std::vector<Arg> args) override {
    Op op;
    op.info = find_op(id);
    TG_CHECK(op.info, "gradient rule uses an unknown prim: " + std::string(id));
    op.symbol = std::string(op.info->id);
    op.args = std::move(args);
    op.arg_where.assign(op.args.size(), "");
    op.where = where_;
    op.tags = tags_;
    std::vector<OutType> types;
    try {
      types = op.info->rule(t_, op);
    } catch (const RuleError& e) {
      throw InternalError("gradient rule of " + rule_of_ + " built an ill-typed " + std::string(id) + ": " + e.message);
    }
    for (const OutType& type : types) {
      Value v;
      v.name = fresh("bw");
      v.dtype = type.dtype;
      v.shape = type.shape;
      v.device = t_.device;
      op.outs.push_back(t_.add_value(std::move(v)));
    }
    ops_.push_back(op);
    return op.outs;
  }

  // Provenance for what the next rule emits: the forward op it differentiates.
  void differentiating(const Op& op) {
    where_ = op.where;
    tags_ = op.tags;
    rule_of_ = op.symbol;
  }

  std::string fresh(const std::string& base) {
    std::string name;
    do name = base + std::to_string(counter_++); while (taken_.count(name));
    taken_.insert(name);
    return name;
  }
  std::string fresh_named(const std::string& name) {
    std::string n = name;
    for (int k = 2; taken_.count(n); ++k) n = name + "_" + std::to_string(k);
    taken_.insert(n);
    return n;
  }

  std::vector<Op> take_ops() { return std::move(ops_); }

 private:
  Trace& t_;
  std::vector<Op> ops_;
  std::set<std::string> taken_;
  int counter_ = 0;
  std::string where_, rule_of_;
  std::vector<std::string> tags_;
};

void for_each_value(const Arg& a, const std::function<void(ValueId)>& f) {
  if (a.is_value()) f(a.value);
  for (const Arg& item : a.items) for_each_value(item, f);
}

}  // namespace

size_t forward_output_count(const Trace& forward) { return forward.outputs.size(); }

Trace autograd(const Trace& forward) {
  Trace joint = forward;
  JointBuilder b(joint);

  // Which values carry gradient: those a requires-grad input influences through differentiable ops.
  std::vector<bool> needs(joint.values.size(), false);
  for (ValueId v : forward.inputs) needs[v] = forward.value(v).requires_grad;
  for (const Op& op : forward.ops) {
    TG_CHECK(op.info, "autograd expects a decomposed trace");
    if (!op.info->grad) continue;
    bool any = false;
    for (const Arg& a : op.args) for_each_value(a, [&](ValueId v) { any = any || needs[v]; });
    for (ValueId v : op.outs) needs[v] = any && is_float(forward.value(v).dtype);
  }

  // One cotangent input per output; an output listed twice sums its two cotangents.
  std::map<ValueId, ValueId> cot;
  auto accumulate = [&](ValueId v, ValueId g) {
    auto it = cot.find(v);
    if (it == cot.end()) cot[v] = g;
    else it->second = b.emit("prims.add", {Arg::of_value(it->second), Arg::of_value(g)}).at(0);
  };
  for (ValueId out : forward.outputs) {
    Value c = forward.value(out);
    c.name = b.fresh_named("cotangent_" + c.name);
    c.requires_grad = false;
    ValueId id = joint.add_value(std::move(c));
    joint.inputs.push_back(id);
    if (needs[out]) accumulate(out, id);
  }

  for (auto it = forward.ops.rbegin(); it != forward.ops.rend(); ++it) {
    const Op& op = *it;
    std::vector<ValueId> cots;
    bool any = false;
    for (ValueId v : op.outs) {
      auto c = cot.find(v);
      cots.push_back(c == cot.end() ? kNoValue : c->second);
      any = any || c != cot.end();
    }
    if (!any || !op.info->grad) continue;
    b.differentiating(op);
    for (const auto& [input, g] : op.info->grad(b, op, cots))
      if (input < ValueId(needs.size()) && needs[input]) accumulate(input, g);
  }

  // Gradients in input order; zeros where nothing reached an input.
  for (ValueId in : forward.inputs) {
    const Value& v = forward.value(in);
    if (!v.requires_grad) continue;
    ValueId g;
    if (auto c = cot.find(in); c != cot.end()) {
      g = c->second;
    } else {
      Arg device;
      device.kind = Arg::Kind::device;
      device.text = joint.device;
      std::vector<Arg> shape;
      for (int64_t d : v.shape) shape.push_back(Arg::of_int(d));
      g = b.emit("prims.full", {Arg::of_list(shape), Arg::of_real(0.0), device, Arg::of_dtype(v.dtype)}).at(0);
    }
    joint.outputs.push_back(g);
  }
  // Rules give every operand its contribution; drop the ones no gradient output uses (those for
  // operands that do not require grad).
  std::vector<Op> backward = b.take_ops();
  std::vector<bool> live(joint.values.size(), false);
  for (ValueId v : joint.outputs) live[v] = true;
  std::vector<bool> keep(backward.size(), false);
  for (size_t i = backward.size(); i-- > 0;) {
    for (ValueId v : backward[i].outs) keep[i] = keep[i] || live[v];
    if (keep[i])
      for (const Arg& a : backward[i].args) for_each_value(a, [&](ValueId v) { live[v] = true; });
  }
  for (size_t i = 0; i < backward.size(); ++i)
    if (keep[i]) joint.ops.push_back(std::move(backward[i]));
  return joint;
}

}  // namespace tg
