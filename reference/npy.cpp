#include "npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <stdexcept>

#include "reference.h"

namespace tg {

namespace {
const char* descr(DType t) {
  switch (t) {
    case DType::b8: return "|b1";
    case DType::u8: return "|u1";
    case DType::i8: return "|i1";
    case DType::i16: return "<i2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::f16: return "<f2";
    case DType::bf16: return "<u2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
  }
  return "?";
}
}  // namespace

torch::Tensor read_npy(const std::string& path, DType t) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  char magic[10];
  if (!in.read(magic, 10) || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  size_t len = static_cast<unsigned char>(magic[8]) | (size_t(static_cast<unsigned char>(magic[9])) << 8);
  if (magic[6] != 1) {
    unsigned char more[2];
    in.read(reinterpret_cast<char*>(more), 2);
    len |= (size_t(more[0]) << 16) | (size_t(more[1]) << 24);
  }
  std::string header(len, '\0');
  in.read(header.data(), std::streamsize(len));
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr': '([^']*)'")) || m[1] != descr(t))
    throw std::runtime_error(path + ": expected dtype " + descr(t) + ", header " + header);
  if (!std::regex_search(header, m, std::regex("'shape': \\(([^)]*)\\)"))) throw std::runtime_error(path + ": no shape in header");
  std::vector<int64_t> shape;
  std::string dims = m[1];
  const std::regex number("[0-9]+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) shape.push_back(std::stoll(it->str()));
  torch::Dtype raw = t == DType::bf16 ? torch::kInt16 : torch_storage_dtype(t);
  torch::Tensor tensor = torch::empty(shape, raw);
  if (!in.read(static_cast<char*>(tensor.data_ptr()), std::streamsize(tensor.nbytes()))) throw std::runtime_error(path + ": truncated data");
  return t == DType::bf16 ? tensor.view(torch::kBFloat16) : tensor;
}

void write_npy(const std::string& path, const torch::Tensor& tensor, DType t) {
  torch::Tensor c = tensor.to(torch_storage_dtype(t)).contiguous();
  std::string shape;
  for (int64_t d : c.sizes()) shape += std::to_string(d) + ", ";
  if (c.dim() > 1) shape.resize(shape.size() - 2);
  std::string header = std::string("{'descr': '") + descr(t) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  uint16_t len = uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(len & 0xff)).put(char(len >> 8));
  out << header;
  out.write(static_cast<const char*>(c.data_ptr()), std::streamsize(c.nbytes()));
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace tg
