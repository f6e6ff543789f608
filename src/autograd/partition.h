// Partition: the joint trace -> a forward trace and a backward trace, with the saved set chosen
// by rematerialization (src/autograd/remat.h: a global min-cut under per-op policies).
//
// The forward trace takes the forward inputs and returns the forward outputs, then every saved
// value the forward computes and does not already return ("saved" outputs). The backward trace
// takes the saved values (inputs, outputs and intermediates, in forward order), then one
// cotangent per forward output; it first recomputes the forward ops the plan recomputes, then
// runs the backward part of the joint trace, and returns one gradient per input that requires
// grad, in input order.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/remat.h"
#include "autograd/time_model.h"
#include "ir/trace.h"
#include "ops/distributed.h"

namespace tg {

struct SavedValue {
  ValueId value;        // in both traces (they share the joint trace's value table)
  enum class Kind { input, output, intermediate } kind;
  size_t index;         // forward input index, forward output index, or index among saved outputs
  std::string reason;   // why it is saved rather than recomputed
};

// The kernels a plan makes, as the driver fuses and prices them (src/codegen/kernel_time.h).
struct KernelSteps {
  int64_t forward_fs = 0, backward_fs = 0;
  int64_t step_fs() const { return capped_fs_sum(forward_fs, backward_fs); }
};

struct Partition {
  Trace forward;
  Trace backward;
  std::vector<SavedValue> saved;     // the backward's leading inputs, in order
  std::vector<ValueId> recomputed;   // forward values the backward computes again, in order
  int64_t plan_cost_bits = 0;        // the plan's cost: saving plus recomputing (src/autograd/remat.h)
  int64_t activation_bytes = 0;      // the saved intermediates' bytes, as stored (at the trace's sizes)
  SymbolValues plan_at;              // a symbolic trace's: the sizes the plan weighed costs at (--plan-at)
  // A distributed trace's collectives, forward then backward (an all-gather the backward
  // recomputes is there again): what a step communicates, beside what it saves.
  std::vector<CollectiveCall> communication;
  // Planned with a time model (RematOptions::device): the Pareto plans from the fastest to the
  // fewest bytes, the one chosen (-1: a budget only a plan off the hull meets) and its time.
  struct FrontierPlan {
    int64_t activation_bytes = 0;  // at the plan's sizes
    int64_t predicted_fs = 0;      // the step: forward + backward, femtoseconds
    std::vector<ValueId> recomputed;
    std::optional<KernelSteps> kernels;  // priced (RematOptions::price_kernels), when it was
  };
  std::string device;  // the device model's name; empty when planned by bytes alone
  std::vector<FrontierPlan> frontier;
  int chosen = -1;
  int64_t predicted_fs = 0;
  int64_t planned_bytes = 0;  // the chosen plan's activation bytes at the plan's sizes
  std::string exact_note;     // --exact fell back to the frontier: why
  std::optional<KernelSteps> kernels;  // the chosen plan's, when the choice priced them
  std::string kernels_note;   // the plans' kernels were not priced: why
  FrontierPlan bytes_first;  // the plan by bytes alone (no time model), for comparison
  // The problem the frontier solves, for an exact solver to check (explain --frontier --json):
  // costs in femtoseconds, each value's activation bytes, and the step time no plan changes.
  RematProblem time_problem;
  std::vector<int64_t> value_bytes;
  int64_t fixed_fs = 0;
};

// The remat plans of one generation, shared by its pipelines where they plan the same cut: the
// two probes of a folder for every size plan at the same --plan-at sizes, so the first to choose
// a plan for a cut gives it to the other, which waits for it. A cut is the same only when every
// candidate value and op, with its costs, and the step's fixed time are (a size a pass did not
// carry as an expression makes them differ, and each probe then plans its own).
class SharedPlans;
std::shared_ptr<SharedPlans> make_shared_plans();

struct RematOptions {
  bool pack_bools = true;  // a saved b8 mask is stored at one bit per element (--no-pack-bool: a byte)
  // --activation-budget: the most bytes of saved intermediates (trace inputs and outputs are
  // alive anyway and do not count). Among plans that fit, the one recomputing least.
  std::optional<int64_t> activation_budget;
  // For comparison only (bench/remat_bench.cpp): plan as a simpler rule would. save_all_read
  // saves every forward value the backward reads and recomputes nothing; thunder_weights weighs
  // every tensor by its element size alone (trace inputs at half), as Thunder's cut does, with
  // recomputation free except for matmuls, reductions and random draws.
  enum class Baseline { none, save_all_read, thunder_weights } baseline = Baseline::none;
  // Distributed traces: the backward all-reduces DDP's gradients in buckets of at least this many
  // bytes, as Thunder's ddp(bucket_size_in_mb=25) does (src/ops/distributed.h); 0: one per gradient.
  int64_t bucket_bytes = 25 << 20;
  // A symbolic trace's: the sizes its costs are weighed at (--plan-at; the pipeline's default is
  // each symbol's largest), the budget too. Empty: the sizes the trace was read at.
  SymbolValues plan_at;
  // The time model (src/autograd/time_model.h). With one, the plan is the one with the fewest
  // activation bytes among those predicted within time_slack of the fastest step (and none
  // slower than the bytes-first plan); --activation-budget takes the fastest that fits. Without
  // one, bytes first: a bit saved weighs as much as an element recomputed.
  // With a device and choose_by_time false, the frontier is listed (explain --frontier) and the
  // plan is still chosen by bytes.
  std::optional<DeviceModel> device;
  bool choose_by_time = false;
  bool list_frontier = false;  // explain --frontier: every corner, not only those a choice needs
  double time_slack = 0.01;
  // --exact: choosing by time, an MILP solver's optimum (exact_plan.h) where the graph is small
  // enough and it proves one in time; else the frontier's plan, with a note saying why.
  bool exact = false;
  // Choosing by time: what the kernels of a candidate partition are predicted to take (the
  // driver fuses and prices them). Given, the frontier's corners (up to kMostPricedPlans), the
  // plan by bytes and the cut's own choice are each built and priced, and the choice's rule
  // applies to those predictions rather than to the cut's linear costs, for joint traces of up to
  // kMostPricedOps ops.
  std::function<KernelSteps(const Partition&)> price_kernels;
  bool price_by_kernels = false;  // --price-plans kernels: the driver gives price_kernels
  // Plans shared with the pipelines holding the same pointer (not for priced or --exact plans).
  std::shared_ptr<SharedPlans> shared_plans;
};
constexpr size_t kMostPricedOps = 4000;
constexpr size_t kMostPricedPlans = 24;

// Throws UserError naming the op paths when the policies leave no finite plan.
// Consumes the joint trace: its ops move into the two traces.
Partition partition(JointTrace joint, const RematOptions& options = {});

}  // namespace tg
