#include "autograd/partition.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <iterator>
#include <mutex>
#include <sstream>
#include <utility>

#include "autograd/cut_model.h"
#include "autograd/exact_plan.h"
#include "autograd/frontier.h"
#include "autograd/remat.h"
#include "frontend/overrides.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {

// A plan and how it was chosen (for the reasons `explain` gives). Outside the file's anonymous
// namespace: SharedPlans (partition.h) holds them.
struct ChosenPlan {
  RematPlan plan;
  bool over_budget = false;  // the default plan was over --activation-budget
  std::string rule;          // planned in time: how the plan was chosen, for the reasons
  std::vector<PlanPoint> frontier;
  int chosen = -1;
  int64_t fixed_fs = 0;  // the step's time no plan changes
  PlanPoint bytes_first;
  std::string exact_note;  // --exact fell back: why
  // Priced (RematOptions::price_kernels): the frontier's plans' kernels (by index), the plan by
  // bytes', the chosen one's; or why none was priced.
  std::vector<std::optional<KernelSteps>> frontier_kernels;
  std::optional<KernelSteps> bytes_first_kernels, kernels;
  std::string kernels_note;
};

namespace {

using cut::activation_bytes;
using cut::Candidates;
using cut::CutModel;
using cut::kFullWeight;
using cut::kNone;
using cut::kReturned;
using cut::plan_within_budget;
using cut::smallest_within;
using cut::weigh;
using cut::weigh_time;

// Whether the choice is made on the priced kernels of its candidates (see RematOptions).
bool prices_kernels(const JointTrace& joint, const RematOptions& options) {
  return options.choose_by_time && options.price_kernels && joint.trace.ops.size() <= kMostPricedOps;
}

// --exact: the solver's optimum for `goal` instead of the frontier's choice, where it is better.
void choose_exactly(ChosenPlan& chosen, const RematProblem& time, const std::vector<int64_t>& bytes, const ExactGoal& goal) {
  ExactResult exact = exact_plan(time, bytes, goal);
  if (!exact.plan) {
    chosen.exact_note = "--exact: " + exact.why_not + "; the frontier's plan instead";
    return;
  }
  chosen.rule += ", solved exactly (CBC)";
  const PlanPoint solved = measure_plan(time, bytes, *exact.plan), current = measure_plan(time, bytes, chosen.plan);
  const bool better = goal.minimise == ExactGoal::Minimise::time ? solved.time_fs < current.time_fs : solved.activation_bytes < current.activation_bytes;
  if (!better) return;  // the frontier's plan is optimal too
  chosen.plan = std::move(*exact.plan);
  chosen.chosen = -1;
  for (size_t i = 0; i < chosen.frontier.size(); ++i)
    if (chosen.frontier[i].activation_bytes == solved.activation_bytes && chosen.frontier[i].time_fs == solved.time_fs) chosen.chosen = int(i);
}

// The corners the choice needs, unless explain lists them all: within the slack (and no slower
// than the plan by bytes), or either side of the budget.
FrontierFocus focus_of(const RematOptions& options, int64_t fixed_fs, const PlanPoint& bytes_first, bool priced) {
  FrontierFocus focus;
  if (options.list_frontier || !options.choose_by_time || priced) return focus;
  if (options.activation_budget) {
    focus.byte_budget = options.activation_budget;
    return focus;
  }
  focus.time_limit = [&options, fixed_fs, cap = bytes_first.time_fs](const PlanPoint& fastest) {
    return std::min(int64_t(std::ceil(double(fixed_fs + fastest.time_fs) * (1 + options.time_slack))) - fixed_fs, cap);
  };
  return focus;
}

// Planned in time (options.device): the frontier, today's bytes-first plan among its candidates,
// and the choice: the fastest within --activation-budget, else the fewest bytes within the slack.
void choose_in_time(ChosenPlan& chosen, const CutModel& m, const JointTrace& joint, const RematOptions& options) {
  std::vector<int64_t> bytes;
  const RematProblem time = weigh_time(m.candidates, bytes);
  const PlanPoint bytes_first = chosen.bytes_first = measure_plan(time, bytes, chosen.plan);
  chosen.fixed_fs = fixed_step_fs(joint.trace, options.plan_at, *options.device);
  std::vector<PlanPoint> points = plan_frontier(time, bytes, focus_of(options, chosen.fixed_fs, bytes_first, prices_kernels(joint, options)));
  points.push_back(bytes_first);
  chosen.frontier = pareto(std::move(points));
  const std::vector<PlanPoint>& f = chosen.frontier;
  const std::string model = "the time model (--device-model " + options.device->name + ")";
  if (!options.choose_by_time) {  // listed only: the plan by bytes, where it stands
    chosen.over_budget = options.activation_budget && activation_bytes(m.candidates, chosen.plan) > *options.activation_budget;
    if (chosen.over_budget) chosen.plan = plan_within_budget(m.candidates, *options.activation_budget);
    const PlanPoint by_bytes = measure_plan(time, bytes, chosen.plan);
    for (size_t i = 0; i < f.size(); ++i)
      if (f[i].activation_bytes == by_bytes.activation_bytes && f[i].time_fs == by_bytes.time_fs) chosen.chosen = int(i);
    return;
  }
  if (options.activation_budget) {
    smallest_within(m.candidates, *options.activation_budget);
    for (size_t i = 0; i < f.size() && chosen.chosen < 0; ++i)
      if (f[i].activation_bytes <= *options.activation_budget) chosen.chosen = int(i);
    chosen.plan = chosen.chosen >= 0 ? f[size_t(chosen.chosen)].plan : plan_within_budget(m.candidates, *options.activation_budget);
    chosen.rule = "the fastest plan under " + model + " within --activation-budget " + std::to_string(*options.activation_budget);
    if (options.exact) choose_exactly(chosen, time, bytes, {ExactGoal::Minimise::time, *options.activation_budget});
    return;
  }
  const double slowest = double(chosen.fixed_fs + f.front().time_fs) * (1 + options.time_slack);
  for (size_t i = 0; i < f.size(); ++i)
    if (double(chosen.fixed_fs + f[i].time_fs) <= slowest && f[i].time_fs <= bytes_first.time_fs) chosen.chosen = int(i);
  TG_CHECK(chosen.chosen >= 0, "no frontier plan within the time slack");
  chosen.plan = f[size_t(chosen.chosen)].plan;
  std::ostringstream slack;
  slack << options.time_slack * 100;
  chosen.rule = "the fewest bytes within " + slack.str() + "% of the fastest step under " + model;
  const int64_t time_bound = std::min(int64_t(slowest) - chosen.fixed_fs, bytes_first.time_fs);
  if (options.exact) choose_exactly(chosen, time, bytes, {ExactGoal::Minimise::bytes, time_bound});
}

ChosenPlan choose_plan(const CutModel& m, const JointTrace& joint, const RematOptions& options) {
  ChosenPlan chosen;
  try {
    chosen.plan = plan_remat(weigh(m.candidates, kFullWeight, false));
  } catch (const NoFinitePlan& e) {
    throw cut::no_plan_error(e, m, joint);
  }
  if (options.device && options.baseline == RematOptions::Baseline::none) {
    try {
      choose_in_time(chosen, m, joint, options);
    } catch (const NoFinitePlan& e) {
      throw cut::no_plan_error(e, m, joint);
    }
    return chosen;
  }
  chosen.over_budget = options.activation_budget && activation_bytes(m.candidates, chosen.plan) > *options.activation_budget;
  if (chosen.over_budget) chosen.plan = plan_within_budget(m.candidates, *options.activation_budget);
  return chosen;
}

// Why each saved value is saved: a policy and where it came from, the budget, a kind pinned by
// default, or the cut; and what needs it.
class SaveReasons {
 public:
  SaveReasons(const CutModel& m, const JointTrace& joint, const ChosenPlan& chosen, const RematOptions& options)
      : m_(m), j_(joint.trace), over_budget_(chosen.over_budget), rule_(chosen.rule), options_(options), first_recomputed_reader_(j_.values.size(), kNone) {
    for (size_t x = 0; x < joint.forward_ops; ++x)
      if (chosen.plan.recomputed[x])
        for_each_value(j_.ops[x], [&](ValueId u) {
          if (first_recomputed_reader_[size_t(u)] == kNone) first_recomputed_reader_[size_t(u)] = int(x);
        });
  }

  std::string operator()(ValueId v) const {
    const std::string needed = needed_by(v);
    if (m_.input_index[size_t(v)] != kNone || m_.output_index[size_t(v)] != kNone) return needed;
    const Op& def = j_.ops[size_t(m_.forward_def[size_t(v)])];
    if (std::optional<Policy> policy = policy_of(def.tags); policy == Policy::save || policy == Policy::prefer_save)
      return "tag " + std::string(policy_name(*policy)) + " on " + cut::policy_call_name(def) + " (" + cut::policy_source(j_, def.where) + "); " + needed;
    if (!rule_.empty()) return "min-cut: " + rule_ + "; " + needed;
    if (over_budget_) return "min-cut under --activation-budget " + std::to_string(*options_.activation_budget) + "; " + needed;
    if (!policy_of(def.tags) && cut::pinned_by_default(*def.info))
      return def.symbol + " is not recomputed by default; " + needed;
    return "min-cut: cheaper to save than to recompute; " + needed;
  }

 private:
  // The first backward op reading it, or else the first recomputed op.
  std::string needed_by(ValueId v) const {
    const int reader = m_.first_reader[size_t(v)];
    if (reader == kReturned) return "returned as a gradient";
    if (reader != kNone) {
      const Op& op = j_.ops[size_t(reader)];
      std::string text = "read by " + op.symbol + " in the backward";
      if (!op.where.empty()) text += " (from the op at " + op.where + ")";
      return text;
    }
    if (const int r = first_recomputed_reader_[size_t(v)]; r != kNone) {
      const Op& op = j_.ops[size_t(r)];
      return "read by " + op.symbol + " recomputing " + j_.value(op.outs[0]).name + " in the backward";
    }
    return "read by a recomputed op";
  }

  const CutModel& m_;
  const Trace& j_;
  const bool over_budget_;
  const std::string& rule_;
  const RematOptions& options_;
  std::vector<int> first_recomputed_reader_;  // joint value -> the first recomputed op reading it
};

// The saved values, in forward order, into `saved`; returns the intermediates among them, which
// become extra forward outputs (a b8 one stored packed, unless --no-pack-bool).
std::vector<ValueId> list_saved(std::vector<SavedValue>& saved, Trace& j, const CutModel& m, const RematPlan& plan, const SaveReasons& reason,
                                const RematOptions& options) {
  std::vector<ValueId> saved_intermediates;
  for (size_t i = 0; i < m.value_of.size(); ++i) {
    if (!plan.saved[i]) continue;
    const ValueId v = m.value_of[i];
    SavedValue s{v, SavedValue::Kind::intermediate, 0, reason(v)};
    if (const int in = m.input_index[size_t(v)]; in != kNone) {
      s.kind = SavedValue::Kind::input;
      s.index = size_t(in);
    } else if (const int out = m.output_index[size_t(v)]; out != kNone) {
      s.kind = SavedValue::Kind::output;
      s.index = size_t(out);
    } else {
      s.index = saved_intermediates.size();
      saved_intermediates.push_back(v);
      if (options.pack_bools && j.value(v).dtype == DType::b8) j.value(v).bit_packed = true;
    }
    saved.push_back(s);
  }
  return saved_intermediates;
}

// The backward trace: the saved values, then the cotangents, in; the recomputed forward ops
// (copied), then the joint trace's backward ops (moved); the gradients out. Fills p.recomputed.
void make_backward(Partition& p, JointTrace& joint, const CutModel& m, const RematPlan& plan) {
  Trace& j = joint.trace;
  p.backward = j.without_ops();
  p.backward.name = j.name + "_backward";  // its kernels are named after it: distinct from the forward's
  p.backward.ops.reserve(j.ops.size() - joint.forward_ops);
  for (size_t x = 0; x < joint.forward_ops; ++x) {
    if (!plan.recomputed[x]) continue;
    Op op = j.ops[x];
    for (ValueId& v : op.outs) {
      if (plan.saved[size_t(m.candidate[size_t(v)])]) {  // another output of a multi-output op is saved: keep it unused
        Value copy = p.backward.value(v);
        copy.name += "_recomputed";
        copy.bit_packed = false;  // (only the saved value is stored packed)
        v = p.backward.add_value(std::move(copy));
      } else {
        p.recomputed.push_back(v);
      }
    }
    p.backward.ops.push_back(std::move(op));
  }
  std::move(j.ops.begin() + ptrdiff_t(joint.forward_ops), j.ops.end(), std::back_inserter(p.backward.ops));
  p.backward.inputs.clear();
  for (const SavedValue& s : p.saved) p.backward.inputs.push_back(s.value);
  p.backward.inputs.insert(p.backward.inputs.end(), j.inputs.begin() + ptrdiff_t(joint.forward_inputs), j.inputs.end());
  p.backward.outputs.assign(j.outputs.begin() + ptrdiff_t(joint.forward_outputs), j.outputs.end());
}

// The frontier, each plan's recomputed values and predicted step, into p.
void record_frontier(Partition& p, const CutModel& m, const ChosenPlan& chosen, const RematOptions& options) {
  if (!options.device || chosen.frontier.empty()) return;
  p.device = options.device->name;
  p.chosen = chosen.chosen;
  p.exact_note = chosen.exact_note;
  auto listed = [&](const PlanPoint& point) {
    Partition::FrontierPlan plan{point.activation_bytes, chosen.fixed_fs + point.time_fs, {}, std::nullopt};
    for (size_t x = 0; x < m.candidates.ops.size(); ++x)
      if (point.plan.recomputed[x])
        for (int out : m.candidates.ops[x].outputs) plan.recomputed.push_back(m.value_of[size_t(out)]);
    return plan;
  };
  for (size_t i = 0; i < chosen.frontier.size(); ++i) {
    p.frontier.push_back(listed(chosen.frontier[i]));
    if (i < chosen.frontier_kernels.size()) p.frontier.back().kernels = chosen.frontier_kernels[i];
  }
  p.bytes_first = listed(chosen.bytes_first);
  p.bytes_first.kernels = chosen.bytes_first_kernels;
  p.kernels = chosen.kernels;
  p.kernels_note = chosen.kernels_note;
  p.time_problem = weigh_time(m.candidates, p.value_bytes);
  p.fixed_fs = chosen.fixed_fs;
  const PlanPoint planned = measure_plan(p.time_problem, p.value_bytes, chosen.plan);
  p.predicted_fs = chosen.fixed_fs + planned.time_fs;
  p.planned_bytes = planned.activation_bytes;
}

// The two traces for `chosen`'s plan. The two traces share the joint trace's values; the joint
// trace is consumed: its ops move into the trace that runs them, and only the ops the backward
// recomputes are copied. `listed`: with the frontier and the plan's reasons (not for a candidate
// only priced).
Partition build_partition(JointTrace joint, const CutModel& m, const ChosenPlan& chosen, const RematOptions& options, bool listed) {
  Trace& j = joint.trace;
  Partition p;
  p.plan_at = options.plan_at;
  p.plan_cost_bits = plan_cost(weigh(m.candidates, kFullWeight, true), chosen.plan.saved) / kFullWeight;
  const std::vector<ValueId> saved_intermediates = list_saved(p.saved, j, m, chosen.plan, SaveReasons(m, joint, chosen, options), options);
  // (At the sizes the trace was read at: the cut weighed them at the plan's.)
  for (const SavedValue& s : p.saved)
    if (s.kind == SavedValue::Kind::intermediate) p.activation_bytes += stored_bytes(j.value(s.value));
  if (listed) record_frontier(p, m, chosen, options);
  make_backward(p, joint, m, chosen.plan);
  j.ops.resize(joint.forward_ops);
  j.inputs.resize(joint.forward_inputs);
  j.outputs.resize(joint.forward_outputs);
  j.outputs.insert(j.outputs.end(), saved_intermediates.begin(), saved_intermediates.end());
  p.forward = std::move(j);
  if (p.forward.world_size > 0) {
    bucket_gradient_all_reduces(p.backward, options.bucket_bytes);
    schedule_collectives_early(p.backward);
  }
  p.communication = collectives_of(p.forward, "forward");
  for (CollectiveCall& c : collectives_of(p.backward, "backward")) p.communication.push_back(std::move(c));
  return p;
}

// A candidate plan, priced by its kernels.
struct PricedPlan {
  RematPlan plan;
  int64_t activation_bytes = 0;
  KernelSteps kernels;
};

// The rule of choose_in_time, on the priced kernels: the fastest within the budget, else the
// fewest bytes within the slack of the fastest and no slower than the plan by bytes (priced[0]).
const PricedPlan& choose_priced(const std::vector<PricedPlan>& priced, const RematOptions& options) {
  const PricedPlan* best = nullptr;
  if (options.activation_budget) {
    for (const PricedPlan& p : priced)
      if (p.activation_bytes <= *options.activation_budget &&
          (!best || p.kernels.step_fs() < best->kernels.step_fs() || (p.kernels.step_fs() == best->kernels.step_fs() && p.activation_bytes < best->activation_bytes)))
        best = &p;
    TG_CHECK(best, "no priced plan within the budget");  // (the cut's choice fits it)
    return *best;
  }
  int64_t fastest = priced[0].kernels.step_fs();
  for (const PricedPlan& p : priced) fastest = std::min(fastest, p.kernels.step_fs());
  const double slowest = std::min(double(fastest) * (1 + options.time_slack), double(priced[0].kernels.step_fs()));
  for (const PricedPlan& p : priced)
    if (double(p.kernels.step_fs()) <= slowest &&
        (!best || p.activation_bytes < best->activation_bytes || (p.activation_bytes == best->activation_bytes && p.kernels.step_fs() < best->kernels.step_fs())))
      best = &p;
  return *best;
}

// The frontier as a choice on priced kernels sees it: the priced plans' Pareto set by bytes and
// predicted step (bytes falling, step rising), with `best` on it (the rules' ties make it so).
void list_priced_frontier(ChosenPlan& chosen, const CutModel& m, const std::vector<PricedPlan>& priced, const PricedPlan& best) {
  std::vector<const PricedPlan*> order;
  for (const PricedPlan& p : priced) order.push_back(&p);
  // (Among plans of equal bytes and step, `best` first: the sweep keeps the first of them.)
  std::sort(order.begin(), order.end(), [&best](const PricedPlan* a, const PricedPlan* b) {
    if (a->activation_bytes != b->activation_bytes) return a->activation_bytes < b->activation_bytes;
    if (a->kernels.step_fs() != b->kernels.step_fs()) return a->kernels.step_fs() < b->kernels.step_fs();
    return a == &best && b != &best;
  });
  std::vector<const PricedPlan*> kept;
  for (const PricedPlan* p : order)
    if (kept.empty() || p->kernels.step_fs() < kept.back()->kernels.step_fs()) kept.push_back(p);
  std::reverse(kept.begin(), kept.end());
  std::vector<int64_t> bytes;
  const RematProblem time = weigh_time(m.candidates, bytes);
  chosen.frontier.clear();
  chosen.frontier_kernels.clear();
  chosen.chosen = -1;
  for (const PricedPlan* p : kept) {
    if (p == &best) chosen.chosen = int(chosen.frontier.size());
    chosen.frontier.push_back(measure_plan(time, bytes, p->plan));
    chosen.frontier_kernels.push_back(p->kernels);
  }
  TG_CHECK(chosen.chosen >= 0, "the plan chosen on its kernels is not on their frontier");
}

// Choosing by time with RematOptions::price_kernels: the plan by bytes, the cut's choice and the
// frontier's corners (the first kMostPricedPlans from the fastest, or from the budget down), each
// built and priced; the choice then made on those predictions.
void choose_by_kernels(ChosenPlan& chosen, const CutModel& m, const JointTrace& joint, const RematOptions& options) {
  if (!options.choose_by_time || !options.price_kernels) return;
  if (!prices_kernels(joint, options)) {
    chosen.kernels_note = "the plans' kernels were not priced: " + std::to_string(joint.trace.ops.size()) + " joint ops, past the " +
                          std::to_string(kMostPricedOps) + " that pricing takes; chosen on the cut's estimate";
    return;
  }
  auto price = [&](const RematPlan& plan) {
    ChosenPlan candidate;
    candidate.plan = plan;
    return PricedPlan{plan, activation_bytes(m.candidates, plan), options.price_kernels(build_partition(joint, m, candidate, options, false))};
  };
  std::vector<PricedPlan> priced{price(chosen.bytes_first.plan)};
  auto price_new = [&](const RematPlan& plan) {
    const bool known = std::any_of(priced.begin(), priced.end(), [&](const PricedPlan& p) { return p.plan.saved == plan.saved; });
    if (!known) priced.push_back(price(plan));
  };
  price_new(chosen.plan);
  auto price_corners = [&](const std::vector<PlanPoint>& corners) {
    for (size_t i = 0, taken = 0; i < corners.size() && taken < kMostPricedPlans; ++i) {
      if (options.activation_budget && corners[i].activation_bytes > *options.activation_budget) continue;
      price_new(corners[i].plan);
      ++taken;
    }
  };
  price_corners(chosen.frontier);
  // The corners of the cut that charges no write for a value the forward writes anyway: plans
  // that save a GEMM's operand rather than an equal value needing a kernel of its own. (It has
  // the first cut's infinite costs, so it has plans where that one has; if not, it adds none.)
  std::vector<int64_t> bytes;
  try {
    price_corners(plan_frontier(weigh_time(m.candidates, bytes, true), bytes));
  } catch (const NoFinitePlan&) {
  }
  chosen.bytes_first_kernels = priced[0].kernels;
  const PricedPlan& best = choose_priced(priced, options);
  chosen.plan = best.plan;
  chosen.kernels = best.kernels;
  list_priced_frontier(chosen, m, priced, best);
  std::ostringstream rule;
  if (options.activation_budget) rule << "the fastest plan within --activation-budget " << *options.activation_budget;
  else rule << "the fewest bytes within " << options.time_slack * 100 << "% of the fastest step";
  rule << ", as the kernels of " << priced.size() << " plans are predicted (--device-model " << options.device->name << ")";
  chosen.rule = rule.str();
}

}  // namespace

class SharedPlans {
 public:
  struct Cut {
    Candidates candidates;
    int64_t fixed_fs;
    bool operator==(const Cut&) const = default;
  };
  // The plan of `cut`: chosen here by `choose`, or by the pipeline that asked for it first (its
  // failure, a cut with no finite plan, is rethrown here too).
  ChosenPlan get(Cut cut, const std::function<ChosenPlan()>& choose) {
    std::promise<ChosenPlan> mine;
    std::shared_future<ChosenPlan> plan;
    bool chooses = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto known = std::find_if(cuts_.begin(), cuts_.end(), [&](const auto& c) { return c.first == cut; });
      chooses = known == cuts_.end();
      plan = chooses ? mine.get_future().share() : known->second;
      if (chooses) cuts_.emplace_back(std::move(cut), plan);
    }
    if (chooses) {
      try {
        mine.set_value(choose());
      } catch (...) {
        mine.set_exception(std::current_exception());
      }
    }
    return plan.get();  // (a copy: the other pipeline's is its own)
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<Cut, std::shared_future<ChosenPlan>>> cuts_;
};

std::shared_ptr<SharedPlans> make_shared_plans() { return std::make_shared<SharedPlans>(); }

namespace {

// The plan for the cut: shared through options.shared_plans where there is one (not for plans
// priced by their kernels, built from this pipeline's own joint trace, or --exact's, which a
// solver's time limit bounds).
ChosenPlan chosen_plan(const CutModel& m, const JointTrace& joint, const RematOptions& options) {
  auto choose = [&] {
    ChosenPlan chosen = choose_plan(m, joint, options);
    choose_by_kernels(chosen, m, joint, options);
    return chosen;
  };
  if (!options.shared_plans || prices_kernels(joint, options) || options.exact) return choose();
  const int64_t fixed_fs = options.device ? fixed_step_fs(joint.trace, options.plan_at, *options.device) : 0;
  return options.shared_plans->get({m.candidates, fixed_fs}, choose);
}

}  // namespace

Partition partition(JointTrace joint, const RematOptions& options) {
  const CutModel m = cut::model_cut(joint, options);
  return build_partition(std::move(joint), m, chosen_plan(m, joint, options), options, true);
}

}  // namespace tg
