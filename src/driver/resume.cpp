#include "driver/resume.h"

#include "codegen/kernel_program.h"
#include "frontend/listing_reader.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

// The plan of one listed kernel, or a UserError at its line (the plan's line for a plan refused).
KernelPlan plan_listed(const Trace& t, const ListedKernel& listed, const std::string& file) {
  const Op& op = t.ops[listed.op_index];
  const std::string kernel_line = std::to_string(listed.line), plan_line = std::to_string(listed.line + 1);
  auto not_made = [&](const std::string& why) { return "kernel " + op.label + " is not one fusion makes (" + why + ")"; };
  KernelPlan plan;
  try {
    plan = listed.plan_text ? plan_from_listing(*listed.plan_text, t, op, plan_line) : plan_kernel(t, op);
  } catch (const UserError& e) {
    throw UserError(file, e.where, e.what());
  } catch (const InternalError& e) {
    throw UserError(file, kernel_line, not_made(e.what()));
  }
  if (const auto problem = kernel_lowering_problem(t, op, plan)) throw UserError(file, kernel_line, not_made(*problem));
  return plan;
}

}  // namespace

ResumedTrace read_to_resume(const std::string& path, Pass after) {
  ListingTrace listing = read_listing_file(path, after);
  ResumedTrace out{std::move(listing.trace), Resume{after, listing.joint.value_or(JointMarks{}), {}}};
  if (!listing.kernels.empty()) out.resume.plans.resize(out.trace.ops.size());
  for (const ListedKernel& listed : listing.kernels) out.resume.plans[listed.op_index] = plan_listed(out.trace, listed, path);
  return out;
}

}  // namespace tg
