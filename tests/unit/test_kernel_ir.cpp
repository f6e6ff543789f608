// The kernel IR (src/codegen/kernel_ir.h): data that the printers walk. A kernel built here by
// hand prints as CUDA without any lowering state, and the names a block reads are found in the
// IR itself (index arithmetic and guards included), not in printed text.
#include <catch2/catch.hpp>

#include "codegen/kernel_ir.h"
#include "codegen/print_cuda.h"
#include "codegen/share_sine_cosine.h"

namespace kir = tg::kir;

TEST_CASE("a hand-built kernel prints as CUDA: a run load, a one-line lane loop, a store") {
  kir::Kernel k;
  k.name = "k_pointwise_y";
  k.header = {"k_pointwise_y: by hand"};
  k.params = {{"const float* __restrict__", "g_x"}, {"float* __restrict__", "g_y"}};
  k.launch.block = 128;
  kir::Stmt lanes = kir::loop("int", "lane", kir::integer(0), kir::integer(4), nullptr,
                              {kir::assign(kir::subscript(kir::name("r_x"), kir::name("lane")), kir::real(0.5, tg::DType::f32), "*=")}, true);
  lanes.one_line = true;
  const kir::ExprPtr start = kir::binary(kir::name("run"), "*", kir::integer(4));
  k.body = {kir::array("float", "r_x", 4), kir::load_run(kir::name("g_x"), start, kir::name("r_x"), 4), lanes,
            kir::store_run(kir::name("g_y"), start, kir::name("r_x"), 4), kir::barrier()};
  CHECK(kir::print_kernel(k) ==
        "// k_pointwise_y: by hand\n"
        "extern \"C\" __global__ void __launch_bounds__(128) k_pointwise_y(\n"  // (past 100 columns: a parameter a line)
        "    const float* __restrict__ g_x,\n"
        "    float* __restrict__ g_y) {\n"
        "  float r_x[4];\n"
        "  tg::load_run(g_x, run * 4, r_x);\n"
        "  TG_UNROLL for (int lane = 0; lane < 4; ++lane) r_x[lane] *= 0.5f;\n"
        "  tg::store_run(g_y, run * 4, r_x);\n"
        "  __syncthreads();\n"
        "}\n");
}

TEST_CASE("number literals print as the compute type holds them") {
  CHECK(kir::print_expr(*kir::real(1e-5, tg::DType::f32)) == "1e-05f");
  CHECK(kir::print_expr(*kir::real(0.1, tg::DType::f64)) == "0.1");
  CHECK(kir::print_expr(*kir::whole(3, tg::DType::i64)) == "static_cast<int64_t>(3ll)");
  CHECK(kir::print_expr(*kir::whole(2, tg::DType::b8)) == "true");
  CHECK(kir::print_expr(*kir::real(1e40, tg::DType::f32)) == "TG_INFINITY");
}

TEST_CASE("the names a block reads come from the IR: loads, index arithmetic, guards, nested blocks") {
  const tg::IndexExpr d1 = tg::IndexExpr::dim(1, 64);
  const tg::IndexCond inside{{{d1 + (-2), 0, 30, 1}}, ""};
  const tg::IndexExpr picked = tg::IndexExpr::select(inside, d1 + (-2), 1, 0, 29);
  kir::Block body = {kir::comment("d7 in a comment is no read"),
                     kir::decl("int64_t", "ix_a_i1", kir::index(picked)),
                     kir::branch(kir::condition(tg::IndexCond::named("ix_a_in_b")),
                                 {kir::store(kir::name("g_b"), kir::name("i"), kir::load(kir::name("g_a"), kir::name("ix_a_i1")))})};
  const std::set<std::string> names = kir::names_in(body);
  CHECK(names.count("d1"));  // inside the select's guard and value
  CHECK(names.count("ix_a_in_b"));
  CHECK(names.count("g_a"));
  CHECK(names.count("i"));
  CHECK_FALSE(names.count("d7"));
  CHECK(kir::print_expr(*kir::index(picked)) == "(((d1 - 2) >= 0 && (d1 - 2) < 30) ? (d1 - 2) : 0)");
}

namespace {
kir::Stmt trig(const std::string& fn, const std::string& var, const std::string& angle) {
  return kir::decl("float", var, kir::op_code("tg::" + fn + "({0})", {kir::name(angle)}));
}
std::string printed(const kir::Block& block) {
  std::string out;
  for (const kir::Stmt& s : block) out += kir::print_expr(*s.value) + "\n";
  return out;
}
}  // namespace

TEST_CASE("the sine and cosine of one angle in one block share a tg::sincos; an angle written between them does not") {
  kir::Kernel k;
  kir::Stmt inner = kir::loop("int", "lane", kir::integer(0), kir::integer(4), nullptr,
                              {trig("cos", "v_c", "v_a"), trig("sin", "v_s", "v_a"), trig("sin", "v_t", "v_b")}, true);
  // Outside the loop: b's cosine, then b written, then its sine (no pair); a's pair around the
  // loop is named first, and the loop's own apart from it (no shadowing).
  k.body = {trig("sin", "v_u", "v_a"), trig("cos", "v_d", "v_b"), kir::assign(kir::name("v_b"), kir::real(1.0, tg::DType::f32)),
            trig("sin", "v_e", "v_b"), inner, trig("cos", "v_f", "v_a")};
  kir::share_sine_cosine(k);
  // Its own block's pair of a (the loop between them writes nothing), named apart from the loop's.
  REQUIRE(k.body.size() == 7);
  REQUIRE(k.body[5].kind == kir::Stmt::Kind::loop);
  CHECK(k.body[0].text == "sc_a");
  // The loop's pair: cosine first, so the sincos goes before it and each keeps its function.
  CHECK(printed(k.body[5].body) == "tg::sincos(v_a)\nsc_a_1.cos\nsc_a_1.sin\ntg::sin(v_b)\n");
  CHECK(k.body[5].body[0].text == "sc_a_1");
  CHECK(printed({k.body[0], k.body[1], k.body[2], k.body[4], k.body[6]}) ==
        "tg::sincos(v_a)\nsc_a.sin\ntg::cos(v_b)\ntg::sin(v_b)\nsc_a.cos\n");
}

TEST_CASE("every sine and cosine of a paired angle in its block reads the pair; a held element's array or index written between keeps them apart") {
  kir::Kernel k;
  // A backward recomputing one: sin, sin again, cos, then cos again, all of c_x[k].
  k.body = {trig("sin", "v_s", "c_x[k]"), trig("sin", "v_s2", "c_x[k]"), trig("cos", "v_c", "c_x[k]"), trig("cos", "v_c2", "c_x[k]"),
            // c_y[k]'s sine, a run loaded into c_y, its cosine; c_z[k]'s sine, k written, its cosine.
            trig("sin", "v_a", "c_y[k]"), kir::load_run(kir::name("g_y"), kir::name("j"), kir::name("c_y"), 4), trig("cos", "v_b", "c_y[k]"),
            trig("sin", "v_e", "c_z[k]"), kir::assign(kir::name("k"), kir::integer(1)), trig("cos", "v_f", "c_z[k]")};
  kir::share_sine_cosine(k);
  REQUIRE(k.body.size() == 11);
  CHECK(k.body[0].text == "sc_x_k");
  CHECK(printed({k.body[0], k.body[1], k.body[2], k.body[3], k.body[4]}) ==
        "tg::sincos(c_x[k])\nsc_x_k.sin\nsc_x_k.sin\nsc_x_k.cos\nsc_x_k.cos\n");
  CHECK(printed({k.body[5], k.body[7], k.body[8], k.body[10]}) == "tg::sin(c_y[k])\ntg::cos(c_y[k])\ntg::sin(c_z[k])\ntg::cos(c_z[k])\n");
}
