#include "partition.h"

#include <functional>
#include <map>
#include <set>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

void for_each_value(const Arg& a, const std::function<void(ValueId)>& f) {
  if (a.is_value()) f(a.value);
  for (const Arg& item : a.items) for_each_value(item, f);
}

}  // namespace

Partition partition(const JointTrace& joint) {
  const Trace& j = joint.trace;
  Partition p;

  // Where each value comes from in the forward: input, output, or an op of the forward part.
  std::map<ValueId, size_t> input_index, output_index;
  for (size_t i = 0; i < joint.forward_inputs; ++i) input_index.emplace(j.inputs[i], i);
  for (size_t i = 0; i < joint.forward_outputs; ++i) output_index.emplace(j.outputs[i], i);
  std::map<ValueId, const Op*> forward_def;
  for (size_t i = 0; i < joint.forward_ops; ++i)
    for (ValueId v : j.ops[i].outs) forward_def.emplace(v, &j.ops[i]);

  // Index-only forward ops (broadcasts, reshapes, fills) are recomputed in the backward rather
  // than saved: they cost no arithmetic and a broadcast is far bigger than its source. So are
  // widening conversions (a b8 dropout mask converted to f32 is saved as the b8 mask). Forward
  // outputs are in memory anyway, so they are read, not recomputed.
  auto recomputable = [&](ValueId v) -> const Op* {
    auto def = forward_def.find(v);
    if (def == forward_def.end() || output_index.count(v)) return nullptr;
    const Op& op = *def->second;
    FusionClass f = op.info->fusion;
    if (f == FusionClass::shape || (f == FusionClass::source && op.info->kind != OpKind::uniform_philox)) return &op;
    if (op.info->kind == OpKind::convert_element_type && op.arg(0).is_value() &&
        dtype_bytes(j.value(op.arg(0).value).dtype) < dtype_bytes(j.value(v).dtype))
      return &op;
    return nullptr;
  };
  std::set<const Op*> recomputed;
  std::map<ValueId, std::string> read_by_backward;  // forward value -> why (its first reader)
  std::vector<const Op*> readers;
  for (size_t i = joint.forward_ops; i < j.ops.size(); ++i) readers.push_back(&j.ops[i]);
  // A gradient that is a forward value itself (an identity-like path) is read too.
  for (size_t i = joint.forward_outputs; i < j.outputs.size(); ++i) {
    ValueId v = j.outputs[i];
    if (const Op* def = recomputable(v)) {
      if (recomputed.insert(def).second) readers.push_back(def);
    } else if (input_index.count(v) || forward_def.count(v)) {
      read_by_backward.emplace(v, "returned as a gradient");
    }
  }
  for (size_t r = 0; r < readers.size(); ++r) {
    const Op& op = *readers[r];
    for (const Arg& a : op.args)
      for_each_value(a, [&](ValueId v) {
        if (const Op* def = recomputable(v)) {
          if (recomputed.insert(def).second) readers.push_back(def);
          return;
        }
        if (!input_index.count(v) && !forward_def.count(v)) return;
        std::string why = "read by " + op.symbol + " in the backward";
        if (!op.where.empty()) why += " (from the op at " + op.where + ")";
        read_by_backward.emplace(v, why);
      });
  }
  // Saved values in forward order: inputs, then values as the forward defines them.
  std::vector<ValueId> order;
  for (size_t i = 0; i < joint.forward_inputs; ++i) order.push_back(j.inputs[i]);
  for (size_t i = 0; i < joint.forward_ops; ++i)
    for (ValueId v : j.ops[i].outs) order.push_back(v);

  p.forward = j;
  p.forward.ops.assign(j.ops.begin(), j.ops.begin() + ptrdiff_t(joint.forward_ops));
  p.forward.inputs.assign(j.inputs.begin(), j.inputs.begin() + ptrdiff_t(joint.forward_inputs));
  p.forward.outputs.assign(j.outputs.begin(), j.outputs.begin() + ptrdiff_t(joint.forward_outputs));

  p.backward = j;
  p.backward.ops.clear();
  for (size_t i = 0; i < joint.forward_ops; ++i)
    if (recomputed.count(&j.ops[i])) p.backward.ops.push_back(j.ops[i]);
  p.backward.ops.insert(p.backward.ops.end(), j.ops.begin() + ptrdiff_t(joint.forward_ops), j.ops.end());
  p.backward.inputs.clear();
  p.backward.outputs.assign(j.outputs.begin() + ptrdiff_t(joint.forward_outputs), j.outputs.end());

  size_t saved_outputs = 0;
  for (ValueId v : order) {
    auto it = read_by_backward.find(v);
    if (it == read_by_backward.end()) continue;
    SavedValue s{v, SavedValue::Kind::intermediate, 0, it->second};
    if (auto in = input_index.find(v); in != input_index.end()) {
      s.kind = SavedValue::Kind::input;
      s.index = in->second;
    } else if (auto out = output_index.find(v); out != output_index.end()) {
      s.kind = SavedValue::Kind::output;
      s.index = out->second;
    } else {
      s.index = saved_outputs++;
      p.forward.outputs.push_back(v);
    }
    p.saved.push_back(s);
    p.backward.inputs.push_back(v);
  }
  for (size_t i = joint.forward_inputs; i < j.inputs.size(); ++i) p.backward.inputs.push_back(j.inputs[i]);
  return p;
}

}  // namespace tg
