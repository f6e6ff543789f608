#include "autograd/exact_plan.h"

#include <Cbc_C_Interface.h>

#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace tg {

namespace {


struct ModelDeleter {
  void operator()(Cbc_Model* m) const { Cbc_deleteModel(m); }
};
using Model = std::unique_ptr<Cbc_Model, ModelDeleter>;

// Columns: saved[v] (0..n-1), available[v] (n..2n-1), recomputed[x] (2n..). Costs in
// microseconds keep the solver's numbers near 1.
class Formulation {
 public:
  Formulation(const RematProblem& time, const std::vector<int64_t>& bytes) : time_(time), bytes_(bytes), n_(int(time.values.size())) {}

  Model build(const ExactGoal& goal) const {
    Model m(Cbc_newModel());
    const bool by_time = goal.minimise == ExactGoal::Minimise::time;
    for (int v = 0; v < n_; ++v) {
      const int64_t save = time_.values[size_t(v)].save_cost;
      const double objective = by_time ? (save < RematProblem::kInfinite ? double(save) / 1e9 : 0) : double(bytes_[size_t(v)]);
      Cbc_addCol(m.get(), "", 0, save < RematProblem::kInfinite ? 1 : 0, objective, 1, 0, nullptr, nullptr);
    }
    for (int v = 0; v < n_; ++v) Cbc_addCol(m.get(), "", time_.values[size_t(v)].needed ? 1 : 0, 1, 0, 1, 0, nullptr, nullptr);
    for (const RematProblem::Op& op : time_.ops) {
      const bool allowed = op.recompute_cost < RematProblem::kInfinite;
      Cbc_addCol(m.get(), "", 0, allowed ? 1 : 0, by_time && allowed ? double(op.recompute_cost) / 1e9 : 0, 1, 0, nullptr, nullptr);
    }
    add_availability(m.get());
    add_bound(m.get(), goal);
    Cbc_setObjSense(m.get(), 1);
    Cbc_setLogLevel(m.get(), 0);
    return m;
  }

  // The solver's saved set as a plan: saved only what the backward or a recomputation reads.
  RematPlan plan_of(const double* solution) const {
    RematPlan plan;
    plan.saved.assign(size_t(n_), false);
    for (int v = 0; v < n_; ++v) plan.saved[size_t(v)] = solution[v] > 0.5;
    plan.cost = plan_cost(time_, plan.saved, &plan.recomputed);
    std::vector<bool> reads(size_t(n_), false);
    for (int v = 0; v < n_; ++v) reads[size_t(v)] = time_.values[size_t(v)].needed;
    for (size_t x = 0; x < time_.ops.size(); ++x)
      if (plan.recomputed[x])
        for (int u : time_.ops[x].inputs) reads[size_t(u)] = true;
    for (int v = 0; v < n_; ++v) plan.saved[size_t(v)] = plan.saved[size_t(v)] && reads[size_t(v)];
    plan.cost = plan_cost(time_, plan.saved, &plan.recomputed);
    return plan;
  }

 private:
  int recomputed(size_t x) const { return 2 * n_ + int(x); }

  void add_availability(Cbc_Model* m) const {
    std::vector<int> defined_by(size_t(n_), -1);
    for (size_t x = 0; x < time_.ops.size(); ++x)
      for (int v : time_.ops[x].outputs) defined_by[size_t(v)] = int(x);
    for (int v = 0; v < n_; ++v) {  // available <= saved + recomputed(its op)
      std::vector<int> cols{n_ + v, v};
      std::vector<double> coefs{1, -1};
      if (defined_by[size_t(v)] >= 0) cols.push_back(recomputed(size_t(defined_by[size_t(v)]))), coefs.push_back(-1);
      Cbc_addRow(m, "", int(cols.size()), cols.data(), coefs.data(), 'L', 0);
    }
    for (size_t x = 0; x < time_.ops.size(); ++x)  // recomputed <= available(each operand)
      for (int u : std::set<int>(time_.ops[x].inputs.begin(), time_.ops[x].inputs.end())) {
        const int cols[] = {recomputed(x), n_ + u};
        const double coefs[] = {1, -1};
        Cbc_addRow(m, "", 2, cols, coefs, 'L', 0);
      }
  }

  void add_bound(Cbc_Model* m, const ExactGoal& goal) const {
    std::vector<int> cols;
    std::vector<double> coefs;
    if (goal.minimise == ExactGoal::Minimise::time) {
      for (int v = 0; v < n_; ++v) cols.push_back(v), coefs.push_back(double(bytes_[size_t(v)]));
      Cbc_addRow(m, "", int(cols.size()), cols.data(), coefs.data(), 'L', double(goal.bound));
      return;
    }
    for (int v = 0; v < n_; ++v)
      if (time_.values[size_t(v)].save_cost < RematProblem::kInfinite) cols.push_back(v), coefs.push_back(double(time_.values[size_t(v)].save_cost) / 1e9);
    for (size_t x = 0; x < time_.ops.size(); ++x)
      if (time_.ops[x].recompute_cost < RematProblem::kInfinite) cols.push_back(recomputed(x)), coefs.push_back(double(time_.ops[x].recompute_cost) / 1e9);
    Cbc_addRow(m, "", int(cols.size()), cols.data(), coefs.data(), 'L', double(goal.bound) / 1e9 * (1 + 1e-9));
  }

  const RematProblem& time_;
  const std::vector<int64_t>& bytes_;
  int n_;
};

}  // namespace

ExactResult exact_plan(const RematProblem& time, const std::vector<int64_t>& bytes, const ExactGoal& goal, double seconds) {
  if (time.ops.size() > kExactMostOps)
    return {std::nullopt, std::to_string(time.ops.size()) + " forward ops, past the " + std::to_string(kExactMostOps) + " --exact solves"};
  // CBC's solver keeps global state (it is not thread-safe), and a symbolic trace's two probes
  // plan side by side: one solve at a time.
  static std::mutex solving;
  const std::lock_guard<std::mutex> lock(solving);
  const Formulation formulation(time, bytes);
  Model m = formulation.build(goal);
  Cbc_setMaximumSeconds(m.get(), seconds);
  Cbc_solve(m.get());
  if (Cbc_isSecondsLimitReached(m.get())) {
    std::ostringstream s;
    s << "CBC proved no plan optimal within " << seconds << " s";
    return {std::nullopt, s.str()};
  }
  if (!Cbc_isProvenOptimal(m.get())) return {std::nullopt, "CBC found no plan within the bound"};
  return {formulation.plan_of(Cbc_getColSolution(m.get())), ""};
}

}  // namespace tg
