#include "driver/list_ops.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ops/op_table.h"
#include "ops/printer.h"

namespace tg {

// The op table as JSON, for the Python tools (tools/op_declarations.py): each op's id, fusion class,
// what its gradient saves, for an elementwise prim or its torch-level form whether its result is
// bool, and for a declared prim (src/ops/<family>_prims.def) its family, PyTorch
// function, the dtypes it accepts, whether it is discontinuous or kinked, and each operand's domain.
int list_ops_json() {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpInfo& op : op_table()) {
    if (op.made_by_fusion()) continue;
    nlohmann::ordered_json row = {{"id", op.id}, {"fusion", fusion_class_name(op.fusion)}, {"grad_saves", op.grad_saves}};
    if (op.fusion == FusionClass::elementwise || is_torch_form(op)) row["bool_result"] = op.bool_result;
    if (!op.family.empty()) {
      nlohmann::ordered_json domains = nlohmann::ordered_json::array();
      for (const Domain& d : op.domains) domains.push_back({d.lo, d.hi});
      row.update({{"family", op.family}, {"torch", op.torch_function}, {"accepts", dtypes_name(op.accepts)},
                  {"discontinuous", op.discontinuous}, {"kinked", op.kinked}, {"domains", domains}});
    }
    ops.push_back(row);
  }
  std::cout << ops.dump(1) << "\n";
  return 0;
}

int list_ops() {
  const auto readable = std::count_if(op_table().begin(), op_table().end(), [](const OpInfo& op) { return !op.made_by_fusion(); });
  std::cout << "thunder-gen " << THUNDER_GEN_VERSION << ": " << readable << " ops\n";
  for (const OpInfo& op : op_table()) {
    if (op.made_by_fusion()) continue;
    std::string sig;
    for (const Param& p : op.params) {
      if (!sig.empty()) sig += ", ";
      if (p.keyword_only && sig.find('*') == std::string::npos) sig += "*, ";
      sig += std::string(p.name) + (p.has_default ? "=" + print_literal(p.default_value, Trace{}) : "");
    }
    std::cout << op.id << "(" << sig << ")  [" << fusion_class_name(op.fusion) << "]";
    if (!op.grad_saves.empty()) std::cout << "  grad saves: " << op.grad_saves;
    if (!op.code.empty()) std::cout << "  " << op.code;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace tg
