// The rematerialization cut as a problem: every value a plan may save and every forward op it
// may recompute (the candidates), with what saving and recomputing each costs, in bits (the plan
// by bytes) and in predicted femtoseconds (the time model), and what the policies allow. The
// partition (partition.cpp) chooses a plan on it; weigh() and weigh_time() turn it into the cut
// problems of src/autograd/remat.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/partition.h"
#include "autograd/remat.h"
#include "frontend/overrides.h"
#include "ir/trace.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace tg::cut {

// What the plan chooses among, before costs are weighed against each other.
struct Candidates {
  struct Value {
    bool is_input = false, needed = false;
    bool is_activation = false;  // an intermediate: saving it costs memory the forward would free
    int64_t bits = 0;            // what saving it occupies (0 unless an activation)
    std::optional<Policy> policy;  // of the op defining it
    int64_t element_bytes = 0;     // for the thunder_weights baseline
    int64_t save_fs = 0;           // saving it: the forward's write (an activation) and the backward's read
    bool written_anyway = false;   // an activation the forward writes to memory for a GEMM anyway
    bool folds_into_gemm = false;  // a GEMM's product its bias add folds into: not saved when planning in time
    bool operator==(const Value&) const = default;
  };
  struct Op {
    std::vector<int> inputs, outputs;
    int64_t cost = 0;         // recomputing it (src/autograd/remat.h's units)
    std::optional<Policy> policy;
    bool pinned = false;      // a kind not recomputed by default (matmul, reduction, random draw)
    bool forbidden = false;   // never recomputed: `save` on a call, for its ops reading from outside it
    int64_t recompute_fs = 0; // recomputing it, under the time model
    bool operator==(const Op&) const = default;
  };
  std::vector<Value> values;
  std::vector<Op> ops;
  RematOptions::Baseline baseline = RematOptions::Baseline::none;
  bool operator==(const Candidates&) const = default;
};

// Recompute weight in 1/1024ths: kFullWeight is the default trade-off (a bit saved = an element
// recomputed); 0 minimizes bytes alone.
constexpr int64_t kFullWeight = 1024;

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

// The candidates: the forward inputs and every value a forward op defines, with what saving
// and recomputing each would cost and what the policies allow.
CutModel model_cut(const JointTrace& joint, const RematOptions& options);

// The cut problem for one trade-off. `unpinned`: the activation-budget search, where every kind
// may be recomputed unless a policy forbids it, and soft policies leave saving costs exact.
RematProblem weigh(const Candidates& c, int64_t recompute_weight, bool unpinned);
// The cut problem in predicted time (femtoseconds), every kind recomputable that no policy
// forbids, soft policies weighing as in weigh(); and each value's activation bytes.
// written_anyway: a value the forward writes for a GEMM anyway costs only its read when saved
// (true of the GEMM's own kernels, not always of a fused epilogue: so it only proposes plans
// that pricing then judges).
RematProblem weigh_time(const Candidates& c, std::vector<int64_t>& bytes, bool written_anyway = false);

int64_t activation_bytes(const Candidates& c, const RematPlan& plan);
// The plan saving the fewest bytes any plan can; a UserError naming them when over `budget`.
RematPlan smallest_within(const Candidates& c, int64_t budget);
// Over budget: the plan that fits and recomputes least (see cut_model.cpp).
RematPlan plan_within_budget(const Candidates& c, int64_t budget);

// The error for policies that leave no finite plan, at the op path of the `recompute` call on
// the all-infinite path, naming its values.
UserError no_plan_error(const NoFinitePlan& e, const CutModel& m, const JointTrace& joint);

// Ops the backward does not recompute unless a policy asks (see cut_model.cpp).
bool pinned_by_default(const OpInfo& info);
// Where the policy on the call at `where` came from: a tag file's name, or "trace tag".
std::string policy_source(const Trace& t, const std::string& where);
// The torch-level call an op came from (its own symbol when read as it is).
std::string policy_call_name(const Op& op);

}  // namespace tg::cut
