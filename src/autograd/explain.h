// `thunder-gen explain`: the rematerialization plan in words. For every saved value its bytes,
// storage, kind and reason; the forward values the backward recomputes instead, each with the
// op that makes it; and the totals. manifest.json carries the same facts.
#pragma once
#include <string>

#include "autograd/partition.h"

namespace tg {

std::string explain_partition(const Partition& p, const std::string& input_file);

}  // namespace tg
