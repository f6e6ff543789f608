// The op table, gathered from the families' declarations (src/ops/all_ops.def; each family's rows are
// built by its src/ops/<family>.cpp), indexed by kind and by id. Op::arg and Op::has_arg (declared
// with the IR, src/ir/trace.h) are defined here: binding by name is the signatures' business.
#include "ops/op_table.h"

#include <set>
#include <unordered_map>

#include "ops/families.h"
#include "ops/op_rows.h"
#include "ops/rule_helpers.h"
#include "ops/torch_elementwise.h"
#include "support/diagnostics.h"

namespace tg {

// A short scan over string_views: the longest signature (multi_head_attention_forward) has 28.
// Every named argument read goes through here (160,000 times for 36 stacked Llama blocks), so
// the length and first letter rule most parameters out before a whole comparison does.
size_t param_index(const OpInfo& info, std::string_view name) {
  auto is_named = [name](const Param& p) { return p.name.size() == name.size() && (name.empty() || p.name[0] == name[0]) && p.name == name; };
  size_t i = 0;
  while (i < info.params.size() && !is_named(info.params[i])) ++i;
  return i;
}

namespace {
// Why op.arg(name) has nothing to return: an internal error, since callers name the parameters
// the op's signature declares. (Out of line: arg() is called for nearly every op of every pass.)
[[noreturn, gnu::cold]] void no_argument(const Op& op, std::string_view name) {
  const size_t i = op_rows::declared_position(op, name);
  TG_CHECK(false, std::string(op.info->id) + "'s parameter \"" + std::string(name) + "\" is not bound (" + std::to_string(op.args.size()) +
                      " arguments, it is number " + std::to_string(i) + ")");
}
}  // namespace

const Arg& Op::arg(std::string_view name) const {
  if (info) {
    const size_t i = param_index(*info, name);
    if (i < info->params.size() && i < args.size()) return args[i];
  }
  no_argument(*this, name);
}

bool Op::has_arg(std::string_view name) const { return info && param_index(*info, name) < args.size(); }

std::string_view fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::elementwise: return "elementwise";
    case FusionClass::shape: return "shape";
    case FusionClass::source: return "source";
    case FusionClass::reduction: return "reduction";
    case FusionClass::library: return "library";
    case FusionClass::composite: return "composite";
    case FusionClass::partial: return "partial";
    case FusionClass::kernel: return "kernel";
  }
  return "?";
}

bool dtypes_accept(DTypes set, DType t) {
  switch (set) {
    case DTypes::floats: return is_float(t);
    case DTypes::numbers: return !is_bool(t);
    case DTypes::numbers_and_bool: return true;
    case DTypes::integers_and_bool: return !is_float(t);
    case DTypes::integers: return is_integer(t);
    case DTypes::any: return true;
  }
  return false;
}

std::string_view dtypes_name(DTypes set) {
  switch (set) {
    case DTypes::floats: return "floats";
    case DTypes::numbers: return "numbers";
    case DTypes::numbers_and_bool: return "numbers_and_bool";
    case DTypes::integers_and_bool: return "integers_and_bool";
    case DTypes::integers: return "integers";
    case DTypes::any: return "any";
  }
  return "?";
}

OpInfo op_rows::row(Declared d) {
  OpInfo info{d.kind, d.id, d.fusion, std::move(d.params), std::move(d.rule), "", d.accepts, d.summary};
  info.grad = std::move(d.grad);
  info.grad_saves = d.saves;
  info.family = d.family;
  info.aten = d.aten;
  return info;
}

namespace {

// Every family's rows, indexed by kind: each kind has exactly one.
std::vector<OpInfo> rows_by_kind() {
  std::vector<OpInfo> by_kind(kOpKindCount);
  std::vector<bool> seen(kOpKindCount);
  auto add = [&](std::vector<OpInfo> rows) {
    for (OpInfo& r : rows) {
      const size_t k = static_cast<size_t>(r.kind);
      TG_CHECK(k < kOpKindCount && !seen[k], "op table: kind declared twice or out of range: " + std::string(r.id));
      seen[k] = true;
      by_kind[k] = std::move(r);
    }
  };
#define TG_ADD_FAMILY(rows) add(rows());
  TG_OP_FAMILIES(TG_ADD_FAMILY)
#undef TG_ADD_FAMILY
  for (size_t k = 0; k < kOpKindCount; ++k) TG_CHECK(seen[k], "op table: kind " + std::to_string(k) + " has no row (its family is not in families.h)");
  return by_kind;
}

// After the rows indexed by kind: `torch.<name>` for every elementwise prim `prims.<name>` that
// has no torch-level row of its own (torch.tanh has: it reads its output for the gradient).
void add_torch_forms(std::vector<OpInfo>& rows) {
  std::set<std::string_view> ids;
  for (const OpInfo& r : rows) ids.insert(r.id);
  const size_t prims = rows.size();
  for (size_t i = 0; i < prims; ++i) {
    const OpInfo& prim = rows[i];
    if (prim.fusion != FusionClass::elementwise || prim.kind == OpKind::convert_element_type) continue;
    OpInfo form = torch_form_of(prim);
    if (!ids.count(form.id)) rows.push_back(std::move(form));
  }
}

}  // namespace

bool is_torch_form(const OpInfo& info) {
  return info.fusion == FusionClass::composite && op_info(info.kind).fusion == FusionClass::elementwise;
}

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> rows = rows_by_kind();
    add_torch_forms(rows);
    return rows;
  }();
  return table;
}

const OpInfo& op_info(OpKind kind) { return op_table().at(static_cast<size_t>(kind)); }

std::string_view op_kind_name(OpKind kind) {
  static constexpr std::string_view kNames[] = {
#define TG_EACH_OP(name, ...) #name,
#include "ops/all_ops.def"
#undef TG_EACH_OP
  };
  return kNames[static_cast<size_t>(kind)];
}

bool is_collective(OpKind kind) {
  const OpInfo& info = op_info(kind);
  return info.family == "distributed_ops" && info.fusion == FusionClass::library;
}

// Other ids Thunder gives an op of the table, as {the row's id, the other id}.
constexpr std::pair<std::string_view, std::string_view> kOtherIds[] = {
    {"torch.nn.functional.layer_norm", "torch.layer_norm"},  // what nn.LayerNorm records
};

// (Hashed: the reader looks up every op it reads, and the prim builder every prim it makes.)
const OpInfo* find_op(std::string_view id) {
  static const std::unordered_map<std::string_view, const OpInfo*> index = [] {
    std::unordered_map<std::string_view, const OpInfo*> m;
    for (const OpInfo& r : op_table())
      if (!r.made_by_fusion()) m[r.id] = &r;
    for (auto [row, other] : kOtherIds) m[other] = m.at(row);
    return m;
  }();
  auto it = index.find(id);
  return it == index.end() ? nullptr : it->second;
}

}  // namespace tg
