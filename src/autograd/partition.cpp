#include "autograd/partition.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "autograd/exact_plan.h"
#include "autograd/frontier.h"
#include "autograd/remat.h"
#include "frontend/overrides.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

constexpr int64_t kInfinite = RematProblem::kInfinite;

// Ops the backward does not recompute unless a policy asks: their work is large (matmul,
// reductions) or, for random draws, saving the mask they lead to is cheaper.
// An all-gather is not: FSDP gathers a parameter again in the backward rather than hold it
// between the passes (holding every gathered parameter would undo the sharding).
bool pinned_by_default(const OpInfo& info) {
  if (info.kind == OpKind::all_gather) return false;
  return info.fusion == FusionClass::library || info.fusion == FusionClass::reduction || info.kind == OpKind::uniform_philox;
}

// What recomputing an op costs, in the cut's units (bits): one per element an elementwise op or
// a random draw writes, one per element a reduction reads, the inner dim per element of a
// matmul; index-only ops and fills cost nothing. Element counts at the sizes `at` (--plan-at).
int64_t recompute_cost(const Trace& t, const Op& op, const SymbolValues& at) {
  auto elements = [&](ValueId v) { return numel_at(t.value(v).shape, at); };
  switch (op.info->fusion) {
    case FusionClass::shape: return 0;
    case FusionClass::source: return op.info->kind == OpKind::uniform_philox ? elements(op.outs[0]) : 0;
    case FusionClass::reduction: return elements(op.arg("a").value);
    case FusionClass::library:
      // A collective's cost is communication, not arithmetic: gathering again costs the cut nothing
      // (so no gathered parameter is saved unless a policy says so); the others stay pinned.
      if (is_collective(op.info->kind)) return op.info->kind == OpKind::all_gather ? 0 : elements(op.outs[0]);
      return elements(op.outs[0]) * numel_at(Shape{t.value(op.arg("a").value).shape.back()}, at);
    default: {
      int64_t n = 0;
      for (ValueId v : op.outs) n += elements(v);
      return n;
    }
  }
}

// The path of the call an op's policy was set on: its own, or the nearest enclosing one's (ops
// lowered from a call share its path; a `sub` decomposition's ops extend it). "" when none.
std::string policy_root(const Trace& t, std::string where) {
  while (!where.empty()) {
    if (t.policy_sources.count(where)) return where;
    size_t slash = where.rfind('/');
    if (slash == std::string::npos) break;
    where.resize(slash);
  }
  return "";
}

std::string policy_source(const Trace& t, const std::string& where) {
  std::string root = policy_root(t, where);
  return root.empty() ? "trace tag" : t.policy_sources.at(root);
}

std::string call_name(const Op& op) { return op.origin.empty() ? op.symbol : op.origin; }

// What the plan chooses among, before costs are weighed against each other.
struct Candidates {
  struct Value {
    bool is_input = false, needed = false;
    bool is_activation = false;  // an intermediate: saving it costs memory the forward would free
    int64_t bits = 0;            // what saving it occupies (0 unless an activation)
    std::optional<Policy> policy;  // of the op defining it
    int64_t element_bytes = 0;     // for the thunder_weights baseline
    int64_t save_fs = 0;           // saving it: the forward's write (an activation) and the backward's read
  };
  struct Op {
    std::vector<int> inputs, outputs;
    int64_t cost = 0;         // recomputing it (src/autograd/remat.h's units)
    std::optional<Policy> policy;
    bool pinned = false;      // a kind not recomputed by default (matmul, reduction, random draw)
    bool forbidden = false;   // never recomputed: `save` on a call, for its ops reading from outside it
    int64_t recompute_fs = 0; // recomputing it, under the time model
  };
  std::vector<Value> values;
  std::vector<Op> ops;
  RematOptions::Baseline baseline = RematOptions::Baseline::none;
};

// Recompute weight in 1/1024ths: kFullWeight is the default trade-off (a bit saved = an element
// recomputed); 0 minimizes bytes alone.
constexpr int64_t kFullWeight = 1024;

// The cut problem for one trade-off. `unpinned`: the activation-budget search, where every kind
// may be recomputed unless a policy forbids it, and soft policies leave saving costs exact.
RematProblem weigh(const Candidates& c, int64_t recompute_weight, bool unpinned) {
  RematProblem p;
  if (c.baseline != RematOptions::Baseline::none) {
    const bool thunder = c.baseline == RematOptions::Baseline::thunder_weights;
    for (const Candidates::Value& cv : c.values)
      p.values.push_back({thunder ? cv.element_bytes * (cv.is_input ? 1 : 2) : cv.bits, cv.is_input, cv.needed});
    for (const Candidates::Op& co : c.ops) p.ops.push_back({co.inputs, co.outputs, thunder && !co.pinned ? 0 : kInfinite});
    return p;
  }
  for (const Candidates::Value& cv : c.values) {
    RematProblem::Value v;
    v.is_input = cv.is_input;
    v.needed = cv.needed;
    v.save_cost = cv.bits * kFullWeight;
    if (cv.is_activation && cv.policy == Policy::recompute) v.save_cost = kInfinite;
    if (cv.is_activation && !unpinned && cv.policy == Policy::prefer_save) v.save_cost /= 2;
    if (cv.is_activation && !unpinned && cv.policy == Policy::prefer_recompute) v.save_cost *= 2;
    p.values.push_back(v);
  }
  for (const Candidates::Op& co : c.ops) {
    RematProblem::Op o;
    o.inputs = co.inputs;
    o.outputs = co.outputs;
    int64_t cost = co.cost * recompute_weight;
    if (co.policy == Policy::prefer_save) cost *= 4;
    if (co.policy == Policy::prefer_recompute) cost /= 2;
    // A policy naming the call decides; without one, kinds pinned by default stay in the forward.
    const bool lifted = co.policy == Policy::recompute || co.policy == Policy::prefer_recompute || unpinned;
    o.recompute_cost = co.forbidden || (co.pinned && !lifted) ? kInfinite : cost;
    p.ops.push_back(o);
  }
  return p;
}

// The cut problem in predicted time (femtoseconds), every kind recomputable that no policy
// forbids, soft policies weighing as in weigh(); and each value's activation bytes.
RematProblem weigh_time(const Candidates& c, std::vector<int64_t>& bytes) {
  RematProblem p;
  for (const Candidates::Value& cv : c.values) {
    int64_t cost = cv.save_fs;
    if (cv.is_activation && cv.policy == Policy::recompute) cost = kInfinite;
    if (cv.is_activation && cv.policy == Policy::prefer_save) cost /= 2;
    if (cv.is_activation && cv.policy == Policy::prefer_recompute) cost *= 2;
    p.values.push_back({cost, cv.is_input, cv.needed});
    bytes.push_back(cv.bits / 8);
  }
  for (const Candidates::Op& co : c.ops) {
    int64_t cost = co.recompute_fs;
    if (cost < kInfinite && co.policy == Policy::prefer_save) cost *= 4;
    if (cost < kInfinite && co.policy == Policy::prefer_recompute) cost /= 2;
    p.ops.push_back({co.inputs, co.outputs, co.forbidden || cost >= kInfinite ? kInfinite : cost});
  }
  return p;
}

constexpr int kNone = -1;
constexpr int kReturned = -2;  // first_reader: read by no backward op, only returned as a gradient

// The candidates of a joint trace, and where each joint value stands (kNone: nowhere).
struct CutModel {
  Candidates candidates;
  std::vector<ValueId> value_of;  // candidate value -> joint value
  std::vector<int> candidate;     // joint value -> candidate value
  std::vector<int> forward_def;   // joint value -> the forward op defining it
  std::vector<int> input_index, output_index;  // joint value -> its first forward input / output position
  std::vector<int> first_reader;  // joint value -> the first backward op reading it, or kReturned
};

void add_candidate_value(CutModel& m, const Trace& j, ValueId v, bool is_input, const Op* def, const RematOptions& options) {
  if (m.candidate[size_t(v)] != kNone) return;
  m.candidate[size_t(v)] = int(m.value_of.size());
  m.value_of.push_back(v);
  Candidates::Value cv;
  cv.is_input = is_input;
  // Trace inputs, forward outputs and scalars are alive anyway: crossing costs nothing.
  const Value& value = j.value(v);
  cv.is_activation = !is_input && m.output_index[size_t(v)] == kNone && !value.is_scalar;
  if (cv.is_activation) cv.bits = stored_bytes_at(value, options.pack_bools && value.dtype == DType::b8, options.plan_at) * 8;
  if (def) cv.policy = policy_of(def->tags);
  if (!value.is_scalar) cv.element_bytes = dtype_bytes(value.dtype);
  if (options.device && !value.is_scalar)
    cv.save_fs = options.device->move_fs(stored_bytes_at(value, options.pack_bools && value.dtype == DType::b8, options.plan_at)) * (cv.is_activation ? 2 : 1);
  m.candidates.values.push_back(cv);
}

// `save` on a call pins the ops of it that read from outside it: the backward never redoes the
// call from its inputs, but may still derive one of the call's values from another that was
// saved (dropout saves its mask and converts it again, rather than saving the f32 copy).
bool reads_from_outside_its_call(const CutModel& m, const Trace& j, const Op& op) {
  const std::string root = policy_root(j, op.where);
  bool outside = false;
  for_each_value(op, [&](ValueId v) {
    const int def = m.forward_def[size_t(v)];
    outside = outside || def == kNone || root.empty() || policy_root(j, j.ops[size_t(def)].where) != root;
  });
  return outside;
}

void add_candidate_op(CutModel& m, const Trace& j, const Op& op, const RematOptions& options) {
  Candidates::Op co;
  for_each_value(op, [&](ValueId v) { co.inputs.push_back(m.candidate[size_t(v)]); });
  for (ValueId v : op.outs) {
    add_candidate_value(m, j, v, false, &op, options);
    co.outputs.push_back(m.candidate[size_t(v)]);
  }
  co.cost = recompute_cost(j, op, options.plan_at);
  // (An all-reduce or reduce-scatter runs again only when a policy asks: the time model does not
  // price communication.)
  co.policy = policy_of(op.tags);
  const bool asked = co.policy == Policy::recompute || co.policy == Policy::prefer_recompute;
  const bool communicates = is_collective(op.info->kind) && op.info->kind != OpKind::all_gather && !asked;
  if (options.device) co.recompute_fs = communicates ? kInfinite : recompute_fs(j, op, options.plan_at, *options.device);
  co.pinned = pinned_by_default(*op.info);
  if (co.policy == Policy::save) co.forbidden = reads_from_outside_its_call(m, j, op);
  m.candidates.ops.push_back(std::move(co));
}

// What the backward reads of the forward: operands of its ops, and gradients that are forward
// values. For each, the first backward op reading it; each is needed.
void mark_backward_reads(CutModel& m, const JointTrace& joint) {
  const Trace& j = joint.trace;
  for (size_t x = joint.forward_ops; x < j.ops.size(); ++x)
    for_each_value(j.ops[x], [&](ValueId v) {
      if (m.candidate[size_t(v)] != kNone && m.first_reader[size_t(v)] == kNone) m.first_reader[size_t(v)] = int(x);
    });
  for (size_t i = joint.forward_outputs; i < j.outputs.size(); ++i)
    if (ValueId v = j.outputs[i]; m.candidate[size_t(v)] != kNone && m.first_reader[size_t(v)] == kNone) m.first_reader[size_t(v)] = kReturned;
  for (size_t v = 0; v < m.first_reader.size(); ++v)
    if (m.first_reader[v] != kNone) m.candidates.values[size_t(m.candidate[v])].needed = true;
}

// Planned in time: an elementwise op recomputed for a matmul in the backward cannot fuse into it.
// It runs as a kernel of its own that writes its output for the GEMM to read: a launch, a
// write and a read more, charged to each op whose value reaches a matmul (through views).
void add_materialization_costs(CutModel& m, const JointTrace& joint, const RematOptions& options) {
  const Trace& j = joint.trace;
  std::vector<bool> materialized(j.values.size(), false);
  for (const Op& op : j.ops)
    if (op.info->fusion == FusionClass::library) for_each_value(op, [&](ValueId v) { materialized[size_t(v)] = true; });
  for (size_t x = joint.forward_ops; x-- > 0;) {
    const Op& op = j.ops[x];
    const bool reaches = std::any_of(op.outs.begin(), op.outs.end(), [&](ValueId v) { return materialized[size_t(v)]; });
    if (op.info->fusion == FusionClass::shape && reaches) for_each_value(op, [&](ValueId v) { materialized[size_t(v)] = true; });
    if (op.info->fusion == FusionClass::shape || op.info->fusion == FusionClass::library || !reaches) continue;
    int64_t& fs = m.candidates.ops[x].recompute_fs;
    fs = capped_fs_sum(fs, options.device->launch_fs());
    for (ValueId v : op.outs)
      if (materialized[size_t(v)]) fs = capped_fs_sum(fs, 2 * options.device->move_fs(stored_bytes_at(j.value(v), false, options.plan_at)));
  }
}

// The candidates: the forward inputs and every value a forward op defines, with what saving
// and recomputing each would cost and what the policies allow.
CutModel model_cut(const JointTrace& joint, const RematOptions& options) {
  const Trace& j = joint.trace;
  const size_t value_count = j.values.size();
  CutModel m;
  m.candidates.baseline = options.baseline;
  m.candidate.assign(value_count, kNone);
  m.forward_def.assign(value_count, kNone);
  m.input_index.assign(value_count, kNone);
  m.output_index.assign(value_count, kNone);
  m.first_reader.assign(value_count, kNone);
  for (size_t x = 0; x < joint.forward_ops; ++x)
    for (ValueId v : j.ops[x].outs) m.forward_def[size_t(v)] = int(x);
  for (size_t i = 0; i < joint.forward_outputs; ++i)
    if (m.output_index[size_t(j.outputs[i])] == kNone) m.output_index[size_t(j.outputs[i])] = int(i);
  for (size_t i = 0; i < joint.forward_inputs; ++i) {
    if (m.input_index[size_t(j.inputs[i])] == kNone) m.input_index[size_t(j.inputs[i])] = int(i);
    add_candidate_value(m, j, j.inputs[i], true, nullptr, options);
  }
  for (size_t x = 0; x < joint.forward_ops; ++x) add_candidate_op(m, j, j.ops[x], options);
  mark_backward_reads(m, joint);
  if (options.device) add_materialization_costs(m, joint, options);
  return m;
}

// The error for policies that leave no finite plan, at the op path of the `recompute` call on
// the all-infinite path, naming its values.
UserError no_plan_error(const NoFinitePlan& e, const CutModel& m, const JointTrace& joint) {
  const Trace& j = joint.trace;
  std::string path;
  std::string where;
  for (auto it = e.values.rbegin(); it != e.values.rend(); ++it) {
    ValueId v = m.value_of[size_t(*it)];
    path += (path.empty() ? "" : " -> ") + j.value(v).name;
    for (size_t x = 0; x < joint.forward_ops && where.empty(); ++x)
      for (ValueId o : j.ops[x].outs)
        if (o == v && policy_of(j.ops[x].tags) == Policy::recompute) where = j.ops[x].where;
  }
  return UserError(where.empty() ? "/" : where, "the rematerialization policies leave no plan: " + path +
                                                   " must reach the backward, but none of it may be saved or recomputed");
}

int64_t activation_bytes(const Candidates& c, const RematPlan& plan) {
  int64_t bits = 0;
  for (size_t v = 0; v < c.values.size(); ++v)
    if (plan.saved[v]) bits += c.values[v].bits;
  return bits / 8;
}

// Over budget: let the backward recompute anything the policies allow, and trade recompute cost
// against bytes. Weight 0 gives the fewest bytes any plan can save; then the largest weight whose
// plan still fits is the one that recomputes least. (Saved bytes never grow as the weight falls,
// so a smaller budget never saves more.)
// The plan saving the fewest bytes any plan can; a UserError naming them when over `budget`.
RematPlan smallest_within(const Candidates& c, int64_t budget) {
  RematPlan smallest = plan_remat(weigh(c, 0, true));
  if (activation_bytes(c, smallest) > budget)
    throw UserError("thunder-gen", "--activation-budget " + std::to_string(budget),
                    "no plan saves that little: the smallest achievable is " + std::to_string(activation_bytes(c, smallest)) + " bytes of activations");
  return smallest;
}

RematPlan plan_within_budget(const Candidates& c, int64_t budget) {
  RematPlan smallest = smallest_within(c, budget);
  int64_t fits = 0, over = kFullWeight + 1;
  RematPlan plan = smallest;
  while (over - fits > 1) {
    const int64_t mid = (fits + over) / 2;
    RematPlan candidate = plan_remat(weigh(c, mid, true));
    if (activation_bytes(c, candidate) <= budget) {
      fits = mid;
      plan = std::move(candidate);
    } else {
      over = mid;
    }
  }
  return plan;
}

struct ChosenPlan {
  RematPlan plan;
  bool over_budget = false;  // the default plan was over --activation-budget
  std::string rule;          // planned in time: how the plan was chosen, for the reasons
  std::vector<PlanPoint> frontier;
  int chosen = -1;
  int64_t fixed_fs = 0;  // the step's time no plan changes
  PlanPoint bytes_first;
  std::string exact_note;  // --exact fell back: why
};

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
FrontierFocus focus_of(const RematOptions& options, int64_t fixed_fs, const PlanPoint& bytes_first) {
  FrontierFocus focus;
  if (options.list_frontier || !options.choose_by_time) return focus;
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
  std::vector<PlanPoint> points = plan_frontier(time, bytes, focus_of(options, chosen.fixed_fs, bytes_first));
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
    throw no_plan_error(e, m, joint);
  }
  if (options.device && options.baseline == RematOptions::Baseline::none) {
    try {
      choose_in_time(chosen, m, joint, options);
    } catch (const NoFinitePlan& e) {
      throw no_plan_error(e, m, joint);
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
      return "tag " + std::string(policy_name(*policy)) + " on " + call_name(def) + " (" + policy_source(j_, def.where) + "); " + needed;
    if (!rule_.empty()) return "min-cut: " + rule_ + "; " + needed;
    if (over_budget_) return "min-cut under --activation-budget " + std::to_string(*options_.activation_budget) + "; " + needed;
    if (!policy_of(def.tags) && pinned_by_default(*def.info))
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
    Partition::FrontierPlan plan{point.activation_bytes, chosen.fixed_fs + point.time_fs, {}};
    for (size_t x = 0; x < m.candidates.ops.size(); ++x)
      if (point.plan.recomputed[x])
        for (int out : m.candidates.ops[x].outputs) plan.recomputed.push_back(m.value_of[size_t(out)]);
    return plan;
  };
  for (const PlanPoint& point : chosen.frontier) p.frontier.push_back(listed(point));
  p.bytes_first = listed(chosen.bytes_first);
  p.time_problem = weigh_time(m.candidates, p.value_bytes);
  p.fixed_fs = chosen.fixed_fs;
  const PlanPoint planned = measure_plan(p.time_problem, p.value_bytes, chosen.plan);
  p.predicted_fs = chosen.fixed_fs + planned.time_fs;
  p.planned_bytes = planned.activation_bytes;
}

}  // namespace

Partition partition(JointTrace joint, const RematOptions& options) {
  Trace& j = joint.trace;
  const CutModel m = model_cut(joint, options);
  const ChosenPlan chosen = choose_plan(m, joint, options);
  Partition p;
  p.plan_at = options.plan_at;
  p.plan_cost_bits = plan_cost(weigh(m.candidates, kFullWeight, true), chosen.plan.saved) / kFullWeight;
  const std::vector<ValueId> saved_intermediates = list_saved(p.saved, j, m, chosen.plan, SaveReasons(m, joint, chosen, options), options);
  // (At the sizes the trace was read at: the cut weighed them at the plan's.)
  for (const SavedValue& s : p.saved)
    if (s.kind == SavedValue::Kind::intermediate) p.activation_bytes += stored_bytes(j.value(s.value));

  record_frontier(p, m, chosen, options);
  // The two traces share the joint trace's values; the joint trace is consumed: its ops move
  // into the trace that runs them, and only the ops the backward recomputes are copied.
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

}  // namespace tg
