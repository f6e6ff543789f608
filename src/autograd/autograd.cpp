#include "autograd/autograd.h"

#include "lower/dead_code.h"
#include "lower/decompose.h"
#include "ops/prim_builder.h"
#include "ops/prim_vocabulary.h"
#include "ops/torch_ops.h"

#include <algorithm>
#include <map>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

using ValueRename = std::map<ValueId, ValueId>;

// A custom-gradient op's contributions: the user's bwd body inlined, its inputs bound to the
// cotangents (zeros where an output got none) and to where the saved values went in the forward.
std::vector<GradContribution> custom_backward(PrimBuilder& b, const ValueRename& fwd_rename, const Op& op, const std::vector<ValueId>& cots) {
  const Trace& t = b.trace();
  const CustomGrad& custom = *op.custom;
  std::vector<ValueId> inputs;
  for (size_t i = 0; i < op.outs.size(); ++i) {
    if (cots[i] != kNoValue) {
      inputs.push_back(cots[i]);
      continue;
    }
    const Value& out = t.value(op.outs[i]);
    inputs.push_back(vocabulary::zeros(b, out.shape, out.dtype));
  }
  for (ValueId s : custom.fwd.saved) inputs.push_back(fwd_rename.at(s));
  ValueRename rename;
  std::vector<ValueId> outputs(custom.bwd.outputs.size(), kNoValue);
  std::vector<Op> body = inline_body(b.mutable_trace(), b.taken(), custom.bwd, inputs, outputs, t.value(op.outs[0]).name + "__bwd__",
                                     op.where + "/bwd", rename);
  for (Op& inner : body) {
    inner.tags = op.tags;
    b.append(std::move(inner));
  }
  std::vector<GradContribution> out;
  std::vector<ValueId> args = tensor_args(t, op);
  for (size_t i = 0; i < custom.bwd.outputs.size(); ++i)
    if (custom.bwd.outputs[i] != kNoValue) out.emplace_back(args.at(i), rename.at(custom.bwd.outputs[i]));
  return out;
}

// The forward part of the joint trace, and the ops autograd walks back over: forward ops,
// lowered prims of composite ops without a rule of their own, and custom-gradient ops.
class ForwardPart {
 public:
  // Moves the forward's ops into `joint`: ops as they are, custom-gradient ops with their fwd
  // body inlined, composite ops lowered to prims.
  ForwardPart(Trace& forward, Trace& joint, NameSet& taken) {
    for (Op& op : forward.ops) {
      if (op.custom) {
        add_custom(forward, joint, taken, op);
      } else if (op.info && op.info->has_lowering()) {
        add_composite(joint, taken, op);
      } else {
        TG_CHECK(op.info, "autograd expects a decomposed trace");
        walk_.push_back({kInJoint, joint.ops.size()});
        joint.ops.push_back(std::move(op));
      }
    }
  }

  // In forward order; valid once the joint trace's forward part stops growing.
  std::vector<const Op*> differentiable(const Trace& joint) const {
    std::vector<const Op*> ops;
    ops.reserve(walk_.size());
    for (const Step& s : walk_) ops.push_back(s.op != kInJoint ? s.op : &joint.ops[s.joint_index]);
    return ops;
  }
  // Where a custom-gradient op's fwd body values went in the joint trace.
  const ValueRename& custom_rename(const Op& op) const { return custom_renames_.at(&op); }

 private:
  // A forward op, or (kInJoint) the joint trace's op at `joint_index` (a lowered prim among
  // them), resolved later because the joint trace's ops move as it grows.
  struct Step {
    const Op* op;
    size_t joint_index;
  };
  static constexpr const Op* kInJoint = nullptr;

  // The fwd body goes in the forward, with the op's tags; the op itself is walked back over.
  void add_custom(Trace& forward, Trace& joint, NameSet& taken, Op& op) {
    ValueRename rename;
    std::vector<Op> body = inline_body(joint, taken, op.custom->fwd, tensor_args(forward, op), op.outs, joint.value(op.outs[0]).name + "__",
                                       op.where + "/fwd", rename);
    for (Op& inner : body) {
      for (const std::string& tag : op.tags)
        if (std::find(inner.tags.begin(), inner.tags.end(), tag) == inner.tags.end()) inner.tags.push_back(tag);
      joint.ops.push_back(std::move(inner));
    }
    custom_renames_.emplace(&op, std::move(rename));
    walk_.push_back({&op, 0});
  }

  // A torch-level op: its prims go in the forward; the backward uses its own rule when it has
  // one, else the rules of those prims.
  void add_composite(Trace& joint, NameSet& taken, const Op& op) {
    std::vector<Op> prims = lower_composite(joint, taken, op);
    if (op.info->grad) walk_.push_back({&op, 0});
    for (Op& prim : prims) {
      if (!op.info->grad) walk_.push_back({kInJoint, joint.ops.size()});
      joint.ops.push_back(std::move(prim));
    }
  }

  std::vector<Step> walk_;
  std::map<const Op*, ValueRename> custom_renames_;
};

// Which values carry gradient: those a requires-grad input influences through differentiable ops.
std::vector<bool> values_carrying_gradient(const Trace& forward, const Trace& joint, const std::vector<const Op*>& differentiable) {
  std::vector<bool> needs(joint.values.size(), false);
  for (ValueId v : forward.inputs) needs[v] = forward.value(v).requires_grad;
  auto any_input_needs = [&](const Op& op) {
    bool any = false;
    for (const Arg& a : op.args) for_each_value(a, [&](ValueId v) { any = any || needs[v]; });
    return any;
  };
  for (const Op* op : differentiable) {
    if (!op->custom && !op->info->grad) continue;
    bool any = any_input_needs(*op);
    for (ValueId v : op->outs) needs[v] = any && is_float(joint.value(v).dtype);
  }
  return needs;
}

// The cotangents of the forward's values as the rules' contributions arrive, summed where a
// value has several uses.
class Cotangents {
 public:
  // `needs`: the values carrying gradient. The values that receive cotangents are the forward's
  // (they exist now), so the table is sized once.
  Cotangents(PrimBuilder& b, std::vector<bool> needs, size_t forward_outputs)
      : b_(b), needs_(std::move(needs)), sum_(b.trace().values.size() + forward_outputs, kNoValue) {}

  // One cotangent input per forward output; an output listed twice sums its two cotangents.
  void add_inputs(const Trace& forward, Trace& joint) {
    for (ValueId out : forward.outputs) {
      Value c = forward.value(out);
      c.name = b_.fresh_named("cotangent_" + c.name);
      c.requires_grad = false;
      ValueId id = joint.add_value(std::move(c));
      joint.inputs.push_back(id);
      if (needs_[out]) accumulate(out, id);
    }
    needs_.resize(joint.values.size(), false);
  }

  // The rules in reverse order, each given the cotangents of its op's outputs.
  void apply_rules(const ForwardPart& part, const std::vector<const Op*>& differentiable) {
    for (auto it = differentiable.rbegin(); it != differentiable.rend(); ++it) {
      const Op& op = **it;
      std::vector<ValueId> cots;
      bool any = false;
      for (ValueId v : op.outs) {
        cots.push_back(sum_[size_t(v)]);
        any = any || cots.back() != kNoValue;
      }
      if (!any) continue;
      b_.differentiating(op);
      if (op.custom) {
        for (const auto& [input, g] : custom_backward(b_, part.custom_rename(op), op, cots))
          if (needs_[input]) accumulate(input, g);
        continue;
      }
      if (!op.info->grad) continue;
      for (const auto& [input, g] : op.info->grad(b_, op, cots))
        if (input < ValueId(needs_.size()) && needs_[input]) accumulate(input, g);
    }
  }

  // Gradients in input order; zeros where nothing reached an input.
  void add_gradient_outputs(const Trace& forward, Trace& joint) {
    for (ValueId in : forward.inputs) {
      const Value& v = forward.value(in);
      if (!v.requires_grad) continue;
      joint.outputs.push_back(sum_[size_t(in)] != kNoValue ? sum_[size_t(in)] : vocabulary::zeros(b_, v.shape, v.dtype));
    }
  }

 private:
  void accumulate(ValueId v, ValueId g) {
    ValueId& sum = sum_.at(size_t(v));
    sum = sum == kNoValue ? g : b_.emit("prims.add", {Arg::of_value(sum), Arg::of_value(g)}).at(0);
  }

  PrimBuilder& b_;
  std::vector<bool> needs_;
  std::vector<ValueId> sum_;  // kNoValue: none yet
};

// Rules give every operand its contribution; only the ones some gradient output uses are kept
// (not those for operands that do not require grad).
void append_used_backward_ops(Trace& joint, std::vector<Op> backward) {
  const std::vector<bool> keep = live_ops(backward, joint.values.size(), joint.outputs);
  joint.ops.reserve(joint.ops.size() + size_t(std::count(keep.begin(), keep.end(), true)));  // (Ops are large to move)
  for (size_t i = 0; i < backward.size(); ++i)
    if (keep[i]) joint.ops.push_back(std::move(backward[i]));
}

// A gradient the backward computes is named for its input ("grad_x"), for readable listings
// and entry points. Values that are inputs, forward values or several gradients keep theirs.
void name_gradients(const Trace& forward, JointTrace& result, PrimBuilder& b) {
  Trace& joint = result.trace;
  std::vector<bool> renamable(joint.values.size(), false);  // candidates: backward-defined values
  for (size_t i = joint.ops.size(); i-- > result.forward_ops;)
    for (ValueId v : joint.ops[i].outs) renamable[size_t(v)] = true;
  std::vector<int> times_output(joint.values.size(), 0);
  for (ValueId v : joint.outputs) ++times_output[size_t(v)];
  size_t k = 0;
  for (ValueId in : forward.inputs) {
    if (!forward.value(in).requires_grad) continue;
    ValueId g = joint.outputs[result.forward_outputs + k++];
    if (times_output[size_t(g)] != 1 || !renamable[size_t(g)]) continue;
    renamable[size_t(g)] = false;
    joint.value(g).name = b.fresh_named("grad_" + forward.value(in).name);
  }
}

}  // namespace

JointTrace autograd(Trace forward) {
  JointTrace result;
  result.forward_inputs = forward.inputs.size();
  result.forward_outputs = forward.outputs.size();
  Trace& joint = result.trace;
  joint = forward.without_ops();
  joint.ops.reserve(forward.ops.size());
  NameSet taken;
  for (const Value& v : joint.values) taken.insert(v.name);
  PrimBuilder b(joint, taken, "bw");

  const ForwardPart part(forward, joint, b.taken());
  const std::vector<const Op*> differentiable = part.differentiable(joint);
  result.forward_ops = joint.ops.size();

  Cotangents cotangents(b, values_carrying_gradient(forward, joint, differentiable), forward.outputs.size());
  cotangents.add_inputs(forward, joint);
  cotangents.apply_rules(part, differentiable);
  cotangents.add_gradient_outputs(forward, joint);
  append_used_backward_ops(joint, b.take_ops());
  name_gradients(forward, result, b);
  return result;
}

}  // namespace tg
