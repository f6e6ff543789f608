// Rematerialization policies set per op (docs/trace-format.md section 2): by tags in the trace, by an
// overrides file (`--tags overrides.json`) and by `--tag <selector>=<policy>`, later sources
// winning. A policy travels as a tag on the op, so it survives lowering and gradient rules the
// way every tag does: the prims a torch-level call lowers to, and those its gradient rule
// builds, carry the call's tags.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/trace.h"

namespace tg {

enum class Policy { save, recompute, prefer_save, prefer_recompute };

std::string_view policy_name(Policy p);            // "save", "recompute", "prefer-save", "prefer-recompute"
std::optional<Policy> parse_policy(std::string_view name);
std::string_view policy_tag(Policy p);             // DONT_RECOMPUTE_IN_BACKWARD, RECOMPUTE_IN_BACKWARD, ...
// The policy an op's tags give: the first policy tag (an op's own tags precede inherited ones).
std::optional<Policy> policy_of(const std::vector<std::string>& tags);

// Tags a trace may carry: every tag Lightning Thunder 0.2.6 defines for ops, bound symbols and
// proxies, and thunder-gen's two soft policies. Only the four policy tags change what is saved.
bool is_known_tag(std::string_view tag);
// The known tag `tag` was most likely meant to be (by edit distance, ignoring case and spaces
// around it).
std::string_view closest_known_tag(std::string_view tag);
// Checks an op's own tags as a trace gives them, at `where` (its "tags" JSON pointer): each
// known, at most one policy among them. Throws UserError naming the tag.
void check_op_tags(const std::vector<std::string>& tags, const std::string& where);

struct Override {
  std::string selector;  // a symbol id, or @<value>
  Policy policy;
  std::string source;    // for reasons: `--tag X=Y` or `overrides.json: /X`
  std::string file, where;  // for diagnostics: ("thunder-gen", "--tag X=Y") or (path, JSON pointer)
};

// `--tag <selector>=<policy>`; throws UserError naming the flag.
Override parse_tag_flag(const std::string& text);
// `{"<selector>": "<policy>", ...}`; throws UserError whose place is the file and JSON pointer.
std::vector<Override> read_overrides_file(const std::string& path);

// Sets each override's policy tag on the ops it selects (at any depth: decompositions and
// custom-function bodies too), replacing policy tags already there. A selector that selects
// nothing is an error. trace.policy_sources records where each op's policy came from.
Trace apply_overrides(Trace trace, const std::vector<Override>& overrides);

}  // namespace tg
