#include "autograd/frontier.h"

#include <algorithm>

namespace tg {

namespace {

// Past this many femtoseconds per byte (17 ns) no recomputation is worth a byte: the fewest-bytes
// end of the sweep.
constexpr int64_t kLargestLambda = int64_t(1) << 24;
constexpr int kMostCuts = 64;

int64_t capped_sum(int64_t a, int64_t b) { return a >= RematProblem::kInfinite - b ? RematProblem::kInfinite : a + b; }

int64_t capped_product(int64_t a, int64_t b) {
  if (a != 0 && b > RematProblem::kInfinite / a) return RematProblem::kInfinite;
  return a * b;
}

// The lambda of the fewest-bytes end: past any recomputation's worth of a byte, and small
// enough that no weighted cost, nor the cut's sum of them, reaches kInfinite (when that binds,
// with terabytes of activations, the end may save more than the fewest possible).
int64_t largest_lambda(const RematProblem& time, const std::vector<int64_t>& bytes) {
  int64_t finite = 0, total_bytes = 1;
  for (size_t v = 0; v < time.values.size(); ++v)
    if (time.values[v].save_cost < RematProblem::kInfinite) finite = capped_sum(finite, time.values[v].save_cost), total_bytes = capped_sum(total_bytes, bytes[v]);
  for (const RematProblem::Op& op : time.ops)
    if (op.recompute_cost < RematProblem::kInfinite) finite = capped_sum(finite, op.recompute_cost);
  const int64_t room = RematProblem::kInfinite / 4 - std::min(finite, RematProblem::kInfinite / 8);
  return std::max<int64_t>(1, std::min(kLargestLambda, room / total_bytes));
}

class Sweep {
 public:
  Sweep(const RematProblem& time, const std::vector<int64_t>& bytes, const FrontierFocus& focus)
      : time_(time), bytes_(bytes), focus_(focus), solver_(time), weighted_(time) {}

  void limit_time(int64_t most) { most_time_ = most; }

  PlanPoint at(int64_t lambda) {
    ++cuts_;
    for (size_t v = 0; v < weighted_.values.size(); ++v)
      if (time_.values[v].save_cost < RematProblem::kInfinite)
        weighted_.values[v].save_cost = capped_sum(time_.values[v].save_cost, capped_product(lambda, bytes_[v]));
    return measure_plan(time_, bytes_, solver_.solve(weighted_));
  }

  // The hull corners strictly between `a` (more bytes, less time) and `b`, appended to `out`.
  void between(const PlanPoint& a, const PlanPoint& b, std::vector<PlanPoint>& out) {
    if (a.activation_bytes <= b.activation_bytes || b.time_fs <= a.time_fs || cuts_ >= kMostCuts || !in_focus(a, b)) return;
    const int64_t dt = b.time_fs - a.time_fs, db = a.activation_bytes - b.activation_bytes;
    const int64_t lambda = (dt + db - 1) / db;  // where a and b cost about the same
    PlanPoint c = at(lambda);
    const bool new_corner = c.activation_bytes < a.activation_bytes && c.activation_bytes > b.activation_bytes;
    if (!new_corner) return;
    between(a, c, out);
    out.push_back(c);
    between(c, b, out);
  }

 private:
  // Whether a corner between a and b could be chosen: every one is slower than a and smaller
  // than a, larger than b.
  bool in_focus(const PlanPoint& a, const PlanPoint& b) const {
    if (a.time_fs > most_time_) return false;
    return !focus_.byte_budget || (a.activation_bytes > *focus_.byte_budget && b.activation_bytes <= *focus_.byte_budget);
  }

  const RematProblem& time_;
  const std::vector<int64_t>& bytes_;
  const FrontierFocus& focus_;
  int64_t most_time_ = RematProblem::kInfinite;
  MinCutSolver solver_;
  RematProblem weighted_;  // time_ with lambda * bytes added to each saving
  int cuts_ = 0;
};

}  // namespace

PlanPoint measure_plan(const RematProblem& time, const std::vector<int64_t>& bytes, RematPlan plan) {
  PlanPoint p;
  for (size_t v = 0; v < plan.saved.size(); ++v)
    if (plan.saved[v]) p.activation_bytes += bytes[v], p.time_fs = capped_sum(p.time_fs, time.values[v].save_cost);
  for (size_t x = 0; x < plan.recomputed.size(); ++x)
    if (plan.recomputed[x]) p.time_fs = capped_sum(p.time_fs, time.ops[x].recompute_cost);
  p.plan = std::move(plan);
  return p;
}

std::vector<PlanPoint> pareto(std::vector<PlanPoint> points) {
  std::sort(points.begin(), points.end(), [](const PlanPoint& a, const PlanPoint& b) {
    return a.activation_bytes != b.activation_bytes ? a.activation_bytes > b.activation_bytes : a.time_fs > b.time_fs;
  });
  // From the fewest bytes up, a plan stays only if it is faster than every plan with fewer bytes.
  std::vector<PlanPoint> kept;
  int64_t fastest_with_fewer = RematProblem::kInfinite + 1;
  for (auto it = points.rbegin(); it != points.rend(); ++it)
    if (it->time_fs < fastest_with_fewer) {
      fastest_with_fewer = it->time_fs;
      kept.push_back(std::move(*it));
    }
  std::reverse(kept.begin(), kept.end());
  return kept;
}

std::vector<PlanPoint> plan_frontier(const RematProblem& time, const std::vector<int64_t>& bytes, const FrontierFocus& focus) {
  Sweep sweep(time, bytes, focus);
  const PlanPoint fastest = sweep.at(0);
  std::vector<PlanPoint> points{fastest};
  if (focus.time_limit) sweep.limit_time(focus.time_limit(fastest));
  const PlanPoint fewest = sweep.at(largest_lambda(time, bytes));
  sweep.between(fastest, fewest, points);
  points.push_back(fewest);
  return pareto(std::move(points));
}

}  // namespace tg
