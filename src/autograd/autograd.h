// Autograd: a decomposed forward trace -> the joint trace, in Thunder's style: the forward ops in
// order, then each op's gradient rule (from the op table) in reverse, cotangents summed where a
// value has several uses. The joint trace's inputs are the forward inputs and one cotangent per
// output ("cotangent_<output>"); its outputs are the forward outputs and one gradient per input
// that requires grad, in input order (zeros where no gradient reaches it). No gradient work is
// kept for values no such input influences.
//
// Custom-gradient ops (kept by decompose's keep_custom) are inlined both ways: their fwd body in
// the forward part, and the user's bwd body, never an automatic derivative, in the backward part,
// reading the values their fwd named as saved. Torch-level ops with rows (composite) are lowered
// to prims in the forward part and differentiated by their own rule where they have one.
#pragma once
#include "ir/trace.h"

namespace tg {

struct JointTrace {
  Trace trace;
  size_t forward_ops = 0;      // trace.ops[0, forward_ops) is the forward part
  size_t forward_inputs = 0;   // trace.inputs: forward inputs, then cotangents
  size_t forward_outputs = 0;  // trace.outputs: forward outputs, then gradients
};

// Consumes the forward trace: its ops move into the joint trace.
JointTrace autograd(Trace forward);

}  // namespace tg
