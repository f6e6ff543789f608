// Rematerialization: the min-cut plan against exhaustive search, and the plans policies give.
#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include "autograd/autograd.h"
#include "autograd/partition.h"
#include "autograd/remat.h"
#include "frontend/overrides.h"
#include "frontend/reader.h"
#include "lower/decompose.h"
#include "lower/rng.h"
#include "ops/op_table.h"
#include "support/diagnostics.h"
#include "remat_problems.h"


TEST_CASE("the min-cut plan costs what the best of all saved sets costs, on random graphs") {
  std::mt19937 rng(20261130);
  int feasible = 0, infeasible = 0;
  for (int round = 0; round < 300; ++round) {
    tg::RematProblem p = tg_test::random_problem(rng, 6 + round % 11);  // 6..16 values
    const size_t n = p.values.size();
    int64_t best = tg::RematProblem::kInfinite;
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      std::vector<bool> saved(n);
      for (size_t v = 0; v < n; ++v) saved[v] = (mask >> v) & 1;
      best = std::min(best, tg::plan_cost(p, saved));
    }
    INFO("round " << round << ", " << n << " values");
    if (best >= tg::RematProblem::kInfinite) {
      CHECK_THROWS_AS(tg::plan_remat(p), tg::NoFinitePlan);
      ++infeasible;
      continue;
    }
    tg::RematPlan plan = tg::plan_remat(p);
    CHECK(plan.cost == best);
    CHECK(tg::plan_cost(p, plan.saved) == plan.cost);  // the plan is feasible and costs what it says
    ++feasible;
  }
  CHECK(feasible > 200);  // the generator must mostly make solvable problems to test anything
  CHECK(infeasible > 0);
}

namespace {

tg::Partition plan_for(const std::string& file, const std::vector<std::string>& tags, const tg::RematOptions& options = {}) {
  std::vector<tg::Override> overrides;
  for (const std::string& t : tags) overrides.push_back(tg::parse_tag_flag(t));
  tg::Trace t = tg::apply_overrides(tg::bind_rng(tg::read_trace_file(std::string(TG_EXAMPLES_DIR) + "/" + file)), overrides);
  return tg::partition(tg::autograd(tg::decompose(t, true)), options);
}

std::vector<std::string> saved_names(const tg::Partition& p) {
  std::vector<std::string> names;
  for (const tg::SavedValue& s : p.saved) names.push_back(p.backward.value(s.value).name);
  return names;
}

bool backward_has(const tg::Partition& p, tg::OpKind kind) {
  for (const tg::Op& op : p.backward.ops)
    if (op.info->kind == kind) return true;
  return false;
}

}  // namespace

TEST_CASE("exp(exp(exp(x))) @ w saves the inputs and recomputes the chain; a tag keeps the last exp") {
  // t0 = x / 4, t1..t3 the exps, t4 = t3 @ w.
  tg::Partition by_default = plan_for("exp_chain_matmul.json", {});
  CHECK(saved_names(by_default) == std::vector<std::string>{"x", "w"});
  CHECK(by_default.recomputed.size() >= 3);
  tg::Partition tagged = plan_for("exp_chain_matmul.json", {"@t3=save"});
  CHECK(saved_names(tagged) == std::vector<std::string>{"x", "w", "t3"});
}

TEST_CASE("dropout: save keeps only the mask, recompute keeps only the seed and offset") {
  for (const char* save : {"torch.nn.functional.dropout=save", "@t0=save"}) {
    tg::Partition p = plan_for("dropout_p09.json", {save});
    REQUIRE(p.saved.size() == 1);
    const tg::Value& mask = p.backward.value(p.saved[0].value);
    CHECK(mask.dtype == tg::DType::b8);
    CHECK(mask.bit_packed);
    CHECK(tg::stored_bytes(mask) == 131072);
    CHECK(!backward_has(p, tg::OpKind::uniform_philox));
  }
  tg::Partition recompute = plan_for("dropout_p09.json", {"torch.nn.functional.dropout=recompute"});
  CHECK(saved_names(recompute) == std::vector<std::string>{"philox_seed", "philox_offset"});
  CHECK(backward_has(recompute, tg::OpKind::uniform_philox));
  // The later source wins.
  CHECK(plan_for("dropout_p09.json", {"torch.nn.functional.dropout=recompute", "@t0=save"}).saved.size() == 1);
}

TEST_CASE("a GPT-2 MLP block plans the same mask choices with the dropout inside it") {
  tg::Partition save = plan_for("gpt2_mlp.json", {"torch.nn.functional.dropout=save"});
  tg::Partition recompute = plan_for("gpt2_mlp.json", {"torch.nn.functional.dropout=recompute"});
  CHECK(!backward_has(save, tg::OpKind::uniform_philox));
  CHECK(backward_has(recompute, tg::OpKind::uniform_philox));
  int64_t b8_saved = 0;
  for (const tg::SavedValue& s : save.saved) b8_saved += save.backward.value(s.value).dtype == tg::DType::b8;
  CHECK(b8_saved == 1);
  for (const tg::SavedValue& s : recompute.saved) CHECK(recompute.backward.value(s.value).dtype != tg::DType::b8);
}

TEST_CASE("override selectors that select nothing, and bad policies, are diagnosed") {
  CHECK_THROWS_AS(plan_for("dropout_p09.json", {"@nope=save"}), tg::UserError);
  CHECK_THROWS_AS(plan_for("dropout_p09.json", {"torch.nn.functional.gelu=save"}), tg::UserError);
  CHECK_THROWS_AS(tg::parse_tag_flag("@t0=keep"), tg::UserError);
  CHECK_THROWS_AS(tg::parse_tag_flag("t0"), tg::UserError);
}

TEST_CASE("--no-pack-bool stores the saved mask a byte per element") {
  tg::RematOptions unpacked;
  unpacked.pack_bools = false;
  tg::Partition p = plan_for("dropout_p09.json", {"torch.nn.functional.dropout=save"}, unpacked);
  REQUIRE(p.saved.size() == 1);
  CHECK(!p.backward.value(p.saved[0].value).bit_packed);
  CHECK(tg::stored_bytes(p.backward.value(p.saved[0].value)) == 1048576);
}

TEST_CASE("an activation budget is met, a smaller one never saves more, and one too small names the least") {
  for (const char* model : {"gpt2_mlp.json", "attention_block.json", "llama_mlp.json"}) {
    INFO(model);
    const int64_t unbounded = plan_for(model, {}).activation_bytes;
    REQUIRE(unbounded > 0);
    int64_t previous = unbounded;
    int64_t least = -1;
    for (int64_t budget = unbounded; budget > 0; budget = budget * 3 / 4) {
      tg::RematOptions options;
      options.activation_budget = budget;
      try {
        tg::Partition p = plan_for(model, {}, options);
        CHECK(p.activation_bytes <= budget);
        CHECK(p.activation_bytes <= previous);
        previous = p.activation_bytes;
      } catch (const tg::UserError& e) {
        CHECK(std::string(e.what()).find("the smallest achievable is") != std::string::npos);
        least = budget;
        break;
      }
    }
    CHECK(previous < unbounded);  // the budgets did force more recomputation
    if (least >= 0) {
      // The smallest achievable budget, as the error names it, is itself achievable.
      tg::RematOptions options;
      options.activation_budget = least;
      try {
        plan_for(model, {}, options);
      } catch (const tg::UserError& e) {
        std::string text = e.what();
        options.activation_budget = std::stoll(text.substr(text.find("is ") + 3));
        CHECK(plan_for(model, {}, options).activation_bytes <= *options.activation_budget);
      }
    }
  }
}
