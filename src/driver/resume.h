// --from-stage: a stage listing read back (src/frontend/listing_reader.h) and where the pipeline
// resumes. A fused listing's kernels are planned here as their "# plan: " lines ask, since the
// reader of listings comes before the scheduler and the code generator that judge a plan.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/passes.h"
#include "ir/trace.h"
#include "ops/printer.h"
#include "schedule/kernel_plan.h"

namespace tg {

// The pipeline resumed after pass `after` on a trace read back from that pass's listing. After
// autograd the trace is the joint trace, its parts marked; after fusion each kernel has its plan.
struct Resume {
  Pass after = Pass::read;
  JointMarks joint;
  std::vector<std::optional<KernelPlan>> plans;  // by op, after fusion (FusedTrace::plans)
};

struct ResumedTrace {
  Trace trace;
  Resume resume;
};

// Reads the listing at `path`, printed after pass `after`. Each kernel of a fused listing gets the
// plan its "# plan: " line asks for (kernel_plan.h says which may differ from the kernel's own),
// else the one fusion makes; a kernel fusion would never make (two reductions over different
// dims, say) is refused at its line with what the planner or the kernel lowering could not do. Throws
// UserError(path, line, message).
ResumedTrace read_to_resume(const std::string& path, Pass after);

}  // namespace tg
