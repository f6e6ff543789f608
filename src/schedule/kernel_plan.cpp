#include "schedule/kernel_plan.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "ops/op_table.h"
#include "ops/printer.h"
#include "schedule/fuse.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

namespace {

class Planner {
 public:
  Planner(const Trace& t, const Op& kernel, bool may_hold_row) : t_(t), k_(kernel), layout_(kernel_layout(t, kernel)), may_hold_row_(may_hold_row) {
    for (const Op& op : k_.sub)
      for (ValueId v : op.outs) producer_[v] = &op;
    for (const Arg& a : k_.args) loaded_.insert(a.value);
  }

  KernelPlan plan() {
    KernelPlan p;
    if (!layout_.is_row) {
      p.block = kPointwiseBlock;
      p.lanes = run_lanes();
      return p;
    }
    if (column_kernel()) {
      p.kind = KernelPlan::Kind::column;
      p.block = kColumnBlock;
      schedule(p, false);
      return p;
    }
    p.kind = KernelPlan::Kind::row;
    // At a row length taken at run time, the row streamed element by element in at most the
    // widest block (as few threads as the row needs, tg::row_block, chosen at the launch), or
    // held where it is short enough.
    if (row_length_at_run_time()) {
      p.block = kMaxRowBlock;
      schedule(p, true);
      return may_hold_row_ ? held_at_run_time(std::move(p)) : p;
    }
    p.block = row_block();
    schedule(p, !(may_hold_row_ && row_cache(p.block) > 0));
    // Holding the row pays where more than one pass reads it; with one, it only costs registers
    // (and, read in runs, ptxas may spill merging the aligned and unaligned fills).
    if (may_hold_row_ && p.passes_over_row() > 1) p.held = row_cache(p.block);
    p.held_run = held_run(p.held);
    p.hoisted = p.held > 0 && hoisted_words() > 0 && (row_words() + hoisted_words()) * p.held <= 64 * kMaxRowBlock / p.block;
    p.stream_run = p.held == 0 ? stream_run(p.block) : 1;
    return p;
  }

 private:
  const Trace& t_;
  const Op& k_;
  KernelLayout layout_;
  bool may_hold_row_;
  std::map<ValueId, const Op*> producer_;
  std::set<ValueId> loaded_;

  bool has_packed_output() const {
    return std::any_of(k_.outs.begin(), k_.outs.end(), [&](ValueId v) { return t_.value(v).bit_packed; });
  }
  int64_t row_length() const { return numel(layout_.reduced_shape()); }
  // A row whose length the code takes at run time (the kernel's `row_length`).
  bool row_length_at_run_time() const { return t_.taken_at_run_time(numel_dim(layout_.reduced_shape())); }

  // Elements per run: 16 bytes of the widest operand or result that the kernel walks
  // contiguously (shape equal to the domain), so every run access is at most 16 bytes.
  int run_lanes() const {
    int widest = 0;
    auto consider = [&](ValueId id) {
      const Value& v = t_.value(id);
      if (!v.is_scalar && !v.bit_packed && v.shape == layout_.domain) widest = std::max(widest, dtype_bytes(v.dtype));
    };
    for (const Arg& a : k_.args) consider(a.value);
    for (ValueId v : k_.outs) consider(v);
    // Only packed masks to write (a dropout mask drawn on its own): runs of 4, one Philox block each.
    if (widest == 0 && has_packed_output()) widest = 4;
    if (widest == 0 || widest > 8) return 1;
    const int lanes = 16 / widest;
    // (Counted at run time, any count: the run loop takes none of a short one, the element loop all.)
    return t_.taken_at_run_time(numel_dim(layout_.domain)) || numel(layout_.domain) >= lanes ? lanes : 1;
  }

  // A row kernel whose rows are neighbours in memory (the last dim is an outer dim: LayerNorm's
  // weight gradient sums over dim 0) would read with a stride of the row length if a block took
  // one row: its block takes 32 neighbouring rows instead (see lower_reductions.cpp, column kernels).
  bool column_kernel() const {
    if (layout_.outer.empty() || layout_.outer.back() != int64_t(layout_.domain.size()) - 1) return false;
    const Dim rows = numel_dim(layout_.outer_shape());
    if (t_.taken_at_run_time(rows)) return provably_divisible(*rows.expr(), 32, t_.symbols) || writes_per_row_only(t_, k_);
    return rows % 32 == 0;
  }

  // Threads per row: the row's length rounded up to a power of two, at most kMaxRowBlock; a row
  // longer than kMaxRowBlock * 16 (LayerNorm over 8192 features) gets the smallest larger block
  // that holds it in registers, where one does, so its passes need not re-read it from memory.
  int row_block() const {
    const int64_t r = row_length();
    int block = 32;
    while (block < kMaxRowBlock && block < r) block *= 2;
    if (row_cache(block) > 0 || r <= int64_t(block) * kMaxCachedPerThread) return block;
    for (int wide = 2 * block; wide <= kMaxRowBlockWide; wide *= 2)
      if (row_cache(wide) > 0) return wide;
    return block;
  }

  // Elements of its row a thread keeps in registers (0: none), so that a row kernel's passes
  // (mean, variance, write ...) read memory once, with `block` threads: when the row splits evenly
  // into at most 16 elements per thread and the operands read along it fit the registers: 64
  // registers' worth at 256 threads, fewer in larger blocks (1024 threads leave 64 a thread in all).
  int row_cache(int block) const {
    if (!layout_.rows_contiguous()) return 0;
    const int64_t r = row_length();
    if (r % block != 0 || r / block > kMaxCachedPerThread) return 0;
    // A held row's random draws are held beside it (lower_row.cpp, row_draws): four dropouts
    // of a row held 16 a thread took 176 registers uncounted. (The hoisting rule below leaves
    // them out: w and b beside one draw took 128 registers hoisted or not, on sm_90.)
    return (row_words() + draw_words()) * (r / block) <= 64 * kMaxRowBlock / block ? int(r / block) : 0;
  }

  // 32-bit registers per held element (2 for an f64 operand) of the operands shaped like the
  // domain (row_cache), and of those shaped like one row: a LayerNorm's weight and bias, the same
  // for every row, which a thread holding its part of the row loads once for all its rows.
  int64_t row_words() const { return operand_words(layout_.domain); }
  int64_t hoisted_words() const { return layout_.outer.empty() ? 0 : operand_words(layout_.reduced_shape()); }
  int64_t draw_words() const {
    int64_t words = 0;
    for (const Op& op : k_.sub)
      if (op.info->kind == OpKind::uniform_philox && t_.value(op.outs[0]).shape == layout_.domain) words += register_words(t_.value(op.outs[0]).dtype);
    return words;
  }
  int64_t operand_words(const Shape& shape) const {
    int64_t words = 0;
    for (const Arg& a : k_.args) {
      const Value& v = t_.value(a.value);
      if (!v.is_scalar && v.shape == shape) words += register_words(v.dtype);
    }
    return words;
  }

  // A row of run-time length held in registers where it is short enough: the plan for rows of up
  // to held * block elements, and `streamed`, the plan for any length, for the longer ones (where
  // the range has any). `streamed` itself where no row in range can be held, or holding it would
  // not pay (one pass over the row). Its passes are a held row's (a softmax's max and sum in
  // two); a thread adds its elements in the order it would stream them.
  KernelPlan held_at_run_time(KernelPlan streamed) const {
    KernelPlan p;
    p.kind = KernelPlan::Kind::row;
    p.block = streamed.block;
    const SizeRange lengths = range_of(*numel_dim(layout_.reduced_shape()).expr(), t_.symbols);
    p.held = held_at_run_time_count(p.block, lengths.hi);
    if (p.held == 0) return streamed;
    schedule(p, false);
    if (p.passes_over_row() < 2 || lengths.lo > p.longest_held_row()) return streamed;
    p.hoisted = hoisted_words() > 0 && (row_words() + draw_words() + hoisted_words()) * p.held <= kHeldWordsAtRunTime;
    if (lengths.hi > p.longest_held_row()) p.long_rows = std::make_shared<const KernelPlan>(std::move(streamed));
    return p;
  }

  // The registers a thread may hold a row of run-time length in (its elements, draws and hoisted
  // operands): a quarter of what row_cache allows a row of a fixed length, since the kernel runs
  // every row up to its limit, and a thread takes the longest one's registers for a short one.
  static constexpr int64_t kHeldWordsAtRunTime = 16;

  // Elements a thread of `block` holds of a row of run-time length: enough for the `longest` row
  // in range, within kHeldWordsAtRunTime. 0 where the row cannot be held (not contiguous, a
  // packed mask written, partial sums over the rows: they take the planned block) or there is no
  // operand along it to hold.
  int held_at_run_time_count(int block, int64_t longest) const {
    if (!layout_.rows_contiguous() || has_packed_output()) return 0;
    for (const Op& op : k_.sub)
      if (op.info->kind == OpKind::partial_sum) return 0;
    const int64_t words = row_words() + draw_words();
    if (words == 0) return 0;
    const int64_t enough = longest / block + (longest % block != 0);
    return int(std::clamp<int64_t>(std::min(enough, kHeldWordsAtRunTime / words), 0, kMaxCachedPerThread));
  }

  // Neighbouring row elements a thread holds together when its part of the row is in registers:
  // 16 bytes of the widest row-shaped operand or output (fewer where the part does not split so),
  // so that the row is read and written in 16-byte runs. 1: elements a block apart.
  int held_run(int held) const {
    if (held == 0 || has_packed_output()) return 1;
    int run = 16 / std::max(1, widest_along_row());
    while (run > 1 && held % run != 0) run /= 2;
    return run;
  }

  // A row not held in registers is streamed by each pass: thread t takes runs t, t + block, ... of
  // 16 bytes of the widest row-shaped operand or output, read (and written) with one access each
  // where the pointers are aligned, so a thread has whole runs in flight rather than one element.
  // 1 where the row does not split into runs (its length, or rows not contiguous), would leave
  // threads without a run, or a packed mask is written.
  int stream_run(int block) const {
    if (has_packed_output() || !layout_.rows_contiguous()) return 1;
    const int widest = widest_along_row();
    if (widest == 0 || widest > 8) return 1;
    const int run = 16 / widest;
    // (Every thread of the block takes at least one run: a shorter row keeps its threads busy
    // element by element instead.)
    return row_length() % run == 0 && row_length() >= int64_t(run) * block ? run : 1;
  }

  // Bytes of the widest element a run moves: of the operands and outputs shaped like the rows, and
  // of the operands shaped like one row (loaded in runs of the same length), so that no run is
  // wider than 16 bytes. 0 when there are none.
  int widest_along_row() const {
    int widest = 0;
    for (const Arg& a : k_.args) {
      const Value& v = t_.value(a.value);
      const bool one_row = !layout_.outer.empty() && v.shape == layout_.reduced_shape();
      if (!v.is_scalar && !v.bit_packed && (v.shape == layout_.domain || one_row)) widest = std::max(widest, dtype_bytes(v.dtype));
    }
    for (ValueId id : k_.outs)
      if (t_.value(id).shape == layout_.domain) widest = std::max(widest, dtype_bytes(t_.value(id).dtype));
    return widest;
  }

  // ---- the passes over the row ------------------------------------------------------------------

  struct Pending {
    KernelPlan::Step step;
    std::set<ValueId> needs;  // reductions whose results the step's elements read
  };

  // The reductions of this kernel whose results computing v reads (v itself, if one).
  std::set<ValueId> reductions_needed(ValueId v) const {
    std::set<ValueId> out, seen;
    std::vector<ValueId> stack = {v};
    while (!stack.empty()) {
      const ValueId x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second || loaded_.count(x)) continue;
      auto p = producer_.find(x);
      if (p == producer_.end()) continue;
      if (p->second->info->fusion == FusionClass::reduction) {
        out.insert(x);
        continue;
      }
      for_each_value(*p->second, [&](ValueId a) { stack.push_back(a); });
    }
    return out;
  }

  // The op of this kernel that computes argument a, if it is a `kind` op.
  const Op* made_by(const Arg& a, OpKind kind) const {
    if (!a.is_value()) return nullptr;
    auto p = producer_.find(a.value);
    return p != producer_.end() && p->second->info->kind == kind ? p->second : nullptr;
  }

  // sum(exp(x - broadcast(amax(x)))) after amax(x) in the same row kernel (softmax, log_softmax,
  // cross-entropy): one pass computes both (tg::OnlineSumExp), so the row is read and
  // block-reduced once for them. Joins the amax's pending step; false where the sum is not so.
  bool join_online_max(const Op& sum, std::vector<Pending>& pending) const {
    const Op* exp = made_by(sum.arg("a"), OpKind::exp);
    const Op* sub = exp ? made_by(exp->arg("a"), OpKind::sub) : nullptr;
    if (!sub || !sub->arg("a").is_value()) return false;
    const Op* bcast = made_by(sub->arg("b"), OpKind::broadcast_in_dim);
    const Op* amax = bcast ? made_by(bcast->arg("a"), OpKind::amax) : nullptr;
    if (!amax || !amax->arg("a").is_value() || amax->arg("a").value != sub->arg("a").value || !is_float(t_.value(amax->outs[0]).dtype)) return false;
    auto max_step = std::find_if(pending.begin(), pending.end(), [&](const Pending& p) {
      return p.step.form == KernelPlan::Form::accumulate && p.step.result == amax->outs[0];
    });
    if (max_step == pending.end()) return false;  // (another sum took it)
    max_step->step.form = KernelPlan::Form::online_max_sum;
    max_step->step.joined = sum.outs[0];
    max_step->step.operand = sub->arg("a").value;
    return true;
  }

  // sum(where(iota == t, e, 0)) over the row, t one index per row (cross-entropy's log-probability
  // of the target, as Thunder decomposes it): only element t is not 0, so the sum is e at t, a
  // load rather than a pass over the row and a block reduction.
  std::optional<Pending> pick_instead_of_sum(const Op& sum) const {
    if (layout_.reduced.size() != 1) return std::nullopt;
    const int64_t dim = layout_.reduced[0], length = layout_.domain[size_t(dim)];
    const Op* where = made_by(sum.arg("a"), OpKind::where);
    if (!where || where->arg("b").is_value() || where->arg("b").as_double() != 0 || !is_float(t_.value(sum.outs[0]).dtype)) return std::nullopt;
    const Op* eq = made_by(where->arg("pred"), OpKind::eq);
    if (!eq) return std::nullopt;
    // One side of eq is iota(length, start=0, step=1) along the reduced dim, the other a per-row
    // value broadcast along it.
    auto is_position = [&](const Arg& a) {
      const Op* b = made_by(a, OpKind::broadcast_in_dim);
      const Op* iota = b ? made_by(b->arg("a"), OpKind::iota) : nullptr;
      return iota && b->arg("broadcast_dimensions").int_list() == std::vector<int64_t>{dim} && iota->arg("length").integer == length && !iota->arg("start").is_value() &&
             iota->arg("start").integer == 0 && !iota->arg("step").is_value() && iota->arg("step").integer == 1;
    };
    auto per_row = [&](const Arg& a) -> ValueId {
      const Op* b = made_by(a, OpKind::broadcast_in_dim);
      if (!b || !b->arg("a").is_value() || b->arg("broadcast_dimensions").int_list() != layout_.outer) return kNoValue;
      return t_.value(b->arg("a").value).shape == layout_.outer_shape() ? b->arg("a").value : kNoValue;
    };
    ValueId target = kNoValue;
    if (is_position(eq->arg("a"))) target = per_row(eq->arg("b"));
    else if (is_position(eq->arg("b"))) target = per_row(eq->arg("a"));
    if (target == kNoValue || !is_integer(t_.value(target).dtype) || !where->arg("a").is_value()) return std::nullopt;
    Pending pick{{KernelPlan::Form::pick, sum.outs[0], kNoValue, where->arg("a").value, target}, reductions_needed(where->arg("a").value)};
    for (ValueId v : reductions_needed(target)) pick.needs.insert(v);
    return pick;
  }

  // The steps of every reduction, in the kernel's order, before any is scheduled.
  std::vector<Pending> reduction_steps(bool column, bool online) const {
    std::vector<Pending> pending;
    for (const Op& op : k_.sub) {
      if (op.info->fusion != FusionClass::reduction) continue;
      const std::set<ValueId> needs = reductions_needed(op.arg("a").value);
      if (op.info->kind == OpKind::sum && !column) {
        if (online && join_online_max(op, pending)) continue;
        if (std::optional<Pending> pick = pick_instead_of_sum(op)) {
          pending.push_back(*pick);
          continue;
        }
      }
      const bool variance = op.info->kind == OpKind::var || op.info->kind == OpKind::var_mean;
      pending.push_back({{variance ? KernelPlan::Form::variance_mean : KernelPlan::Form::accumulate, op.outs[0]}, needs});
    }
    return pending;
  }

  // Rounds until every reduction is done: each takes every pending step whose inputs are ready;
  // a variance's second pass becomes pending when its first is done.
  // online: a softmax's max and sum in one online round (tg::OnlineSumExp), for a streamed row,
  // which that reads once for both but chains each element's exp on the last; a row held in
  // registers takes them in two rounds over the registers, no memory read again (faster on an
  // H200 where the row fits: docs/performance.md, tables C and D).
  void schedule(KernelPlan& p, bool online) const {
    std::vector<Pending> pending = reduction_steps(p.kind == KernelPlan::Kind::column, online);
    std::set<ValueId> done;
    while (!pending.empty()) {
      std::vector<Pending> ready, later;
      for (Pending& s : pending) {
        const bool met = std::all_of(s.needs.begin(), s.needs.end(), [&](ValueId v) { return done.count(v); });
        (met ? ready : later).push_back(std::move(s));
      }
      TG_CHECK(!ready.empty(), "the kernel of " + t_.value(k_.outs[0]).name + ": reductions wait on each other");
      KernelPlan::Round round;
      for (Pending& s : ready) {
        round.steps.push_back(s.step);
        if (s.step.form == KernelPlan::Form::variance_mean) {
          s.step.form = KernelPlan::Form::variance_spread;
          later.push_back(std::move(s));
          continue;
        }
        for (ValueId v : producer_.at(s.step.result)->outs) done.insert(v);
        if (s.step.joined != kNoValue) done.insert(s.step.joined);
      }
      pending = std::move(later);
      p.rounds.push_back(std::move(round));
    }
    place_writes(p);
  }

  // Outputs shaped like the row are written in a pass: the first that accumulates, when they
  // need no reduction, else one after the reductions (which also adds the row to the block's
  // partial sums); outputs one per row are stored once the rounds are done.
  void place_writes(KernelPlan& p) const {
    std::vector<ValueId> early, late;
    bool part_sums = false;
    for (const Op& op : k_.sub)
      if (op.info->kind == OpKind::partial_sum && t_.value(op.arg("a").value).shape == layout_.domain) part_sums = true;
    for (ValueId v : k_.outs) {
      const Op* op = producer_.count(v) ? producer_.at(v) : nullptr;
      if (op && op->info->kind == OpKind::partial_sum) continue;  // (written after the rows)
      const bool reduced = op && op->info->fusion == FusionClass::reduction;
      if (reduced || t_.value(v).shape != layout_.domain) p.row_results.push_back(v);
      else (reductions_needed(v).empty() ? early : late).push_back(v);
    }
    auto accumulates = [](const KernelPlan::Round& r) {
      return std::any_of(r.steps.begin(), r.steps.end(), [](const KernelPlan::Step& s) { return s.form != KernelPlan::Form::pick; });
    };
    auto first = std::find_if(p.rounds.begin(), p.rounds.end(), accumulates);
    if (first != p.rounds.end()) first->writes = early;
    else if (!early.empty()) p.rounds.push_back({{}, early, false});
    if (!late.empty() || part_sums) p.rounds.push_back({{}, late, part_sums});
  }
};

std::string plan_kind_name(KernelPlan::Kind kind) {
  switch (kind) {
    case KernelPlan::Kind::pointwise: return "pointwise";
    case KernelPlan::Kind::row: return "row";
    case KernelPlan::Kind::column: return "column";
  }
  return "?";
}

// "var_mean t13__0 (mean)": the reduction op's name, its first result, and the step's form.
std::string step_text(const KernelPlan::Step& s, const Trace& t, const std::map<ValueId, std::string>& op_names) {
  const std::string what = op_names.at(s.result) + " " + t.value(s.result).name;
  switch (s.form) {
    case KernelPlan::Form::accumulate: return what;
    case KernelPlan::Form::online_max_sum: return what + " and " + op_names.at(s.joined) + " " + t.value(s.joined).name + " (online)";
    case KernelPlan::Form::pick: return what + " (element " + t.value(s.target).name + ", no loop)";
    case KernelPlan::Form::variance_mean: return what + " (mean)";
    case KernelPlan::Form::variance_spread: return what + " (deviations)";
  }
  return what;
}

std::string names(const std::vector<ValueId>& values, const Trace& t) {
  std::string s;
  for (ValueId v : values) s += (s.empty() ? "" : ", ") + t.value(v).name;
  return s;
}

}  // namespace

int64_t register_words(DType t) { return (dtype_bytes(t) + 3) / 4; }

int KernelPlan::passes_over_row() const {
  int passes = 0;
  for (const Round& r : rounds) {
    const bool loops = r.part_sums || !r.writes.empty() ||
                       std::any_of(r.steps.begin(), r.steps.end(), [](const Step& s) { return s.form != Form::pick; });
    passes += loops ? 1 : 0;
  }
  return passes;
}

bool writes_per_row_only(const Trace& t, const Op& kernel) {
  const KernelLayout layout = kernel_layout(t, kernel);
  for (const Op& op : kernel.sub)
    if (op.info->kind == OpKind::partial_sum) return false;
  for (ValueId v : kernel.outs)
    if (!(t.value(v).shape == layout.outer_shape())) return false;
  return true;
}

KernelPlan plan_kernel(const Trace& t, const Op& kernel, bool may_hold_row) { return Planner(t, kernel, may_hold_row).plan(); }

namespace {

// "<trace>_<kind>_<first output>": named by what it does (pointwise, rowreduce, columnreduce).
std::string kernel_label(const Trace& t, const Op& kernel, KernelPlan::Kind kind) {
  const char* what = kind == KernelPlan::Kind::pointwise ? "_pointwise_" : kind == KernelPlan::Kind::row ? "_rowreduce_" : "_columnreduce_";
  return t.name + what + t.value(kernel.outs.at(0)).name;
}

}  // namespace

FusedTrace plan_kernels(Trace fused) {
  FusedTrace out{.trace = std::move(fused), .plans = {}};
  out.plans.resize(out.trace.ops.size());
  for (size_t i = 0; i < out.trace.ops.size(); ++i) {
    Op& op = out.trace.ops[i];
    if (!op.info || op.info->kind != OpKind::fused_kernel) continue;
    out.plans[i] = plan_kernel(out.trace, op);
    op.label = kernel_label(out.trace, op, out.plans[i]->kind);
  }
  return out;
}

const KernelPlan& FusedTrace::plan(size_t op_index) const {
  TG_CHECK(op_index < plans.size() && plans[op_index], "op " + std::to_string(op_index) + " of the fused trace is not a planned kernel");
  return *plans[op_index];
}

std::string print_fused(const FusedTrace& fused) {
  return print_trace(fused.trace, [&](size_t i, const Op& op) {
    return i < fused.plans.size() && fused.plans[i] ? "plan: " + plan_text(*fused.plans[i], op, fused.trace) : std::string();
  });
}

std::string plan_text(const KernelPlan& plan, const Op& kernel, const Trace& t) {
  std::string s = plan_kind_name(plan.kind) + " block=" + std::to_string(plan.block);
  if (plan.kind == KernelPlan::Kind::pointwise) return s + " lanes=" + std::to_string(plan.lanes);
  if (plan.kind == KernelPlan::Kind::row) {
    s += " held=" + std::to_string(plan.held) + " held_run=" + std::to_string(plan.held_run) + " hoisted=" + (plan.hoisted ? "1" : "0") +
         " stream_run=" + std::to_string(plan.stream_run);
  }
  std::map<ValueId, std::string> op_names;  // a reduction's results -> "sum", "var_mean", ...
  for (const Op& op : kernel.sub)
    for (ValueId v : op.outs) op_names[v] = op.symbol.substr(op.symbol.find('.') + 1);
  for (size_t i = 0; i < plan.rounds.size(); ++i) {
    const KernelPlan::Round& r = plan.rounds[i];
    std::vector<std::string> parts;
    for (const KernelPlan::Step& step : r.steps) parts.push_back(step_text(step, t, op_names));
    if (!r.writes.empty()) parts.push_back("write " + names(r.writes, t));
    if (r.part_sums) parts.push_back("add to partial sums");
    s += " | pass " + std::to_string(i + 1) + ":";
    for (size_t k = 0; k < parts.size(); ++k) s += (k ? "; " : " ") + parts[k];
  }
  if (!plan.row_results.empty()) s += " | then per row: store " + names(plan.row_results, t);
  if (plan.long_rows) s += " || rows longer than " + std::to_string(plan.longest_held_row()) + ": " + plan_text(*plan.long_rows, kernel, t);
  return s;
}

namespace {

// The numbers a plan line names, each settable by key.
std::map<std::string, int*> plan_fields(KernelPlan& plan) {
  if (plan.kind == KernelPlan::Kind::pointwise) return {{"block", &plan.block}, {"lanes", &plan.lanes}};
  if (plan.kind == KernelPlan::Kind::column) return {{"block", &plan.block}};
  return {{"block", &plan.block}, {"held", &plan.held}, {"held_run", &plan.held_run}, {"stream_run", &plan.stream_run}};
}

struct PlanRequest {
  std::string kind;
  std::vector<std::pair<std::string, int64_t>> numbers;  // key=value, in order
  std::string passes;                                     // after the first " | ", if any
};

PlanRequest parse_plan_line(const std::string& text, const std::string& where) {
  PlanRequest r;
  const size_t bar = text.find(" | ");
  std::string head = text.substr(0, bar);
  if (bar != std::string::npos) r.passes = text.substr(bar + 3);
  size_t at = 0;
  auto next_word = [&] {
    while (at < head.size() && head[at] == ' ') ++at;
    const size_t start = at;
    while (at < head.size() && head[at] != ' ') ++at;
    return head.substr(start, at - start);
  };
  r.kind = next_word();
  for (std::string word = next_word(); !word.empty(); word = next_word()) {
    const size_t eq = word.find('=');
    int64_t value = 0;
    const char* end = word.data() + word.size();
    if (eq == std::string::npos || eq == 0 || std::from_chars(word.data() + eq + 1, end, value).ptr != end || eq + 1 == word.size())
      throw UserError(where, "plan: expected key=number, got \"" + printable_line(word) + "\"");
    r.numbers.emplace_back(word.substr(0, eq), value);
  }
  return r;
}

}  // namespace

// A plan as a stage listing gives it: the kernel's own plan, with the changes a listing may ask
// for because the kernel lowering writes correct code either way (lanes=1, held=0, hoisted=0,
// stream_run=1); any other difference is an error, so that a listing cannot make the lowering
// write a kernel its plan's checks never saw.
KernelPlan plan_from_listing(const std::string& text, const Trace& t, const Op& kernel, const std::string& where) {
  const PlanRequest request = parse_plan_line(text, where);
  const bool streamed = std::count(request.numbers.begin(), request.numbers.end(), std::pair<std::string, int64_t>{"held", 0}) > 0;
  KernelPlan plan = plan_kernel(t, kernel, !streamed);
  if (request.kind != plan_kind_name(plan.kind))
    throw UserError(where, "plan: the kernel is " + plan_kind_name(plan.kind) + ", not \"" + printable_line(request.kind) + "\"");
  const std::map<std::string, int*> fields = plan_fields(plan);
  for (const auto& [key, value] : request.numbers) {
    if (key == "hoisted" && plan.kind == KernelPlan::Kind::row) {
      if (value != int64_t(plan.hoisted) && value != 0) throw UserError(where, "plan: hoisted=" + std::to_string(value) + " is not possible here");
      plan.hoisted = value != 0;
      continue;
    }
    auto field = fields.find(key);
    if (field == fields.end()) throw UserError(where, "plan: a " + plan_kind_name(plan.kind) + " kernel has no \"" + printable_line(key) + "\"");
    const bool narrower = value == 1 && (key == "lanes" || key == "stream_run");
    if (value != *field->second && !narrower)
      throw UserError(where, "plan: " + key + "=" + std::to_string(value) + " is not a plan thunder-gen writes for this kernel (it plans " + key + "=" +
                                 std::to_string(*field->second) + "); a listing may ask for lanes=1, held=0, hoisted=0 or stream_run=1 instead");
    *field->second = int(value);
  }
  const std::string planned = plan_text(plan, kernel, t);
  const size_t bar = planned.find(" | ");
  const std::string passes = bar == std::string::npos ? "" : planned.substr(bar + 3);
  if (!request.passes.empty() && request.passes != passes)
    throw UserError(where, "plan: the passes listed are not those of this kernel's reductions, which are: " + printable_line(passes));
  return plan;
}

}  // namespace tg
