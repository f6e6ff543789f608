// npy_f32.h: the example's own reader and writer of .npy files holding float32 arrays (little
// endian, C order), enough for its data: not the generated runtime's tg_npy.h, which is the
// library's own and not part of its interface.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace npy {

struct Array {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Reads `path`, which must hold a float32 array of exactly `shape` (format 1.0 to 3.0, C order).
inline Array read_f32(const std::string& path, const std::vector<int64_t>& shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": not a .npy file");
  const int major = static_cast<unsigned char>(bytes[6]);
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3 || bytes.size() < 8 + length_bytes) throw std::runtime_error(path + ": unknown .npy version");
  size_t header_length = 0;
  for (size_t i = 0; i < length_bytes; ++i) header_length |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  const size_t data_start = 8 + length_bytes + header_length;
  if (bytes.size() < data_start) throw std::runtime_error(path + ": header cut short");
  const std::string header = bytes.substr(8 + length_bytes, header_length);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr': *'<f4')")) || !std::regex_search(header, m, std::regex(R"('fortran_order': *False)")))
    throw std::runtime_error(path + ": not a C-order float32 array");
  if (!std::regex_search(header, m, std::regex(R"('shape': *\(([0-9, ]*)\))"))) throw std::runtime_error(path + ": no shape");
  Array a;
  const std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (auto d = std::sregex_iterator(dims.begin(), dims.end(), number); d != std::sregex_iterator(); ++d) a.shape.push_back(std::stoll(d->str()));
  if (a.shape != shape) throw std::runtime_error(path + ": shape differs from the trace's");
  size_t count = 1;
  for (int64_t d : shape) count *= size_t(d);
  if (bytes.size() - data_start != count * sizeof(float)) throw std::runtime_error(path + ": wrong number of bytes");
  a.data.resize(count);
  std::memcpy(a.data.data(), bytes.data() + data_start, count * sizeof(float));
  return a;
}

// Writes a float32 array of `shape` as a format 1.0 .npy file.
inline void write_f32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& data) {
  std::string dims;
  for (int64_t d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();  // (1,) for one dimension, (2,3) for two
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";  // 10 + header: a multiple of 64
  std::ofstream out(path, std::ios::binary);
  const char preamble[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint16_t length = uint16_t(header.size());
  out.write(preamble, 8);
  out.put(char(length & 0xff)).put(char(length >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(float)));
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace npy
