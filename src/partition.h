// Partition: the joint trace -> a forward trace and a backward trace.
//
// The forward trace takes the forward inputs and returns the forward outputs, then every value the
// backward reads that the forward computes and does not already return ("saved" outputs). The
// backward trace takes what it reads of the forward (inputs, outputs and saved values, in forward
// order), then one cotangent per forward output, and returns one gradient per input that requires
// grad, in input order. Saved is what the backward part of the joint trace reads, except values
// of index-only ops (broadcast, reshape, full...), which the backward recomputes from their
// sources; choosing a better set in general is rematerialization's job.
#pragma once
#include <string>
#include <vector>

#include "autograd.h"
#include "thunder_gen/ir.h"

namespace tg {

struct SavedValue {
  ValueId value;        // in both traces (they share the joint trace's value table)
  enum class Kind { input, output, intermediate } kind;
  size_t index;         // forward input index, forward output index, or index among saved outputs
  std::string reason;   // why the backward needs it
};

struct Partition {
  Trace forward;
  Trace backward;
  std::vector<SavedValue> saved;  // the backward's leading inputs, in order
};

Partition partition(const JointTrace& joint);

}  // namespace tg
