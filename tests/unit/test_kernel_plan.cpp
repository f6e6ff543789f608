// Kernel plans: what fusion decides for each kernel (kind, block, runs, the row held or streamed,
// the passes over the row), and that the emitter writes what the plan says.
#include <catch2/catch.hpp>

#include "codegen/emit_cuda.h"
#include "codegen/print_kernel_ir.h"
#include "ops/verify.h"
#include "schedule/kernel_plan.h"
#include "support/diagnostics.h"
#include "fused_trace.h"
#include "trace_builder.h"

using test::fused;
using test::op;
using test::tensor;
using Form = tg::KernelPlan::Form;
using Kind = tg::KernelPlan::Kind;

namespace {

// The plan of the trace's one kernel (a copy: the trace may be a temporary).
tg::KernelPlan only_plan(const tg::FusedTrace& f) {
  REQUIRE(f.trace.ops.size() == 1);
  return f.plan(0);
}

std::string forward_text(const tg::FusedTrace& f) {
  const tg::EntryPoint entry = tg::forward_entry(f.trace, nullptr, f.trace.name);
  return tg::emit_cuda(f, tg::lower_kernels(f, entry), entry, "forward.cu", "plan.json").text;
}

std::string pointwise_trace(const std::string& dtype, const std::string& shape) {
  return test::trace("pw", tensor("x", shape, dtype), op("prims.exp", "[\"x\"]", tensor("y", shape, dtype)), "\"y\"");
}

std::string row_sum_trace(int64_t length) {
  const std::string shape = "[8, " + std::to_string(length) + "]";
  return test::trace("rows", tensor("x", shape), op("prims.sum", "[\"x\", [1]]", tensor("y", "[8]")), "\"y\"");
}

// (x - mean) * rsqrt(var + eps) over rows of 1024, with the statistics as outputs.
std::string normalize_trace() {
  const std::string row = "[8, 1024]";
  std::string ops = "{\"op\": \"prims.var_mean\", \"args\": [\"x\", [1]], \"kwargs\": {\"correction\": 0}, \"out\": [" + tensor("v", "[8]") +
                    "," + tensor("m", "[8]") + "]}," + op("prims.broadcast_in_dim", "[\"m\", [8, 1024], [0]]", tensor("mb", row)) + "," +
                    op("prims.sub", "[\"x\", \"mb\"]", tensor("d", row)) + "," + op("prims.add", "[\"v\", 1e-5]", tensor("ve", "[8]")) + "," +
                    op("prims.rsqrt", "[\"ve\"]", tensor("r", "[8]")) + "," +
                    op("prims.broadcast_in_dim", "[\"r\", [8, 1024], [0]]", tensor("rb", row)) + "," +
                    op("prims.mul", "[\"d\", \"rb\"]", tensor("y", row));
  return test::trace("norm", tensor("x", row), ops, "\"y\", \"m\", \"r\"");
}

// softmax_trace over rows of T, T taken at run time in [min_t, max_t] (read at T = min_t, as a
// probe reads it).
tg::FusedTrace run_time_softmax(int64_t min_t, int64_t max_t) {
  std::string json = test::softmax_trace(7);
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = json.find(from); at != std::string::npos; at = json.find(from, at + to.size())) json.replace(at, from.size(), to);
  };
  replace_all("\"shape\": [8, 7]", "\"shape\": [8, \"T\"]");  // the shapes, then the broadcasts' sizes
  replace_all("[8, 7]", "[8, {\"size\": \"T\"}]");
  const std::string symbols = "\"symbols\": {\"T\": {\"min\": " + std::to_string(min_t) + ", \"max\": " + std::to_string(max_t) + "}}, ";
  json.insert(json.find("\"inputs\""), symbols);
  tg::Trace t = tg::read_trace(json, {{"T", min_t}});
  t.sizes_at_run_time = true;
  tg::FusedTrace f = tg::fuse(tg::remove_dead_ops(tg::decompose(std::move(t))));
  tg::verify_pass(f.trace, "fuse");
  return f;
}

}  // namespace

TEST_CASE("a pointwise kernel's runs are 16 bytes of its widest operand") {
  CHECK(only_plan(fused(pointwise_trace("f32", "[64]"))).lanes == 4);
  CHECK(only_plan(fused(pointwise_trace("bf16", "[64]"))).lanes == 8);
  CHECK(only_plan(fused(pointwise_trace("f64", "[64]"))).lanes == 2);
  // Fewer elements than a run: one at a time.
  CHECK(only_plan(fused(pointwise_trace("f32", "[3]"))).lanes == 1);
  const tg::KernelPlan plan = only_plan(fused(pointwise_trace("f32", "[64]")));
  CHECK(plan.kind == Kind::pointwise);
  CHECK(plan.block == tg::kPointwiseBlock);
}

TEST_CASE("a row read by one pass only is streamed, not held in registers") {
  const tg::FusedTrace planned_t = fused(row_sum_trace(1024));
  const tg::Trace& t = planned_t.trace;
  const tg::KernelPlan plan = only_plan(planned_t);
  CHECK(plan.kind == Kind::row);
  CHECK(plan.block == 256);
  CHECK(plan.passes_over_row() == 1);
  CHECK(plan.held == 0);
  CHECK(plan.stream_run == 4);  // 16 bytes of f32, every thread a run
  REQUIRE(plan.rounds.size() == 1);
  CHECK(plan.rounds[0].steps.size() == 1);
  CHECK(plan.rounds[0].steps[0].form == Form::accumulate);
  CHECK(t.value(plan.row_results.at(0)).name == "y");
  // A row too short for a run per thread streams element by element.
  CHECK(only_plan(fused(row_sum_trace(1000))).stream_run == 1);
}

TEST_CASE("softmax's max and sum: two rounds over a row held in registers, one online step over a streamed row") {
  const tg::FusedTrace held_t = fused(test::softmax_trace());
  const tg::Trace& t = held_t.trace;
  const tg::KernelPlan held = only_plan(held_t);
  REQUIRE(held.rounds.size() == 3);
  CHECK(held.rounds[0].steps.at(0).form == Form::accumulate);
  CHECK(t.value(held.rounds[0].steps.at(0).result).name == "m");
  CHECK(t.value(held.rounds[1].steps.at(0).result).name == "s");
  CHECK(t.value(held.rounds[2].writes.at(0)).name == "y");
  CHECK(held.block == 32);
  CHECK(held.held == 1);  // three passes read the row: each thread holds its element

  // 1000 columns do not split over a block: the row is streamed, and max and sum share a pass.
  const tg::FusedTrace streamed_t = fused(test::softmax_trace(1000));
  const tg::KernelPlan streamed = only_plan(streamed_t);
  REQUIRE(streamed.rounds.size() == 2);
  REQUIRE(streamed.rounds[0].steps.size() == 1);
  const tg::KernelPlan::Step& both = streamed.rounds[0].steps[0];
  CHECK(both.form == Form::online_max_sum);
  CHECK(streamed_t.trace.value(both.result).name == "m");
  CHECK(streamed_t.trace.value(both.joined).name == "s");
  CHECK(streamed.rounds[1].steps.empty());
  CHECK(streamed_t.trace.value(streamed.rounds[1].writes.at(0)).name == "y");
  CHECK(streamed.held == 0);
}

TEST_CASE("var_mean takes two passes, the normalized row a third; the row is held in runs") {
  const tg::FusedTrace planned_t = fused(normalize_trace());
  const tg::Trace& t = planned_t.trace;
  const tg::KernelPlan plan = only_plan(planned_t);
  REQUIRE(plan.rounds.size() == 3);
  CHECK(plan.rounds[0].steps.at(0).form == Form::variance_mean);
  CHECK(plan.rounds[1].steps.at(0).form == Form::variance_spread);
  CHECK(t.value(plan.rounds[2].writes.at(0)).name == "y");
  CHECK(plan.held == 4);      // 1024 elements, 256 threads
  CHECK(plan.held_run == 4);  // 16 bytes of f32
  CHECK(plan.row_results.size() == 2);  // m and r, one per row
  const std::string text = tg::plan_text(plan, t.ops[0], t);
  CHECK(text == "row block=256 held=4 held_run=4 hoisted=0 stream_run=1 | pass 1: var_mean v (mean) | pass 2: var_mean v (deviations) | "
                "pass 3: write y | then per row: store m, r");
}

TEST_CASE("a sum over the leading dim is a column kernel, named as one") {
  const tg::FusedTrace planned_t = fused(test::trace("cols", tensor("x", "[8, 64]"), op("prims.sum", "[\"x\", [0]]", tensor("y", "[64]")), "\"y\""));
  const tg::Trace& t = planned_t.trace;
  const tg::KernelPlan plan = only_plan(planned_t);
  CHECK(plan.kind == Kind::column);
  CHECK(plan.block == tg::kColumnBlock);
  CHECK(t.ops[0].label == "cols_columnreduce_y");
  // Rows that are not a multiple of 32: a row kernel with a strided read.
  const tg::FusedTrace planned_odd = fused(test::trace("cols", tensor("x", "[8, 60]"), op("prims.sum", "[\"x\", [0]]", tensor("y", "[60]")), "\"y\""));
  const tg::Trace& odd = planned_odd.trace;
  CHECK(only_plan(planned_odd).kind == Kind::row);
  CHECK(odd.ops[0].label == "cols_rowreduce_y");
}

TEST_CASE("the emitter writes the plan it is given") {
  const tg::FusedTrace planned_t = fused(normalize_trace());
  const tg::Trace& t = planned_t.trace;
  const std::string held = forward_text(planned_t);
  CHECK(held.find("c_x[4]") != std::string::npos);  // the row in registers
  CHECK(held.find("j += blockDim.x") == std::string::npos);
  // The same kernel planned to stream its row: every pass reads it from memory.
  tg::FusedTrace streamed = planned_t;
  streamed.plans[0]->held = 0;
  streamed.plans[0]->held_run = 1;
  const std::string text = forward_text(streamed);
  CHECK(text.find("c_x[") == std::string::npos);
  CHECK(test::count(text, "for (int64_t j = threadIdx.x; j < 1024; j += blockDim.x) {") == 3);
}

TEST_CASE("a listing's plan line reads back as the kernel's plan, with only the changes that keep the code correct") {
  const tg::FusedTrace planned_t = fused(normalize_trace());
  const tg::Trace& t = planned_t.trace;
  const tg::Op& kernel = t.ops[0];
  const std::string planned = tg::plan_text(planned_t.plan(0), kernel, t);
  CHECK(tg::plan_text(tg::plan_from_listing(planned, t, kernel, "k.txt"), kernel, t) == planned);
  // Asking for the row to be streamed: held=0 (and what goes with it) without the passes.
  const tg::KernelPlan streamed = tg::plan_from_listing("row held=0", t, kernel, "k.txt");
  CHECK(streamed.held == 0);
  CHECK(streamed.held_run == 1);
  CHECK(streamed.rounds.size() == 3);
  // Anything the emitter was not planned for is refused, saying what is planned.
  auto refusal = [&](const std::string& line) {
    try {
      tg::plan_from_listing(line, t, kernel, "k.txt:3");
    } catch (const tg::UserError& e) {
      CHECK(e.where == "k.txt:3");
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal("row block=512").find("block=512 is not a plan thunder-gen writes for this kernel (it plans block=256)") != std::string::npos);
  CHECK(refusal("row held=8").find("held=8 is not a plan") != std::string::npos);
  CHECK(refusal("pointwise block=256").find("the kernel is row") != std::string::npos);
  CHECK(refusal("row lanes=4").find("has no \"lanes\"") != std::string::npos);
  CHECK(refusal("row held").find("expected key=number") != std::string::npos);
  CHECK(refusal("row block=256 | pass 1: write y").find("the passes listed are not those") != std::string::npos);
}

TEST_CASE("a row of run-time length is held where it is short enough, streamed by a twin where not") {
  // Every T up to 40 fits one element a thread of 256: held, the max and the sum in two passes
  // over the registers.
  const tg::FusedTrace short_t = run_time_softmax(1, 40);
  const tg::KernelPlan short_rows = only_plan(short_t);
  CHECK(short_rows.block == 256);
  CHECK(short_rows.held == 1);
  CHECK(short_rows.held_run == 1);
  CHECK(!short_rows.long_rows);
  REQUIRE(short_rows.rounds.size() == 3);
  CHECK(short_rows.rounds[0].steps.at(0).form == Form::accumulate);
  // Up to 8192: x takes one register an element, 16 at most, so rows up to 16 * 256 are held,
  // and the longer ones streamed by the twin's plan, max and sum in one online pass.
  const tg::FusedTrace long_t = run_time_softmax(1, 8192);
  const tg::KernelPlan held = only_plan(long_t);
  CHECK(held.held == 16);
  CHECK(held.longest_held_row() == 4096);
  REQUIRE(held.long_rows);
  CHECK(held.long_rows->held == 0);
  REQUIRE(held.long_rows->rounds.size() == 2);
  CHECK(held.long_rows->rounds[0].steps.at(0).form == Form::online_max_sum);
  const tg::Op& kernel = long_t.trace.ops[0];
  const std::string text = tg::plan_text(held, kernel, long_t.trace);
  CHECK(text.find("row block=256 held=16 held_run=1 hoisted=0 stream_run=1 | pass 1: amax m | pass 2: sum s | pass 3: write y") == 0);
  CHECK(text.find(" || rows longer than 4096: row block=256 held=0 held_run=1 hoisted=0 stream_run=1 | pass 1: amax m and sum s (online)") !=
        std::string::npos);
  // Rows that are all longer than that: streamed alone.
  const tg::KernelPlan all_long = only_plan(run_time_softmax(4097, 8192));
  CHECK(all_long.held == 0);
  CHECK(!all_long.long_rows);
  // A listing asking for held=0 gets the streamed plan.
  CHECK(tg::plan_from_listing("row held=0", long_t.trace, kernel, "k.txt").held == 0);
  // The code: the held kernel masks each element past the row, and its twin is launched for the longer rows.
  const std::string code = forward_text(long_t);
  CHECK(code.find("if (j < row_length) {") != std::string::npos);
  CHECK(code.find("softmax_rowstream_y(") != std::string::npos);
  CHECK(test::one_line(code).find("if (tg_size_T <= 4096) // rows held in registers") != std::string::npos);
  // Holding 16 a thread, 256 apart, the launch still takes as many threads as the row needs (a
  // row shorter than 256 is all k = 0's).
  CHECK(code.find("const int64_t j = threadIdx.x + k * 256;") != std::string::npos);
  CHECK(test::count(code, "tg::row_block(tg_size_T, 256)") == 2);
  // The kernel IR listing shows the twin's body, and says when it runs.
  const tg::EntryPoint entry = tg::forward_entry(long_t.trace, nullptr, long_t.trace.name);
  const std::string listing = tg::print_kernel_program(tg::lower_kernels(long_t, entry));
  CHECK(listing.find("  twin softmax_rowstream_y  # rows streamed, launched for rows longer than 4096\n  twin body:\n") != std::string::npos);
}
