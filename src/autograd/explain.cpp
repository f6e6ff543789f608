#include "autograd/explain.h"

#include <map>
#include <optional>
#include <sstream>

#include "ops/printer.h"

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

std::string sizes_text(const SymbolValues& sizes) {
  std::string out;
  for (const auto& [name, size] : sizes) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  return out;
}

}  // namespace

std::string explain_partition(const Partition& p, const std::string& input_file) {
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
  return out.str();
}

}  // namespace tg
