// The memory-time frontier (src/autograd/frontier.h) against every saved set of small random
// problems, and the time model's plans on real traces.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "autograd/frontier.h"
#include "autograd/remat.h"
#include "remat_problems.h"

namespace {

struct Outcome {
  int64_t bytes, time;
};

// Every feasible saved set's bytes and time.
std::vector<Outcome> every_plan(const tg::RematProblem& time, const std::vector<int64_t>& bytes) {
  std::vector<Outcome> all;
  const size_t n = time.values.size();
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    std::vector<bool> saved(n);
    int64_t b = 0;
    for (size_t v = 0; v < n; ++v)
      if ((saved[v] = (mask >> v) & 1)) b += bytes[v];
    const int64_t t = tg::plan_cost(time, saved);
    if (t < tg::RematProblem::kInfinite) all.push_back({b, t});
  }
  return all;
}

}  // namespace

TEST_CASE("the frontier's plans are Pareto-optimal among all saved sets, from the fastest to the fewest bytes") {
  std::mt19937 rng(20261205);
  int checked = 0, with_trade_offs = 0;
  for (int round = 0; round < 200; ++round) {
    const tg::RematProblem time = tg_test::random_problem(rng, 6 + round % 9);  // 6..14 values
    std::vector<int64_t> bytes;
    for (const tg::RematProblem::Value& v : time.values) bytes.push_back(v.is_input ? 0 : std::uniform_int_distribution<int64_t>(1, 50)(rng));
    const std::vector<Outcome> all = every_plan(time, bytes);
    if (all.empty()) {
      CHECK_THROWS_AS(tg::plan_frontier(time, bytes), tg::NoFinitePlan);
      continue;
    }
    const std::vector<tg::PlanPoint> frontier = tg::plan_frontier(time, bytes);
    INFO("round " << round << ", " << time.values.size() << " values, " << frontier.size() << " plans");
    REQUIRE(!frontier.empty());
    for (size_t i = 1; i < frontier.size(); ++i) {
      CHECK(frontier[i].activation_bytes < frontier[i - 1].activation_bytes);
      CHECK(frontier[i].time_fs > frontier[i - 1].time_fs);
    }
    for (const tg::PlanPoint& p : frontier) {
      CHECK(tg::plan_cost(time, p.plan.saved) == p.time_fs);  // a real plan, costing what it says
      const bool dominated = std::any_of(all.begin(), all.end(), [&](const Outcome& o) {
        return o.bytes <= p.activation_bytes && o.time <= p.time_fs && (o.bytes < p.activation_bytes || o.time < p.time_fs);
      });
      CHECK(!dominated);
    }
    const auto fastest = std::min_element(all.begin(), all.end(), [](const Outcome& a, const Outcome& b) { return a.time < b.time; });
    const auto smallest = std::min_element(all.begin(), all.end(), [](const Outcome& a, const Outcome& b) { return a.bytes < b.bytes; });
    CHECK(frontier.front().time_fs == fastest->time);
    CHECK(frontier.back().activation_bytes == smallest->bytes);
    with_trade_offs += frontier.size() >= 3;
    ++checked;
  }
  CHECK(checked > 120);
  CHECK(with_trade_offs > 15);  // enough problems with corners between the ends to test the sweep
}

TEST_CASE("pareto() keeps one plan per size, and only plans nothing else beats") {
  auto point = [](int64_t bytes, int64_t time) {
    tg::PlanPoint p;
    p.activation_bytes = bytes;
    p.time_fs = time;
    return p;
  };
  const std::vector<tg::PlanPoint> kept = tg::pareto({point(10, 5), point(10, 4), point(8, 6), point(8, 4), point(3, 9), point(5, 9), point(0, 20)});
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const tg::PlanPoint& p : kept) got.emplace_back(p.activation_bytes, p.time_fs);
  CHECK(got == std::vector<std::pair<int64_t, int64_t>>{{8, 4}, {3, 9}, {0, 20}});
}

TEST_CASE("a focused sweep finds the plan a choice takes, as the whole frontier does") {
  std::mt19937 rng(20261206);
  int compared = 0;
  for (int round = 0; round < 300; ++round) {
    const tg::RematProblem time = tg_test::random_problem(rng, 8 + round % 9);
    std::vector<int64_t> bytes;
    for (const tg::RematProblem::Value& v : time.values) bytes.push_back(v.is_input ? 0 : std::uniform_int_distribution<int64_t>(1, 50)(rng));
    std::vector<tg::PlanPoint> full;
    try {
      full = tg::plan_frontier(time, bytes);
    } catch (const tg::NoFinitePlan&) {
      continue;
    }
    if (full.size() < 3) continue;
    INFO("round " << round);
    const int64_t limit = (full.front().time_fs + full.back().time_fs) / 2;
    const int64_t budget = (full.front().activation_bytes + full.back().activation_bytes) / 2;
    auto last_within_time = [&](const std::vector<tg::PlanPoint>& f) {
      const tg::PlanPoint* pick = nullptr;
      for (const tg::PlanPoint& p : f)
        if (p.time_fs <= limit) pick = &p;
      return std::pair(pick->activation_bytes, pick->time_fs);
    };
    auto first_within_budget = [&](const std::vector<tg::PlanPoint>& f) {
      for (const tg::PlanPoint& p : f)
        if (p.activation_bytes <= budget) return std::pair(p.activation_bytes, p.time_fs);
      return std::pair(int64_t(-1), int64_t(-1));
    };
    tg::FrontierFocus by_time;
    by_time.time_limit = [&](const tg::PlanPoint&) { return limit; };
    tg::FrontierFocus by_budget;
    by_budget.byte_budget = budget;
    CHECK(last_within_time(tg::plan_frontier(time, bytes, by_time)) == last_within_time(full));
    CHECK(first_within_budget(tg::plan_frontier(time, bytes, by_budget)) == first_within_budget(full));
    ++compared;
  }
  CHECK(compared > 20);
}

TEST_CASE("the sweep's fewest-bytes end stays within the cut's range when activations are huge") {
  std::mt19937 rng(7);
  int planned = 0;
  for (int round = 0; round < 60; ++round) {
    const tg::RematProblem time = tg_test::random_problem(rng, 10);
    std::vector<int64_t> small, huge;
    for (const tg::RematProblem::Value& v : time.values) {
      small.push_back(v.is_input ? 0 : 1 + round % 7);
      huge.push_back(v.is_input ? 0 : (int64_t(1) << 42) * (1 + round % 7));  // 4 TiB and up each
    }
    std::vector<tg::PlanPoint> expected;
    try {
      expected = tg::plan_frontier(time, small);
    } catch (const tg::NoFinitePlan&) {
      continue;  // (the random policies leave no plan)
    }
    INFO("round " << round);
    const std::vector<tg::PlanPoint> f = tg::plan_frontier(time, huge);  // must not throw
    CHECK(f.back().activation_bytes == expected.back().activation_bytes * (int64_t(1) << 42));  // the same fewest bytes
    CHECK(f.front().time_fs == expected.front().time_fs);
    ++planned;
  }
  CHECK(planned > 30);
}
