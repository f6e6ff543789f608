// Fusion: which kernels a trace becomes, and what each reads and writes, where a test needs the
// API (the kernels' fields, counts over many kernels, generated traces). Checks of what a pass's
// output says are tests/passes/*.test files (docs/design-notes.md, "how to test one pass").
#include <catch2/catch.hpp>

#include <algorithm>

#include "codegen/emit_cuda.h"
#include "ops/op_table.h"
#include "ops/verify.h"
#include "fused_trace.h"
#include "trace_builder.h"

using test::fused;
using test::op;
using test::tensor;

namespace {

// The forward.cu of a fused trace that does not train.
tg::CudaFile emit_forward(const tg::FusedTrace& f, const std::string& input_file) {
  const tg::EntryPoint entry = tg::forward_entry(f.trace, nullptr, f.trace.name);
  return tg::emit_cuda(f, tg::lower_kernels(f, entry), entry, "forward.cu", input_file);
}

std::vector<std::string> names(const tg::Trace& t, const std::vector<tg::ValueId>& ids) {
  std::vector<std::string> out;
  for (tg::ValueId v : ids) out.push_back(t.value(v).name);
  return out;
}
std::vector<std::string> arg_names(const tg::Trace& t, const tg::Op& k) {
  std::vector<std::string> out;
  for (const tg::Arg& a : k.args) out.push_back(t.value(a.value).name);
  return out;
}

const std::string kRow = "[8, 32]";

}  // namespace

// The row kernel of s = x0 + ... + x<operands-1> over [4, 8192], then z = s * sum(s, [1]): two
// passes over the row (the sum, then z), so worth holding in registers where it fits.
std::string wide_row_kernel(int operands, bool second_pass = true) {
  std::string inputs, ops, last = "x0";
  for (int i = 0; i < operands; ++i) inputs += (i ? "," : "") + tensor("x" + std::to_string(i), "[4, 8192]");
  for (int i = 1; i < operands; ++i) {
    const std::string next = "s" + std::to_string(i);
    ops += op("prims.add", "[\"" + last + "\", \"x" + std::to_string(i) + "\"]", tensor(next, "[4, 8192]")) + ",";
    last = next;
  }
  ops += op("prims.sum", "[\"" + last + "\", [1]]", tensor("y", "[4]"));
  if (!second_pass) return emit_forward(fused(test::trace("wide", inputs, ops, "\"y\"")), "wide.json").text;
  ops += "," + op("prims.broadcast_in_dim", "[\"y\", [4, 8192], [0]]", tensor("yb", "[4, 8192]")) + "," +
         op("prims.mul", "[\"" + last + "\", \"yb\"]", tensor("z", "[4, 8192]"));
  return emit_forward(fused(test::trace("wide", inputs, ops, "\"z\"")), "wide.json").text;
}

TEST_CASE("a row too long for 16 elements a thread at 256 threads takes a larger block that holds it in registers") {
  const std::string one = wide_row_kernel(1);  // 8192 / 512 = 16 a thread
  CHECK(one.find("__launch_bounds__(512)") != std::string::npos);
  CHECK(one.find("16 elements per thread in runs of 4, read once") != std::string::npos);
  // Three operands need 48 registers a thread at 512 threads (32 allowed) and 24 at 1024 (16
  // allowed): no block holds them, and the row stays at 256 threads, read from memory.
  const std::string three = wide_row_kernel(3);
  CHECK(three.find("__launch_bounds__(256)") != std::string::npos);
  CHECK(three.find("read once") == std::string::npos);
}

TEST_CASE("a row held in registers is read and written in 16-byte runs where the pointers are aligned") {
  const std::string k = wide_row_kernel(1);
  // Thread t holds elements 4t .. 4t+3 of each 2048 (512 threads x 4): four runs of four floats.
  CHECK(k.find("if (tg::aligned16(g_x0)) {") != std::string::npos);
  CHECK(k.find("const int64_t j = run * 2048 + threadIdx.x * 4;") != std::string::npos);
  CHECK(k.find("tg::load_run_to<4>(g_x0, row * 8192 + j, c_x0 + run * 4);") != std::string::npos);
  CHECK(k.find("tg::store_run_from<4>(g_z, row * 8192 + j, w_z + run * 4);") != std::string::npos);
  // Element by element otherwise, at the same places: the fill and the store (the passes between
  // read c_x0[k] and need no j).
  CHECK(test::count(k, "const int64_t j = (k / 4) * 2048 + threadIdx.x * 4 + k % 4;") == 2);
  CHECK(k.find("threadIdx.x + k * 512") == std::string::npos);
}

TEST_CASE("an operand shaped like one row (a LayerNorm's weight) is read once before the rows, in runs") {
  // y = (x - mean(x)) * w over x [64, 1024], w [1024]: 4 elements a thread in one run of 4.
  std::string ops = op("prims.sum", "[\"x\", [1]]", tensor("s", "[64]")) + "," +
                    op("prims.broadcast_in_dim", "[\"s\", [64, 1024], [0]]", tensor("sb", "[64, 1024]")) + "," +
                    op("prims.sub", "[\"x\", \"sb\"]", tensor("d", "[64, 1024]")) + "," +
                    op("prims.broadcast_in_dim", "[\"w\", [64, 1024], [1]]", tensor("wb", "[64, 1024]")) + "," +
                    op("prims.mul", "[\"d\", \"wb\"]", tensor("y", "[64, 1024]"));
  const std::string k =
      emit_forward(fused(test::trace("scaled", tensor("x", "[64, 1024]") + "," + tensor("w", "[1024]"), ops, "\"y\"")), "scaled.json")
          .text;
  const size_t fill = k.find("tg::load_run_to<4>(g_w, j, c_w);"), rows = k.find("for (int64_t row = blockIdx.x;");
  REQUIRE(fill != std::string::npos);
  REQUIRE(rows != std::string::npos);
  CHECK(fill < rows);
  CHECK(k.find("c_w[k] = tg::load(g_w, j);") < rows);  // (unaligned)
  CHECK(k.find("* c_w[k])") > rows);
  CHECK(test::count(k, "tg::load(g_w,") == 1);  // not in the row loop
}

TEST_CASE("a row that only one pass reads is streamed from memory in 16-byte runs, not held in registers") {
  const std::string k = wide_row_kernel(1, /*second_pass=*/false);
  CHECK(k.find("read once") == std::string::npos);
  // Thread t of 512 takes runs t, t + 512, ... of 4 floats: 2048 runs, 4 a thread, in a loop the
  // compiler unrolls.
  CHECK(k.find("if (tg::aligned16(g_x0)) {  // runs of 4, one access each") != std::string::npos);
  CHECK(k.find("TG_UNROLL for (int n = 0; n < 4; ++n) {") != std::string::npos);
  CHECK(k.find("const int64_t run = threadIdx.x + n * 512;") != std::string::npos);
  CHECK(k.find("tg::load_run_to<4>(g_x0, row * 8192 + run * 4, r_x0);") != std::string::npos);
  CHECK(k.find("r_x0[lane]") != std::string::npos);
  // Element by element where unaligned, into the same arrays in the same order.
  CHECK(k.find("} else {  // element by element, in the same order") != std::string::npos);
  CHECK(test::one_line(k).find("r_x0[lane] = tg::load(g_x0, row * 8192 + run * 4 + lane);") != std::string::npos);
  CHECK(k.find("j += blockDim.x") == std::string::npos);
}

// sum(where(iota == t, x, otherwise), [1]) over x [8, 32], t [8]: cross-entropy's pick of the
// target's log-probability, as Thunder decomposes it.
std::string pick_trace(const std::string& otherwise) {
  std::string ops = op("prims.iota", "[32]", tensor("i", "[32]", "i64"),
                       ", \"kwargs\": {\"start\": 0, \"step\": 1, \"device\": {\"device\": \"cuda:0\"}, \"dtype\": {\"dtype\": \"i64\"}}") +
                    "," + op("prims.broadcast_in_dim", "[\"i\", [8, 32], [1]]", tensor("ib", kRow, "i64")) + "," +
                    op("prims.broadcast_in_dim", "[\"t\", [8, 32], [0]]", tensor("tb", kRow, "i64")) + "," +
                    op("prims.eq", "[\"ib\", \"tb\"]", tensor("hit", kRow, "b8")) + "," +
                    op("prims.where", "[\"hit\", \"x\", " + otherwise + "]", tensor("w", kRow)) + "," +
                    op("prims.sum", "[\"w\", [1]]", tensor("y", "[8]"));
  return test::trace("pick", tensor("x", kRow) + "," + tensor("t", "[8]", "i64"), ops, "\"y\"");
}

TEST_CASE("a sum of where(iota == t, x, 0) over a row is x at t: a load, no pass and no block reduction") {
  const tg::FusedTrace planned_t = fused(pick_trace("0.0"));
  const tg::Trace& t = planned_t.trace;
  REQUIRE(t.ops.size() == 1);
  const std::string cuda = emit_forward(planned_t, "pick.json").text;
  CHECK(cuda.find("a load, no pass") != std::string::npos);
  CHECK(cuda.find("tg::load(g_x, d0 * 32 + at_y)") != std::string::npos);
  CHECK(test::count(cuda, "tg::block_reduce<") == 0);
  // Anything but 0 elsewhere in the row is a real sum.
  const std::string summed = emit_forward(fused(pick_trace("1.0")), "pick.json").text;
  CHECK(summed.find("a load, no pass") == std::string::npos);
  CHECK(test::count(summed, "tg::block_reduce<") == 1);
}

TEST_CASE("long chains through row reductions are cut, so no kernel recomputes the whole chain") {
  // y = y + tanh(y - bcast(sum(y))) stacked 200 times over the same rows.
  std::string ops, prev = "x";
  for (int i = 0; i < 200; ++i) {
    std::string s = "s" + std::to_string(i), b = "b" + std::to_string(i), d = "d" + std::to_string(i), e = "e" + std::to_string(i),
                y = "y" + std::to_string(i);
    ops += (i ? "," : "") + op("prims.sum", "[\"" + prev + "\", [1]]", tensor(s, "[8]")) + "," +
           op("prims.broadcast_in_dim", "[\"" + s + "\", [8, 32], [0]]", tensor(b, kRow)) + "," +
           op("prims.sub", "[\"" + prev + "\", \"" + b + "\"]", tensor(d, kRow)) + "," + op("prims.tanh", "[\"" + d + "\"]", tensor(e, kRow)) + "," +
           op("prims.add", "[\"" + prev + "\", \"" + e + "\"]", tensor(y, kRow));
    prev = y;
  }
  const tg::FusedTrace planned_t = fused(test::trace("deep", tensor("x", kRow), ops, "\"" + prev + "\""));
  const tg::Trace& t = planned_t.trace;
  size_t largest = 0;
  for (const tg::Op& k : t.ops) largest = std::max(largest, k.sub.size());
  CHECK(t.ops.size() > 10);
  CHECK(largest <= 64);
}

TEST_CASE("a value an earlier kernel computes inline, later written for a matmul, is not read before it is written") {
  // a = exp(x) is inline in y1's kernel; the row kernel for y2 comes next; the matmul then needs
  // a in memory and places it in that later row kernel. y1's kernel must still compute a itself.
  std::string ops = op("prims.exp", "[\"x\"]", tensor("a", kRow)) + "," + op("prims.mul", "[\"a\", 2.0]", tensor("y1", kRow)) + "," +
                    op("prims.sum", "[\"x\", [1]]", tensor("s", "[8]")) + "," +
                    op("prims.broadcast_in_dim", "[\"s\", [8, 32], [0]]", tensor("sb", kRow)) + "," +
                    op("prims.add", "[\"x\", \"sb\"]", tensor("y2", kRow)) + "," + op("prims.matmul", "[\"a\", \"w\"]", tensor("m", "[8, 8]"));
  const tg::FusedTrace planned_t = fused(test::trace("late", tensor("x", kRow) + "," + tensor("w", "[32, 8]"), ops, "\"y1\", \"y2\", \"m\""));
  const tg::Trace& t = planned_t.trace;
  // fused() verifies the result: every value is defined before it is read.
  REQUIRE(t.ops.size() == 3);
  CHECK(arg_names(t, t.ops[0]) == std::vector<std::string>{"x"});
}

TEST_CASE("kernels that differ only in their values' names share one function; a literal or a shape keeps them apart") {
  const std::string sq = "[8, 8]";
  std::string ops = op("prims.exp", "[\"x\"]", tensor("a0", sq)) + "," + op("prims.mul", "[\"a0\", 2.0]", tensor("a", sq)) + "," +
                    op("prims.matmul", "[\"a\", \"w\"]", tensor("m", sq)) + "," +  // (a library call ends each kernel)
                    op("prims.exp", "[\"m\"]", tensor("b0", sq)) + "," + op("prims.mul", "[\"b0\", 2.0]", tensor("b", sq)) + "," +
                    op("prims.matmul", "[\"b\", \"w\"]", tensor("n", sq)) + "," +
                    op("prims.exp", "[\"n\"]", tensor("c0", sq)) + "," + op("prims.mul", "[\"c0\", 3.0]", tensor("c", sq)) + "," +
                    op("prims.exp", "[\"z\"]", tensor("d0", "[4, 8]")) + "," + op("prims.mul", "[\"d0\", 2.0]", tensor("d", "[4, 8]"));
  const tg::FusedTrace planned_t = fused(test::trace("dedup", tensor("x", sq) + "," + tensor("w", sq) + "," + tensor("z", "[4, 8]"), ops, "\"c\", \"d\""));
  const tg::Trace& t = planned_t.trace;
  tg::CudaFile cuda = emit_forward(planned_t, "dedup.json");
  std::vector<std::string> own, shared;
  for (const tg::EmittedKernel& k : cuda.kernels)
    if (k.library.empty()) (k.same_code_as.empty() ? own : shared).push_back(k.name + (k.same_code_as.empty() ? "" : "=" + k.same_code_as));
  CHECK(own == std::vector<std::string>{"dedup_pointwise_a", "dedup_pointwise_c", "dedup_pointwise_d"});
  CHECK(shared == std::vector<std::string>{"dedup_pointwise_b=dedup_pointwise_a"});
  size_t functions = 0;
  for (size_t at = cuda.text.find("__global__"); at != std::string::npos; at = cuda.text.find("__global__", at + 1)) ++functions;
  CHECK(functions == 3);
  CHECK(cuda.text.find("TG_LAUNCH(dedup_pointwise_a, tg::grid_for(16, 256), 256, stream, g_m, g_b)") != std::string::npos);
}

TEST_CASE("a reshape of a value in memory, for a matmul, is a view: the emitted kernel list says whose memory it reads") {
  // (What fusion and the emitter make of it: tests/passes/fuse_view_for_matmul.test and
  // emit_view_no_buffer.test.)
  std::string ops = op("prims.reshape", "[\"x3\", [8, 8]]", tensor("x2", "[8, 8]")) + "," + op("prims.matmul", "[\"x2\", \"w\"]", tensor("y", "[8, 8]")) +
                    "," + op("prims.exp", "[\"x3\"]", tensor("e3", "[2, 4, 8]")) + "," +
                    op("prims.reshape", "[\"e3\", [8, 8]]", tensor("e2", "[8, 8]")) + "," + op("prims.matmul", "[\"e2\", \"w\"]", tensor("z", "[8, 8]"));
  const tg::FusedTrace planned_t = fused(test::trace("views", tensor("x3", "[2, 4, 8]") + "," + tensor("w", "[8, 8]"), ops, "\"y\", \"z\""));
  const tg::Trace& t = planned_t.trace;
  tg::CudaFile cuda = emit_forward(planned_t, "views.json");
  REQUIRE(cuda.kernels.size() == 4);
  CHECK(cuda.kernels[0].view_of == "x3");
  CHECK(cuda.kernels[2].view_of.empty());
}

TEST_CASE("an output computed from scalars alone joins the later kernel that uses it, not a kernel of its own before it") {
  // m (an iota broadcast, as a dropout mask comes from the Philox seed) is an output the row kernel
  // for y also uses: one kernel computes m, writes it and reduces x + m, reading only x.
  std::string ops = op("prims.iota", "[32]", tensor("i", "[32]"),
                       ", \"kwargs\": {\"start\": 0, \"step\": 1, \"device\": {\"device\": \"cuda:0\"}, \"dtype\": {\"dtype\": \"f32\"}}") +
                    "," + op("prims.broadcast_in_dim", "[\"i\", [8, 32], [1]]", tensor("m", kRow)) + "," +
                    op("prims.add", "[\"x\", \"m\"]", tensor("a", kRow)) + "," + op("prims.sum", "[\"a\", [1]]", tensor("y", "[8]"));
  const tg::FusedTrace planned_t = fused(test::trace("masks", tensor("x", kRow), ops, "\"y\", \"m\""));
  const tg::Trace& t = planned_t.trace;
  REQUIRE(t.ops.size() == 1);
  CHECK(arg_names(t, t.ops[0]) == std::vector<std::string>{"x"});
  std::vector<std::string> outs = names(t, t.ops[0].outs);
  std::sort(outs.begin(), outs.end());
  CHECK(outs == std::vector<std::string>{"m", "y"});
}

TEST_CASE("a sum over rows that an op reads does not wait for a row kernel, and one that none fits gets its own") {
  // gb is read (scaled) before any row kernel exists: it is placed where it stands. The sum over
  // the rows of a transpose fits no row kernel of x's shape.
  const std::string shape = "[16, 32]";
  std::string ops = op("prims.sum", "[\"g\", [0]]", tensor("gb", "[32]")) + "," + op("prims.mul", "[\"gb\", 2.0]", tensor("gb2", "[32]")) + "," +
                    op("prims.sum", "[\"x\", [1]]", tensor("s", "[16]"));
  const tg::FusedTrace planned_t = fused(test::trace("early", tensor("x", shape) + "," + tensor("g", shape), ops, "\"gb2\", \"s\""));
  const tg::Trace& t = planned_t.trace;
  for (const tg::Op& k : t.ops)
    for (const tg::Op& op : k.sub) CHECK(op.info->kind != tg::OpKind::partial_sum);
  CHECK(names(t, t.ops[0].outs) == std::vector<std::string>{"gb2"});
}

TEST_CASE("a waiting sum is not given up for reductions over other rows placed meanwhile") {
  // g = sum(y * x, [0]) cannot join r0's row kernel (y comes from a matmul after it) and waits for
  // r1's; 20 reductions over z's rows come between (more than the 16 tries a sum has), and count
  // for nothing.
  const std::string shape = "[64, 32]";
  std::string ops = op("prims.amax", "[\"x\", [1]]", tensor("r0", "[64]")) + "," + op("prims.matmul", "[\"x\", \"w\"]", tensor("y", shape)) + "," +
                    op("prims.mul", "[\"y\", \"x\"]", tensor("yx", shape)) + "," + op("prims.sum", "[\"yx\", [0]]", tensor("g", "[32]"));
  std::string outs = "\"r0\", \"g\"";
  for (int i = 0; i < 20; ++i) {  // (distinct: amax(z + i))
    const std::string q = "q" + std::to_string(i), zi = "z" + std::to_string(i);
    ops += "," + op("prims.add", "[\"z\", " + std::to_string(i) + ".0]", tensor(zi, "[8, 16]")) + "," + op("prims.amax", "[\"" + zi + "\", [1]]", tensor(q, "[8]"));
    outs += ", \"" + q + "\"";
  }
  // After r1, an integer sum over the same rows (h: not split into parts) takes the rows' last
  // kernel, so a sum that stopped waiting before r1 could no longer join one at the end.
  ops += "," + op("prims.amax", "[\"y\", [1]]", tensor("r1", "[64]")) + "," + op("prims.sum", "[\"k\", [0]]", tensor("h", "[32]", "i32"));
  outs += ", \"r1\", \"h\"";
  const tg::FusedTrace planned_t = fused(test::trace("late", tensor("x", shape) + "," + tensor("w", "[32, 32]") + "," + tensor("z", "[8, 16]") + "," + tensor("k", shape, "i32"),
                                  ops, outs));
  const tg::Trace& t = planned_t.trace;
  size_t parts = 0;
  for (const tg::Op& k : t.ops)
    for (const tg::Op& op : k.sub) parts += op.info->kind == tg::OpKind::partial_sum;
  CHECK(parts == 1);
}


// An iota starting at a symbol P, its positions scaled into x over [T]: the kernel reads sz_P
// itself, which no shape of the kernel bounds, so a P that may pass 2^30 makes its index
// arithmetic 64-bit (an int would cut P = 3,000,000,000 to a negative start).
std::string offset_positions_kernel(int64_t max_p) {
  const std::string json = R"({"format": "thunder-gen-trace", "version": 1, "name": "offset",
   "symbols": {"T": {"min": 1, "max": 16}, "P": {"min": 0, "max": )" + std::to_string(max_p) + R"(}},
   "inputs": [{"name": "x", "shape": ["T"], "dtype": "f32"}, {"name": "p", "shape": ["P"], "dtype": "u8"}],
   "ops": [{"op": "prims.iota", "args": [{"size": "T"}], "kwargs": {"start": {"size": "P"}, "step": 1, "device": {"device": "cuda:0"},
            "dtype": {"dtype": "i64"}}, "out": [{"name": "r", "shape": ["T"], "dtype": "i64"}]},
           {"op": "prims.convert_element_type", "args": ["r", {"dtype": "f32"}], "out": [{"name": "f", "shape": ["T"], "dtype": "f32"}]},
           {"op": "prims.mul", "args": ["x", "f"], "out": [{"name": "y", "shape": ["T"], "dtype": "f32"}]}],
   "outputs": ["y"]})";
  tg::Trace t = tg::read_trace(json, {{"T", 3}, {"P", 5}});
  t.sizes_at_run_time = true;
  tg::FusedTrace f = tg::fuse(tg::remove_dead_ops(tg::decompose(std::move(t))));
  tg::verify_pass(f.trace, "fuse");
  return emit_forward(f, "offset.json").text;
}

TEST_CASE("a size parameter a kernel reads as a value, not bounded by its shapes, is 64-bit where its range passes 2^30") {
  const std::string small = offset_positions_kernel(1000), large = offset_positions_kernel(int64_t(1) << 40);
  CHECK(small.find("int sz_P") != std::string::npos);
  CHECK(large.find("int sz_P") == std::string::npos);
  CHECK(large.find("int64_t sz_P") != std::string::npos);
}

// A reshape of x [4*n] to [4, n], its element (d0, d1) read as x's text, in a trace taking its
// sizes at run time or not, n an expression over B and T (both 8 here), T declared from `t_min`.
std::string reshape_read_text(const std::string& n, bool sizes_at_run_time, int64_t t_min) {
  const std::string json = R"j({"format": "thunder-gen-trace", "version": 1, "name": "reshaped",
   "symbols": {"B": {"min": 2, "max": 64}, "T": {"min": )j" + std::to_string(t_min) + R"j(, "max": 64}},
   "inputs": [{"name": "x", "shape": ["4*()j" + n + R"j()"], "dtype": "f32"}],
   "ops": [{"op": "prims.reshape", "args": ["x", [4, {"size": ")j" + n + R"j("}]],
            "out": [{"name": "y", "shape": [4, ")j" + n + R"j("], "dtype": "f32"}]}],
   "outputs": ["y"]})j";
  tg::Trace t = tg::read_trace(json, {{"B", 8}, {"T", 8}});
  t.sizes_at_run_time = sizes_at_run_time;
  const std::vector<tg::OperandRead> reads = tg::shape_op_reads(t, t.ops.at(0), tg::identity_index(2));
  REQUIRE(reads.size() == 1);
  std::string text;
  for (const tg::IndexComp& c : reads[0].index) text += (text.empty() ? "" : ", ") + c.text();
  return text;
}

TEST_CASE("a reshape's read, remembered per thread, is the one its trace's sizes give: at run time or not, by the symbols' declarations") {
  // The same sizes each time (8 for B, T and T + 1 - 2): the memo of reads must tell apart the
  // traces' sizes and the dims' expressions. T - 1 has a size parameter of its own only where it
  // cannot be 0 (T from 2).
  const std::string fixed = reshape_read_text("T - 1", false, 2), run_time = reshape_read_text("T - 1", true, 2),
                    may_be_0 = reshape_read_text("T - 1", true, 1);
  CHECK(fixed == "(d0 * 7 + d1)");
  CHECK(run_time == "(d0 * sz_T_m1 + d1)");
  CHECK(may_be_0 == "(d0 * 7 + d1)");
  CHECK(reshape_read_text("T - 1", false, 2) == fixed);
  CHECK(reshape_read_text("T - 1", true, 2) == run_time);
  CHECK(reshape_read_text("T - 1", true, 1) == may_be_0);
  CHECK(reshape_read_text("B", true, 2) == "(d0 * sz_B + d1)");
  CHECK(reshape_read_text("T", true, 2) == "(d0 * sz_T + d1)");
}
