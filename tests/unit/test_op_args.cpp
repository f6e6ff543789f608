// Named argument access (Op::arg(name), Op::has_arg): an op's arguments are read by the names its
// op-table row declares, so a reordered signature cannot silently hand a rule the wrong argument.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ops/op_table.h"
#include "support/diagnostics.h"

namespace {

tg::Op reshape_op() {
  tg::Op op;
  op.symbol = "prims.reshape";
  op.info = tg::find_op(op.symbol);
  op.args = {tg::Arg::of_value(0), tg::Arg::of_list({tg::Arg::of_int(2), tg::Arg::of_int(3)})};
  return op;
}

std::string internal_error_of(const tg::Op& op, std::string_view name) {
  try {
    op.arg(name);
  } catch (const tg::InternalError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("an argument is read by its declared parameter name") {
  const tg::Op op = reshape_op();
  REQUIRE(op.info);
  CHECK(op.arg("a").value == 0);
  CHECK(op.arg("shape").int_list() == std::vector<int64_t>{2, 3});
  CHECK(&op.arg("shape") == &op.arg(1));
  CHECK(op.has_arg("shape"));
}

TEST_CASE("a name the op does not declare is an internal error naming op and parameter") {
  const tg::Op op = reshape_op();
  const std::string error = internal_error_of(op, "shap");
  CHECK(error.find("prims.reshape") != std::string::npos);
  CHECK(error.find("\"shap\"") != std::string::npos);
  CHECK_FALSE(op.has_arg("shap"));
  // A parameter of another op is refused too, however plausible.
  CHECK(internal_error_of(op, "dims") != "accepted");
}

TEST_CASE("a declared parameter the op was built without is absent, and reading it is an internal error") {
  tg::Op op;
  op.symbol = "prims.matmul";
  op.info = tg::find_op(op.symbol);
  op.args = {tg::Arg::of_value(0), tg::Arg::of_value(1)};  // bias, epilogue, transposes not bound
  CHECK(op.has_arg("b"));
  CHECK_FALSE(op.has_arg("transpose_a"));
  CHECK(internal_error_of(op, "transpose_a").find("transpose_a") != std::string::npos);
}

TEST_CASE("an op without a signature refuses named reads") {
  tg::Op op;
  op.symbol = "ltorch.something_unknown";
  op.args = {tg::Arg::of_int(1)};
  CHECK(internal_error_of(op, "a").find("ltorch.something_unknown") != std::string::npos);
  CHECK_FALSE(op.has_arg("a"));
}

// Every name the sources read an argument by must be declared by some op: a misspelt name in a
// rule no trace reaches would otherwise only fail on the trace that first reaches it.
TEST_CASE("every argument name the sources read is declared by an op") {
  std::set<std::string_view> declared;
  for (const tg::OpInfo& row : tg::op_table())
    for (const tg::Param& p : row.params) declared.insert(p.name);
  // op.arg("x"), op.has_arg("x"), and the shape rules' helpers that take a parameter's name
  const std::regex named_read(R"re(\b(?:arg|has_arg)\("([^"]*)"\)|\b(?:declared_position|need_null|need_number_literal|need_typed)\((?:t, )?op, "([^"]*)")re");
  size_t reads = 0;
  for (const char* dir : {"src", "reference"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(TG_SOURCE_DIR) / dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".def") continue;  // (.def: the declarations' expressions)
      std::ifstream in(entry.path());
      std::ostringstream text;
      text << in.rdbuf();
      const std::string source = text.str();
      for (std::sregex_iterator m(source.begin(), source.end(), named_read), end; m != end; ++m, ++reads) {
        const std::string name = (*m)[1].matched ? (*m)[1].str() : (*m)[2].str();
        INFO(entry.path().string() << ": " << m->str());
        CHECK(declared.count(name));
      }
    }
  }
  CHECK(reads > 100);  // the scan found the sources (TG_SOURCE_DIR) and the named reads in them
}
