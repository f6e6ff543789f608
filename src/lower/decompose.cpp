#include "lower/decompose.h"

#include <map>
#include <set>

#include "ops/op_table.h"
#include "ops/prim_builder.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

void add_tags(std::vector<std::string>& tags, const std::vector<std::string>& more) {
  for (const std::string& tag : more)
    if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
}

// Renames the values of copied body ops: bound ones per `rename`, the rest fresh.
class Renamer {
 public:
  Renamer(Trace& t, NameSet& taken, std::map<ValueId, ValueId>& rename, std::string prefix)
      : t_(t), taken_(taken), rename_(rename), prefix_(std::move(prefix)) {}

  ValueId value(ValueId v) {
    auto it = rename_.find(v);
    if (it != rename_.end()) return it->second;
    Value copy = t_.value(v);
    std::string name = prefix_ + copy.name;
    for (int k = 2; taken_.count(name); ++k) name = prefix_ + copy.name + "_" + std::to_string(k);
    taken_.insert(name);
    copy.name = name;
    ValueId id = t_.add_value(std::move(copy));
    rename_[v] = id;
    return id;
  }

  void arg(Arg& a) {
    if (a.is_value()) a.value = value(a.value);
    for (Arg& item : a.items) arg(item);
  }

  void op(Op& o) {
    for (Arg& a : o.args) arg(a);
    for (auto& kv : o.kwargs) arg(kv.second);
    for (ValueId& v : o.outs) v = value(v);
    for (Op& s : o.sub) op(s);
    // A nested custom op's bodies have their own scope; they are bound when it is inlined.
  }

 private:
  Trace& t_;
  NameSet& taken_;
  std::map<ValueId, ValueId>& rename_;
  std::string prefix_;
};

class Decomposer {
 public:
  Decomposer(Trace& t, bool keep_custom) : t_(t), keep_custom_(keep_custom) {
    for (const Value& v : t.values) taken_.insert(v.name);
  }

  std::vector<Op> lower(const std::vector<Op>& ops, const std::vector<std::string>& inherited) {
    std::vector<Op> out;
    for (const Op& op : ops) lower_one(op, inherited, out);
    return out;
  }

 private:
  Trace& t_;
  bool keep_custom_;
  NameSet taken_;  // every name in the trace: inlined values get fresh ones

  void lower_one(const Op& op, const std::vector<std::string>& inherited, std::vector<Op>& out) {
    std::vector<std::string> tags = op.tags;
    add_tags(tags, inherited);
    if (op.info && op.info->has_lowering() && !keep_custom_) {
      for (Op& lowered : lower_composite(t_, taken_, op)) {
        add_tags(lowered.tags, tags);
        out.push_back(std::move(lowered));
      }
      return;
    }
    if (op.info) {
      Op copy = op;
      copy.sub.clear();
      add_tags(copy.tags, inherited);
      out.push_back(std::move(copy));
      return;
    }
    if (op.custom && keep_custom_) {
      // Bodies are lowered in their own scope; a custom op nested in them is only ever run
      // forward (the outer op's backward is the user's), so it is inlined.
      Decomposer inner(t_, false);
      inner.taken_ = taken_;
      auto lowered = std::make_shared<CustomGrad>(*op.custom);
      lowered->fwd.ops = inner.lower(op.custom->fwd.ops, {});
      lowered->bwd.ops = inner.lower(op.custom->bwd.ops, {});
      taken_ = inner.taken_;
      Op copy = op;
      copy.tags = tags;
      copy.custom = std::move(lowered);
      out.push_back(std::move(copy));
      return;
    }
    if (op.custom) {
      const SubTrace& fwd = op.custom->fwd;
      std::map<ValueId, ValueId> rename;
      std::vector<Op> body = inline_body(t_, taken_, fwd, tensor_args(t_, op), op.outs, t_.value(op.outs[0]).name + "__", op.where + "/fwd", rename);
      for (Op& lowered : lower(body, tags)) out.push_back(std::move(lowered));
      return;
    }
    TG_CHECK(!op.sub.empty(), "op without rule or decomposition survived verification: " + op.symbol);
    for (Op& lowered : lower(op.sub, tags)) out.push_back(std::move(lowered));
  }
};

}  // namespace

Trace decompose(const Trace& trace, bool keep_custom) {
  Trace out = trace.without_ops();
  out.ops = Decomposer(out, keep_custom).lower(trace.ops, {});
  return out;
}

std::vector<ValueId> tensor_args(const Trace& t, const Op& op) {
  std::vector<ValueId> out;
  for (const Arg& a : op.args)
    if (a.is_value() && !t.value(a.value).is_scalar) out.push_back(a.value);
  return out;
}

std::vector<Op> inline_body(Trace& t, NameSet& taken, const SubTrace& body, const std::vector<ValueId>& inputs,
                            const std::vector<ValueId>& outputs, const std::string& prefix, const std::string& where,
                            std::map<ValueId, ValueId>& rename) {
  TG_CHECK(inputs.size() == body.inputs.size() && outputs.size() == body.outputs.size(), "inline_body: arity mismatch");
  for (size_t i = 0; i < inputs.size(); ++i) rename[body.inputs[i]] = inputs[i];
  std::vector<Op> copies;
  for (size_t i = 0; i < body.outputs.size(); ++i) {
    ValueId out = body.outputs[i];
    if (out == kNoValue || outputs[i] == kNoValue) continue;
    if (!rename.count(out)) {
      rename[out] = outputs[i];
      continue;
    }
    Op copy;
    copy.symbol = "prims.convert_element_type";
    copy.info = find_op(copy.symbol);
    copy.args = {Arg::of_value(out), Arg::of_dtype(t.value(outputs[i]).dtype)};
    copy.outs = {outputs[i]};
    copy.where = where + "/outputs/" + std::to_string(i);
    copies.push_back(std::move(copy));
  }
  Renamer renamer(t, taken, rename, prefix);
  std::vector<Op> ops = body.ops;
  for (Op& inner : ops) renamer.op(inner);
  for (Op& copy : copies) {
    for (Arg& a : copy.args) renamer.arg(a);
    ops.push_back(std::move(copy));
  }
  return ops;
}

}  // namespace tg
