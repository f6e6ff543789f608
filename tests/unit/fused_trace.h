// A trace read from JSON text and fused as the pipeline fuses it: after decomposition and the
// dead-code pass, verified.
#pragma once
#include <string>

#include "frontend/reader.h"
#include "lower/dead_code.h"
#include "lower/decompose.h"
#include "ops/verify.h"
#include "schedule/fuse.h"

namespace test {

inline tg::FusedTrace fused(const std::string& json) {
  tg::FusedTrace f = tg::fuse(tg::remove_dead_ops(tg::decompose(tg::read_trace(json))));
  tg::verify_pass(f.trace, "fuse");
  return f;
}

}  // namespace test
