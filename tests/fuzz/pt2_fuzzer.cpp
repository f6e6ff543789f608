// libFuzzer target: the input bytes as a PT2 archive's models/model.json (the serialized
// ExportedProgram), translated into a trace (src/frontend/pt2_*.cpp: the schema's unions and enums,
// the ATen declarations and their defaults, in-place ops, autocast regions, the linear pattern),
// read, and generated as `thunder-gen model.pt2 -o out/` does (the folder built in memory). The zip
// around it is libzip's, with thunder-gen's checks on entries tested by tests/pt2_hostile.sh. A
// UserError with a message is the expected answer to bad input; an InternalError, any other
// exception, or a sanitizer report is a finding.
//
// Seeds (tests/fuzz/corpus/pt2/): the model.json of every archive in tests/pt2/ (torch 2.9 and
// 2.15, default and Core ATen exports, stack traces dropped), a small module's with a bf16
// autocast region, and the inputs of findings (named by their SHA-1, as libFuzzer names them).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "driver/pipeline.h"
#include "frontend/pt2_program.h"
#include "frontend/reader.h"
#include "support/diagnostics.h"
#include "user_errors_only.h"

namespace {

void generate(const std::string& model_json) {
  const tg::Pt2Translation translation = tg::translate_program(model_json, "model");
  std::ostringstream no_log;
  tg::run_pipeline(tg::read_trace(translation.trace.dump()), tg::PipelineOptions{}, no_log);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::user_errors_only("pt2_fuzzer", [&] { generate(std::string(reinterpret_cast<const char*>(data), size)); });
  return 0;
}
