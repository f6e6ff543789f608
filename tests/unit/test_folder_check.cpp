// The unified diff --check prints: hunk ranges, context, merging and the missing-newline marker
// in the form GNU diff -u writes them (tests/check_mode.py applies whole diffs with patch).
#include <catch2/catch.hpp>

#include <string>

#include "output/folder_check.h"

namespace {

std::string numbered(int first, int last) {
  std::string out;
  for (int i = first; i <= last; ++i) out += "line " + std::to_string(i) + "\n";
  return out;
}

}  // namespace

TEST_CASE("equal texts have no diff") { CHECK(tg::unified_diff("a\nb\n", "a\nb\n", "a/f", "b/f").empty()); }

TEST_CASE("a new file is one hunk from line 0") {
  CHECK(tg::unified_diff("", "x\ny\n", "/dev/null", "b/f") == "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n");
}

TEST_CASE("a changed line gets three lines of context either side") {
  std::string after = numbered(1, 10);
  after.replace(after.find("line 5\n"), 7, "five\n");
  CHECK(tg::unified_diff(numbered(1, 10), after, "a/f", "b/f") ==
        "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n line 6\n line 7\n line 8\n");
}

TEST_CASE("changes six lines apart share a hunk; seven apart do not") {
  const std::string before = numbered(1, 30);
  auto without = [&](std::initializer_list<int> lines) {
    std::string out;
    for (int i = 1; i <= 30; ++i)
      if (std::find(lines.begin(), lines.end(), i) == lines.end()) out += "line " + std::to_string(i) + "\n";
    return out;
  };
  auto hunks = [](const std::string& diff) {
    size_t n = 0;
    for (size_t at = diff.find("\n@@ "); at != std::string::npos; at = diff.find("\n@@ ", at + 1)) ++n;
    return n;
  };
  CHECK(hunks(tg::unified_diff(before, without({10, 17}), "a/f", "b/f")) == 1);
  CHECK(hunks(tg::unified_diff(before, without({10, 18}), "a/f", "b/f")) == 2);
  CHECK(tg::unified_diff(before, without({1}), "a/f", "b/f") == "--- a/f\n+++ b/f\n@@ -1,4 +1,3 @@\n-line 1\n line 2\n line 3\n line 4\n");
}

TEST_CASE("a last line without a newline is marked") {
  CHECK(tg::unified_diff("a\nb\n", "a\nb", "a/f", "b/f") ==
        "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n");
}

TEST_CASE("the summary counts and names each kind") {
  using K = tg::FolderDifference::Kind;
  const std::vector<tg::FolderDifference> d = {{K::differs, "forward.cu", "x"}, {K::missing, "backward.cu", "y"}, {K::extra, "build/", ""},
                                               {K::extra, "notes\n.txt", ""}};
  CHECK(tg::difference_summary(d) == "1 file differs (forward.cu), 1 missing (backward.cu), 2 extra (build/, notes\\x0a.txt)");
}
