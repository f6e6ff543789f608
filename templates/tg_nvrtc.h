// thunder-gen NVRTC builds: one program holding every kernel of a trace (kernels.cu includes
// forward.cu and backward.cu), compiled to a cubin and cached under a hash of everything that
// decides the result, so a warm cache compiles nothing.
//
// The cache folder: $TG_NVRTC_CACHE if set ("off" disables it), else
// $XDG_CACHE_HOME/thunder-gen/nvrtc, else $HOME/.cache/thunder-gen/nvrtc. The key (SHA-256,
// tg_sha256.h: the programs come from untrusted traces, and a key one could make collide would let
// one trace's kernels be served for another's) hashes the
// program's source and every header it includes from its folder (the generated .cu files and
// tg_runtime.cuh, read from disk), the compile options (architecture included) and NVRTC's
// version. An entry is the file <key>.v1.entry (the format version in the name, so builds using
// another format keep their own files): a 40-byte header, then the cubin. The header, little-
// endian: the magic "tgnvrtc\0", the format version (uint32, 1), 4 zero bytes, the cubin's length
// (uint64) and its checksum (two uint64: the key's 128-bit FNV-1a hash, of the cubin).
//
// What a build trusts. The checksum finds a truncated, torn or damaged entry; being no
// cryptographic hash, it is no defence against a forged one. That defence is ownership, checked
// before use, as a cache folder may be shared (TG_NVRTC_CACHE=/shared/cache): the folder, opened
// without following a symlink, must be a directory owned by this user and writable by no one
// else; each entry, opened with O_NOFOLLOW and checked on the open descriptor, a regular file
// owned by this user and writable by no one else. Folders the cache creates are 0700, each level;
// entries are 0600. A folder that fails a check is ignored (the build compiles, uncached); an
// entry that fails one, or whose magic, version, length or checksum is wrong, is compiled again
// and replaced, unless another user owns it: that file is left alone. Each is reported on stderr
// in one line naming the file and the reason.
// An entry is written to a temporary file created exclusively in the folder, every write checked,
// synced and closed, then renamed into place, so no reader sees a partial entry; when any step
// fails (a full disk) the temporary is removed and the build goes on uncached, with one warning.
// nvrtc_build_and_load also compiles again when the driver rejects a cubin from the cache.
// Host code, Linux (POSIX calls); needs nvrtc.h.
#pragma once
#include <fcntl.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tg_sha256.h"

namespace tg {

struct NvrtcBuild {
  std::string cubin;
  bool from_cache = false;
  double milliseconds = 0;  // compiling, or reading the cache entry
  std::string cache_file;   // the entry read or written; empty when nothing was cached
};

// Hands a cubin to the driver (cuModuleLoadData in tg_host.h): "" when it loaded, else why not.
using CubinLoader = std::function<std::string(const std::string& cubin)>;

namespace nvrtc_detail {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// 128 bits from two FNV-1a passes with different offset bases: an entry's checksum against
// damage, not a defence against someone forging collisions (the key is SHA-256: cache_key).
class Hash {
 public:
  void add(const std::string& s) { add(s.data(), s.size()); }
  void add(const char* data, size_t size) {
    const std::string length = std::to_string(size) + ":";  // no ambiguity between parts
    mix(length.data(), length.size());
    mix(data, size);
  }
  std::string hex() const {
    char text[33];
    std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(a_), static_cast<unsigned long long>(b_));
    return text;
  }
  uint64_t first() const { return a_; }
  uint64_t second() const { return b_; }

 private:
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;

  void mix(const char* data, size_t size) {
    for (size_t i = 0; i < size; ++i) {
      const unsigned char c = static_cast<unsigned char>(data[i]);
      a_ = (a_ ^ c) * 0x100000001b3ull;
      b_ = (b_ ^ c) * 0x100000001b3ull;
    }
  }
};

// The quoted #include names of `source` (one level: the generated files include only the
// runtime header, which includes nothing of the folder).
inline std::vector<std::string> quoted_includes(const std::string& source) {
  std::vector<std::string> names;
  std::istringstream lines(source);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find("#include \"");
    if (at == std::string::npos || line.find_first_not_of(" \t") != at) continue;
    size_t begin = at + 10, end = line.find('"', begin);
    if (end != std::string::npos) names.push_back(line.substr(begin, end - begin));
  }
  return names;
}

struct Program {
  std::filesystem::path dir;  // the file's folder, also the include path
  std::string file, source;
  std::vector<std::string> options;
};

inline Program read_program(const std::filesystem::path& dir, const std::string& file, const std::string& arch) {
  return {dir, file, read_file(dir / file), {"--gpu-architecture=" + arch, "--include-path=" + dir.string(), "--std=c++17"}};
}

// SHA-256 of the parts, each framed by its length (no ambiguity between parts).
class KeyHash {
 public:
  void add(const std::string& part) {
    sha_.add(std::to_string(part.size()) + ":");
    sha_.add(part);
  }
  std::string hex() { return sha_.hex(); }

 private:
  Sha256 sha_;
};

inline std::string cache_key(const Program& program) {
  KeyHash hash;
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  hash.add("nvrtc " + std::to_string(major) + "." + std::to_string(minor));
  for (const std::string& o : program.options) hash.add(o.rfind("--include-path=", 0) == 0 ? "--include-path" : o);  // not the folder's name
  hash.add(program.source);
  for (const std::string& name : quoted_includes(program.source)) {
    const std::string text = read_file(program.dir / name);
    hash.add(name);
    hash.add(text);
    for (const std::string& inner : quoted_includes(text))
      if (std::filesystem::exists(program.dir / inner)) hash.add(inner), hash.add(read_file(program.dir / inner));
  }
  return hash.hex();
}

// The cubin of `program`; throws std::runtime_error with NVRTC's log on a compile error.
inline std::string compile(const Program& program) {
  nvrtcProgram handle;
  if (nvrtcCreateProgram(&handle, program.source.c_str(), program.file.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    throw std::runtime_error("NVRTC: cannot create a program for " + program.file);
  std::vector<const char*> option_pointers;
  for (const std::string& o : program.options) option_pointers.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(handle, int(option_pointers.size()), option_pointers.data());
  if (result != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(handle, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(handle, log.data());
    nvrtcDestroyProgram(&handle);
    throw std::runtime_error("NVRTC compile of " + (program.dir / program.file).string() + " failed (" + nvrtcGetErrorString(result) + "):\n" + log);
  }
  size_t size = 0;
  nvrtcGetCUBINSize(handle, &size);
  std::string cubin(size, '\0');
  nvrtcGetCUBIN(handle, cubin.data());
  nvrtcDestroyProgram(&handle);
  return cubin;
}

// ---- the entry format (see the top of the file) --------------------------------------------

constexpr char entry_magic[8] = {'t', 'g', 'n', 'v', 'r', 't', 'c', '\0'};
constexpr uint32_t entry_version = 1;
constexpr size_t entry_header_size = 40;
// The version is in the name too, so builds that use another format keep their own entries.
constexpr const char* entry_suffix = ".v1.entry";
constexpr uint64_t largest_entry = uint64_t(1) << 30;  // far above any cubin; a bigger file is not read

inline void put_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char(value >> (8 * i) & 0xff));
}
inline uint64_t get_little_endian(const std::string& in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(in[at + i]);
  return value;
}

inline std::string entry_header(const std::string& cubin) {
  Hash checksum;
  checksum.add(cubin);
  std::string header(entry_magic, sizeof entry_magic);
  put_little_endian(header, entry_version, 4);
  put_little_endian(header, 0, 4);
  put_little_endian(header, cubin.size(), 8);
  put_little_endian(header, checksum.first(), 8);
  put_little_endian(header, checksum.second(), 8);
  return header;
}

// What is wrong with `entry` (a whole file), or "" when it holds a cubin intact.
inline std::string entry_defect(const std::string& entry) {
  if (entry.size() < entry_header_size) return "shorter than an entry's header (" + std::to_string(entry.size()) + " bytes)";
  if (entry.compare(0, sizeof entry_magic, entry_magic, sizeof entry_magic) != 0) return "not a thunder-gen cache entry (wrong magic)";
  if (const uint64_t version = get_little_endian(entry, 8, 4); version != entry_version)
    return "format version " + std::to_string(version) + ", expected " + std::to_string(entry_version);
  if (const uint64_t length = get_little_endian(entry, 16, 8); length != entry.size() - entry_header_size)
    return "its header says " + std::to_string(length) + " bytes of cubin, the file holds " + std::to_string(entry.size() - entry_header_size);
  Hash checksum;
  checksum.add(entry.data() + entry_header_size, entry.size() - entry_header_size);
  if (checksum.first() != get_little_endian(entry, 24, 8) || checksum.second() != get_little_endian(entry, 32, 8)) return "checksum mismatch";
  return "";
}

// ---- the folder and its files -----------------------------------------------------------------

inline void warn(const std::string& message) { std::fprintf(stderr, "tg: NVRTC cache: %s\n", message.c_str()); }

// Why a cache folder or entry with status `info` might hold what another user wrote, or "" when
// only this user can have: it must be of type `kind`, ours, and writable by no one else.
inline std::string untrusted_because(const struct stat& info, mode_t kind) {
  if ((info.st_mode & S_IFMT) != kind) return kind == S_IFDIR ? "not a directory" : "not a regular file";
  if (info.st_uid != geteuid())
    return "owned by uid " + std::to_string(info.st_uid) + ", not by this user (uid " + std::to_string(geteuid()) + ")";
  if (info.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(info.st_mode & 07777));
    return std::string("writable by group or others (mode ") + mode + ")";
  }
  return "";
}

// Why opening `name` (in the folder `at`) with O_NOFOLLOW failed, errno as the open left it.
inline std::string open_failure(int at, const char* name) {
  const int error = errno;
  struct stat info;
  if (fstatat(at, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode)) return "a symbolic link";
  return std::strerror(error);
}

// Creates the missing levels of `path`, each 0700 (what the umask allows of it).
inline void create_private_folders(const std::filesystem::path& path) {
  std::filesystem::path prefix;
  for (const std::filesystem::path& part : path) {
    prefix /= part;
    ::mkdir(prefix.c_str(), 0700);  // EEXIST for the levels that exist; other failures show when the folder is opened
  }
}

// Reads `size` bytes of `file` into `out`; false with errno set on a read error.
inline bool read_all(int file, size_t size, std::string& out) {
  out.resize(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(file, out.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // shrank meanwhile: the length check will say so
    done += size_t(n);
  }
  out.resize(done);
  return true;
}

inline bool write_all(int file, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(file, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    done += size_t(n);  // a short write (a full disk) goes round again and gets the error
  }
  return true;
}

// Writes `header` and `cubin` to `file` (with write(2): no user-space buffer is left to flush),
// syncs and closes it. Returns the call that failed, errno set, or nullptr.
inline const char* write_synced_and_close(int file, const std::string& header, const std::string& cubin) {
  const char* failed = !write_all(file, header) || !write_all(file, cubin) ? "write" : ::fsync(file) != 0 ? "fsync" : nullptr;
  const int error = errno;
  if (::close(file) != 0 && !failed) return "close";
  errno = error;
  return failed;
}

// A cache folder, open and checked; entries are opened relative to its descriptor, so renaming
// the path meanwhile cannot redirect them. Not usable (a warning said why) when a check failed.
class CacheFolder {
 public:
  explicit CacheFolder(const std::filesystem::path& path) : path_(without_trailing_slash(path)) {
    if (!path_.empty()) open_checked();
  }
  CacheFolder(const CacheFolder&) = delete;
  CacheFolder& operator=(const CacheFolder&) = delete;
  ~CacheFolder() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool usable() const { return fd_ >= 0; }
  std::string path_of(const std::string& name) const { return (path_ / name).string(); }

  // The cubin of entry `name`, or nothing when there is none or it fails a check (warned).
  std::optional<std::string> read(const std::string& name) const {
    // O_NONBLOCK: a FIFO of that name must not hang the open (fstat then refuses it).
    const int file = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (file < 0) {
      if (errno != ENOENT) ignore_entry(name, open_failure(fd_, name.c_str()));
      return std::nullopt;
    }
    std::string entry;
    const std::string why = read_checked(file, entry);
    ::close(file);
    if (why.empty()) return entry.substr(entry_header_size);
    ignore_entry(name, why);
    return std::nullopt;
  }

  // Stores `cubin` as entry `name`, unless another user owns a file of that name. False (warned
  // if it was tried) when nothing was stored.
  bool write(const std::string& name, const std::string& cubin) const {
    if (owned_by_another_user(name)) return false;
    const std::string temporary = name + ".tmp." + std::to_string(::getpid()) + "." +
                                  std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const int file = ::openat(fd_, temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    const char* failed = file < 0 ? "open" : write_synced_and_close(file, entry_header(cubin), cubin);
    if (!failed && ::renameat(fd_, temporary.c_str(), fd_, name.c_str()) != 0) failed = "rename";
    if (!failed) return true;
    const int error = errno;
    if (file >= 0) ::unlinkat(fd_, temporary.c_str(), 0);
    warn("cannot write " + path_of(name) + " (" + failed + ": " + std::strerror(error) + "); this build is not cached");
    return false;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;

  // "dir/" would make the kernel follow a symlink named dir.
  static std::filesystem::path without_trailing_slash(std::filesystem::path path) {
    while (!path.has_filename() && path.has_relative_path()) path = path.parent_path();
    return path;
  }

  void open_checked() {
    create_private_folders(path_);
    const int fd = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    std::string why = fd < 0 ? open_failure(AT_FDCWD, path_.c_str()) : "";
    struct stat info;
    if (fd >= 0) why = ::fstat(fd, &info) != 0 ? std::strerror(errno) : untrusted_because(info, S_IFDIR);
    if (why.empty()) {
      fd_ = fd;
      return;
    }
    if (fd >= 0) ::close(fd);
    warn("ignoring the folder " + path_.string() + ": " + why + "; compiling without the cache");
  }

  // Reads the open entry `file` into `entry`; what makes it unusable, or "".
  static std::string read_checked(int file, std::string& entry) {
    struct stat info;
    if (::fstat(file, &info) != 0) return std::strerror(errno);
    if (std::string why = untrusted_because(info, S_IFREG); !why.empty()) return why;
    if (uint64_t(info.st_size) > largest_entry) return "larger than any cubin (" + std::to_string(info.st_size) + " bytes)";
    if (!read_all(file, size_t(info.st_size), entry)) return std::string("read: ") + std::strerror(errno);
    return entry_defect(entry);
  }

  bool owned_by_another_user(const std::string& name) const {
    struct stat info;
    return ::fstatat(fd_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && info.st_uid != geteuid();
  }

  void ignore_entry(const std::string& name, const std::string& why) const {
    warn("ignoring the entry " + path_of(name) + ": " + why + "; compiling again" +
         (owned_by_another_user(name) ? ", leaving that file alone" : " to replace it"));
  }
};

// Reads the entry of `program` from the cache folder `cache` (unless `read_entry` is false: the
// driver rejected it), else compiles and stores it there. An empty `cache`: compiles, uncached.
inline NvrtcBuild build_through_cache(const Program& program, const std::filesystem::path& cache, bool read_entry) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double, std::milli>(clock::now() - start).count(); };
  NvrtcBuild build;
  const CacheFolder folder(cache);
  const std::string name = folder.usable() ? cache_key(program) + entry_suffix : "";
  std::optional<std::string> cached;
  if (read_entry && folder.usable()) cached = folder.read(name);
  if (cached) {
    build.cubin = std::move(*cached);
    build.from_cache = true;
    build.cache_file = folder.path_of(name);
    build.milliseconds = elapsed();
    return build;
  }
  build.cubin = compile(program);
  build.milliseconds = elapsed();
  if (folder.usable() && folder.write(name, build.cubin)) build.cache_file = folder.path_of(name);
  return build;
}

}  // namespace nvrtc_detail

inline std::filesystem::path nvrtc_cache_dir() {
  if (const char* dir = std::getenv("TG_NVRTC_CACHE")) return std::string(dir) == "off" ? std::filesystem::path() : std::filesystem::path(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "thunder-gen" / "nvrtc";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "thunder-gen" / "nvrtc";
  return {};
}

// Compiles `file` (in `dir`, which is also the include path) for `arch` ("sm_90"), or reads the
// cubin a previous build with the same inputs cached. Throws std::runtime_error with NVRTC's log
// on a compile error; a cache that cannot be used only costs a compile (and a warning).
inline NvrtcBuild nvrtc_build(const std::filesystem::path& dir, const std::string& file, const std::string& arch,
                              const std::filesystem::path& cache = nvrtc_cache_dir()) {
  return nvrtc_detail::build_through_cache(nvrtc_detail::read_program(dir, file, arch), cache, true);
}

// nvrtc_build, then `load`. When the driver rejects a cubin that came from the cache, compiles
// again without reading the cache, replaces the entry and loads that. Throws std::runtime_error
// when the program does not compile or the driver rejects a freshly compiled cubin.
inline NvrtcBuild nvrtc_build_and_load(const std::filesystem::path& dir, const std::string& file, const std::string& arch,
                                       const CubinLoader& load, const std::filesystem::path& cache = nvrtc_cache_dir()) {
  const nvrtc_detail::Program program = nvrtc_detail::read_program(dir, file, arch);
  NvrtcBuild build = nvrtc_detail::build_through_cache(program, cache, true);
  std::string rejected = load(build.cubin);
  if (!rejected.empty() && build.from_cache) {
    nvrtc_detail::warn("the driver rejected the cubin of " + build.cache_file + " (" + rejected + "); compiling again");
    build = nvrtc_detail::build_through_cache(program, cache, false);
    rejected = load(build.cubin);
  }
  if (!rejected.empty())
    throw std::runtime_error("the driver cannot load the cubin NVRTC compiled from " + (dir / file).string() + ": " + rejected);
  return build;
}

}  // namespace tg
