// Rematerialization: which forward values cross to the backward (are saved) and which the
// backward recomputes, chosen by one global minimum cut (Boost.Graph's Boykov-Kolmogorov
// max-flow) over the forward part of the joint trace.
//
// The cut model. Every forward value v is two nodes, v_in -> v_out, with the cost of saving v on
// that edge; every forward op X is a node with an edge source -> X costing its recomputation.
// X's operands flow into X and X into its outputs' v_in (infinite edges), trace inputs hang off
// the source, and every forward value the backward reads has v_out -> sink. A finite cut then is
// a plan: v is saved where the cut takes v_in -> v_out, and X is recomputed in the backward where
// it takes source -> X. Costs are in bits: saving costs what v occupies as stored (nothing for
// trace inputs, forward outputs and scalars, which are alive anyway); recomputing an elementwise
// op costs one bit per element it writes, index-only ops nothing, and matmuls, reductions and
// random draws are not recomputed unless a policy says so.
//
// Policies (src/frontend/overrides.h) act on the values and ops a call produced: `save` (the call is never
// redone from its inputs: its ops reading from outside it get infinite recompute edges), `recompute` (never save: the crossing edge is
// infinite, and the op becomes recomputable), `prefer-save` (crossing at half price,
// recomputing at four times), `prefer-recompute` (crossing at double price, recomputing at half,
// and the op becomes recomputable). src/autograd/partition.cpp turns traces and policies into this problem.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace tg {

// The problem as a graph of values and ops, independent of traces (tests build random ones).
struct RematProblem {
  static constexpr int64_t kInfinite = int64_t(1) << 60;
  struct Value {
    int64_t save_cost = 0;   // kInfinite: must not cross
    bool is_input = false;   // available in the forward without an op
    bool needed = false;     // the backward reads it
  };
  struct Op {
    std::vector<int> inputs, outputs;  // value indices
    int64_t recompute_cost = 0;        // kInfinite: computed in the forward only
  };
  std::vector<Value> values;
  std::vector<Op> ops;
};

struct RematPlan {
  std::vector<bool> saved;       // per value: crosses to the backward
  std::vector<bool> recomputed;  // per op: runs again in the backward
  int64_t cost = 0;              // saving plus recomputing, in bits
};

// Throws NoFinitePlan when every plan has infinite cost (contradictory policies).
struct NoFinitePlan {
  std::vector<int> values;  // values on an all-infinite path from the forward to the backward
};
RematPlan plan_remat(const RematProblem& problem);

// The same for many problems of one shape (the same values, ops and edges, other costs): the
// cut graph is built once (the frontier's sweep solves a problem a lambda).
class MinCutSolver {
 public:
  explicit MinCutSolver(const RematProblem& structure);
  ~MinCutSolver();
  RematPlan solve(const RematProblem& problem);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The cost of a plan given by its saved set, or kInfinite where it is infeasible: what the
// backward needs must be saved or recomputable from saved values. Used by the exhaustive test.
int64_t plan_cost(const RematProblem& problem, const std::vector<bool>& saved, std::vector<bool>* recomputed = nullptr);

}  // namespace tg
