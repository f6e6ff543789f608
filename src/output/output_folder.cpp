#include "output/output_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <utility>

namespace tg {

namespace fs = std::filesystem;

namespace {

void check_unlocked(const std::string& folder, const OutputFolderOptions& options);

// The folder `-o` names, absolute ("out/" and "out" alike; "." is the current folder).
fs::path target_of(const std::string& folder) {
  if (folder.empty()) throw OutputFolderError("no output folder given");
  fs::path target = fs::absolute(folder).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  return target;
}

// Is `path` `folder` or inside it? (Both resolved through symbolic links.)
bool within(const fs::path& path, const fs::path& folder) {
  const fs::path p = fs::weakly_canonical(path), f = fs::weakly_canonical(folder);
  auto [f_end, p_at] = std::mismatch(f.begin(), f.end(), p.begin(), p.end());
  return f_end == f.end();
}

// Does `folder` hold an earlier output? Its manifest.json starts with the trace's name and
// "generator": "thunder-gen ..." (the manifest's first two members since its first version).
bool holds_earlier_output(const fs::path& folder) {
  std::error_code error;
  const fs::path manifest = folder / "manifest.json";
  if (!fs::is_regular_file(fs::symlink_status(manifest, error))) return false;
  std::ifstream in(manifest, std::ios::binary);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  static const std::regex opening(R"(^\{\s*"trace": "\w+",\s*"generator": "thunder-gen )");
  return std::regex_search(head, opening);
}

// A file descriptor closed when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd = -1) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor(Descriptor&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

Descriptor open_folder(const fs::path& folder) { return Descriptor(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); }

std::string random_suffix() {
  std::random_device rd;
  char buf[24];
  std::snprintf(buf, sizeof buf, "%08x%08x", rd(), rd());
  return buf;
}

// The temporary folders of runs writing `name`: .<name>.tmp-<16 hex> (a run's staging folder, which
// it keeps locked while it lives) and .<name>.old-<16 hex> (the folder being replaced, which only
// exists during the swap).
bool is_temporary_of(const std::string& entry, const std::string& name, const char* kind) {
  const std::string prefix = "." + name + "." + kind + "-";
  return entry.size() == prefix.size() + 16 && entry.compare(0, prefix.size(), prefix) == 0 &&
         entry.find_first_not_of("0123456789abcdef", prefix.size()) == std::string::npos;
}

// Removes a folder of ours. One made read-only (`chmod -R a-w out`) keeps its entries until its
// folders are writable again, so they are made writable and the removal tried once more.
void make_removable(const fs::path& folder) {
  std::error_code ignored;
  fs::permissions(folder, fs::perms::owner_all, fs::perm_options::add, ignored);
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ignored))
    if (entry.is_directory(ignored) && !entry.is_symlink(ignored)) make_removable(entry.path());
}

std::error_code remove_tree(const fs::path& folder) {
  std::error_code error;
  if (fs::remove_all(folder, error) != static_cast<std::uintmax_t>(-1) && !error) return {};
  make_removable(folder);
  fs::remove_all(folder, error);
  return error;
}

// Removes what killed runs left beside `target`: staging folders nobody holds locked, and folders
// being replaced (the caller holds the swap lock, so no swap is under way).
void remove_stale_temporaries(const fs::path& target) {
  const std::string name = target.filename().string();
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(target.parent_path(), error)) {
    const std::string entry_name = entry.path().filename().string();
    bool stale = is_temporary_of(entry_name, name, "old");
    if (is_temporary_of(entry_name, name, "tmp")) {
      Descriptor held(::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      stale = held.get() >= 0 && ::flock(held.get(), LOCK_EX | LOCK_NB) == 0;
    }
    if (stale) remove_tree(entry.path());
  }
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());  // (include/<trace>.h)
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
}

// A lock on the output's parent folder: shared while a run creates and locks its staging folder
// or checks the target, exclusive while it removes stale temporaries and swaps. So the cleanup
// never meets a staging folder created but not yet locked, nor a check a half-done swap.
Descriptor lock_parent(const fs::path& target, int how) {
  Descriptor parent = open_folder(target.parent_path());
  if (parent.get() < 0) throw std::runtime_error("cannot open " + target.parent_path().string() + ": " + std::strerror(errno));
  if (::flock(parent.get(), how | LOCK_NB) != 0) {
    std::cerr << "thunder-gen: waiting for another run writing beside " << target.string() << "\n";
    if (::flock(parent.get(), how) != 0) throw std::runtime_error(std::string("cannot lock the output's parent folder: ") + std::strerror(errno));
  }
  return parent;
}

// A new staging folder beside `target`, locked (its lock, held while this run lives, tells a
// concurrent run's cleanup that it is not stale).
fs::path create_staging(const fs::path& target, Descriptor& held) {
  Descriptor parent = lock_parent(target, LOCK_SH);
  fs::path staging;
  do staging = target.parent_path() / ("." + target.filename().string() + ".tmp-" + random_suffix());
  while (!fs::create_directory(staging));
  held = open_folder(staging);
  if (held.get() < 0 || ::flock(held.get(), LOCK_EX | LOCK_NB) != 0) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    throw std::runtime_error("cannot lock " + staging.string());
  }
  return staging;
}

// The swap of `staging` into `target`, under an exclusive lock on their parent folder.
void swap_into_place(const fs::path& staging, const fs::path& target, const OutputFolderOptions& options) {
  Descriptor parent = lock_parent(target, LOCK_EX);
  remove_stale_temporaries(target);
  check_unlocked(target.string(), options);  // (it may have changed while this run generated)
  const fs::path old = target.parent_path() / ("." + target.filename().string() + ".old-" + random_suffix());
  const bool replacing = fs::exists(fs::symlink_status(target));
  if (replacing) fs::rename(target, old);
  try {
    fs::rename(staging, target);
  } catch (...) {
    std::error_code ignored;
    if (replacing) fs::rename(old, target, ignored);
    throw;
  }
  if (!replacing) return;
  if (const std::error_code error = remove_tree(old))
    std::cerr << "thunder-gen: warning: the replaced output is left at " << old.string() << ": " << error.message() << "\n";
}

}  // namespace

namespace {

// check_output_folder without the lock (the caller holds one).
void check_unlocked(const std::string& folder, const OutputFolderOptions& options) {
  const fs::path target = target_of(folder);
  if (target == target.root_path()) throw OutputFolderError("refusing to replace " + target.string());
  std::error_code error;
  const fs::file_status status = fs::symlink_status(target, error);
  if (!fs::exists(status)) return;
  if (fs::is_symlink(status)) throw OutputFolderError(folder + " is a symbolic link; give the folder it points to");
  if (!fs::is_directory(status)) throw OutputFolderError(folder + " exists and is not a folder");
  if (within(fs::current_path(), target)) throw OutputFolderError(folder + " holds the current folder; replacing it would delete it");
  for (const std::string& input : options.inputs)
    if (within(fs::absolute(input), target)) throw OutputFolderError(folder + " holds " + input + ", which this run reads");
  if (fs::is_empty(target, error) || holds_earlier_output(target) || options.force) return;
  throw OutputFolderError(folder + " holds files but no thunder-gen output (no manifest.json of ours), so it is not replaced: give a new or empty "
                          "folder, or --force to replace it and everything in it");
}

}  // namespace

bool path_within(const std::string& path, const std::string& folder) { return within(fs::absolute(path), target_of(folder)); }

void check_output_folder(const std::string& folder, const OutputFolderOptions& options) {
  const fs::path target = target_of(folder);
  std::error_code error;
  Descriptor parent;  // (a swap under way finishes first)
  if (target != target.root_path() && fs::is_directory(target.parent_path(), error)) parent = lock_parent(target, LOCK_SH);
  check_unlocked(folder, options);
}

struct StagedFolder::State {
  fs::path target, staging;
  OutputFolderOptions options;
  int held = -1;  // the staging folder's lock (a descriptor)
  bool committed = false;
  ~State() {  // (also when the constructor's writing fails)
    std::error_code ignored;
    if (!committed && !staging.empty()) fs::remove_all(staging, ignored);
    if (held >= 0) ::close(held);
  }
};

StagedFolder::StagedFolder(const std::string& folder, const FileSet& files, const OutputFolderOptions& options) : state_(std::make_unique<State>()) {
  check_output_folder(folder, options);  // (the exclusive lock at the swap checks again)
  State& s = *state_;
  s.target = target_of(folder);
  s.options = options;
  fs::create_directories(s.target.parent_path());
  Descriptor held;
  s.staging = create_staging(s.target, held);
  s.held = held.release();
  for (const auto& [name, text] : files) write_file(s.staging / name, text);
}

void StagedFolder::commit() {
  swap_into_place(state_->staging, state_->target, state_->options);
  state_->committed = true;
}

StagedFolder::~StagedFolder() = default;

void write_folder_atomically(const std::string& folder, const FileSet& files, const OutputFolderOptions& options) {
  StagedFolder(folder, files, options).commit();
}

}  // namespace tg
