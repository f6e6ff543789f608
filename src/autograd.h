// Autograd: a prims-only forward trace -> the joint trace, in Thunder's style: the forward ops in
// order, then each op's gradient rule (from the op table) in reverse, cotangents summed where a
// value has several uses. The joint trace's inputs are the forward inputs and one cotangent per
// output ("cotangent_<output>"); its outputs are the forward outputs and one gradient per input
// that requires grad, in input order (zeros where no gradient reaches it). No gradient work is
// kept for values no such input influences.
//
// Not yet: custom-gradient ops must be differentiated with their own `bwd` body, so they have to
// reach autograd before decompose inlines their forward; this pass refuses traces whose decompose
// inlined one under an input that requires grad (see the autograd issue).
#pragma once
#include "thunder_gen/ir.h"

namespace tg {

Trace autograd(const Trace& forward);

// How many of the joint trace's outputs are the forward's (the rest are gradients).
size_t forward_output_count(const Trace& forward);

}  // namespace tg
