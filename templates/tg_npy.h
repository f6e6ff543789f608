// thunder-gen .npy reader: one strict parser of NumPy's file format (versions 1.0, 2.0 and 3.0),
// shared by the generated harness (tg_harness.h) and thunder-gen-check (reference/npy.cpp).
// Header-only C++17 with no other project header, so every harness build mode compiles it.
//
// A file is read in steps a caller can also drive on a buffer in memory (the fuzz target does):
//   parse_preamble  magic, version and header length, checked against the bytes there are
//   parse_header    the header's Python dict literal: 'descr', 'fortran_order', 'shape'
//   check           the header against what the caller expects; the data's exact size
//   check_bools     every byte of bool data is 0 or 1
// parse() runs them on a whole file's bytes; read_file() on a file, reading the data straight
// into memory the caller provides once the header is known. Every refusal throws npy::Error;
// read_file's messages start with the path.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tg::npy {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The header's dict.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// What a reader asks for: a descr as NumPy writes it ('<f4', '|b1', ...) and, unless any shape
// will do, the exact shape.
struct Expected {
  std::string descr;
  std::optional<std::vector<int64_t>> shape;
};

// Where the header is, from the fixed bytes before it.
struct Preamble {
  int version = 1;
  size_t header_offset = 0;  // 10 (version 1.0) or 12
  size_t header_bytes = 0;
  size_t data_offset() const { return header_offset + header_bytes; }
};

// A whole file parsed in memory.
struct Parsed {
  Header header;
  const unsigned char* data = nullptr;
  size_t data_bytes = 0;
};

// NumPy itself refuses headers over 10000 bytes by default (np.load's max_header_size); a
// format-1.0 header can be 65535. Longer ones are refused before anything is allocated.
inline constexpr size_t kMaxHeaderBytes = 65535;
// NumPy's limit on dimensions (NPY_MAXDIMS in NumPy 2).
inline constexpr size_t kMaxDims = 64;
inline constexpr size_t kPreambleBytes = 12;  // the most parse_preamble reads

// Thunder's dtype short names -> the descr the harness writes and reads (bf16 as raw '<u2' bits);
// nullptr for a name not in the table.
inline const char* descr_of(std::string_view dtype) {
  static const char* const table[][2] = {{"b8", "|b1"},  {"u8", "|u1"},  {"i8", "|i1"},   {"i16", "<i2"}, {"i32", "<i4"},
                                         {"i64", "<i8"}, {"f16", "<f2"}, {"bf16", "<u2"}, {"f32", "<f4"}, {"f64", "<f8"}};
  for (const auto& row : table)
    if (dtype == row[0]) return row[1];
  return nullptr;
}

// A shape as Python writes a tuple: (), (3,), (2, 3).
inline std::string tuple_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

namespace detail {

inline uint32_t little_endian(const unsigned char* p, size_t bytes) {
  uint32_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_word(char c) { return is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A recursive-descent parser of the one dict literal NumPy writes, as strict as Python's
// ast.literal_eval plus NumPy's own checks on the result (exactly the three keys; a bool; a
// tuple of ints), and stricter where NumPy never writes a form: no escapes in strings, no
// duplicate keys, no signs or underscores in integers.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  Header parse() {
    skip_space();
    expect('{', "expected the dict's '{'");
    bool seen[3] = {false, false, false};
    Header h;
    while (!accept_after_space('}')) {
      member(h, seen);
      if (!accept_after_space(',')) {
        expect_after_space('}', "expected ',' or '}' after a value");
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) fail("text after the dict's closing '}'");
    static const char* const keys[3] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; ++k)
      if (!seen[k]) throw Error(std::string("header has no '") + keys[k] + "' key");
    return h;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("header, character " + std::to_string(pos_ + 1) + ": " + what);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (!at_end() && is_space(text_[pos_])) ++pos_;
  }
  bool accept_after_space(char c) {
    skip_space();
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* what) {
    if (at_end() || text_[pos_] != c) fail(what);
    ++pos_;
  }
  void expect_after_space(char c, const char* what) {
    skip_space();
    expect(c, what);
  }

  // One 'key': value pair; seen[] marks descr, fortran_order, shape.
  void member(Header& h, bool seen[3]) {
    skip_space();
    const size_t key_at = pos_;
    const std::string key = string_literal();
    expect_after_space(':', "expected ':' after a key");
    skip_space();
    int k = key == "descr" ? 0 : key == "fortran_order" ? 1 : key == "shape" ? 2 : -1;
    if (k < 0) {
      pos_ = key_at;
      fail("unknown key '" + key + "' (the keys are 'descr', 'fortran_order' and 'shape')");
    }
    if (seen[k]) {
      pos_ = key_at;
      fail("key '" + key + "' appears twice");
    }
    seen[k] = true;
    if (k == 0) h.descr = string_literal();
    if (k == 1) h.fortran_order = boolean();
    if (k == 2) h.shape = tuple();
  }

  // A '...' or "..." string of printable ASCII without backslashes.
  std::string string_literal() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const size_t start = ++pos_;
    while (!at_end() && text_[pos_] != quote) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c < 0x20 || c >= 0x7f || c == '\\') fail("a string holds a control character, a backslash or non-ASCII");
      ++pos_;
    }
    if (at_end()) fail("the string has no closing quote");
    const std::string s(text_.substr(start, pos_ - start));
    ++pos_;  // the closing quote
    return s;
  }

  std::string_view word() {
    const size_t start = pos_;
    while (!at_end() && is_word(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  bool boolean() {
    const size_t start = pos_;
    const std::string_view w = word();
    if (w == "True" || w == "False") return w == "True";
    pos_ = start;
    fail("expected True or False for 'fortran_order'");
  }

  // (), (3,), (2, 3), (2, 3, ): a tuple of non-negative integers.
  std::vector<int64_t> tuple() {
    expect('(', "expected a tuple for 'shape'");
    std::vector<int64_t> dims;
    if (accept_after_space(')')) return dims;
    for (;;) {
      skip_space();
      if (dims.size() == kMaxDims) fail("more than " + std::to_string(kMaxDims) + " dimensions");
      dims.push_back(integer());
      if (accept_after_space(',')) {
        if (accept_after_space(')')) return dims;
        continue;
      }
      expect_after_space(')', "expected ',' or ')' in the shape");
      if (dims.size() == 1) fail("(n) is not a tuple; a one-dimensional shape is written (n,)");
      return dims;
    }
  }

  // A decimal integer as Python writes one: digits, no sign, no leading zero, at most 2^63 - 1.
  int64_t integer() {
    const size_t start = pos_;
    if (!is_digit(peek())) fail("expected a non-negative integer dimension");
    const std::string_view w = word();
    uint64_t v = 0;
    for (char c : w) {
      if (!is_digit(c)) {
        pos_ = start;
        fail("dimension '" + std::string(w) + "' is not a decimal integer");
      }
      if (v > (uint64_t(std::numeric_limits<int64_t>::max()) - uint64_t(c - '0')) / 10) {
        pos_ = start;
        fail("dimension " + std::string(w) + " is 2^63 or more");
      }
      v = v * 10 + uint64_t(c - '0');
    }
    if (w.size() > 1 && w[0] == '0') {
      pos_ = start;
      fail("dimension " + std::string(w) + " has a leading zero");
    }
    return int64_t(v);
  }
};

// The size in bytes of one element of a descr the reader accepts ('<f4': 4).
inline size_t itemsize(std::string_view descr) { return descr.size() == 3 ? size_t(descr[2] - '0') : 0; }

// Whether a header's descr is the one expected: the same kind and size, little-endian (any byte
// order mark for one-byte types, where order means nothing: NumPy writes '|u1', '<u1' is the same).
inline bool same_descr(std::string_view got, std::string_view want) {
  if (got == want) return true;
  if (got.size() != 3 || want.size() != 3 || got.substr(1) != want.substr(1) || want[2] != '1') return false;
  return got[0] == '|' || got[0] == '<' || got[0] == '>' || got[0] == '=';
}

// numel * itemsize, or nothing when it overflows 64 bits.
inline std::optional<uint64_t> data_size(const std::vector<int64_t>& shape, size_t item) {
  uint64_t n = item;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / uint64_t(d)) return std::nullopt;
    n *= uint64_t(d);
  }
  return n;
}

}  // namespace detail

// Reads the magic, the version and the header length from the first `available` bytes of a file
// of `file_size` bytes (at least kPreambleBytes of them when the file has that many).
inline Preamble parse_preamble(const unsigned char* p, size_t available, uint64_t file_size) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (available < 8) throw Error("not a .npy file: " + std::to_string(file_size) + " bytes, too short for the magic and version");
  for (int i = 0; i < 6; ++i)
    if (p[i] != magic[i]) throw Error("not a .npy file: no \\x93NUMPY magic at the start");
  Preamble pre;
  const int major = p[6], minor = p[7];
  if (minor != 0 || major < 1 || major > 3)
    throw Error("format version " + std::to_string(major) + "." + std::to_string(minor) + " is not supported (1.0, 2.0 or 3.0)");
  pre.version = major;
  const size_t length_bytes = major == 1 ? 2 : 4;
  pre.header_offset = 8 + length_bytes;
  if (available < pre.header_offset) throw Error("truncated: the file ends inside the header length field");
  pre.header_bytes = detail::little_endian(p + 8, length_bytes);
  if (pre.header_bytes > file_size - pre.header_offset)
    throw Error("header length field says " + std::to_string(pre.header_bytes) + " bytes, but only " +
                std::to_string(file_size - pre.header_offset) + " follow it");
  if (pre.header_bytes > kMaxHeaderBytes)
    throw Error("header of " + std::to_string(pre.header_bytes) + " bytes; this reader takes at most " + std::to_string(kMaxHeaderBytes));
  return pre;
}

// Parses the header text (the dict and its padding).
inline Header parse_header(std::string_view text) { return detail::HeaderParser(text).parse(); }

// Checks a header against what the caller expects and against the `data_bytes` the file holds
// after it; returns the data's size in bytes.
inline size_t check(const Header& h, const Expected& want, uint64_t data_bytes) {
  if (!detail::same_descr(h.descr, want.descr)) {
    const bool big_endian = h.descr.size() == 3 && h.descr[0] == '>' && h.descr.substr(1) == want.descr.substr(1);
    throw Error("header says dtype '" + h.descr + "', expected '" + want.descr + "'" + (big_endian ? " (big-endian data is not supported)" : ""));
  }
  if (h.fortran_order) throw Error("header says fortran_order True; only C-order arrays are supported");
  if (want.shape && h.shape != *want.shape)
    throw Error("header says shape " + tuple_text(h.shape) + ", expected " + tuple_text(*want.shape));
  const std::optional<uint64_t> need = detail::data_size(h.shape, detail::itemsize(want.descr));
  const std::string what = "shape " + tuple_text(h.shape) + " of '" + want.descr + "'";
  if (!need || *need > std::numeric_limits<size_t>::max()) throw Error(what + " has more bytes than fit in 64 bits");
  if (data_bytes < *need)
    throw Error("truncated: " + std::to_string(data_bytes) + " bytes of data, " + what + " needs " + std::to_string(*need));
  if (data_bytes > *need)
    throw Error(std::to_string(data_bytes - *need) + " bytes after the data (" + what + " is " + std::to_string(*need) + " bytes)");
  return size_t(*need);
}

// Bool data must be 0 or 1 in every byte; `file_offset` is where the data starts, for the message.
inline void check_bools(const unsigned char* data, size_t bytes, size_t file_offset) {
  for (size_t i = 0; i < bytes; ++i)
    if (data[i] > 1) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", data[i]);
      throw Error("bool element " + std::to_string(i) + " (file offset " + std::to_string(file_offset + i) + ") is " + hex + ", not 0 or 1");
    }
}

inline bool is_bool(std::string_view descr) { return descr.size() == 3 && descr[1] == 'b'; }

// A whole file's bytes, checked; `data` points into them.
inline Parsed parse(const unsigned char* file, size_t size, const Expected& want) {
  const Preamble pre = parse_preamble(file, size, size);
  Parsed p;
  p.header = parse_header(std::string_view(reinterpret_cast<const char*>(file) + pre.header_offset, pre.header_bytes));
  p.data = file + pre.data_offset();
  p.data_bytes = check(p.header, want, size - pre.data_offset());
  if (is_bool(want.descr)) check_bools(p.data, p.data_bytes, pre.data_offset());
  return p;
}

namespace detail {
// `path` opened for reading, its size in `size`.
inline std::ifstream open_file(const std::string& path, uint64_t& size) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(ec ? "cannot open: " + ec.message() : "not a regular file");
  size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) throw Error("cannot open");
  return in;
}

// The preamble and header of an open file of `size` bytes, its read position left after them.
inline Header read_header(std::ifstream& in, uint64_t size, Preamble& pre) {
  unsigned char fixed[kPreambleBytes];
  in.read(reinterpret_cast<char*>(fixed), std::streamsize(size < kPreambleBytes ? size : kPreambleBytes));
  pre = parse_preamble(fixed, size_t(in.gcount()), size);
  std::string text(pre.header_bytes, '\0');
  in.seekg(std::streamoff(pre.header_offset));
  if (!in.read(text.data(), std::streamsize(text.size()))) throw Error("read error in the header");
  return parse_header(text);
}

// read(), its Error's message starting with the path.
template <class Read>
Header with_path(const std::string& path, Read read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}
}  // namespace detail

// The header of `path` alone (a reader deciding the shape it expects). Throws Error naming the path.
inline Header read_header_of(const std::string& path) {
  return detail::with_path(path, [&] {
    uint64_t size = 0;
    std::ifstream in = detail::open_file(path, size);
    Preamble pre;
    return detail::read_header(in, size, pre);
  });
}

// Reads `path`: `place(header, bytes)` returns where its `bytes` of data go (memory it owns, the
// size check() found). Throws Error with messages that start with the path.
template <class Place>
Header read_file(const std::string& path, const Expected& want, Place place) {
  return detail::with_path(path, [&] {
    uint64_t size = 0;
    std::ifstream in = detail::open_file(path, size);
    Preamble pre;
    Header h = detail::read_header(in, size, pre);
    const size_t bytes = check(h, want, size - pre.data_offset());
    unsigned char* data = static_cast<unsigned char*>(place(h, bytes));
    if (bytes && !in.read(reinterpret_cast<char*>(data), std::streamsize(bytes))) throw Error("read error in the data");
    if (is_bool(want.descr)) check_bools(data, bytes, pre.data_offset());
    return h;
  });
}

}  // namespace tg::npy
