#include "autograd/cut_model.h"

#include <algorithm>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg::cut {

namespace {

constexpr int64_t kInfinite = RematProblem::kInfinite;

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

// Planned in time: the values the forward writes to memory anyway (a GEMM's result, or its
// operand, through views), whose saving could cost no write (weigh_time's written_anyway).
void mark_forward_writes(CutModel& m, const JointTrace& joint) {
  const Trace& j = joint.trace;
  std::vector<bool> written(j.values.size(), false);
  for (size_t x = joint.forward_ops; x-- > 0;) {
    const Op& op = j.ops[x];
    const bool library = op.info->fusion == FusionClass::library;
    if (library) for (ValueId v : op.outs) written[size_t(v)] = true;
    const bool feeds_library = op.info->fusion == FusionClass::shape && std::any_of(op.outs.begin(), op.outs.end(), [&](ValueId v) { return written[size_t(v)]; });
    if (library || feeds_library) for_each_value(op, [&](ValueId v) { written[size_t(v)] = true; });
  }
  for (size_t c = 0; c < m.value_of.size(); ++c) m.candidates.values[c].written_anyway = m.candidates.values[c].is_activation && written[size_t(m.value_of[c])];
}

// Planned in time: a GEMM's product whose one reader is an add (a linear layer's bias, which
// lowering folds into the GEMM: src/schedule/gemm_epilogue.h). Saved, it would be a forward
// output and keep the fold from happening: a kernel more, and in bf16 or f16 a rounding of the
// product that eager does not make.
void mark_epilogue_products(CutModel& m, const JointTrace& joint) {
  const Trace& j = joint.trace;
  std::vector<int> readers(j.values.size(), 0), reader(j.values.size(), kNone);
  for (size_t x = 0; x < joint.forward_ops; ++x)
    for_each_value(j.ops[x], [&](ValueId v) { ++readers[size_t(v)], reader[size_t(v)] = int(x); });
  for (size_t x = 0; x < joint.forward_ops; ++x) {
    if (j.ops[x].info->kind != OpKind::matmul) continue;
    const ValueId c = j.ops[x].outs[0];
    const bool folds = readers[size_t(c)] == 1 && m.output_index[size_t(c)] == kNone && j.ops[size_t(reader[size_t(c)])].info->kind == OpKind::add;
    // (Not where the backward reads the product, nor where a policy names either op: then the
    // rule could leave no plan where the user's policies allow one.)
    const bool free = m.first_reader[size_t(c)] == kNone && !policy_of(j.ops[x].tags) && (!folds || !policy_of(j.ops[size_t(reader[size_t(c)])].tags));
    if (folds && free && m.candidate[size_t(c)] != kNone) m.candidates.values[size_t(m.candidate[size_t(c)])].folds_into_gemm = true;
  }
}

}  // namespace

// Ops the backward does not recompute unless a policy asks: their work is large (matmul,
// reductions) or, for random draws, saving the mask they lead to is cheaper.
// An all-gather is not: FSDP gathers a parameter again in the backward rather than hold it
// between the passes (holding every gathered parameter would undo the sharding).
bool pinned_by_default(const OpInfo& info) {
  if (info.kind == OpKind::all_gather) return false;
  return info.fusion == FusionClass::library || info.fusion == FusionClass::reduction || info.kind == OpKind::uniform_philox;
}

std::string policy_source(const Trace& t, const std::string& where) {
  std::string root = policy_root(t, where);
  return root.empty() ? "trace tag" : t.policy_sources.at(root);
}

std::string policy_call_name(const Op& op) { return op.origin.empty() ? op.symbol : op.origin; }

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
RematProblem weigh_time(const Candidates& c, std::vector<int64_t>& bytes, bool written_anyway) {
  RematProblem p;
  for (const Candidates::Value& cv : c.values) {
    int64_t cost = written_anyway && cv.written_anyway ? cv.save_fs / 2 : cv.save_fs;  // (the read alone)
    if (cv.folds_into_gemm) cost = kInfinite;
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
  if (options.device) {
    add_materialization_costs(m, joint, options);
    mark_forward_writes(m, joint);
    mark_epilogue_products(m, joint);
  }
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

}  // namespace tg::cut
