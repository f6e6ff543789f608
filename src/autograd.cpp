#include "autograd.h"

#include "dead_code.h"
#include "decompose.h"
#include "prim_builder.h"
#include "prim_vocabulary.h"
#include "torch_ops.h"

#include <algorithm>
#include <deque>
#include <map>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

// A custom-gradient op's contributions: the user's bwd body inlined, its inputs bound to the
// cotangents (zeros where an output got none) and to where the saved values went in the forward.
std::vector<GradContribution> custom_backward(PrimBuilder& b, const std::map<ValueId, ValueId>& fwd_rename, const Op& op,
                                              const std::vector<ValueId>& cots) {
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
  std::map<ValueId, ValueId> rename;
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

  // The forward part: ops as they are (moved over), custom-gradient ops with their fwd body
  // inlined. For those, remember where their saved values went.
  struct CustomSite {
    const Op* op;
    std::map<ValueId, ValueId> rename;  // fwd body value -> joint value
  };
  std::map<const Op*, CustomSite> custom_sites;
  // The forward ops autograd walks back over: a forward op, a lowered prim, or (kInJoint) the
  // joint trace's op at `joint_index`, resolved once the forward part stops growing.
  struct Differentiable {
    const Op* op;
    size_t joint_index;
  };
  constexpr const Op* kInJoint = nullptr;
  std::vector<Differentiable> walk;
  std::deque<Op> lowered;  // lowered prims of composite ops without a rule (stable addresses)
  for (Op& op : forward.ops) {
    if (op.custom) {
      CustomSite site{&op, {}};
      std::vector<Op> body = inline_body(joint, b.taken(), op.custom->fwd, tensor_args(forward, op), op.outs,
                                         joint.value(op.outs[0]).name + "__", op.where + "/fwd", site.rename);
      for (Op& inner : body) {
        for (const std::string& tag : op.tags)
          if (std::find(inner.tags.begin(), inner.tags.end(), tag) == inner.tags.end()) inner.tags.push_back(tag);
        joint.ops.push_back(std::move(inner));
      }
      custom_sites.emplace(&op, std::move(site));
      walk.push_back({&op, 0});
    } else if (op.info && op.info->has_lowering()) {
      // A torch-level op: its prims go in the forward; the backward uses its own rule when it
      // has one, else the rules of those prims.
      std::vector<Op> prims = lower_composite(joint, b.taken(), op);
      joint.ops.insert(joint.ops.end(), prims.begin(), prims.end());
      if (op.info->grad) {
        walk.push_back({&op, 0});
      } else {
        for (Op& prim : prims) {
          lowered.push_back(std::move(prim));
          walk.push_back({&lowered.back(), 0});
        }
      }
    } else {
      TG_CHECK(op.info, "autograd expects a decomposed trace");
      walk.push_back({kInJoint, joint.ops.size()});
      joint.ops.push_back(std::move(op));
    }
  }
  std::vector<const Op*> differentiable;
  differentiable.reserve(walk.size());
  for (const Differentiable& d : walk) differentiable.push_back(d.op != kInJoint ? d.op : &joint.ops[d.joint_index]);
  result.forward_ops = joint.ops.size();

  // Which values carry gradient: those a requires-grad input influences through differentiable ops.
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

  // One cotangent input per output; an output listed twice sums its two cotangents. The values
  // that receive cotangents are the forward's (they exist now), so the table is sized once.
  std::vector<ValueId> cot(joint.values.size() + forward.outputs.size(), kNoValue);
  auto accumulate = [&](ValueId v, ValueId g) {
    ValueId& sum = cot.at(size_t(v));
    sum = sum == kNoValue ? g : b.emit("prims.add", {Arg::of_value(sum), Arg::of_value(g)}).at(0);
  };
  for (ValueId out : forward.outputs) {
    Value c = forward.value(out);
    c.name = b.fresh_named("cotangent_" + c.name);
    c.requires_grad = false;
    ValueId id = joint.add_value(std::move(c));
    joint.inputs.push_back(id);
    if (needs[out]) accumulate(out, id);
  }
  needs.resize(joint.values.size(), false);

  for (auto it = differentiable.rbegin(); it != differentiable.rend(); ++it) {
    const Op& op = **it;
    std::vector<ValueId> cots;
    bool any = false;
    for (ValueId v : op.outs) {
      cots.push_back(cot[size_t(v)]);
      any = any || cots.back() != kNoValue;
    }
    if (!any) continue;
    b.differentiating(op);
    if (op.custom) {
      for (const auto& [input, g] : custom_backward(b, custom_sites.at(&op).rename, op, cots))
        if (needs[input]) accumulate(input, g);
      continue;
    }
    if (!op.info->grad) continue;
    for (const auto& [input, g] : op.info->grad(b, op, cots))
      if (input < ValueId(needs.size()) && needs[input]) accumulate(input, g);
  }
  // Gradients in input order; zeros where nothing reached an input.
  for (ValueId in : forward.inputs) {
    const Value& v = forward.value(in);
    if (!v.requires_grad) continue;
    joint.outputs.push_back(cot[size_t(in)] != kNoValue ? cot[size_t(in)] : vocabulary::zeros(b, v.shape, v.dtype));
  }
  // Rules give every operand its contribution; drop the ones no gradient output uses (those for
  // operands that do not require grad).
  std::vector<Op> backward = b.take_ops();
  const std::vector<bool> keep = live_ops(backward, joint.values.size(), joint.outputs);
  joint.ops.reserve(joint.ops.size() + size_t(std::count(keep.begin(), keep.end(), true)));  // (Ops are large to move)
  for (size_t i = 0; i < backward.size(); ++i)
    if (keep[i]) joint.ops.push_back(std::move(backward[i]));

  // A gradient the backward computes is named for its input ("grad_x"), for readable listings
  // and entry points. Values that are inputs, forward values or several gradients keep theirs.
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
  return result;
}

}  // namespace tg
