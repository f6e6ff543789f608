// What the generator's fuzz targets accept as an answer to bad input: a UserError with a message.
// An empty one, an InternalError, or anything else escaping (libFuzzer's own handler: a crash) is
// a finding; abort() makes libFuzzer keep the input.
#pragma once
#include <cstdio>
#include <cstdlib>

#include "support/diagnostics.h"

namespace fuzz {

template <class Run>
void user_errors_only(const char* target, Run&& run) {
  auto finding = [&](const char* what, const char* message) {
    std::fprintf(stderr, "%s: %s: %s\n", target, what, message);
    std::abort();
  };
  try {
    run();
  } catch (const tg::UserError& e) {
    if (*e.what() == '\0') finding("user error without a message at", e.where.c_str());
  } catch (const tg::InternalError& e) {
    finding("internal error", e.what());
  }
}

}  // namespace fuzz
