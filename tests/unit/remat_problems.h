// Random rematerialization problems for the min-cut and frontier tests.
#pragma once
#include <random>

#include "autograd/remat.h"

namespace tg_test {

// A random forward graph: a few inputs, then ops reading 1-3 earlier values, some of them
// multi-output; random save costs (0 for inputs), recompute costs (some infinite: pinned ops,
// some crossing forbidden) and a random set of values the backward reads.
inline tg::RematProblem random_problem(std::mt19937& rng, int values_wanted) {
  tg::RematProblem p;
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int inputs = uniform(1, 3);
  for (int i = 0; i < inputs; ++i) {
    tg::RematProblem::Value v;
    v.is_input = true;
    v.save_cost = uniform(0, 1) ? 0 : uniform(1, 64);
    p.values.push_back(v);
  }
  while (int(p.values.size()) < values_wanted) {
    tg::RematProblem::Op op;
    const int reads = uniform(1, 3);
    for (int r = 0; r < reads; ++r) op.inputs.push_back(uniform(0, int(p.values.size()) - 1));
    const int outs = uniform(1, 6) == 1 ? 2 : 1;
    for (int o = 0; o < outs && int(p.values.size()) < values_wanted; ++o) {
      tg::RematProblem::Value v;
      v.save_cost = uniform(1, 10) == 1 ? tg::RematProblem::kInfinite : uniform(1, 100);
      op.outputs.push_back(int(p.values.size()));
      p.values.push_back(v);
    }
    op.recompute_cost = uniform(1, 5) == 1 ? tg::RematProblem::kInfinite : uniform(0, 40);
    p.ops.push_back(op);
  }
  for (tg::RematProblem::Value& v : p.values) v.needed = uniform(1, 3) == 1;
  return p;
}


}  // namespace tg_test
