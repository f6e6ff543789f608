// Listing reader: a stage listing (what `--emit <pass>` and `--dump-dir` print, src/ops/printer.h)
// read back into a Trace, so the pipeline can resume after that pass on a saved input
// (`thunder-gen --from-stage fused k.txt --emit cuda`). A listing is untrusted input, as a trace
// is: each argument is bound to its op's signature and checked as the JSON reader checks it, the
// trace is verified, and every error names the file and line.
//
// Read back: the signature, each value's type and flags (requires_grad, packed, cotangent), every
// op with its arguments, tags, provenance ("(torch.nn.functional.gelu at /ops/3)"), kernel label,
// decomposition or kernel body, a kernel's "# plan: " line (the plan it asks for), and a joint
// listing's "# backward" line. Not read back: custom-gradient bodies (refused), inputs' `init`
// ranges, the overrides' sources (the tags themselves are read) and a device other than cuda:0.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/passes.h"
#include "ir/trace.h"
#include "ops/printer.h"

namespace tg {

// A fused listing's kernel: which op of the trace it is, its line, and the text of the "# plan: "
// line under it (the plan it asks for, which the scheduler checks: src/schedule/kernel_plan.h).
struct ListedKernel {
  size_t op_index = 0;
  size_t line = 0;
  std::optional<std::string> plan_text;
};

struct ListingTrace {
  Trace trace;
  std::optional<JointMarks> joint;  // a joint listing's (the autograd pass's) parts
  std::vector<ListedKernel> kernels;  // a fused listing's kernels, in trace order
};

// `after`: the pass whose listing it is, which decides what it may hold (kernels only after
// fusion; the joint marks only after autograd). After the partition, a listing is one of its two
// traces (--dump-dir's NN-partition-forward.txt, -backward.txt); its plan (--emit plan) and the
// emitted source are not traces: refused. Throws UserError(file, line, message).
ListingTrace read_listing(std::string_view text, const std::string& file, Pass after);
ListingTrace read_listing_file(const std::string& path, Pass after);

}  // namespace tg
