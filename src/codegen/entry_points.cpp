#include "codegen/entry_points.h"

#include <set>
#include <unordered_map>

#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/generated_text.h"

namespace tg {

namespace {

// Names unique within one set: a name taken already gets _2, _3, ...
class UniqueNames {
 public:
  explicit UniqueNames(std::set<std::string> taken = {}) : taken_(std::move(taken)) {}
  std::string claim(const std::string& name) {
    std::string n = name;
    int& k = next_suffix_.try_emplace(name, 2).first->second;  // (100,000 cotangents of one output: each suffix tried once)
    while (!taken_.insert(n).second) n = name + "_" + std::to_string(k++);
    return n;
  }

 private:
  std::set<std::string> taken_;
  std::map<std::string, int> next_suffix_;
};

// One entry point's C parameter names: a value's own name where it is usable there as it is, else
// g_<name> (src/support/generated_text.h); each unique.
class ParamNames {
 public:
  std::string claim(const std::string& wanted) { return unique_.claim(usable_as_parameter(wanted) ? wanted : ident(Role::global, wanted)); }

 private:
  UniqueNames unique_;
};

// What a multi-output prim's outputs are called, by position.
std::string output_word(const Op& op, size_t index) {
  const std::string prim = op.symbol.substr(op.symbol.rfind('.') + 1);
  if (op.info && op.info->kind == OpKind::var_mean) return index == 0 ? "var" : "mean";
  return op.outs.size() > 1 ? prim + std::to_string(index) : prim;
}

// The op defining each value made by an op of t, and the value's position among its outputs.
std::unordered_map<ValueId, std::pair<const Op*, size_t>> definitions(const Trace& t) {
  std::unordered_map<ValueId, std::pair<const Op*, size_t>> defined;
  for (const Op& op : t.ops)
    for (size_t i = 0; i < op.outs.size(); ++i) defined.emplace(op.outs[i], std::pair{&op, i});
  return defined;
}

// A value thunder-gen made (<call>__<n>), for the header.
std::string made_by(const std::string& value) {
  const size_t at = value.find("__");
  return at == std::string::npos ? value : value + ", which thunder-gen makes from the call defining " + value.substr(0, at);
}

EntryParam param(const Trace& t, ValueId v, std::string name, bool writes, std::string role, std::string value_name, std::string kind,
                 std::string of) {
  return EntryParam{v,      std::move(name), c_param_type(t.value(v), writes), writes, std::move(role), std::move(value_name),
                    std::move(kind), std::move(of)};
}

}  // namespace

std::string c_param_type(const Value& v, bool writes) {
  if (v.is_scalar) return std::string(compute_ctype(v.dtype));
  std::string element = v.bit_packed ? "uint32_t" : (v.dtype == DType::f16 || v.dtype == DType::bf16) ? "uint16_t" : std::string(storage_ctype(v.dtype));
  return (writes ? "" : "const ") + element + "*";
}

std::map<ValueId, std::string> saved_param_names(const Partition* training) {
  std::map<ValueId, std::string> names;
  if (!training) return names;
  const Trace& forward = training->forward;
  std::set<std::string> taken;
  for (ValueId v : forward.inputs) taken.insert(forward.value(v).name);
  for (ValueId v : forward.outputs) taken.insert(forward.value(v).name);
  UniqueNames unique(taken);
  const auto defined = definitions(forward);
  for (const SavedValue& s : training->saved) {
    if (s.kind != SavedValue::Kind::intermediate) continue;
    const std::string& name = forward.value(s.value).name;
    const size_t made = name.find("__");
    const auto d = made == std::string::npos ? defined.end() : defined.find(s.value);
    names[s.value] = d != defined.end() ? unique.claim(name.substr(0, made) + "_" + output_word(*d->second.first, d->second.second)) : name;
  }
  return names;
}

EntryPoint forward_entry(const Trace& run, const Partition* training, const std::string& trace_name) {
  EntryPoint entry{trace_name + "_forward", "include/" + trace_name + ".h", {}, run.world_size > 0, run.sizes_at_run_time};
  ParamNames unique;
  std::set<ValueId> written, inputs(run.inputs.begin(), run.inputs.end());
  const std::map<ValueId, std::string> saved = saved_param_names(training);
  for (ValueId v : run.inputs) {
    const Value& val = run.value(v);
    entry.params.push_back(
        param(run, v, unique.claim(val.name), false, "input " + val.name + (val.requires_grad ? " (requires grad)" : ""), val.name, "input", val.name));
  }
  for (size_t k = 0; k < run.outputs.size(); ++k) {
    const ValueId v = run.outputs[k];
    const Value& val = run.value(v);
    if (saved.count(v)) {
      entry.params.push_back(param(run, v, unique.claim(saved.at(v)), true, "saved for the backward: " + made_by(val.name), val.name, "saved", val.name));
      continue;
    }
    // An output that is an input, or listed before, is a copy: a parameter of its own (no underscore).
    const bool copy = !written.insert(v).second || inputs.count(v);
    const std::string name = unique.claim(copy ? "out" + std::to_string(k) : val.name);
    entry.params.push_back(param(run, v, name, true, "output " + val.name, val.name, "output", val.name));
  }
  return entry;
}

EntryPoint backward_entry(const Partition& training, const std::string& trace_name) {
  const Trace& run = training.backward;
  const Trace& forward = training.forward;
  EntryPoint entry{trace_name + "_backward", "include/" + trace_name + ".h", {}, run.world_size > 0, run.sizes_at_run_time};
  ParamNames unique;
  const std::map<ValueId, std::string> saved = saved_param_names(&training);
  size_t next = 0;
  for (const SavedValue& s : training.saved) {
    const ValueId v = run.inputs.at(next++);
    const std::string& name = run.value(v).name;
    const bool made = saved.count(s.value) > 0;
    const std::string role = s.kind == SavedValue::Kind::input    ? "input " + name + ", as the forward got it"
                             : s.kind == SavedValue::Kind::output ? "output " + name + ", as the forward wrote it"
                                                                  : "saved by the forward: " + (made ? made_by(name) : name);
    static const char* kinds[] = {"input", "output", "saved"};
    entry.params.push_back(param(run, v, unique.claim(made ? saved.at(s.value) : name), false, role, name, kinds[int(s.kind)], name));
  }
  std::vector<ValueId> real_outputs;
  for (ValueId v : forward.outputs)
    if (!saved.count(v)) real_outputs.push_back(v);
  for (size_t k = 0; next < run.inputs.size(); ++k, ++next) {
    const std::string output = k < real_outputs.size() ? forward.value(real_outputs[k]).name : "?";
    entry.params.push_back(
        param(run, run.inputs[next], unique.claim("cotangent_" + output), false, "cotangent of " + output, run.value(run.inputs[next]).name, "cotangent", output));
  }
  size_t k = 0;
  for (ValueId in : forward.inputs) {
    if (!forward.value(in).requires_grad) continue;
    const std::string& input = forward.value(in).name;
    EntryParam p = param(run, run.outputs.at(k), unique.claim("grad_" + input), true, "gradient of " + input, run.value(run.outputs.at(k)).name, "gradient", input);
    entry.params.push_back(std::move(p));
    ++k;
  }
  return entry;
}

}  // namespace tg
