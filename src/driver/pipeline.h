// The generator's straight-line pipeline: read -> rng -> overrides -> decompose -> dead-code ->
// [autograd -> partition] -> epilogue -> fuse -> emit (the bracket when some input requires grad:
// forward and backward are then lowered separately, the backward on a second thread). Each pass
// is a function of the trace (those that edit take it by value, and the pipeline moves it in)
// run through the pass manager (src/driver/pass_manager.h), which verifies, times, lists and stops.
#pragma once
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "autograd/partition.h"
#include "driver/pass_manager.h"
#include "driver/resume.h"
#include "frontend/overrides.h"
#include "ir/trace.h"
#include "ops/printer.h"
#include "output/output_folder.h"

namespace tg {

struct PipelineOptions : PassOptions {
  std::vector<Override> overrides;  // rematerialization policies: the file's, then --tag's
  RematOptions remat;
  std::optional<Resume> resume;
  // Whether `pass` is one the run does not make: --from-stage's listing is from after it.
  bool resumes_after(Pass pass) const { return resume && pass <= resume->after; }
};

struct PipelineResult {
  std::string stopped_text;  // the listing (or source) of the pass --emit stopped after
  FileSet files;             // the output folder, when the pipeline ran to the end
  std::vector<std::string> manifest_sizes = {};  // ... and its manifest's ManifestWriter::sizes_lines()
  // The traces the run built, freed with the result. The CLI exits without freeing them, as
  // compilers do (clang's -disable-free): at 10,000 ops freeing them took 50 M instructions,
  // all on the critical path.
  std::shared_ptr<const void> work = nullptr;
};

// The process's peak resident memory so far, in MB, and the milliseconds since `start` (for -v).
long peak_rss_mb();
double ms_since(std::chrono::steady_clock::time_point start);

// `log` gets the -v lines. Throws UserError for bad input, InternalError for bugs. The trace (the
// one read, or with options.resume the listing's) is taken by value: a caller done with it moves it in.
PipelineResult run_pipeline(Trace input, const PipelineOptions& options, std::ostream& log);

}  // namespace tg
