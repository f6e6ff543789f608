// The generator's straight-line pipeline: read -> verify -> decompose -> [autograd -> partition]
// -> epilogue -> fuse -> emit (the bracket when some input requires grad: forward and backward
// are then lowered separately, the backward on a second thread). Each pass is a function
// Trace -> Trace (those that edit take their input by value, and the pipeline moves it in),
// verified after it runs; -v logs one line per pass, and --dump-dir writes every stage's trace,
// numbered as a sequential run would.
#pragma once
#include <memory>
#include <ostream>
#include <string>

#include "output_folder.h"
#include "overrides.h"
#include "partition.h"
#include "thunder_gen/ir.h"

namespace tg {

enum class Stage { read, decompose, joint, partition, fuse, cuda, all };

struct PipelineOptions {
  std::string input_file = "trace.json";  // as named in banners (a base name keeps output portable)
  bool verbose = false;
  std::string dump_dir;      // write each stage's listing here when not empty
  Stage stop_after = Stage::all;
  std::vector<Override> overrides;  // rematerialization policies: the file's, then --tag's
  RematOptions remat;
};

struct PipelineResult {
  std::string stopped_text;  // the listing (or source) of the stage --emit stopped after
  FileSet files;             // the output folder, when the pipeline ran to the end
  // The traces the run built, freed with the result. The CLI exits without freeing them, as
  // compilers do (clang's -disable-free): at 10,000 ops freeing them took 50 M instructions,
  // all on the critical path.
  std::shared_ptr<const void> work = nullptr;
};

// The process's peak resident memory so far, in MB (for -v).
long peak_rss_mb();

// `log` gets the -v lines. Throws UserError for bad input, InternalError for bugs. The trace is
// taken by value: a caller done with it moves it in.
PipelineResult run_pipeline(Trace input, const PipelineOptions& options, std::ostream& log);

}  // namespace tg
