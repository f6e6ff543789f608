// The memory-time frontier of rematerialization plans. Each plan's cost is split in two: the
// activation bytes it saves and the step time it adds (a RematProblem whose costs are predicted
// femtoseconds, src/autograd/time_model.h). Minimising time + lambda * bytes is one min-cut for
// each lambda (remat.h); sweeping lambda from 0 (the fastest plan) up finds every plan on the
// lower convex hull of (bytes, time), each hull corner with one more cut between two known ones
// (the lambda where both cost the same). Plans between two corners that no lambda chooses are
// not found; the MILP oracle (tests/remat_oracle.py) measures what that misses.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "autograd/remat.h"

namespace tg {

struct PlanPoint {
  RematPlan plan;
  int64_t activation_bytes = 0;
  int64_t time_fs = 0;  // what the plan adds to the step: saving (writes, reads) and recomputing
};

// The plan's bytes and time under the two cost vectors.
PlanPoint measure_plan(const RematProblem& time, const std::vector<int64_t>& bytes, RematPlan plan);

// Where a plan choice looks, so the sweep can skip the rest: corners no slower than
// time_limit(the fastest plan), or the corners either side of a byte budget. Empty: everywhere.
struct FrontierFocus {
  std::function<int64_t(const PlanPoint& fastest)> time_limit;
  std::optional<int64_t> byte_budget;
};

// The Pareto plans from the fastest to the fewest bytes, bytes falling and time rising strictly
// (with a focus, the two ends and the corners in focus). `time`: costs in femtoseconds
// (kInfinite where a policy forbids); `bytes`: each value's activation bytes when saved.
// Throws NoFinitePlan as plan_remat does.
std::vector<PlanPoint> plan_frontier(const RematProblem& time, const std::vector<int64_t>& bytes, const FrontierFocus& focus = {});

// Only the Pareto points of `points`, sorted by bytes falling (a plan is dropped when another
// has no more bytes and no more time, and is better in one).
std::vector<PlanPoint> pareto(std::vector<PlanPoint> points);

}  // namespace tg
