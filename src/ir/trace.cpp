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

std::string Trace::specialization_text() const {
  std::string sizes, ranges;
  for (const auto& [name, size] : specialized_at) {
    sizes += (sizes.empty() ? "" : ", ") + name + "=" + std::to_string(size);
    ranges += (ranges.empty() ? "" : "; ") + symbols.at(name).range_text();
  }
  return sizes.empty() ? "" : sizes + " (" + ranges + ")";
}

}  // namespace tg
