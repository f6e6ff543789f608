// `thunder-gen explain`: the rematerialization plan in words. For every saved value its bytes,
// storage, kind and reason; the forward values the backward recomputes instead, each with the
// op that makes it; and the totals. manifest.json carries the same facts. With --frontier, the
// Pareto plans of the time model instead (docs/rematerialization.md).
#pragma once
#include <string>

#include "autograd/partition.h"

namespace tg {

// What `explain` prints: the plan; the frontier (--frontier); the frontier as JSON (--json).
enum class PlanListing { plan, frontier, frontier_json };

std::string explain_partition(const Partition& p, const std::string& input_file, PlanListing listing = PlanListing::plan);

}  // namespace tg
