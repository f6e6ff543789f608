#include "frontend/pt2_archive.h"

#include <zip.h>

#include <filesystem>
#include <set>
#include <string_view>
#include <vector>

#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

struct Pt2Archive::Zip {
  zip_t* handle = nullptr;
  ~Zip() {
    if (handle) zip_discard(handle);
  }
};

namespace {

constexpr zip_int64_t kMaxEntries = 100000;

[[noreturn]] void refuse(const std::string& path, const std::string& entry, const std::string& message) {
  throw UserError(entry.empty() ? path : path + ":" + entry, "", message);
}

// A name a zip entry may have here: relative, '/'-separated, no "." or ".." part, printable ASCII
// (what torch writes), so that no entry can name a place outside the archive's root.
bool is_safe_entry_name(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  for (char c : name)
    if (c < 0x20 || c > 0x7e || c == '\\') return false;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, slash - start);
    if (part == "." || part == "..") return false;
    if (part.empty() && slash != name.size()) return false;  // "a//b"
    start = slash + 1;
  }
  return true;
}

std::string zip_message(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

}  // namespace

Pt2Archive::Pt2Archive(const std::string& path) : path_(path), zip_(std::make_unique<Zip>()) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) refuse(path, "", "is a folder, not a PT2 archive");
  int code = 0;
  zip_->handle = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
  if (!zip_->handle) {
    if (code == ZIP_ER_NOZIP) refuse(path, "", "not a zip archive (torch.export.save writes a PT2 archive, a zip)");
    if (code == ZIP_ER_OPEN || code == ZIP_ER_READ) refuse(path, "", "cannot open file");
    if (code == ZIP_ER_EXISTS) refuse(path, "", "the archive names an entry twice");
    refuse(path, "", "not a readable zip archive: " + zip_message(code));
  }
  check_entries();
  check_version_records();
}

Pt2Archive::~Pt2Archive() = default;

std::vector<Pt2Archive::Entry> Pt2Archive::list_entries() const {
  const zip_int64_t count = zip_get_num_entries(zip_->handle, 0);
  if (count <= 0) refuse(path_, "", "an empty zip archive, not a PT2 archive");
  if (count > kMaxEntries) refuse(path_, "", std::to_string(count) + " entries, more than the " + std::to_string(kMaxEntries) + " this reader takes");
  std::vector<Entry> entries;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    if (zip_stat_index(zip_->handle, zip_uint64_t(i), ZIP_FL_ENC_RAW, &st) != 0 || !(st.valid & ZIP_STAT_NAME))
      refuse(path_, "", "entry " + std::to_string(i) + " cannot be read: " + zip_strerror(zip_->handle));
    entries.push_back({st.name, st.size, st.comp_size, st.comp_method, st.encryption_method});
  }
  return entries;
}

void Pt2Archive::check_entries() {
  const std::vector<Entry> entries = list_entries();
  for (const Entry& e : entries)
    if (e.name == "serialized_exported_program.json" || e.name == "version")
      refuse(path_, "", "a pre-2.8 archive (the torch 2.6/2.7 layout, weights pickled): re-save it with torch.export.save from torch >= 2.9");
  std::error_code ec;
  const uintmax_t file_bytes = std::filesystem::file_size(path_, ec);
  const size_t slash = entries.front().name.find('/');
  if (slash != std::string::npos) root_ = entries.front().name.substr(0, slash + 1);
  std::set<std::string_view> names;
  for (const Entry& e : entries) {
    if (!is_safe_entry_name(e.name)) refuse(path_, printable_line(e.name), "an entry name that is not a plain relative path");
    if (root_.empty() || e.name.rfind(root_, 0) != 0)
      refuse(path_, e.name, "not under the root folder the first entry names (a PT2 archive holds one root folder)");
    if (!names.insert(e.name).second) refuse(path_, e.name, "the archive names this entry twice");
    if (e.method != ZIP_CM_STORE)
      refuse(path_, e.name, "a compressed entry (torch.export.save stores every entry uncompressed; another tool rewrote this archive)");
    if (e.encryption != ZIP_EM_NONE) refuse(path_, e.name, "an encrypted entry");
    if (e.size != e.stored_size || (!ec && e.size > file_bytes))
      refuse(path_, e.name, "declares " + std::to_string(e.size) + " bytes, more than the archive holds");
  }
}

void Pt2Archive::check_version_records() const {
  if (!has("archive_format")) refuse(path_, "", "not a PT2 archive: no " + root_ + "archive_format entry (torch.export.save writes one)");
  const std::string format = read("archive_format", 64);
  if (format != "pt2") refuse(path_, root_ + "archive_format", "says \"" + printable_line(format) + "\", not \"pt2\"");
  if (!has("archive_version")) refuse(path_, "", "no " + root_ + "archive_version entry (torch.export.save writes \"0\")");
  const std::string version = read("archive_version", 64);
  if (version != "0")
    refuse(path_, root_ + "archive_version", "archive version \"" + printable_line(version) + "\"; this reader knows version 0 (torch 2.8 to 2.15)");
  if (has("byteorder")) {
    const std::string order = read("byteorder", 64);
    if (order != "little") refuse(path_, root_ + "byteorder", "written on a \"" + printable_line(order) + "\"-endian host; this reader takes little-endian archives");
  }
}

bool Pt2Archive::has(const std::string& entry) const {
  return zip_name_locate(zip_->handle, (root_ + entry).c_str(), ZIP_FL_ENC_RAW) >= 0;
}

std::string Pt2Archive::read(const std::string& entry, uint64_t max_bytes) const {
  const std::string name = root_ + entry;
  const zip_int64_t index = zip_name_locate(zip_->handle, name.c_str(), ZIP_FL_ENC_RAW);
  if (index < 0) refuse(path_, name, "no such entry");
  zip_stat_t st;
  if (zip_stat_index(zip_->handle, zip_uint64_t(index), ZIP_FL_ENC_RAW, &st) != 0) refuse(path_, name, zip_strerror(zip_->handle));
  if (st.size > max_bytes)
    refuse(path_, name, std::to_string(st.size) + " bytes, more than the " + std::to_string(max_bytes) + " this reader takes for it");
  zip_file_t* file = zip_fopen_index(zip_->handle, zip_uint64_t(index), 0);
  if (!file) refuse(path_, name, std::string("cannot be read: ") + zip_strerror(zip_->handle));
  std::string bytes(size_t(st.size), '\0');
  uint64_t done = 0;
  zip_int64_t got = 0;
  // Read to the end (a read past the last byte returns 0): libzip checks the CRC there.
  char past_end = 0;
  while (done < st.size && (got = zip_fread(file, bytes.data() + done, st.size - done)) > 0) done += uint64_t(got);
  if (got >= 0 && done == st.size) got = zip_fread(file, &past_end, 1);
  const std::string error = got < 0 ? zip_file_strerror(file) : "";
  zip_fclose(file);
  if (got < 0) refuse(path_, name, "cannot be read: " + error);
  if (done != st.size || got != 0) refuse(path_, name, "holds a different number of bytes than it declares");
  return bytes;
}

}  // namespace tg
