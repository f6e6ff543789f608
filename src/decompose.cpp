#include "decompose.h"

#include <map>
#include <set>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {
namespace {

void add_tags(Op& op, const std::vector<std::string>& tags) {
  for (const std::string& tag : tags)
    if (std::find(op.tags.begin(), op.tags.end(), tag) == op.tags.end()) op.tags.push_back(tag);
}

class Decomposer {
 public:
  explicit Decomposer(Trace& t) : t_(t) {
    for (const Value& v : t.values) taken_.insert(v.name);
  }

  std::vector<Op> lower(const std::vector<Op>& ops, const std::vector<std::string>& inherited) {
    std::vector<Op> out;
    for (const Op& op : ops) lower_one(op, inherited, out);
    return out;
  }

 private:
  Trace& t_;
  std::set<std::string> taken_;  // every name in the trace: inlined values get fresh ones

  void lower_one(const Op& op, const std::vector<std::string>& inherited, std::vector<Op>& out) {
    std::vector<std::string> tags = op.tags;
    for (const std::string& tag : inherited)
      if (std::find(tags.begin(), tags.end(), tag) == tags.end()) tags.push_back(tag);
    if (op.info) {
      Op copy = op;
      copy.sub.clear();
      add_tags(copy, inherited);
      out.push_back(std::move(copy));
      return;
    }
    if (op.custom) {
      inline_custom_forward(op, tags, out);
      return;
    }
    TG_CHECK(!op.sub.empty(), "op without rule or decomposition survived verification: " + op.symbol);
    for (Op& lowered : lower(op.sub, tags)) out.push_back(std::move(lowered));
  }

  // Inlines fwd: its inputs become the op's tensor arguments, its outputs the op's outputs, and
  // its private values fresh values named after the op ("t6__s").
  void inline_custom_forward(const Op& op, const std::vector<std::string>& tags, std::vector<Op>& out) {
    const SubTrace& fwd = op.custom->fwd;
    std::map<ValueId, ValueId> rename;
    size_t next_input = 0;
    for (const Arg& a : op.args)
      if (a.is_value() && !t_.value(a.value).is_scalar) rename[fwd.inputs.at(next_input++)] = a.value;
    // An fwd output that is one of its inputs, or that it returns twice, becomes a copy, so each
    // of the op's outputs is defined exactly once.
    std::vector<Op> copies;
    for (size_t i = 0; i < fwd.outputs.size(); ++i) {
      if (!rename.count(fwd.outputs[i])) {
        rename[fwd.outputs[i]] = op.outs[i];
        continue;
      }
      Op copy;
      copy.symbol = "prims.convert_element_type";
      copy.info = find_op(copy.symbol);
      copy.args = {Arg::of_value(fwd.outputs[i]), Arg::of_dtype(t_.value(op.outs[i]).dtype)};
      copy.arg_where = {"", ""};
      copy.outs = {op.outs[i]};
      copy.where = op.where + "/fwd/outputs/" + std::to_string(i);
      copies.push_back(std::move(copy));
    }
    const std::string prefix = t_.value(op.outs[0]).name + "__";
    std::vector<Op> body = fwd.ops;
    for (Op& inner : body) rename_op(inner, rename, prefix);
    for (Op& copy : copies) {
      for (Arg& a : copy.args) rename_arg(a, rename, prefix);
      body.push_back(std::move(copy));
    }
    for (Op& lowered : lower(body, tags)) out.push_back(std::move(lowered));
  }

  ValueId renamed(ValueId v, std::map<ValueId, ValueId>& rename, const std::string& prefix) {
    auto it = rename.find(v);
    if (it != rename.end()) return it->second;
    Value copy = t_.value(v);
    std::string name = prefix + copy.name;
    for (int k = 2; taken_.count(name); ++k) name = prefix + copy.name + "_" + std::to_string(k);
    taken_.insert(name);
    copy.name = name;
    ValueId id = t_.add_value(std::move(copy));
    rename[v] = id;
    return id;
  }

  void rename_arg(Arg& a, std::map<ValueId, ValueId>& rename, const std::string& prefix) {
    if (a.is_value()) a.value = renamed(a.value, rename, prefix);
    for (Arg& item : a.items) rename_arg(item, rename, prefix);
  }

  void rename_op(Op& op, std::map<ValueId, ValueId>& rename, const std::string& prefix) {
    for (Arg& a : op.args) rename_arg(a, rename, prefix);
    for (auto& kv : op.kwargs) rename_arg(kv.second, rename, prefix);
    for (ValueId& v : op.outs) v = renamed(v, rename, prefix);
    for (Op& s : op.sub) rename_op(s, rename, prefix);
    // A nested custom op's bodies have their own scope; they are bound when it is inlined.
  }
};

}  // namespace

Trace decompose(const Trace& trace) {
  Trace out = trace;
  out.ops = Decomposer(out).lower(trace.ops, {});
  return out;
}

}  // namespace tg
