// harness.cpp, the program that runs the entry points on .npy files, and the names of those files
// (which manifest.json lists too).
#pragma once
#include <string>
#include <vector>

#include "autograd/partition.h"
#include "codegen/entry_points.h"
#include "ir/trace.h"

namespace tg {

// The harness's .npy files, as stems (without ".npy"): <input>, <output>, cotangent_<output> and
// grad_<input> (docs/trace-format.md), except where two would be one file (an input named
// grad_x beside the gradient of x, names differing only in case) or one is too long for a file
// system: those get a stem that holds a '-' (which no trace name does) and a hash, and
// manifest.json lists every file. An output that is an input, or an earlier output, shares
// that file (the same bytes).
struct HarnessFiles {
  std::vector<std::string> inputs, outputs;  // by position
  std::vector<std::string> cotangents;       // by output position, when training
  std::vector<std::string> gradients;        // by input position, when training ("" for no gradient)
};
HarnessFiles harness_files(const Trace& trace, bool training);

// `training` is the partition when the trace trains (some input requires grad), else null. The
// entry points are <trace>_forward and <trace>_backward.
std::string emit_harness(const Trace& trace, const Partition* training, const EntryPoint& forward, const EntryPoint* backward,
                         const std::string& input_file);

}  // namespace tg
