// The names of a trace's values as the JSON reader meets them: which value a name refers to at a
// point of the trace, and, for a name that refers to none, why (used before its definition,
// defined only inside a decomposition, or never). Internal to frontend/ (the JSON reader).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/json_element.h"
#include "ir/trace.h"

namespace tg::json {

// An enclosing op's outputs by name: the values a decomposition defines again.
using OuterOutputs = std::map<std::string, ValueId, std::less<>>;

class Names {
 public:
  explicit Names(Trace& trace) : t_(trace) {}

  // A naming domain: the trace's, or a custom-gradient body's. Each name is defined once in it,
  // and it sees no name of the domain around it. `ops`, its op list (`ops_where` its pointer),
  // tells a use before the definition from a name never defined.
  void open_domain(std::optional<Json> ops, std::string ops_where);
  void close_domain();  // back to the enclosing domain, as it was
  // A decomposition's scope: the names defined in it are visible until it closes.
  void open_scope();
  void close_scope();

  // A new value of the trace, named in the innermost scope.
  ValueId define(Value v, const Path& where);
  // Inside a decomposition an output named like one of the enclosing op's is that value (and must
  // be declared the same); any other name is a new value (not yet visible: see `bind`).
  ValueId claim_output(const Value& v, const Path& where, const OuterOutputs& parent_outs);
  // Makes `name` refer to `id` in the innermost scope.
  void bind(const std::string& name, ValueId id);
  // The value the name `j` refers to here.
  ValueId reference(Json j, const Path& at) const;

 private:
  // Names visible at a point of the program: a stack of scopes, innermost last. A trace's sub-ops
  // see the names before their op; a custom-gradient body sees only its own.
  using Scope = std::vector<std::map<std::string, ValueId, std::less<>>>;
  struct Domain {
    Scope scopes;
    std::set<std::string, std::less<>> declared;  // every name declared in the domain
    std::optional<Json> ops;
    std::string ops_where;
  };
  Trace& t_;
  std::vector<Domain> domains_;  // innermost last

  ValueId find(std::string_view name) const;
};

}  // namespace tg::json
