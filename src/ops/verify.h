// Verifier: is a Trace a well-formed program? Definitions before uses, each value defined once,
// unique names, every op's declared outputs equal to what its shape/dtype rule computes, and the
// same for decompositions, custom-gradient bodies and fused kernels. Run on the reader's output
// (errors are the user's) and after every pass (errors are thunder-gen's: see verify_pass).
#pragma once
#include <string_view>

#include "ir/trace.h"

namespace tg {

// Throws UserError naming the offending op or argument.
void verify(const Trace& trace);

// Verifies a pass's output; a failure is an InternalError naming the pass.
void verify_pass(const Trace& trace, std::string_view pass);

}  // namespace tg
