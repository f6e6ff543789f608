#include "frontend/json_names.h"

#include "support/diagnostics.h"

namespace tg::json {
namespace {

// Where each name is defined, anywhere in an op list (decompositions included), so a use
// before the definition can be told from a name that is never defined.
void note_definitions(Json ops, const std::string& where, std::map<std::string, std::string, std::less<>>& defined_anywhere) {
  if (!ops.is_array()) return;
  size_t i = 0;
  for (Json op : array_of(ops)) {
    std::string w = where + "/" + std::to_string(i++);
    if (!op.is_object()) continue;
    const Object o = object_of(op);
    if (auto out = find(o, "out"); out && out->is_array())
      for (Json d : array_of(*out))
        if (std::optional<Json> name = d.is_object() ? find(object_of(d), "name") : std::nullopt; name && name->is_string())
          defined_anywhere.emplace(string_of(*name), w);
    if (auto sub = find(o, "sub")) note_definitions(*sub, w + "/sub", defined_anywhere);
  }
}

}  // namespace

void Names::open_domain(std::optional<Json> ops, std::string ops_where) {
  domains_.push_back({Scope(1), {}, ops, std::move(ops_where)});
}

void Names::close_domain() { domains_.pop_back(); }

void Names::open_scope() { domains_.back().scopes.emplace_back(); }

void Names::close_scope() { domains_.back().scopes.pop_back(); }

ValueId Names::define(Value v, const Path& where) {
  if (!domains_.back().declared.insert(v.name).second)
    throw UserError(Path(where, "name").str(), "value \"" + v.name + "\" is defined twice");
  std::string name = v.name;
  ValueId id = t_.add_value(std::move(v));
  bind(name, id);
  return id;
}

ValueId Names::claim_output(const Value& v, const Path& where, const OuterOutputs& parent_outs) {
  auto it = parent_outs.find(v.name);
  if (it == parent_outs.end()) {
    if (!domains_.back().declared.insert(v.name).second) throw UserError(Path(where, "name").str(), "value \"" + v.name + "\" is defined twice");
    return t_.add_value(v);
  }
  const Value& outer = t_.value(it->second);
  if (outer.is_scalar != v.is_scalar || outer.dtype != v.dtype || outer.shape != v.shape)
    throw UserError(where.str(), "\"" + v.name + "\" is declared differently here than by the op this decomposes");
  return it->second;
}

void Names::bind(const std::string& name, ValueId id) { domains_.back().scopes.back()[name] = id; }

ValueId Names::find(std::string_view name) const {
  const Scope& scopes = domains_.back().scopes;
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  return kNoValue;
}

ValueId Names::reference(Json j, const Path& at) const {
  if (!j.is_string()) throw UserError(at.str(), "expected a value name, got " + kind_name(j));
  const std::string_view name = string_of(j);
  ValueId id = find(name);
  if (id != kNoValue) return id;
  const std::string where = at.str();
  std::map<std::string, std::string, std::less<>> defined_anywhere;  // name -> the op defining it
  const Domain& domain = domains_.back();
  if (domain.ops) note_definitions(*domain.ops, domain.ops_where, defined_anywhere);
  auto later = defined_anywhere.find(name);
  if (later != defined_anywhere.end()) {
    // A name defined inside a decomposition is visible only later in that decomposition.
    const std::string& def = later->second;
    size_t sub = def.rfind("/sub/");
    if (sub != std::string::npos && where.compare(0, sub + 5, def, 0, sub + 5) != 0)
      throw UserError(where, "value \"" + std::string(name) + "\" exists only inside the decomposition at " + def.substr(0, sub));
    throw UserError(where, "value \"" + std::string(name) + "\" is used before it is defined (at " + def + ")");
  }
  throw UserError(where, "undefined value \"" + std::string(name) + "\"");
}

}  // namespace tg::json
