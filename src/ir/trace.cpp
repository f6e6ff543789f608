#include "ir/trace.h"

namespace tg {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> Arg::int_list() const {
  std::vector<int64_t> out;
  for (const Arg& a : items) out.push_back(a.integer);
  return out;
}

}  // namespace tg
