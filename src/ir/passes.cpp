#include "ir/passes.h"

namespace tg {

std::string_view pass_name(Pass pass) {
  switch (pass) {
    case Pass::read: return "read";
    case Pass::rng: return "rng";
    case Pass::overrides: return "overrides";
    case Pass::decompose: return "decompose";
    case Pass::dead_code: return "dead-code";
    case Pass::autograd: return "autograd";
    case Pass::partition: return "partition";
    case Pass::epilogue: return "epilogue";
    case Pass::fuse: return "fuse";
    case Pass::kernel_ir: return "kernel-ir";
    case Pass::emit: return "emit";
  }
  return "?";
}

const std::vector<Pass>& all_passes() {
  static const std::vector<Pass> passes = {Pass::read,     Pass::rng,       Pass::overrides, Pass::decompose, Pass::dead_code,
                                           Pass::autograd, Pass::partition, Pass::epilogue,  Pass::fuse,      Pass::kernel_ir, Pass::emit};
  return passes;
}

}  // namespace tg
