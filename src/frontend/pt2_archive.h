// A PT2 archive as torch.export.save writes it (torch 2.9 on; docs/pt2.md): a zip of stored
// entries under one root folder. Opening checks the container (every entry stored, not encrypted,
// named inside the root, sizes within the file, no name twice) and the archive's own version
// records; reading an entry checks its CRC. Errors are UserErrors naming the archive and entry.
// Internal to frontend/ (the PT2 reader).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tg {

class Pt2Archive {
 public:
  // Opens and checks `path`; refuses a zip that is not a PT2 archive (with the way out for the
  // layouts torch 2.6 to 2.8 wrote).
  explicit Pt2Archive(const std::string& path);
  ~Pt2Archive();
  Pt2Archive(const Pt2Archive&) = delete;
  Pt2Archive& operator=(const Pt2Archive&) = delete;

  const std::string& path() const { return path_; }
  const std::string& root() const { return root_; }  // "model/" for model.pt2
  bool has(const std::string& entry) const;           // entry: a name under the root
  // The entry's bytes, refused beyond `max_bytes` or on a CRC mismatch.
  std::string read(const std::string& entry, uint64_t max_bytes) const;

 private:
  struct Zip;
  struct Entry {
    std::string name;
    uint64_t size = 0, stored_size = 0;
    uint16_t method = 0, encryption = 0;
  };
  std::string path_;
  std::string root_;
  std::unique_ptr<Zip> zip_;

  std::vector<Entry> list_entries() const;
  void check_entries();
  void check_version_records() const;
};

// The largest JSON entry read (a 70B-parameter model's graph is a few MB).
inline constexpr uint64_t kMaxPt2JsonBytes = uint64_t(256) << 20;

}  // namespace tg
