#include "autograd/remat.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <deque>
#include <functional>

#include "support/diagnostics.h"

namespace tg {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS,
    boost::property<boost::vertex_index_t, long,
                    boost::property<boost::vertex_color_t, boost::default_color_type,
                                    boost::property<boost::vertex_distance_t, long,
                                                    boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>>,
    boost::property<boost::edge_capacity_t, int64_t,
                    boost::property<boost::edge_residual_capacity_t, int64_t, boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;

// Node numbering: source, sink, then v_in and v_out of every value, then every op.
struct Nodes {
  size_t values;
  size_t source() const { return 0; }
  size_t sink() const { return 1; }
  size_t in(int v) const { return 2 + 2 * size_t(v); }
  size_t out(int v) const { return 3 + 2 * size_t(v); }
  size_t op(int x) const { return 2 + 2 * values + size_t(x); }
};

struct Edge {
  size_t from, to;
  int64_t cost;  // kInfinite where it must not be cut
};

std::vector<Edge> cut_edges(const RematProblem& p, const Nodes& n) {
  std::vector<Edge> edges;
  const int64_t inf = RematProblem::kInfinite;
  for (size_t v = 0; v < p.values.size(); ++v) {
    const RematProblem::Value& value = p.values[v];
    if (value.is_input) edges.push_back({n.source(), n.in(int(v)), inf});
    edges.push_back({n.in(int(v)), n.out(int(v)), value.save_cost});
    if (value.needed) edges.push_back({n.out(int(v)), n.sink(), inf});
  }
  for (size_t x = 0; x < p.ops.size(); ++x) {
    const RematProblem::Op& op = p.ops[x];
    edges.push_back({n.source(), n.op(int(x)), op.recompute_cost});
    for (int u : op.inputs) edges.push_back({n.out(u), n.op(int(x)), inf});
    for (int v : op.outputs) edges.push_back({n.op(int(x)), n.in(v), inf});
  }
  return edges;
}

// Nodes reachable from `from` over the edges `passable` accepts; parent edge of each for paths.
std::vector<long> reach(size_t nodes, size_t from, const std::vector<Edge>& edges, const std::function<bool(size_t)>& passable) {
  std::vector<std::vector<size_t>> out(nodes);
  for (size_t e = 0; e < edges.size(); ++e) out[edges[e].from].push_back(e);
  std::vector<long> parent(nodes, -2);
  parent[from] = -1;
  std::deque<size_t> queue = {from};
  while (!queue.empty()) {
    size_t a = queue.front();
    queue.pop_front();
    for (size_t e : out[a])
      if (passable(e) && parent[edges[e].to] == -2) {
        parent[edges[e].to] = long(e);
        queue.push_back(edges[e].to);
      }
  }
  return parent;
}

}  // namespace

int64_t plan_cost(const RematProblem& p, const std::vector<bool>& saved, std::vector<bool>* recomputed) {
  std::vector<int> def(p.values.size(), -1);
  for (size_t x = 0; x < p.ops.size(); ++x)
    for (int v : p.ops[x].outputs) def[size_t(v)] = int(x);
  std::vector<bool> used(p.ops.size(), false);
  std::vector<int> state(p.values.size(), 0);  // 0 unknown, 1 available, 2 unavailable
  std::function<bool(int)> available = [&](int v) -> bool {
    if (state[size_t(v)]) return state[size_t(v)] == 1;
    state[size_t(v)] = 2;  // values form a DAG, so this only guards against malformed input
    bool ok = saved[size_t(v)];
    int x = def[size_t(v)];
    if (!ok && x >= 0 && p.ops[size_t(x)].recompute_cost < RematProblem::kInfinite) {
      ok = true;
      for (int u : p.ops[size_t(x)].inputs) ok = ok && available(u);
      if (ok) used[size_t(x)] = true;
    }
    state[size_t(v)] = ok ? 1 : 2;
    return ok;
  };
  int64_t cost = 0;
  for (size_t v = 0; v < p.values.size(); ++v) {
    if (p.values[v].needed && !available(int(v))) return RematProblem::kInfinite;
    if (saved[v]) {
      if (p.values[v].save_cost >= RematProblem::kInfinite) return RematProblem::kInfinite;
      cost += p.values[v].save_cost;
    }
  }
  for (size_t x = 0; x < p.ops.size(); ++x)
    if (used[x]) cost += p.ops[x].recompute_cost;
  if (recomputed) *recomputed = used;
  return cost;
}

struct MinCutSolver::Impl {
  size_t values;  // (Nodes{values} numbers the graph's nodes)
  size_t nodes;
  Graph g;
  std::vector<Traits::edge_descriptor> forward_edge;  // one per cut edge, in cut_edges' order
};

MinCutSolver::MinCutSolver(const RematProblem& structure) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.values = structure.values.size();
  const Nodes n{m.values};
  m.nodes = n.op(int(structure.ops.size()));
  m.g = Graph(m.nodes);
  auto reverse = boost::get(boost::edge_reverse, m.g);
  for (const Edge& e : cut_edges(structure, n)) {
    auto there = boost::add_edge(e.from, e.to, m.g).first;
    auto back = boost::add_edge(e.to, e.from, m.g).first;
    reverse[there] = back;
    reverse[back] = there;
    m.forward_edge.push_back(there);
  }
}

MinCutSolver::~MinCutSolver() = default;

RematPlan MinCutSolver::solve(const RematProblem& p) {
  Impl& m = *impl_;
  const Nodes n{m.values};
  const std::vector<Edge> edges = cut_edges(p, n);
  TG_CHECK(edges.size() == m.forward_edge.size() && p.values.size() == n.values, "a problem of another shape than the solver's");

  // A path of uncuttable edges from the forward to the backward: no finite plan exists.
  std::vector<long> parent = reach(m.nodes, n.source(), edges, [&](size_t e) { return edges[e].cost >= RematProblem::kInfinite; });
  if (parent[n.sink()] != -2) {
    NoFinitePlan error;
    for (long e = parent[n.sink()]; e >= 0; e = parent[edges[size_t(e)].from]) {
      size_t node = edges[size_t(e)].to;
      if (node >= 2 && node < n.op(0) && (node - 2) % 2 == 0) error.values.push_back(int((node - 2) / 2));
    }
    throw error;
  }

  // Every source-to-sink path now crosses a finite edge, so the flow stays below their sum.
  int64_t finite_total = 1;
  for (const Edge& e : edges)
    if (e.cost < RematProblem::kInfinite) finite_total += e.cost;
  TG_CHECK(finite_total < RematProblem::kInfinite, "rematerialization costs overflow");
  Graph& g = m.g;
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  for (size_t i = 0; i < edges.size(); ++i) {
    capacity[m.forward_edge[i]] = std::min(edges[i].cost, finite_total);
    capacity[reverse[m.forward_edge[i]]] = 0;
  }
  boost::boykov_kolmogorov_max_flow(g, n.source(), n.sink());

  // The source side of the minimum cut: reachable through edges with residual capacity left.
  auto residual = boost::get(boost::edge_residual_capacity, g);
  std::vector<bool> source_side(m.nodes, false);
  std::deque<size_t> queue = {n.source()};
  source_side[n.source()] = true;
  while (!queue.empty()) {
    size_t a = queue.front();
    queue.pop_front();
    for (auto [it, end] = boost::out_edges(a, g); it != end; ++it)
      if (residual[*it] > 0 && !source_side[boost::target(*it, g)]) {
        source_side[boost::target(*it, g)] = true;
        queue.push_back(boost::target(*it, g));
      }
  }

  RematPlan plan;
  std::vector<bool> crossing(p.values.size(), false);
  for (size_t v = 0; v < p.values.size(); ++v) crossing[v] = source_side[n.in(int(v))] && !source_side[n.out(int(v))];
  // Keep only what the backward reaches: a zero-cost crossing nobody reads is not a saved value.
  plan.cost = plan_cost(p, crossing, &plan.recomputed);
  TG_CHECK(plan.cost < RematProblem::kInfinite, "the minimum cut is not a plan");
  plan.saved.assign(p.values.size(), false);
  std::vector<bool> reads(p.values.size(), false);
  for (size_t v = 0; v < p.values.size(); ++v) reads[v] = p.values[v].needed;
  for (size_t x = 0; x < p.ops.size(); ++x)
    if (plan.recomputed[x])
      for (int u : p.ops[x].inputs) reads[size_t(u)] = true;
  for (size_t v = 0; v < p.values.size(); ++v) plan.saved[v] = crossing[v] && reads[v];
  plan.cost = plan_cost(p, plan.saved, &plan.recomputed);
  return plan;
}


RematPlan plan_remat(const RematProblem& p) { return MinCutSolver(p).solve(p); }

}  // namespace tg
