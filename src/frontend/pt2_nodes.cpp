// The PT2 front end's nodes: each ATen node through its declarations (aten_ops.def) into trace
// ops, in-place ops as their functional forms, and autocast regions inlined with autocast's casts.
#include <algorithm>
#include <optional>

#include "frontend/aten_table.h"
#include "frontend/pt2_lowerings.h"
#include "frontend/pt2_translator.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::pt2 {

using namespace ::tg::json;

// The module a node came from: the last path of its nn_module_stack ("key,path,type;...").
std::string module_path(Object node) {
  auto metadata = find(node, "metadata");
  if (!metadata || !metadata->is_object()) return "";
  auto stack = find(object_of(*metadata), "nn_module_stack");
  if (!stack || !stack->is_string()) return "";
  std::string_view text = string_of(*stack);
  text = text.substr(text.rfind(';') == std::string_view::npos ? 0 : text.rfind(';') + 1);
  const size_t first = text.find(','), second = text.find(',', first + 1);
  if (first == std::string_view::npos || second == std::string_view::npos) return "";
  return printable_line(text.substr(first + 1, second - first - 1));
}

// A Core ATen archive's aten.alias that was Tensor.detach() in the module: run_decompositions writes
// detach as alias, which would let the gradient through; the node's torch_fn metadata
// ("detach_1;method_descriptor.detach") still names the call.
bool was_detach(Object node) {
  auto metadata = find(node, "metadata");
  if (!metadata || !metadata->is_object()) return false;
  auto torch_fn = find(object_of(*metadata), "torch_fn");
  if (!torch_fn || !torch_fn->is_string()) return false;
  const std::string_view text = string_of(*torch_fn);
  return text.ends_with(".detach") && text.find(';') != std::string_view::npos;
}

// The functional op of an in-place one ("aten.add_.Tensor" -> "aten.add.Tensor"), or "".
std::string functional_of(const std::string& aten) {
  const size_t dot = aten.find('.', 5);
  if (dot == std::string::npos || dot < 2 || aten[dot - 1] != '_' || aten[dot - 2] == '_') return "";
  return aten.substr(0, dot - 1) + aten.substr(dot);
}


void Translator::read_nodes(Object graph, const Path& graph_at) {
  const Path nodes_at(graph_at, "nodes");
  size_t i = 0;
  for (Json node : list_at(require(graph, graph_at, "nodes"), nodes_at)) translate_node(node, Path(nodes_at, i++));
}

void Translator::translate_node(Json node_json, const Path& at) {
  const Object node = object_at(node_json, at);
  const std::string target = string_at(require(node, at, "target"), Path(at, "target"));
  if (is_autocast_region(target)) return inline_autocast(node, at);
  if (is_size_arithmetic(target)) return;
  std::string aten = aten_target(target, at, source_);
  if (aten == "aten.alias.default" && was_detach(node)) aten = "aten.detach.default";
  std::vector<const AtenRow*> rows = aten_rows_for(aten);
  const std::string mutated = rows.empty() ? mutated_value(node, at, aten) : "";
  if (!mutated.empty()) rows = aten_rows_for(functional_of(aten));
  if (rows.empty())
    throw UserError(at.str() + "/target", aten + " has no translation (thunder-gen list-ops --aten lists the ATen ops it maps)" +
                                              (source_.find("TRAINING") != std::string::npos ? "; ep.run_decompositions() may lower it to ops it maps" : ""));
  const Doc bound = bind_inputs(node, at, *rows.front());
  const AtenRow* row = nullptr;
  for (const AtenRow* candidate : rows)
    if (!row && candidate->applies(bound)) row = candidate;
  if (!row) {
    std::string options;
    for (const AtenRow* candidate : rows) options += (options.empty() ? "" : "; ") + candidate->conditions();
    throw UserError(at.str(), aten + " is translated only when " + options);
  }
  check_defaults(*row, bound, at);
  std::vector<std::string> outs;
  const Path outputs_at(at, "outputs");
  size_t i = 0;
  for (Json output : list_at(require(node, at, "outputs"), outputs_at))
    for (const std::string& name : pt2::output_names(output, Path(outputs_at, i++))) outs.push_back(scope_ + name);
  const size_t computed = row->outputs < 0 ? outs.size() : std::min(outs.size(), size_t(row->outputs));
  for (size_t k = computed; k < outs.size(); ++k)
    if (uses_.count(outs[k]) && uses_.at(outs[k]) > 0)
      throw UserError(outputs_at.str(), aten + "'s output " + std::to_string(k) + " (" + outs[k] + ") is read, and thunder-gen computes only its first " +
                                            std::to_string(computed));
  outs.resize(computed);
  const size_t ops_before = ops_.size();
  const Doc operands = autocast_ ? autocast_operands(bound, outs, at) : bound;
  if (!fold_view(aten, operands, outs, at) && !fold_linear(aten, operands, outs, at)) {
    const IntegerArguments integers = integer_arguments(node, at);
    emit(*row, operands, integers.literals, integers.sized, outs, at);
  }
  if (!outs.empty() && feeds_patterns(aten)) producers_[outs.front()] = {aten, operands};
  // After an in-place op, its `self` is the op's result for every later reader.
  if (!mutated.empty() && !outs.empty()) record_write(mutated, outs.front(), aten, at);
  std::string name = outs.empty() ? target : outs.front();
  const std::string module = module_path(node);
  for (size_t k = ops_before; k < ops_.size(); ++k)
    origins_.push_back({at.str(), "node " + name + " (" + aten + ")" + (module.empty() ? "" : " in module " + module), aten, module});
}

void Translator::record_write(const std::string& name, const std::string& value, const std::string& aten, const Path& at) {
  if (placeholders_.count(name) && !buffer_fqns_.count(name))
    throw UserError(at.str(), aten + " writes the program's input \"" + name + "\" in place: mutating inputs other than buffers is not supported");
  // The buffer `name` is, or holds since an earlier update (a lowering's write names the value its
  // argument resolved to): its readers from here on read `value`.
  const std::string buffer = placeholders_.count(name) ? name : buffer_of_value_.count(name) ? buffer_of_value_.at(name) : "";
  if (!metas_.count(resolve(value)) && metas_.count(name)) metas_[resolve(value)] = metas_.at(name);  // (a lowering's new value: the shape it writes over)
  if (!buffer.empty()) {
    buffer_updates_[buffer] = value;
    buffer_of_value_[resolve(value)] = buffer;
    alias_[buffer] = resolve(value);
  }
  alias_[name] = resolve(value);
}

// The value an in-place op ("aten.add_.Tensor") writes, when its functional form has a declaration
// and the write changes nothing else: not a graph input other than a buffer, not a value a view
// shares. "" when the op is not in-place or its functional form is undeclared (the caller refuses
// it as undeclared).
std::string Translator::mutated_value(Object node, const Path& at, const std::string& aten) const {
  const std::string functional = functional_of(aten);
  if (functional.empty() || aten_rows_for(functional).empty()) return "";
  const Path inputs_at(at, "inputs");
  const Array inputs = list_at(require(node, at, "inputs"), inputs_at);
  if (inputs.size() == 0) return "";
  const Path first_at(Path(inputs_at, size_t(0)), "arg");
  const Doc self = scoped(pt2::argument(require(object_at(inputs.at(0), Path(inputs_at, size_t(0))), Path(inputs_at, size_t(0)), "arg"), first_at, sizes_));
  if (!self.is_string()) return "";
  const std::string name = self.get<std::string>();
  if (placeholders_.count(name) && !buffer_fqns_.count(name))
    throw UserError(at.str(), aten + " writes the program's input \"" + name + "\" in place: mutating inputs other than buffers is not supported");
  if (viewed_.count(name))
    throw UserError(at.str(), aten + " writes \"" + name + "\" in place, which a view shares: run_decompositions() makes the program functional");
  return name;
}

namespace {

// A tensor parameter's argument names a value (a list of them for Tensor[]; null for Tensor?); a
// Tensor other than `self` may be a number, which the graph passes as a 0-d tensor
// (aten.add.Tensor(x, 1.0)).
void check_tensor_argument(const AtenRow& schema, const std::string& name, const Doc& arg, const Path& at) {
  const std::string& type = schema.param(name)->type;
  bool ok = true;
  if (type == "Tensor") ok = arg.is_string() || (name != "self" && (arg.is_number() || arg.is_boolean()));
  if (type == "Tensor?") ok = arg.is_string() || arg.is_null();
  if (type == "Tensor[]") ok = arg.is_array() && std::all_of(arg.begin(), arg.end(), [](const Doc& item) { return item.is_string(); });
  if (!ok) throw UserError(at.str(), schema.target + "'s " + name + " must be " + (type == "Tensor[]" ? "a list of tensors" : "a tensor") + ", not " + arg.dump());
}

}  // namespace

Doc Translator::bind_inputs(Object node, const Path& at, const AtenRow& schema) const {
  Doc bound = Doc::object();
  const Path inputs_at(at, "inputs");
  size_t i = 0;
  for (Json input_json : list_at(require(node, at, "inputs"), inputs_at)) {
    const Path input_at(inputs_at, i++);
    const Object input = object_at(input_json, input_at);
    const std::string name = string_at(require(input, input_at, "name"), Path(input_at, "name"));
    if (!schema.param(name))
      throw UserError(Path(input_at, "name").str(), schema.target + " has no parameter \"" + printable_line(name) + "\" in torch 2.9's schema");
    if (bound.contains(name)) throw UserError(Path(input_at, "name").str(), "argument \"" + name + "\" given twice");
    bound[name] = resolve(scoped(pt2::argument(require(input, input_at, "arg"), Path(input_at, "arg"), sizes_)));
    check_tensor_argument(schema, name, bound[name], Path(input_at, "arg"));
  }
  for (const AtenParam& p : schema.params) {
    if (bound.contains(p.name)) continue;
    if (!p.default_value) throw UserError(inputs_at.str(), schema.target + " needs argument \"" + p.name + "\", which the node does not give");
    bound[p.name] = *p.default_value;
  }
  return bound;
}

// A SymInt[] argument whose every size is the same at every size of the symbols.
bool Translator::all_sizes_constant(Json list, const Path& at) const {
  size_t k = 0;
  for (Json size : list_at(list, at))
    if (!sizes_.expression(size, Path(at, k++)).is_constant()) return false;
  return true;
}

Translator::IntegerArguments Translator::integer_arguments(Object node, const Path& at) const {
  IntegerArguments out;
  const Path inputs_at(at, "inputs");
  size_t i = 0;
  for (Json input_json : list_at(require(node, at, "inputs"), inputs_at)) {
    const Path input_at(inputs_at, i++), arg_at(input_at, "arg");
    const Object input = object_at(input_json, input_at);
    auto [member, value] = member_of(require(input, input_at, "arg"), arg_at, "Argument");
    const std::string name = string_at(require(input, input_at, "name"), Path(input_at, "name"));
    if (member == "as_int" || member == "as_ints") out.literals.insert(name);
    if (member == "as_sym_ints" && all_sizes_constant(value, Path(arg_at, member))) out.literals.insert(name);
    if (member != "as_sym_int") continue;
    const SizeExpr size = sizes_.expression(value, Path(arg_at, member));
    if (!size.is_constant()) out.sized[name] = Doc{{"size", size.text()}};
  }
  return out;
}

// An argument the row neither binds, tests nor ignores must be at its default: the translation
// would otherwise drop what it says.
void Translator::check_defaults(const AtenRow& row, const Doc& bound, const Path& at) const {
  for (const AtenParam& p : row.params) {
    bool named = row.symbol.empty() && row.lowering.empty();  // a check: computes nothing
    if (row.symbol == "=" && &p == &row.params.front()) named = true;
    for (const AtenBinding& b : row.binding) named = named || b.param == p.name;
    if (named || !row.lowering.empty()) continue;
    if (!p.default_value || !same_literal(bound.at(p.name), *p.default_value))
      throw UserError(at.str(), row.target + " with " + p.name + "=" + bound.at(p.name).dump() + " is not supported (thunder-gen translates it with " +
                                    p.name + "=" + (p.default_value ? p.default_value->dump() : "?") + ")");
  }
}

Doc Translator::special_value(const std::string& special, const Doc& bound, const std::vector<std::string>& outs, const Path& at) const {
  if (special == "$device") return Doc{{"device", "cuda:0"}};
  if (outs.empty()) throw UserError(at.str(), "the node has no output to take " + special + " from");
  const Value& out = meta(outs.front(), at);
  if (special == "$shape") return size_list_json(out.shape);
  if (special == "$dtype") return Doc{{"dtype", std::string(dtype_name(out.dtype))}};
  if (special == "$expand_dims") {
    const size_t in_rank = meta(bound.at("self").get<std::string>(), at).shape.size();
    Doc dims = Doc::array();
    for (size_t i = 0; i < in_rank; ++i) dims.push_back(out.shape.size() - in_rank + i);
    return dims;
  }
  TG_CHECK(false, "aten_ops.def: unknown " + special);
}

void Translator::emit(const AtenRow& row, const Doc& bound, const std::set<std::string>& literals, const std::map<std::string, Doc>& sized,
                      const std::vector<std::string>& outs, const Path& at) {
  if (!row.lowering.empty()) {
    Pt2Lowering lowering{bound, literals, sized, outs, [&](const std::string& n) -> const Value& { return meta(n, at); }, at.str(), {}, {}};
    for (Doc& op : lower_aten(row.lowering, lowering)) ops_.push_back(std::move(op));
    for (auto& [name, value] : lowering.aliases) alias_[name] = resolve(value);
    for (auto& [name, value] : lowering.writes) record_write(name, value, row.target, at);
    return;
  }
  if (row.symbol == "=") {
    if (!outs.empty()) alias_[outs.front()] = bound.at(row.params.front().name).get<std::string>();
    return;
  }
  if (row.symbol.empty()) return;
  Doc kwargs = Doc::object();
  for (const AtenBinding& b : row.binding) {
    if (b.kind != AtenBinding::Kind::assign) continue;
    if (!b.special.empty()) kwargs[b.ours] = special_value(b.special, bound, outs, at);
    else if (b.param.empty()) kwargs[b.ours] = b.literal;
    else kwargs[b.ours] = sized.count(b.param) ? sized.at(b.param) : bound.at(b.param);
  }
  Doc decls = Doc::array();
  for (const std::string& out : outs) decls.push_back(declaration(out, at, false));
  ops_.push_back({{"op", row.symbol}, {"kwargs", std::move(kwargs)}, {"out", std::move(decls)}});
}

// ---- autocast regions -----------------------------------------------------------------------------

bool is_autocast_region(std::string_view target) { return target == "torch.ops.higher_order.wrap_with_autocast"; }

namespace {

// The float dtype PyTorch's promotion gives two float operands.
DType wider(DType a, DType b) {
  if (a == b) return a;
  return a == DType::f64 || b == DType::f64 ? DType::f64 : DType::f32;
}

}  // namespace

// wrap_with_autocast(device_type, dtype, enabled, cache_enabled, body, *args), which the training
// IR keeps for a `with torch.autocast(...)` block: the body's nodes are inlined, its placeholders
// read the args and the node's outputs are the body's. cache_enabled reuses casts, which changes no
// value; device_type names the policy torch applied, which the body's recorded dtypes show
// (autocast_operands), so any device is read.
void Translator::inline_autocast(Object node, const Path& at) {
  const Path inputs_at(at, "inputs");
  const Array inputs = list_at(require(node, at, "inputs"), inputs_at);
  if (inputs.size() < 5) throw UserError(inputs_at.str(), "wrap_with_autocast needs device_type, dtype, enabled, cache_enabled and a body");
  std::vector<Doc> settings;
  std::vector<std::string> args;
  std::optional<DType> region;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Path input_at(inputs_at, i), arg_at(input_at, "arg");
    const Json arg = require(object_at(inputs.at(i), input_at), input_at, "arg");
    if (i == 4) {
      auto [member, body] = member_of(arg, arg_at, "Argument");
      if (member != "as_graph") throw UserError(arg_at.str(), "wrap_with_autocast's body must be a subgraph (as_graph)");
      const Path body_at(arg_at, "as_graph");
      const Doc dtype = settings.at(1), enabled = settings.at(2);
      if (!dtype.is_object() || !dtype.contains("dtype") || !enabled.is_boolean())
        throw UserError(inputs_at.str(), "wrap_with_autocast's dtype and enabled must be a dtype and a bool");
      const DType dt = *parse_dtype(dtype.at("dtype").get<std::string>());  // pt2::argument wrote one of ours
      if (enabled.get<bool>() && dt != DType::bf16 && dt != DType::f16)
        throw UserError(Path(Path(inputs_at, size_t(1)), "arg").str(), "autocast to " + std::string(dtype_name(dt)) + ": thunder-gen reads bf16 and f16 regions");
      if (enabled.get<bool>()) region = dt;
      for (size_t k = 5; k < inputs.size(); ++k) {
        const Path later_at(inputs_at, k), later_arg_at(later_at, "arg");
        const Doc name = resolve(scoped(pt2::argument(require(object_at(inputs.at(k), later_at), later_at, "arg"), later_arg_at, sizes_)));
        // A SymInt operand (a size the body computes with, in a dynamic-shape export) is read
        // from the body's own sym_int_values where the body uses it: "" here.
        if (!name.is_string() && !name.is_number_integer()) throw UserError(later_arg_at.str(), "wrap_with_autocast's operands must be tensors or sizes");
        args.push_back(name.is_string() ? name.get<std::string>() : "");
      }
      std::vector<std::string> results;
      const Path outputs_at(at, "outputs");
      size_t j = 0;
      for (Json output : list_at(require(node, at, "outputs"), outputs_at))
        for (const std::string& name : pt2::output_names(output, Path(outputs_at, j++))) results.push_back(scope_ + name);
      const std::optional<DType> outer = autocast_;
      autocast_ = region;
      inline_body(object_at(body, body_at), body_at, args, results);
      autocast_ = outer;
      return;
    }
    settings.push_back(pt2::argument(arg, arg_at, sizes_));
  }
}

// A body's graph read in its own scope (named after it), its placeholders aliases of `args`, and
// `results` aliases of its outputs.
void Translator::inline_body(Object body, const Path& body_at, const std::vector<std::string>& args, const std::vector<std::string>& results) {
  const std::string name = string_at(require(body, body_at, "name"), Path(body_at, "name"));
  const Path graph_at(body_at, "graph");
  const Object graph = object_at(require(body, body_at, "graph"), graph_at);
  const std::string outer_scope = scope_;
  auto outer_casts = std::move(casts_);
  casts_.clear();
  scope_ += printable_line(name) + "__";
  sizes_.add_graph(graph, graph_at);
  read_tensor_values(graph, graph_at);
  count_uses(graph, graph_at);
  const Path inputs_at(graph_at, "inputs");
  const Array inputs = list_at(require(graph, graph_at, "inputs"), inputs_at);
  if (inputs.size() != args.size())
    throw UserError(inputs_at.str(), "the body takes " + std::to_string(inputs.size()) + " inputs, and the region passes " + std::to_string(args.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Doc placeholder = scoped(pt2::argument(inputs.at(i), Path(inputs_at, i), sizes_));
    if (placeholder.is_string() != !args[i].empty())
      throw UserError(Path(inputs_at, i).str(), "a body input that is a tensor where the region passes a size, or a size where it passes a tensor");
    if (placeholder.is_string()) alias_[placeholder.get<std::string>()] = args[i];
  }
  read_nodes(graph, graph_at);
  const Path outputs_at(graph_at, "outputs");
  const Array outputs = list_at(require(graph, graph_at, "outputs"), outputs_at);
  if (outputs.size() != results.size())
    throw UserError(outputs_at.str(), "the body returns " + std::to_string(outputs.size()) + " values, and the region node names " + std::to_string(results.size()));
  std::vector<std::string> returned;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Doc value = resolve(scoped(pt2::argument(outputs.at(i), Path(outputs_at, i), sizes_)));
    if (!value.is_string()) throw UserError(Path(outputs_at, i).str(), "a body output that is not a tensor");
    returned.push_back(value.get<std::string>());
  }
  scope_ = outer_scope;
  casts_ = std::move(outer_casts);
  for (size_t i = 0; i < results.size(); ++i) alias_[results[i]] = returned[i];
}

// Inside an autocast region, a node whose recorded result is a float dtype that its float
// operands' promotion does not give ran under autocast's cast: to the region's dtype (matmuls,
// linear, attention, convolutions) or to f32 (the ops autocast keeps in f32). Its float operands
// are converted to the recorded dtype first, as autocast converts them, and the op then computes
// in it. Promotion is PyTorch's: operands with dims decide over 0-d ones.
Doc Translator::autocast_operands(Doc bound, const std::vector<std::string>& outs, const Path& at) {
  if (outs.empty() || !is_float(meta(outs.front(), at).dtype)) return bound;
  const DType result = meta(outs.front(), at).dtype;
  std::optional<DType> with_dims, scalars;
  for (const auto& [param, arg] : bound.items())
    for_each_name(arg, [&](const std::string& n) {
      auto it = metas_.find(n);
      if (it == metas_.end() || !is_float(it->second.dtype)) return;
      std::optional<DType>& slot = it->second.shape.empty() ? scalars : with_dims;
      slot = slot ? wider(*slot, it->second.dtype) : it->second.dtype;
    });
  const std::optional<DType> promoted = with_dims ? with_dims : scalars;
  if (!promoted || *promoted == result) return bound;
  for (auto& [param, arg] : bound.items()) arg = cast_floats(arg, result, at);
  return bound;
}

// The float tensors an argument names, converted to `to` (once per value and dtype in a region).
Doc Translator::cast_floats(Doc arg, DType to, const Path& at) {
  if (arg.is_array()) {
    for (Doc& item : arg) item = cast_floats(std::move(item), to, at);
    return arg;
  }
  if (!arg.is_string()) return arg;
  auto it = metas_.find(arg.get<std::string>());
  if (it == metas_.end() || !is_float(it->second.dtype) || it->second.dtype == to) return arg;
  // Named in the region's scope: two regions may each cast the same outer value.
  const std::string prefix = it->first.rfind(scope_, 0) == 0 ? "" : scope_;
  auto [cast, fresh] = casts_.try_emplace({it->first, to}, prefix + it->first + "__autocast_" + std::string(dtype_name(to)));
  if (fresh) {
    Value converted = it->second;
    converted.name = cast->second;
    converted.dtype = to;
    converted.requires_grad = false;
    if (!metas_.emplace(converted.name, converted).second)
      throw UserError(at.str(), "the cast autocast makes, \"" + printable_line(converted.name) + "\", would take the name of a value of the archive");
    ops_.push_back({{"op", "prims.convert_element_type"},
                    {"kwargs", {{"a", it->first}, {"dtype", {{"dtype", std::string(dtype_name(to))}}}}},
                    {"out", {declaration(cast->second, at, false)}}});
  }
  return cast->second;
}

}  // namespace tg::pt2
