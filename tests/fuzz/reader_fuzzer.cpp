// libFuzzer target: the input bytes as a trace, through the reader and on through what
// `thunder-gen validate` runs (decomposition and autograd, up to the joint trace), since those
// passes take untrusted input too. A UserError with a message is the expected answer to bad
// input; an InternalError, any other exception, or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "pipeline.h"
#include "reader.h"
#include "thunder_gen/diagnostics.h"

namespace {

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "reader_fuzzer: %s: %s\n", what, message);
  std::abort();  // libFuzzer saves the input as a crash
}

void read_through_autograd(const std::string& text) {
  tg::PipelineOptions through_autograd;
  through_autograd.stop_after = tg::Stage::joint;
  std::ostringstream no_log;
  tg::run_pipeline(tg::read_trace(text), through_autograd, no_log);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    read_through_autograd(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const tg::UserError& e) {
    if (*e.what() == '\0') finding("user error without a message at", e.where.c_str());
  } catch (const tg::InternalError& e) {
    finding("internal error", e.what());
  }
  return 0;
}
