// manifest.json: the trace's inputs and outputs with their harness files, what the forward saves
// for the backward, what a distributed step communicates, the entry points' parameters, and each
// generated file's kernels.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "autograd/partition.h"
#include "codegen/emit_cuda.h"
#include "codegen/entry_points.h"
#include "ir/trace.h"

namespace tg {

// manifest.json, in steps, so the part before a file's kernels can be written while that file is
// still being lowered: the constructor writes everything up to the kernels, add_kernels each
// file's kernels in order, finish the rest. `trace` and `training` (the partition when the trace
// trains, else null) are read only by the constructor.
class ManifestWriter {
 public:
  ManifestWriter(const Trace& trace, const Partition* training, const EntryPoint& forward, const EntryPoint* backward);
  ~ManifestWriter();
  void add_kernels(const std::string& file, const CudaFile& cuda);
  // What the manifest says of the shapes at every size: each input's and each entry-point
  // parameter's "sizes" (an extension; Python allocates from them), a line each, "<where>
  // <name>: [...]", as written (two probes' folders compare them: driver/run_time_sizes.h).
  const std::vector<std::string>& sizes_lines() const;
  std::string finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tg
