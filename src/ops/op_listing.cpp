#include "ops/op_listing.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ops/op_table.h"
#include "ops/printer.h"

namespace tg {
namespace {

std::string_view param_kind_name(ParamKind kind) {
  switch (kind) {
#define TG_PARAM_KIND(name) \
  case ParamKind::name: return #name;
    TG_PARAM_KINDS(TG_PARAM_KIND)
#undef TG_PARAM_KIND
  }
  return "?";
}

// A torch form's gradient is its prim's (it is lowered before autograd); digamma's rule refuses.
std::string_view gradient_of(const OpInfo& op) {
  if (is_torch_form(op)) return gradient_of(op_info(op.kind));
  if (op.grad_saves == "none") return "refused";
  if (op.grad) return "rule";
  return op.has_lowering() ? "lowering" : "none";
}

nlohmann::ordered_json params_json(const OpInfo& op) {
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const Param& p : op.params) {
    nlohmann::ordered_json param = {{"name", p.name}, {"kind", param_kind_name(p.kind)}, {"keyword_only", p.keyword_only}};
    if (p.has_default) param["default"] = print_literal(p.default_value, Trace{});
    params.push_back(param);
  }
  return params;
}

nlohmann::ordered_json op_json(const OpInfo& op) {
  nlohmann::ordered_json row = {{"id", op.id},
                                {"kind", op_kind_name(op.kind)},
                                {"family", op.family},
                                {"fusion", fusion_class_name(op.fusion)},
                                {"accepts", dtypes_name(op.accepts)},
                                {"params", params_json(op)},
                                {"gradient", gradient_of(op)},
                                {"grad_saves", op.grad_saves},
                                {"discontinuous", op.discontinuous},
                                {"kinked", op.kinked}};
  if (op.fusion == FusionClass::elementwise || is_torch_form(op)) row["bool_result"] = op.bool_result;
  auto add = [&row](const char* key, std::string_view text) {
    if (!text.empty()) row[key] = text;
  };
  add("code", op.code);
  add("integer_code", op.integer_code);
  add("torch", op.torch_function);
  if (is_torch_form(op)) row["form_of"] = op_info(op.kind).id;
  if (!op.domains.empty()) {
    nlohmann::ordered_json domains = nlohmann::ordered_json::array();
    for (const Domain& d : op.domains) domains.push_back({d.lo, d.hi});
    row["domains"] = domains;
  }
  add("aten", op.aten);
  add("summary", op.summary);
  return row;
}

std::string signature(const OpInfo& op) {
  std::string sig;
  for (const Param& p : op.params) {
    if (!sig.empty()) sig += ", ";
    if (p.keyword_only && sig.find('*') == std::string::npos) sig += "*, ";
    sig += std::string(p.name) + (p.has_default ? "=" + print_literal(p.default_value, Trace{}) : "");
  }
  return sig;
}

}  // namespace

std::string op_table_text() {
  const auto readable = std::count_if(op_table().begin(), op_table().end(), [](const OpInfo& op) { return !op.made_by_fusion(); });
  std::ostringstream out;
  out << "thunder-gen " << THUNDER_GEN_VERSION << ": " << readable << " ops\n";
  for (const OpInfo& op : op_table()) {
    if (op.made_by_fusion()) continue;
    out << op.id << "(" << signature(op) << ")  [" << fusion_class_name(op.fusion) << "]";
    if (!op.grad_saves.empty()) out << "  grad saves: " << op.grad_saves;
    if (!op.code.empty()) out << "  " << op.code;
    out << "\n";
  }
  return out.str();
}

std::string op_table_json() {
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const OpInfo& op : op_table())
    if (!op.made_by_fusion()) ops.push_back(op_json(op));
  return ops.dump(1) + "\n";
}

}  // namespace tg
