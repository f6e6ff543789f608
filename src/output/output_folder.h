// Writes a set of files as a folder, all or nothing: into a temporary sibling folder first, then
// renamed into place, so a failed run never leaves a half-written output folder. Only a folder
// that is empty or holds an earlier thunder-gen output (its manifest.json) is replaced.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tg {

using FileSet = std::vector<std::pair<std::string, std::string>>;  // (relative name, contents)

// A folder thunder-gen will not replace, or cannot write.
struct OutputFolderError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OutputFolderOptions {
  bool force = false;               // replace a folder that holds something other than an earlier output
  std::vector<std::string> inputs;  // files the run reads (the trace, an overrides file): never inside the folder
};

// Is `path` the folder `folder` or inside it (through symbolic links, either need not exist yet)?
bool path_within(const std::string& path, const std::string& folder);

// Throws OutputFolderError when `folder` may not be replaced: it is not a folder, or holds files
// but no earlier thunder-gen output (unless options.force), or it holds the current folder or an
// input. Checked before generating, so a refusal costs nothing, and again when writing.
void check_output_folder(const std::string& folder, const OutputFolderOptions& options);

// Replaces `folder` (if it exists) by one holding exactly `files`. Runs writing the same folder at
// once take turns for the swap (a lock on the parent folder), and temporary folders left by
// killed runs are removed. Throws OutputFolderError (std::runtime_error for other I/O failures).
void write_folder_atomically(const std::string& folder, const FileSet& files, const OutputFolderOptions& options = {});

// write_folder_atomically in two steps: a folder written beside `folder`, which commit() swaps
// into place; destroyed uncommitted, it is removed. (A run taking its sizes at run time writes
// the first probe's files while the second probe still runs.)
class StagedFolder {
 public:
  StagedFolder(const std::string& folder, const FileSet& files, const OutputFolderOptions& options);
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;
  ~StagedFolder();
  void commit();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tg
