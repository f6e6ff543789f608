#include "output_folder.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

namespace tg {

namespace fs = std::filesystem;

void write_folder_atomically(const std::string& folder, const FileSet& files) {
  fs::path target = fs::absolute(folder).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (fs::exists(target) && !fs::is_directory(target)) throw std::runtime_error(folder + " exists and is not a folder");
  fs::path parent = target.parent_path();
  fs::create_directories(parent);
  std::random_device rd;
  std::string suffix = std::to_string(rd());
  fs::path staging = parent / ("." + target.filename().string() + ".tmp-" + suffix);
  fs::path old = parent / ("." + target.filename().string() + ".old-" + suffix);
  try {
    fs::create_directory(staging);
    for (const auto& [name, text] : files) {
      std::ofstream out(staging / name, std::ios::binary);
      out.write(text.data(), std::streamsize(text.size()));
      if (!out) throw std::runtime_error("cannot write " + (target / name).string());
    }
    bool had_old = fs::exists(target);
    if (had_old) fs::rename(target, old);
    fs::rename(staging, target);
    if (had_old) fs::remove_all(old);
  } catch (...) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    if (fs::exists(old, ignored) && !fs::exists(target, ignored)) fs::rename(old, target, ignored);
    throw;
  }
}

}  // namespace tg
