#include "npy.h"

#include <fstream>
#include <stdexcept>

#include "reference.h"
#include "tg_npy.h"

namespace tg {

namespace {
const char* descr(DType t) {
  if (const char* d = npy::descr_of(dtype_name(t))) return d;
  throw std::logic_error("no .npy descr for dtype " + std::string(dtype_name(t)));  // a DType added without a row in tg_npy.h
}
}  // namespace

torch::Tensor read_npy(const std::string& path, DType t, const std::optional<std::vector<int64_t>>& shape) {
  const torch::Dtype raw = t == DType::bf16 ? torch::kInt16 : torch_storage_dtype(t);
  torch::Tensor tensor;
  npy::read_file(path, {descr(t), shape}, [&](const npy::Header& h, size_t bytes) {
    tensor = torch::empty(h.shape, raw);
    if (size_t(tensor.nbytes()) != bytes)
      throw npy::Error("a tensor of " + std::to_string(tensor.nbytes()) + " bytes for " + std::to_string(bytes) + " of data");
    return tensor.data_ptr();
  });
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
