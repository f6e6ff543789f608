#include "overrides.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "thunder_gen/diagnostics.h"

namespace tg {
namespace {

struct PolicyName {
  Policy policy;
  std::string_view name, tag;
};
// The two hard policies use Thunder's tag names; the soft ones are thunder-gen's.
constexpr PolicyName kPolicies[] = {
    {Policy::save, "save", "DONT_RECOMPUTE_IN_BACKWARD"},
    {Policy::recompute, "recompute", "RECOMPUTE_IN_BACKWARD"},
    {Policy::prefer_save, "prefer-save", "PREFER_SAVE_IN_BACKWARD"},
    {Policy::prefer_recompute, "prefer-recompute", "PREFER_RECOMPUTE_IN_BACKWARD"},
};

const PolicyName& entry(Policy p) { return *std::find_if(std::begin(kPolicies), std::end(kPolicies), [&](const PolicyName& e) { return e.policy == p; }); }

bool is_policy_tag(const std::string& tag) {
  return std::any_of(std::begin(kPolicies), std::end(kPolicies), [&](const PolicyName& e) { return e.tag == tag; });
}

// `file` and `where` place diagnostics: ("thunder-gen", "--tag X=Y") or (path, JSON pointer).
Override make_override(const std::string& selector, const std::string& policy, const std::string& file, const std::string& where) {
  if (selector.empty() || selector == "@") throw UserError(file, where, "empty selector: expected a symbol id or @<value>");
  std::optional<Policy> p = parse_policy(policy);
  if (!p) throw UserError(file, where, "unknown policy \"" + policy + "\": expected save, recompute, prefer-save or prefer-recompute");
  return Override{selector, *p, file == "thunder-gen" ? where : file + ": " + where, file, where};
}

bool defines(const Trace& t, const Op& op, std::string_view name) {
  return std::any_of(op.outs.begin(), op.outs.end(), [&](ValueId v) { return t.value(v).name == name; });
}

}  // namespace

std::string_view policy_name(Policy p) { return entry(p).name; }
std::string_view policy_tag(Policy p) { return entry(p).tag; }

std::optional<Policy> parse_policy(std::string_view name) {
  for (const PolicyName& e : kPolicies)
    if (e.name == name) return e.policy;
  return std::nullopt;
}

std::optional<Policy> policy_of(const std::vector<std::string>& tags) {
  for (const std::string& tag : tags)
    for (const PolicyName& e : kPolicies)
      if (e.tag == tag) return e.policy;
  return std::nullopt;
}

Override parse_tag_flag(const std::string& text) {
  const std::string where = "--tag " + text;
  size_t eq = text.rfind('=');
  if (eq == std::string::npos) throw UserError("thunder-gen", where, "expected <selector>=<policy>");
  return make_override(text.substr(0, eq), text.substr(eq + 1), "thunder-gen", where);
}

std::vector<Override> read_overrides_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path, "", "cannot open the overrides file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(path, "", "not valid JSON (at byte " + std::to_string(e.byte) + ")");
  }
  if (!j.is_object()) throw UserError(path, "/", "expected an object {\"<selector>\": \"<policy>\", ...}");
  std::vector<Override> out;
  for (const auto& [selector, policy] : j.items()) {
    // The selector as a JSON pointer token ('~' and '/' escaped).
    std::string token;
    for (char c : selector) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    const std::string pointer = "/" + token;
    if (!policy.is_string()) throw UserError(path, pointer, "expected a policy string, got " + policy.dump());
    out.push_back(make_override(selector, policy.get<std::string>(), path, pointer));
  }
  return out;
}

Trace apply_overrides(Trace trace, const std::vector<Override>& overrides) {
  Trace out = std::move(trace);
  // Policies written in the trace itself.
  for_each_nested_op(out.ops, [&](const Op& op) {
    if (std::optional<Policy> p = policy_of(op.tags)) out.policy_sources[op.where] = "trace tag " + std::string(policy_tag(*p));
  });

  for (const Override& o : overrides) {
    const bool by_value = o.selector[0] == '@';
    const std::string name = by_value ? o.selector.substr(1) : o.selector;
    size_t selected = 0;
    for_each_nested_op(out.ops, [&](Op& op) {
      if (!(by_value ? defines(out, op, name) : op.symbol == name)) return;
      op.tags.erase(std::remove_if(op.tags.begin(), op.tags.end(), is_policy_tag), op.tags.end());
      op.tags.insert(op.tags.begin(), std::string(policy_tag(o.policy)));
      out.policy_sources[op.where] = o.source;
      ++selected;
    });
    if (selected == 0)
      throw UserError(o.file, o.where, by_value ? "no op defines a value named \"" + name + "\"" : "the trace has no call of " + name);
  }
  return out;
}

}  // namespace tg
