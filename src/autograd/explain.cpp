#include "autograd/explain.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

// A symbolic trace's byte counts as expressions over its symbols and at the sizes the plan weighed
// them at: " = 512*B*T (163840 at the plan's sizes)"; "" for a static trace.
class SymbolicBytes {
 public:
  explicit SymbolicBytes(const Partition& p) : symbols_(p.forward.symbols), plan_at_(p.plan_at) {}
  bool symbolic() const { return !symbols_.empty(); }
  std::string of(const std::optional<SizeExpr>& bytes) const {
    if (!symbolic()) return "";
    if (!bytes) return " (as an expression: not known)";
    if (bytes->is_constant()) return "";
    return of(*bytes);
  }
  std::string of(const SizeExpr& bytes) const {
    std::string at;
    try {
      at = std::to_string(bytes.evaluate(plan_at_));
    } catch (const SizeExprError&) {
      at = "past int64";
    }
    return " = " + bytes.text() + " (" + at + " at the plan's sizes)";
  }
  std::optional<SizeExpr> bytes_of(const Value& v) const { return symbolic() ? stored_bytes_expr(v, symbols_) : SizeExpr(stored_bytes(v)); }

 private:
  const Symbols& symbols_;
  const SymbolValues& plan_at_;
};

std::vector<std::string> names_of(const Partition& p, const std::vector<ValueId>& values) {
  std::vector<std::string> names;
  for (ValueId v : values) names.push_back(p.backward.value(v).name);
  return names;
}

// What `plan` recomputes that `before` does not, as "+a, +b", then what it no longer recomputes,
// as "-c" (plans priced by their kernels need not nest); at most 8 names, then a count.
std::string added(const Partition& p, const Partition::FrontierPlan* before, const Partition::FrontierPlan& plan) {
  std::vector<ValueId> was = before ? before->recomputed : std::vector<ValueId>{}, now = plan.recomputed;
  std::sort(was.begin(), was.end());
  std::sort(now.begin(), now.end());
  std::vector<std::string> changes;
  for (ValueId v : plan.recomputed)
    if (!std::binary_search(was.begin(), was.end(), v)) changes.push_back("+" + p.backward.value(v).name);
  if (before)
    for (ValueId v : before->recomputed)
      if (!std::binary_search(now.begin(), now.end(), v)) changes.push_back("-" + p.backward.value(v).name);
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 8; ++i) out += (out.empty() ? "" : ", ") + changes[i];
  if (changes.size() > 8) out += " (and " + std::to_string(changes.size() - 8) + " more)";
  return out.empty() ? (before ? "(nothing more)" : "(nothing)") : out;
}

nlohmann::json kernels_json(const std::optional<KernelSteps>& k) {
  if (!k) return nullptr;
  return {{"forward", microseconds(k->forward_fs)}, {"backward", microseconds(k->backward_fs)}, {"step", microseconds(k->step_fs())}};
}

std::string frontier_json(const Partition& p) {
  nlohmann::json doc{{"device_model", p.device}, {"chosen", p.chosen}, {"frontier", nlohmann::json::array()}};
  // (kernels_us: the kernels each plan makes, priced where the choice priced them, else null.)
  doc["plan"] = {{"activation_bytes", p.planned_bytes}, {"predicted_us", microseconds(p.predicted_fs)}, {"kernels_us", kernels_json(p.kernels)}};
  if (!p.exact_note.empty()) doc["note"] = p.exact_note;
  if (!p.kernels_note.empty()) doc["kernels_note"] = p.kernels_note;
  doc["bytes_first"] = {{"activation_bytes", p.bytes_first.activation_bytes},
                        {"predicted_us", microseconds(p.bytes_first.predicted_fs)},
                        {"kernels_us", kernels_json(p.bytes_first.kernels)}};
  for (const Partition::FrontierPlan& plan : p.frontier)
    doc["frontier"].push_back({{"activation_bytes", plan.activation_bytes},
                               {"predicted_us", microseconds(plan.predicted_fs)},
                               {"kernels_us", kernels_json(plan.kernels)},
                               {"recomputed", names_of(p, plan.recomputed)}});
  // The cut problem itself (an extension for exact solvers: tests/remat_oracle.py).
  auto cost = [](int64_t fs) { return fs >= RematProblem::kInfinite ? nlohmann::json(nullptr) : nlohmann::json(fs); };
  nlohmann::json problem{{"fixed_fs", p.fixed_fs}, {"values", nlohmann::json::array()}, {"ops", nlohmann::json::array()}};
  for (size_t v = 0; v < p.time_problem.values.size(); ++v) {
    const RematProblem::Value& value = p.time_problem.values[v];
    problem["values"].push_back({{"bytes", p.value_bytes[v]}, {"save_fs", cost(value.save_cost)}, {"input", value.is_input}, {"needed", value.needed}});
  }
  for (const RematProblem::Op& op : p.time_problem.ops)
    problem["ops"].push_back({{"inputs", op.inputs}, {"outputs", op.outputs}, {"recompute_fs", cost(op.recompute_cost)}});
  doc["problem"] = std::move(problem);
  return doc.dump(1) + "\n";
}

std::string kernels_text(const std::optional<KernelSteps>& k) {
  if (!k) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", microseconds(k->step_fs()));
  return text;
}

std::string frontier_text(const Partition& p, const std::string& input_file) {
  std::ostringstream out;
  out << input_file << " (trace \"" << p.forward.name << "\"): the memory-time frontier "
      << (p.kernels ? "of the plans priced by their kernels" : "under the cut's time model") << " (--device-model " << p.device
      << "), from the fastest plan to the fewest activation bytes\n";
  if (!p.plan_at.empty()) out << "bytes and times at " << sizes_text(p.plan_at) << " (--plan-at)\n";
  out << "   activation bytes  predicted us  kernels us  recomputes (+) or no longer (-), against the plan above\n";
  for (size_t i = 0; i < p.frontier.size(); ++i) {
    const Partition::FrontierPlan& plan = p.frontier[i];
    char row[96];
    std::snprintf(row, sizeof row, "%s %17lld  %12.3f  %10s  ", int(i) == p.chosen ? "*" : " ", static_cast<long long>(plan.activation_bytes),
                  microseconds(plan.predicted_fs), kernels_text(plan.kernels).c_str());
    out << row << added(p, i ? &p.frontier[i - 1] : nullptr, plan) << "\n";
  }
  out << "(predicted us: the cut's estimate of the step; kernels us: the step its kernels are predicted to take, where the choice priced them)\n";
  out << "by bytes alone (without the time model) the plan would save " << p.bytes_first.activation_bytes << " bytes, predicted "
      << microseconds(p.bytes_first.predicted_fs) << " us" << (p.bytes_first.kernels ? ", its kernels " + kernels_text(p.bytes_first.kernels) + " us" : "") << "\n";
  if (!p.exact_note.empty()) out << "note: " << p.exact_note << "\n";
  if (!p.kernels_note.empty()) out << "note: " << p.kernels_note << "\n";
  out << (p.chosen >= 0 ? "* the plan chosen" : "the plan chosen is not on the frontier (a plan listed is as small and faster, or a budget falls between two of them)") << "; predicted step "
      << microseconds(p.predicted_fs) << " us" << (p.kernels ? ", its kernels " + kernels_text(p.kernels) + " us" : "") << "\n";
  return out.str();
}

}  // namespace

std::string explain_partition(const Partition& p, const std::string& input_file, PlanListing listing) {
  if (listing != PlanListing::plan && p.frontier.empty())
    throw UserError("thunder-gen", "--frontier", "needs the time model: this plan was made by bytes alone");
  if (listing == PlanListing::frontier) return frontier_text(p, input_file);
  if (listing == PlanListing::frontier_json) return frontier_json(p);
  static const char* kKinds[] = {"input", "output", "intermediate"};
  const Trace& b = p.backward;
  const SymbolicBytes symbolic(p);
  std::ostringstream out;
  out << input_file << " (trace \"" << p.forward.name << "\"): rematerialization plan\n";
  if (const std::string at = p.forward.specialization_text(); !at.empty())
    out << "at the sizes " << at << (p.plan_at.empty() ? "" : "; planned at " + sizes_text(p.plan_at) + " (--plan-at)") << "\n";
  int64_t total = 0, intermediate = 0;
  std::optional<SizeExpr> total_expr = SizeExpr(0), intermediate_expr = SizeExpr(0);
  size_t tensors = 0;
  std::string scalars;
  for (const SavedValue& s : p.saved) {
    const Value& v = b.value(s.value);
    if (v.is_scalar) {
      scalars += "  " + v.name + " " + print_type(v) + ": " + s.reason + "\n";
      continue;
    }
    const int64_t bytes = stored_bytes(v);
    total += bytes;
    total_expr = add_known(total_expr, symbolic.bytes_of(v));
    if (s.kind == SavedValue::Kind::intermediate) intermediate += bytes, intermediate_expr = add_known(intermediate_expr, symbolic.bytes_of(v));
    ++tensors;
  }
  out << "saved for the backward: " << tensors << " tensor" << (tensors == 1 ? "" : "s") << ", " << total << " bytes" << symbolic.of(total_expr) << " ("
      << intermediate << symbolic.of(intermediate_expr) << " of them activations: intermediates the forward would otherwise free)\n";
  for (const SavedValue& s : p.saved) {
    const Value& v = b.value(s.value);
    if (v.is_scalar) continue;
    out << "  " << v.name << " " << print_type(v) << "  " << stored_bytes(v) << " bytes" << symbolic.of(symbolic.bytes_of(v)) << ", "
        << (v.bit_packed ? "bitmask" : "dense") << ", " << kKinds[int(s.kind)] << ": " << s.reason << "\n";
  }
  if (!scalars.empty()) out << "saved scalars:\n" << scalars;
  std::map<ValueId, const Op*> def;
  for (const Op& op : b.ops)
    for (ValueId v : op.outs) def.emplace(v, &op);
  out << "recomputed in the backward instead: " << p.recomputed.size() << " value" << (p.recomputed.size() == 1 ? "" : "s") << "\n";
  for (ValueId v : p.recomputed) {
    const Op& op = *def.at(v);
    out << "  " << b.value(v).name << " " << print_type(b.value(v)) << " = " << op.symbol;
    if (!op.origin.empty()) out << " (from " << op.origin << (op.where.empty() ? "" : " at " + op.where) << ")";
    out << "\n";
  }
  if (!p.communication.empty()) {
    int64_t forward = 0, backward = 0;
    for (const CollectiveCall& c : p.communication) (c.pass == "forward" ? forward : backward) += c.bytes;
    out << "communicated per step (per rank, NCCL's count of each call's size): " << forward + backward << " bytes, " << forward
        << " in the forward and " << backward << " in the backward\n";
    for (const CollectiveCall& c : p.communication) out << "  " << c.pass << ": " << c.op << " -> " << c.value << "  " << c.bytes << " bytes\n";
  }
  out << "plan cost: " << p.plan_cost_bits << " (bits saved + elements recomputed; see docs/design-notes.md)\n";
  if (!p.exact_note.empty()) out << "note: " << p.exact_note << "\n";
  if (!p.kernels_note.empty()) out << "note: " << p.kernels_note << "\n";
  if (!p.device.empty())
    out << "the planner's estimate of the step (forward + backward): " << microseconds(p.predicted_fs) << " us (--device-model " << p.device
        << "; the frontier: explain --frontier; the kernels' own predictions follow)\n";
  return out.str();
}

}  // namespace tg
