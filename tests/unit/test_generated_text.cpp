// src/support/generated_text.h: identifiers, comments and strings made from trace text; the harness's
// file names (harness_files); the NVRTC cache key's hash (templates/tg_sha256.h); long code lines
// wrapped (wrap_code_lines).
#include <catch2/catch.hpp>
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "frontend/reader.h"
#include "output/emit_harness.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"
#include "tg_sha256.h"
#include "trace_builder.h"

namespace {

bool printable_one_line(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

tg::HarnessFiles files_of(const std::string& inputs, const std::string& outputs, bool training = true) {
  using test::op, test::tensor;
  const std::string ops = op("prims.exp", "[\"x\"]", tensor("t1", "[2]"));
  return tg::harness_files(tg::read_trace(test::trace("files", inputs, ops, outputs)), training);
}

std::string grad_input(const std::string& name) { return "{\"name\": \"" + name + "\", \"shape\": [2], \"dtype\": \"f32\", \"requires_grad\": true}"; }

}  // namespace

TEST_CASE("role prefixes are stems ending in their only underscore, so none is a prefix of another") {
  std::set<std::string> seen;
  for (tg::Role role : tg::kAllRoles) {
    const std::string p(tg::role_prefix(role));
    INFO(p);
    CHECK(p.size() >= 2);
    CHECK(p.find('_') == p.size() - 1);
    for (char c : p.substr(0, p.size() - 1)) CHECK(((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')));
    CHECK(seen.insert(p).second);
  }
  for (const std::string& a : seen)
    for (const std::string& b : seen)
      if (a != b) CHECK(b.rfind(a, 0) != 0);
  CHECK(tg::ident(tg::Role::global, "int") == "g_int");
  CHECK(tg::ident(tg::Role::cached, "TG_UNROLL") == "c_TG_UNROLL");
  CHECK_THROWS_AS(tg::ident(tg::Role::global, "a b"), tg::InternalError);
}

TEST_CASE("a trace name is an entry point's parameter as it is only where nothing can clash with it") {
  for (const char* plain : {"x", "w_fc", "b_fc", "grad_x", "cotangent_t36", "t13_var", "l_self_modules_fc1_weight_", "out0", "r_x", "v_0"})
    CHECK(tg::usable_as_parameter(plain));
  // keywords of C and C++, lower-case macros, what the entry point's body names unqualified, the
  // prefixes of its own locals (g_, p_), the runtime's stems, reserved and upper-case names
  for (const char* clash : {"int", "restrict", "typeof_unqual", "and", "linux", "errno", "stdin", "st_atime", "stream", "workspace", "handle",
                            "memory", "int64_t", "dim3", "std", "g_x", "p_x", "tg", "tg_kernels", "thunder_gen_stream", "cudaGetLastError",
                            "nccl_comm", "_x", "x__y", "X", "W_q", "NULL", "M_PIf", "1x", ""})
    CHECK_FALSE(tg::usable_as_parameter(clash));
}

TEST_CASE("comment text is one printable line that cannot end a comment") {
  const std::string hostile = "x\n#error injected\r\n*/ \\\n \xe2\x80\xae \x1b[31m \x7f end";
  const std::string text = tg::comment_text(hostile);
  CHECK(printable_one_line(text));
  CHECK(text.find("*/") == std::string::npos);
  CHECK(text.back() != '\\');
  CHECK(text == "x\\x0a#error injected\\x0d\\x0a*\\/ \\x5c\\x0a \\xe2\\x80\\xae \\x1b[31m \\x7f end");
  CHECK(tg::comment_line("a\nb", "  ") == "  // a\\x0ab\n");
  CHECK(tg::comment_text("ends with \\") == "ends with \\x5c");  // (never a backslash last: it would join the next line)
}

TEST_CASE("string literals escape what could end them") {
  CHECK(tg::cpp_string("plain") == "\"plain\"");
  CHECK(tg::cpp_string("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(tg::cpp_string("\n1") == "\"\\0121\"");  // three octal digits: the 1 stays a 1
  CHECK(tg::cpp_string("?" "?/") == "\"\\077\\077/\"");  // (a trigraph in old dialects)
  CHECK(printable_one_line(tg::cpp_string("x\n\x1b\xff")));
  CHECK(tg::cmake_string("a$b\"c\\") == "\"a\\$b\\\"c\\\\\"");
  CHECK_THROWS_AS(tg::cmake_string("a\nb"), tg::InternalError);
  CHECK(tg::python_string("it's\n") == "'it\\'s\\n'");
}

TEST_CASE("harness files are the contract's names where they are distinct and short") {
  const tg::HarnessFiles f = files_of(grad_input("x") + "," + test::tensor("w", "[2]"), "\"t1\"");
  CHECK(f.inputs == std::vector<std::string>{"x", "w"});
  CHECK(f.outputs == std::vector<std::string>{"t1"});
  CHECK(f.cotangents == std::vector<std::string>{"cotangent_t1"});
  CHECK(f.gradients == std::vector<std::string>{"grad_x", ""});
  CHECK(files_of(grad_input("x"), "\"t1\"", false).cotangents.empty());
}

TEST_CASE("harness files that would be one file, or are too long, get distinct stems with a hash") {
  // An input named like x's gradient, one named like t1's cotangent, one differing only in case,
  // one of 300 characters.
  const std::string long_name(300, 'q');
  const tg::HarnessFiles f =
      files_of(grad_input("x") + "," + test::tensor("grad_x", "[2]") + "," + test::tensor("cotangent_t1", "[2]") + "," + test::tensor("X", "[2]") +
                   "," + grad_input(long_name),
               "\"t1\", \"t1\", \"x\"");
  std::set<std::string> folded;
  auto all = f.inputs;
  all.insert(all.end(), f.cotangents.begin(), f.cotangents.end());
  for (const std::string& g : f.gradients)
    if (!g.empty()) all.push_back(g);
  all.push_back(f.outputs[0]);
  for (std::string stem : all) {
    INFO(stem);
    CHECK(stem.size() <= 200);
    for (char& c : stem) c = char(std::tolower(static_cast<unsigned char>(c)));
    CHECK(folded.insert(stem).second);
  }
  CHECK(f.inputs[1] == "grad_x");  // inputs keep their names: the first to claim one
  CHECK(f.gradients[0].rfind("grad_x-", 0) == 0);
  CHECK(f.cotangents[0].rfind("cotangent_t1-", 0) == 0);
  CHECK(f.inputs[3].rfind("X-", 0) == 0);
  CHECK(f.inputs[4].rfind(long_name.substr(0, 150), 0) == 0);
  CHECK(f.inputs[4].find('-') != std::string::npos);
  // An output listed twice, and an output that is an input, share the file (the same bytes); their
  // cotangents do not.
  CHECK(f.outputs[1] == f.outputs[0]);
  CHECK(f.outputs[2] == f.inputs[0]);
  CHECK(f.cotangents[0] != f.cotangents[1]);
  // The same trace gives the same stems.
  CHECK(files_of(grad_input("x") + "," + test::tensor("grad_x", "[2]"), "\"t1\"").gradients[0] ==
        files_of(grad_input("x") + "," + test::tensor("grad_x", "[2]"), "\"t1\"").gradients[0]);
}

TEST_CASE("the NVRTC cache's key hash is SHA-256 (FIPS 180-4's test vectors)") {
  auto sha = [](const std::string& text) {
    tg::Sha256 h;
    h.add(text);
    return h.hex();
  };
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  tg::Sha256 million;
  for (int i = 0; i < 1000; ++i) million.add(std::string(1000, 'a'));
  CHECK(million.hex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

namespace {

size_t longest_line(const std::string& text) {
  size_t longest = 0, start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) longest = std::max(longest, end - start);
  return std::max(longest, text.size() - start);
}

}  // namespace

TEST_CASE("long code lines break between tokens at their outermost separators, within 100 columns") {
  const std::string runs =
      "  const int runs = tg::aligned16(g_first_operand_with_a_long_name) && tg::aligned16(g_second_operand_with_a_long_name) && "
      "tg::aligned16(g_third) ? n / 4 : 0;\n";
  const std::string loop = "  for (int run = int(blockIdx.x * blockDim.x + threadIdx.x); run < runs; run += int(gridDim.x * blockDim.x)) {\n";
  const std::string call =
      "    TG_TRY(tg::matmul(p_t41, p_t42, p_t44, tg::GemmShape{1, tg_size3, 64, 64, false, false, true}, stream, "
      "memory.gemm_space(tg_size5, tg::kGemmWorkspaceBytes), g_t43));\n";
  for (const std::string& line : {runs, loop, call}) {
    const std::string wrapped = tg::wrap_code_lines(line);
    INFO(wrapped);
    CHECK(wrapped != line);
    CHECK(longest_line(wrapped) <= 100);
    CHECK(test::one_line(wrapped) == test::one_line(line));
    CHECK(tg::wrap_code_lines(wrapped) == wrapped);  // (each line it writes is within the width)
  }
  CHECK(tg::wrap_code_lines(runs) ==
        "  const int runs =\n"
        "      tg::aligned16(g_first_operand_with_a_long_name)\n"
        "          && tg::aligned16(g_second_operand_with_a_long_name) && tg::aligned16(g_third)\n"
        "          ? n / 4 : 0;\n");
  CHECK(tg::wrap_code_lines(loop) ==
        "  for (int run = int(blockIdx.x * blockDim.x + threadIdx.x); run < runs;\n"
        "      run += int(gridDim.x * blockDim.x)) {\n");
}

TEST_CASE("lines within the width, comments, preprocessor lines and literals are kept whole") {
  const std::string long_comment = "  // " + std::string(120, 'x') + "\n";
  const std::string directive = "#define TG_SOMETHING(a, b) " + std::string(100, 'y') + " + (a) + (b)\n";
  const std::string literal = "  tg::fail(\"a message that is long enough to pass the width, with, commas && operators + in it ............\", x + y);\n";
  const std::string unbreakable = "  " + std::string(120, 'z') + ";\n";
  const std::string comment_in_literal = "  tg::fail(\"a + b  // not a comment\", " + std::string(80, 'c') + " + d, e && f);\n";
  const std::string char_literal = "  const char c = '+', d = '" + std::string(1, ',') + "'; const int e = " + std::string(90, 'e') + " + f;\n";
  const std::string pragma = "    #pragma unroll (" + std::string(100, '1') + " + 2, 3)\n";
  const std::string block_comment = "  const int a = b + /* c, d */ " + std::string(100, 'e') + ";\n";
  const std::string continued = "  const int a = b + c, d = " + std::string(100, 'e') + " \\\n";
  const std::string spaces = std::string(120, ' ') + "\n";
  for (const std::string& text : {std::string("  const int a = b + c;\n"), long_comment, directive, literal, unbreakable, comment_in_literal,
                                  char_literal, pragma, block_comment, continued, spaces})
    CHECK(tg::wrap_code_lines(text) == text);
  CHECK(tg::wrap_code_lines("no newline at the end") == "no newline at the end");
  CHECK(tg::wrap_code_lines("") == "");
}

TEST_CASE("a line ending in a separator and spaces, or nested past any generated code, is written without empty lines") {
  const std::string trailing = "  f(" + std::string(60, 'a') + ", " + std::string(60, 'b') + ",   \n";
  const std::string wrapped = tg::wrap_code_lines(trailing);
  CHECK(wrapped == "  f(" + std::string(60, 'a') + ",\n      " + std::string(60, 'b') + ",\n");
  std::string nested = "  x = ";
  for (int k = 0; k < 200; ++k) nested += "f(a, ";
  nested += "b" + std::string(200, ')') + ";\n";
  const std::string deep = tg::wrap_code_lines(nested);
  CHECK(test::one_line(deep) == test::one_line(nested));
  CHECK(deep.find("\n\n") == std::string::npos);
}

TEST_CASE("a long line's trailing comment goes on a line of its own above it") {
  const std::string line = "  const int64_t tg_size5 = int64_t(tg_arith.narrow(tg_arith.add(1792, tg_arith.mul(1536, tg_size_B))));  // 1536*B + 1792\n";
  const std::string wrapped = tg::wrap_code_lines(line);
  CHECK(wrapped.starts_with("  // 1536*B + 1792\n  const int64_t tg_size5 ="));
  CHECK(longest_line(wrapped) <= 100);
  CHECK(test::one_line(wrapped.substr(wrapped.find('\n') + 1)) == test::one_line(line.substr(0, line.find("  //")) + "\n"));
}

TEST_CASE("random code lines wrap to the same tokens, within the width where they can break, and wrap again to themselves") {
  // (Operators, separators and bracketed groups, nested a little as generated code is.)
  const std::vector<std::string> tokens = {"a", "d0", "*", "sz_T", "+", "-", "&&", "||", "?", ":", "=", "+=", ";", ",", "==", "<=", "!=",
                                           "tg::load(g_x, d0 * sz_T + d1)", "(a + b)", "f(x, y && z ? u : v)", "g[i - 1]",
                                           "tg::GemmShape{1, 2, 3}", "int(i)", "x_with_a_longer_name_than_most"};
  std::mt19937 draw(2026);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string line(draw() % 9, ' ');
    const size_t count = 1 + draw() % 80;
    for (size_t k = 0; k < count; ++k) line += (k ? " " : "") + tokens[draw() % tokens.size()];
    const size_t width = 20 + draw() % 100;
    const std::string wrapped = tg::wrap_code_lines(line + "\n", width);
    INFO(line << "\nwidth " << width << "\n" << wrapped);
    REQUIRE(test::one_line(wrapped) == test::one_line(line + "\n"));
    REQUIRE(tg::wrap_code_lines(wrapped, width) == wrapped);
    REQUIRE(wrapped.find("\n\n") == std::string::npos);
  }
}
