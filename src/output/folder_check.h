// `thunder-gen --check`: compares an output folder with the files generation would write, reading
// only, and describes every difference as a unified diff whose paths are relative to the folder
// (a/<file> what the folder holds, b/<file> what generation writes), so `patch -p1 -d out/`
// brings the folder up to date.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "output/output_folder.h"

namespace tg {

struct FolderDifference {
  enum class Kind { differs, missing, extra };
  Kind kind;
  std::string path;  // relative to the folder; an extra folder ends in '/'
  std::string diff;  // unified diff lines, each ending in '\n' (empty for an extra folder)
};

// Every file of `expected` the folder lacks or holds with other bytes, and everything it holds
// that `expected` does not name, in path order. A path that is not a regular file (a symbolic
// link, a folder where a file should be) differs; links are never followed. Throws
// OutputFolderError when `folder` exists but is not a folder or cannot be read.
std::vector<FolderDifference> compare_folder(const std::string& folder, const FileSet& expected);

// The unified diff (3 lines of context) turning `before` into `after`, under the given header
// names ("a/forward.cu", "/dev/null", ...); empty when they are equal.
std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_name,
                         const std::string& after_name);

// The differences as one report: the diffs, cut after `max_lines` diff lines (0: never) with a
// line saying how many lines of which files were left out.
std::string diff_report(const std::vector<FolderDifference>& differences, size_t max_lines);

// One line: "2 files differ (forward.cu, manifest.json), 1 missing (backward.cu)".
std::string difference_summary(const std::vector<FolderDifference>& differences);

}  // namespace tg
