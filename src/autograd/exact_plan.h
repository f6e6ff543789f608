// --exact: the plan as a mixed-integer program (Checkmate's formulation for one backward),
// solved by CBC (coinor-libcbc, Debian) within a time limit. A value is available in the backward
// when saved, or when the op defining it is recomputed from available values; the values the
// backward reads must be available. Either the least time within a byte budget, or the fewest
// bytes within a time bound. The frontier (frontier.h) is the fallback when the graph is larger
// than kExactMostOps or the solver does not prove a plan optimal in time.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/remat.h"

namespace tg {

constexpr size_t kExactMostOps = 600;
constexpr double kExactSeconds = 10;

struct ExactGoal {
  enum class Minimise { time, bytes } minimise = Minimise::time;
  int64_t bound = 0;  // the most bytes (minimising time) or femtoseconds (minimising bytes)
};

struct ExactResult {
  std::optional<RematPlan> plan;  // proven optimal
  std::string why_not;            // when not: the graph's size, the time limit, no plan in bounds
};

ExactResult exact_plan(const RematProblem& time, const std::vector<int64_t>& bytes, const ExactGoal& goal, double seconds = kExactSeconds);

}  // namespace tg
