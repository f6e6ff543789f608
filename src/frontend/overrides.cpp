#include "frontend/overrides.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fnmatch.h>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "support/diagnostics.h"
#include "support/spelling.h"

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

// thunder/core/prims.py OpTags, BoundSymbolTag (symbol.py) and ProxyTag (transforms.py,
// jit_ext.py, torch/__init__.py) names in Lightning Thunder 0.2.6, then thunder-gen's own.
constexpr std::string_view kKnownTags[] = {
    "SHAPE_OP", "REDUCTION_OP", "RANDOM_OP", "MATMUL_OP", "DEVICE_SYNC_OP", "DONT_DCE", "IN_PLACE", "AUTO_REGISTERED",
    "CTX_MANAGER_ENTER_EXIT_OP", "DONT_RECOMPUTE_IN_BACKWARD", "DONT_AUTO_RECOMPUTE_IN_BACKWARD", "TORCH_COMPILE_COMPLIANT_CUSTOM_OP",
    "RECOMPUTE_IN_BACKWARD", "BACKWARD", "STATIC_MEMORY_LOCATION", "DETACHED_AUTOGRAD_GRAPH",
    "PREFER_SAVE_IN_BACKWARD", "PREFER_RECOMPUTE_IN_BACKWARD"};

std::string folded(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
  std::string out(first == std::string_view::npos ? std::string_view() : s.substr(first, last - first + 1));
  for (char& c : out) c = char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// `file` and `where` place diagnostics: ("thunder-gen", "--tag X=Y") or (path, JSON pointer). The
// source, which generated files quote, names the file without its folder: output is the same
// from any checkout path.
Override make_override(const std::string& selector, const std::string& policy, const std::string& file, const std::string& where) {
  if (selector.empty() || selector == "@") throw UserError(file, where, "empty selector: expected a symbol id, @<value>, an ATen target or a module path");
  std::optional<Policy> p = parse_policy(policy);
  if (!p) throw UserError(file, where, "unknown policy \"" + policy + "\": expected save, recompute, prefer-save or prefer-recompute");
  const std::string source = file == "thunder-gen" ? where : std::filesystem::path(file).filename().string() + ": " + where;
  return Override{selector, *p, source, file, where};
}

// `s` as a JSON pointer token ('~' and '/' escaped).
std::string pointer_token(const std::string& s) {
  std::string token;
  for (char c : s) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return token;
}

bool defines(const Trace& t, const Op& op, std::string_view name) {
  return std::any_of(op.outs.begin(), op.outs.end(), [&](ValueId v) { return t.value(v).name == name; });
}

// What a selector names, least specific first: within one source a more specific kind wins.
//   module  a dotted module path of a PT2 archive ("layers.*.attn", `*` and `?` within a segment):
//           the ops its nodes and its submodules' nodes became
//   symbol  a symbol id: every call of it
//   target  an ATen target of a PT2 archive ("aten.native_dropout", with or without overload)
//   value   @name: the op defining that value (a PT2 node's name is its first output's)
enum class SelectorKind { module, symbol, target, value };

struct Selector {
  SelectorKind kind;
  std::string text;  // without the '@'
};

bool calls_symbol(const Trace& t, std::string_view symbol) {
  bool found = false;
  for_each_nested_op(t.ops, [&](const Op& op) { found = found || op.symbol == symbol; });
  return found;
}

Selector selector_of(const Trace& t, const std::string& text) {
  if (text[0] == '@') return {SelectorKind::value, text.substr(1)};
  if (text.rfind("aten.", 0) == 0) return {SelectorKind::target, text};
  if (!t.node_origins.empty() && !calls_symbol(t, text)) return {SelectorKind::module, text};
  return {SelectorKind::symbol, text};
}

// A module path inside the one the pattern names: its leading segments match the pattern's.
bool in_module(std::string_view module, const std::string& pattern) {
  size_t at = 0;
  for (size_t start = 0; start <= pattern.size();) {
    const size_t end = std::min(pattern.find('.', start), pattern.size());
    if (at > module.size()) return false;
    const size_t module_end = std::min(module.find('.', at), module.size());
    const std::string segment(module.substr(at, module_end - at)), glob = pattern.substr(start, end - start);
    if (module.empty() || fnmatch(glob.c_str(), segment.c_str(), 0) != 0) return false;
    at = module_end + 1, start = end + 1;
  }
  return true;
}

bool selects(const Trace& t, const Selector& s, const Op& op) {
  auto origin = t.node_origins.find(op.where);
  switch (s.kind) {
    case SelectorKind::value: return defines(t, op, s.text);
    case SelectorKind::symbol: return op.symbol == s.text;
    case SelectorKind::target:
      return origin != t.node_origins.end() && (origin->second.target == s.text || origin->second.target.rfind(s.text + ".", 0) == 0);
    case SelectorKind::module: return origin != t.node_origins.end() && in_module(origin->second.module, s.text);
  }
  return false;
}

std::string nothing_selected(const Trace& t, const Selector& s) {
  switch (s.kind) {
    case SelectorKind::value: return "no op defines a value named \"" + s.text + "\"";
    case SelectorKind::target:
      return t.node_origins.empty() ? "ATen targets select the nodes of a PT2 archive, and this trace was not read from one"
                                    : "no node of the archive calls " + s.text;
    case SelectorKind::module: return "the trace has no call of " + s.text + ", and no module of the archive matches it";
    case SelectorKind::symbol: break;
  }
  return "the trace has no call of " + s.text;
}

}  // namespace

std::string_view policy_name(Policy p) { return entry(p).name; }
std::string_view policy_tag(Policy p) { return entry(p).tag; }

std::optional<Policy> parse_policy(std::string_view name) {
  for (const PolicyName& e : kPolicies)
    if (e.name == name) return e.policy;
  return std::nullopt;
}

bool is_known_tag(std::string_view tag) { return std::find(std::begin(kKnownTags), std::end(kKnownTags), tag) != std::end(kKnownTags); }

std::string_view closest_known_tag(std::string_view tag) { return closest_word(folded(tag.substr(0, 200)), kKnownTags); }

void check_op_tags(const std::vector<std::string>& tags, const std::string& where) {
  std::optional<Policy> policy;
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string at = where + "/" + std::to_string(i);
    if (!is_known_tag(tags[i]))
      throw UserError(at, "unknown tag \"" + tags[i] + "\" (did you mean " + std::string(closest_known_tag(tags[i])) + "?)");
    const std::optional<Policy> p = policy_of({tags[i]});
    if (p && policy && *p != *policy)
      throw UserError(at, "tag " + tags[i] + " contradicts " + std::string(policy_tag(*policy)) + " on the same op");
    if (p) policy = p;
  }
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
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(path, "", "is a folder, not an overrides file");
  std::ifstream in(path);
  if (!in) throw UserError(path, "", "cannot open the overrides file");
  // In the file's order, and a selector given twice is an error, as a key given twice in a trace is.
  nlohmann::ordered_json j;
  std::vector<std::set<std::string>> keys_by_depth;
  auto refuse_duplicate_keys = [&](int depth, nlohmann::ordered_json::parse_event_t event, nlohmann::ordered_json& parsed) {
    using Event = nlohmann::ordered_json::parse_event_t;
    if (event == Event::object_start) keys_by_depth.resize(size_t(depth) + 1), keys_by_depth[size_t(depth)].clear();
    if (event == Event::key && !keys_by_depth.at(size_t(depth) - 1).insert(parsed.get<std::string>()).second)
      throw UserError(path, "/" + pointer_token(parsed.get<std::string>()), "selector \"" + parsed.get<std::string>() + "\" is given twice");
    return true;
  };
  try {
    j = nlohmann::ordered_json::parse(in, refuse_duplicate_keys);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(path, "", "not valid JSON (at byte " + std::to_string(e.byte) + ")");
  }
  if (!j.is_object()) throw UserError(path, "/", "expected an object {\"<selector>\": \"<policy>\", ...}");
  std::vector<Override> out;
  for (const auto& [selector, policy] : j.items()) {
    const std::string pointer = "/" + pointer_token(selector);
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

  // Later sources win (the file, then the command line). Within one source the more specific
  // selector wins (SelectorKind: every dropout recomputed but this one); two of the same kind with
  // different policies for one op are an error.
  struct Chosen {
    const Override* override;
    SelectorKind kind;
  };
  std::map<std::string, Chosen> chosen_in_source;  // op.where -> the override of the current source
  const std::string* current_source = nullptr;
  for (const Override& o : overrides) {
    if (!current_source || *current_source != o.file) chosen_in_source.clear(), current_source = &o.file;
    const Selector selector = selector_of(out, o.selector);
    size_t selected = 0;
    for_each_nested_op(out.ops, [&](Op& op) {
      if (!selects(out, selector, op)) return;
      ++selected;
      auto [earlier, first] = chosen_in_source.try_emplace(op.where, Chosen{&o, selector.kind});
      if (!first) {
        const Chosen was = earlier->second;
        if (was.kind == selector.kind && was.override->policy != o.policy)
          throw UserError(o.file, o.where,
                          "policy " + std::string(policy_name(o.policy)) + " contradicts " + std::string(policy_name(was.override->policy)) + " (" +
                              was.override->source + ") for the op at " + op.where);
        if (was.kind > selector.kind) return;  // the more specific selector stays
        earlier->second = Chosen{&o, selector.kind};
      }
      op.tags.erase(std::remove_if(op.tags.begin(), op.tags.end(), is_policy_tag), op.tags.end());
      op.tags.insert(op.tags.begin(), std::string(policy_tag(o.policy)));
      out.policy_sources[op.where] = o.source;
    });
    if (selected == 0) throw UserError(o.file, o.where, nothing_selected(out, selector));
  }
  return out;
}

}  // namespace tg
