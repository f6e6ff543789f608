#include "autograd/explain.h"

#include <map>
#include <sstream>

#include "ops/printer.h"

namespace tg {

std::string explain_partition(const Partition& p, const std::string& input_file) {
  static const char* kKinds[] = {"input", "output", "intermediate"};
  const Trace& b = p.backward;
  std::ostringstream out;
  out << input_file << " (trace \"" << p.forward.name << "\"): rematerialization plan\n";
  if (const std::string at = p.forward.specialization_text(); !at.empty()) out << "at the sizes " << at << "\n";
  int64_t total = 0, intermediate = 0;
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
    if (s.kind == SavedValue::Kind::intermediate) intermediate += bytes;
    ++tensors;
  }
  out << "saved for the backward: " << tensors << " tensor" << (tensors == 1 ? "" : "s") << ", " << total << " bytes (" << intermediate
      << " of them activations: intermediates the forward would otherwise free)\n";
  for (const SavedValue& s : p.saved) {
    const Value& v = b.value(s.value);
    if (v.is_scalar) continue;
    out << "  " << v.name << " " << print_type(v) << "  " << stored_bytes(v) << " bytes, " << (v.bit_packed ? "bitmask" : "dense") << ", " << kKinds[int(s.kind)] << ": " << s.reason
        << "\n";
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
