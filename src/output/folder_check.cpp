#include "output/folder_check.h"
#include "support/generated_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dtl/dtl.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace tg {

namespace fs = std::filesystem;

namespace {

constexpr size_t kContext = 3;  // lines of context around a change, as diff -u

// A line of a file, with its '\n' (the last line may lack one).
using Lines = std::vector<std::string_view>;

Lines split_lines(std::string_view text) {
  Lines lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const size_t length = end == std::string_view::npos ? text.size() : end + 1;
    lines.push_back(text.substr(0, length));
    text.remove_prefix(length);
  }
  return lines;
}

enum class Edit : char { keep = ' ', remove = '-', add = '+' };

// The edit script of the lines between a common prefix and suffix. Lines become integers (equal
// lines, equal numbers) so the diff compares numbers. dtl's O(NP) diff costs up to about
// (N + M) * min(N, M) steps; past a bound the span is one replacement, a larger but still
// correct diff.
void middle_script(const Lines& before, const Lines& after, size_t begin, size_t before_end, size_t after_end,
                   std::vector<Edit>& script) {
  const size_t n = before_end - begin, m = after_end - begin;
  constexpr double kMaxSteps = 2e9;
  if (double(n + m) * double(std::min(n, m)) > kMaxSteps) {
    script.insert(script.end(), n, Edit::remove);
    script.insert(script.end(), m, Edit::add);
    return;
  }
  std::unordered_map<std::string_view, int> number;
  std::vector<int> a, b;
  for (size_t i = 0; i < n; ++i) a.push_back(number.try_emplace(before[begin + i], int(number.size())).first->second);
  for (size_t j = 0; j < m; ++j) b.push_back(number.try_emplace(after[begin + j], int(number.size())).first->second);
  dtl::Diff<int> diff(a, b);
  diff.compose();
  for (const auto& [element, info] : diff.getSes().getSequence())
    script.push_back(info.type == dtl::SES_COMMON ? Edit::keep : info.type == dtl::SES_DELETE ? Edit::remove : Edit::add);
}

std::vector<Edit> edit_script(const Lines& before, const Lines& after) {
  size_t prefix = 0;
  while (prefix < before.size() && prefix < after.size() && before[prefix] == after[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < before.size() - prefix && suffix < after.size() - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix])
    ++suffix;
  std::vector<Edit> script(prefix, Edit::keep);
  middle_script(before, after, prefix, before.size() - suffix, after.size() - suffix, script);
  script.insert(script.end(), suffix, Edit::keep);
  return script;
}

// Where each step of a script stands: the lines of either file before it.
struct Position {
  size_t before = 0, after = 0;
};

std::vector<Position> positions(const std::vector<Edit>& script) {
  std::vector<Position> at(script.size() + 1);
  for (size_t k = 0; k < script.size(); ++k) {
    at[k + 1] = at[k];
    at[k + 1].before += script[k] != Edit::add;
    at[k + 1].after += script[k] != Edit::remove;
  }
  return at;
}

// "@@ -a,b +c,d @@": a range's first line counts from 1, or names the line before an empty range.
std::string range(size_t first_index, size_t count) {
  return std::to_string(count == 0 ? first_index : first_index + 1) + "," + std::to_string(count);
}

void append_line(std::string& out, char mark, std::string_view line) {
  out += mark;
  out += line;
  if (line.empty() || line.back() != '\n') out += "\n\\ No newline at end of file\n";
}

// The hunk of script[first, last).
void append_hunk(std::string& out, const std::vector<Edit>& script, const std::vector<Position>& at, size_t first, size_t last,
                 const Lines& before, const Lines& after) {
  out += "@@ -" + range(at[first].before, at[last].before - at[first].before) + " +" +
         range(at[first].after, at[last].after - at[first].after) + " @@\n";
  for (size_t k = first; k < last; ++k)
    append_line(out, char(script[k]), script[k] == Edit::add ? after[at[k].after] : before[at[k].before]);
}

}  // namespace

std::string unified_diff(const std::string& before_text, const std::string& after_text, const std::string& before_name,
                         const std::string& after_name) {
  if (before_text == after_text) return "";
  const Lines before = split_lines(before_text), after = split_lines(after_text);
  const std::vector<Edit> script = edit_script(before, after);
  const std::vector<Position> at = positions(script);
  std::string out = "--- " + before_name + "\n+++ " + after_name + "\n";
  size_t k = 0;
  while (k < script.size()) {
    while (k < script.size() && script[k] == Edit::keep) ++k;
    if (k == script.size()) break;
    const size_t first = k >= kContext ? k - kContext : 0;
    // Extend over changes separated by at most 2 * kContext kept lines (they share one hunk).
    size_t last_change = k;
    for (size_t j = k; j < script.size() && j <= last_change + 2 * kContext + 1; ++j)
      if (script[j] != Edit::keep) last_change = j;
    const size_t last = std::min(script.size(), last_change + 1 + kContext);
    append_hunk(out, script, at, first, last, before, after);
    k = last;
  }
  return out;
}

namespace {

enum class Read { ok, not_regular, too_large };

// Reads a regular file without following a link and without blocking on a FIFO; a file far
// larger than what generation writes is not read (there is nothing useful to diff).
Read read_regular(const fs::path& path, size_t size_limit, std::string& contents) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENXIO) return Read::not_regular;
    throw OutputFolderError("cannot read " + path.string() + ": " + std::strerror(errno));
  }
  struct stat st {};
  Read result = Read::ok;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) result = Read::not_regular;
  else if (size_t(st.st_size) > size_limit) result = Read::too_large;
  else {
    contents.resize(size_t(st.st_size));
    size_t done = 0;
    while (done < contents.size()) {
      const ssize_t n = ::read(fd, contents.data() + done, contents.size() - done);
      if (n <= 0) break;
      done += size_t(n);
    }
    contents.resize(done);
  }
  ::close(fd);
  return result;
}

// Are the folders between `folder` and its file `name` real folders (no links to elsewhere)?
bool parents_are_folders(const fs::path& folder, const std::string& name) {
  fs::path at = folder;
  std::error_code error;
  for (const fs::path& part : fs::path(name).parent_path()) {
    at /= part;
    if (fs::symlink_status(at, error).type() != fs::file_type::directory) return false;
  }
  return true;
}

FolderDifference compare_file(const fs::path& folder, const std::string& name, const std::string& expected) {
  const size_t size_limit = 64 * expected.size() + (1u << 20);
  std::string actual;
  const Read read = parents_are_folders(folder, name) ? read_regular(folder / name, size_limit, actual) : Read::not_regular;
  switch (read) {
    case Read::not_regular:
      return {FolderDifference::Kind::differs, name, "Not a regular file in the folder: " + printable_line(name) + "\n"};
    case Read::too_large:
      return {FolderDifference::Kind::differs, name, "Far larger than what generation writes: " + printable_line(name) + "\n"};
    case Read::ok:
      break;
  }
  return {FolderDifference::Kind::differs, name, unified_diff(actual, expected, "a/" + name, "b/" + name)};
}

// The folder's entries that `expected` does not name, as paths relative to it; folders holding no
// expected file are one entry ("build/"), not walked.
std::vector<std::string> extra_entries(const fs::path& folder, const std::map<std::string, const std::string*>& expected) {
  std::set<std::string> expected_folders;
  for (const auto& [name, contents] : expected)
    for (fs::path p = fs::path(name).parent_path(); !p.empty(); p = p.parent_path()) expected_folders.insert(p.string());
  std::vector<std::string> extras;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, fs::directory_options::none, error), end;
  if (error) throw OutputFolderError("cannot read " + folder.string() + ": " + error.message());
  for (; it != end; it.increment(error)) {
    if (error) throw OutputFolderError("cannot read " + folder.string() + ": " + error.message());
    const std::string name = it->path().lexically_relative(folder).string();
    const bool is_folder = it->is_directory(error) && !it->is_symlink(error);
    if (is_folder && expected_folders.count(name)) continue;
    if (is_folder) it.disable_recursion_pending();
    if (!expected.count(name)) extras.push_back(is_folder ? name + "/" : name);
  }
  return extras;
}

}  // namespace

std::vector<FolderDifference> compare_folder(const std::string& folder_name, const FileSet& files) {
  const fs::path folder(folder_name);
  std::error_code error;
  const fs::file_status status = fs::symlink_status(folder, error);
  if (status.type() != fs::file_type::not_found && status.type() != fs::file_type::directory)
    throw OutputFolderError(folder_name + " is not a folder");
  const bool exists = status.type() == fs::file_type::directory;
  std::map<std::string, const std::string*> expected;
  for (const auto& [name, contents] : files) expected.emplace(name, &contents);
  std::vector<FolderDifference> differences;
  for (const auto& [name, contents] : expected) {
    const bool present = exists && fs::symlink_status(folder / name, error).type() != fs::file_type::not_found;
    FolderDifference d = present ? compare_file(folder, name, *contents)
                                 : FolderDifference{FolderDifference::Kind::missing, name, unified_diff("", *contents, "/dev/null", "b/" + name)};
    if (!d.diff.empty()) differences.push_back(std::move(d));
  }
  if (exists)
    for (std::string& name : extra_entries(folder, expected))
      differences.push_back({FolderDifference::Kind::extra, name, "Only in the folder: " + printable_line(name) + "\n"});
  // Changed files first (the cut keeps what says most), then missing ones, then extras.
  std::sort(differences.begin(), differences.end(), [](const auto& x, const auto& y) { return std::tie(x.kind, x.path) < std::tie(y.kind, y.path); });
  return differences;
}

std::string diff_report(const std::vector<FolderDifference>& differences, size_t max_lines) {
  std::string out;
  size_t lines = 0, left_out = 0;
  std::vector<std::string> cut_files;
  for (const FolderDifference& d : differences) {
    const Lines diff_lines = split_lines(d.diff);
    size_t shown = 0;
    for (; shown < diff_lines.size() && (max_lines == 0 || lines < max_lines); ++shown, ++lines) out += diff_lines[shown];
    if (shown < diff_lines.size()) {
      left_out += diff_lines.size() - shown;
      cut_files.push_back(printable_line(d.path));
    }
  }
  if (left_out == 0) return out;
  std::string files;
  for (const std::string& f : cut_files) files += (files.empty() ? "" : ", ") + f;
  return out + "[thunder-gen --check: " + std::to_string(left_out) + " more diff lines left out, of " + files +
         "; --diff-lines 0 prints them all]\n";
}

std::string difference_summary(const std::vector<FolderDifference>& differences) {
  std::map<FolderDifference::Kind, std::vector<std::string>> by_kind;
  for (const FolderDifference& d : differences) by_kind[d.kind].push_back(printable_line(d.path));
  auto words = [](FolderDifference::Kind kind, size_t count) -> std::string {
    if (kind == FolderDifference::Kind::missing) return "missing";
    if (kind == FolderDifference::Kind::extra) return "extra";
    return count == 1 ? "file differs" : "files differ";
  };
  std::string out;
  for (const auto& [kind, names] : by_kind) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i) list += (i ? ", " : "") + names[i];
    if (names.size() > 8) list += ", ... (" + std::to_string(names.size() - 8) + " more)";
    out += (out.empty() ? "" : ", ") + std::to_string(names.size()) + " " + words(kind, names.size()) + " (" + list + ")";
  }
  return out;
}

}  // namespace tg
