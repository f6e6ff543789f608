// Writes a set of files as a folder, all or nothing: into a temporary sibling folder first, then
// renamed into place, so a failed run never leaves a half-written output folder.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tg {

using FileSet = std::vector<std::pair<std::string, std::string>>;  // (relative name, contents)

// Replaces `folder` (if it exists) by one holding exactly `files`. Throws std::runtime_error.
void write_folder_atomically(const std::string& folder, const FileSet& files);

}  // namespace tg
