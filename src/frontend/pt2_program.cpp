// The PT2 front end's program level: the schema version, the graph's placeholders as the trace's
// inputs (roles and FQNs from the signature), its user outputs, the payload checks, and the
// archive read into a verified Trace. The nodes are pt2_nodes.cpp's.
#include "frontend/pt2_program.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <simdjson.h>

#include "frontend/aten_table.h"
#include "frontend/json_document.h"
#include "frontend/pt2_archive.h"
#include "frontend/pt2_schema.h"
#include "frontend/pt2_translator.h"
#include "frontend/reader.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::pt2 {
namespace {

constexpr int64_t kSchemaMajor = 8;
constexpr int64_t kOldestMinor = 14;  // torch 2.9, the first whose weights are raw bytes

}  // namespace

using namespace ::tg::json;

// Every tensor name an argument (as trace JSON) reads.
void for_each_name(const Doc& arg, const std::function<void(const std::string&)>& f) {
  if (arg.is_string()) f(arg.get<std::string>());
  if (arg.is_array())
    for (const Doc& item : arg) for_each_name(item, f);
}

// "torch.ops.aten.add.Tensor" as "aten.add.Tensor"; other targets refused, saying what they are.
std::string aten_target(const std::string& target, const Path& at, const std::string& source) {
  const std::string prefix = "torch.ops.aten.";
  if (target.rfind(prefix, 0) == 0) return "aten." + target.substr(prefix.size());
  std::string what = "an op outside ATen";
  if (target.rfind("torch.ops.higher_order.", 0) == 0) what = "a higher-order op (control flow, autocast or a wrapped region)";
  else if (!target.empty() && target[0] == '#') what = "a registered extension op";
  else if (target.rfind("_operator.", 0) == 0 || target.rfind("torch.sym_", 0) == 0) what = "symbolic-size arithmetic (a dynamic-shape export)";
  const bool training = source.find("TRAINING") != std::string::npos;
  throw UserError(at.str() + "/target", "\"" + printable_line(target) + "\" is " + what + ", which thunder-gen does not translate" +
                                            (training ? "; ep.run_decompositions() before saving may lower it to ATen ops" : ""));
}

bool is_size_arithmetic(std::string_view target) {
  static const std::set<std::string, std::less<>> kSizeOps = {"torch.ops.aten.sym_size.int", "torch.ops.aten.sym_numel.default",
                                                               "torch.ops.aten.sym_storage_offset.default", "torch.ops.aten.sym_stride.int"};
  const bool python_int = target.rfind("_operator.", 0) == 0 || target.rfind("torch.sym_", 0) == 0;
  return python_int || kSizeOps.count(target) > 0;
}

// ATen's view ops (their schemas' results alias `self`, "Tensor(a)"): an in-place op on a value one
// of them reads or makes would change the other too, which a trace (values, no aliases) cannot say.
bool is_view(std::string_view target) {
  static const std::set<std::string, std::less<>> kViews = {
      "view", "_unsafe_view", "reshape", "flatten", "unflatten", "expand", "expand_as", "view_as", "slice", "select", "narrow",
      "split", "split_with_sizes", "chunk", "unbind", "transpose", "t", "permute", "movedim", "unsqueeze", "squeeze", "alias",
      "detach", "contiguous", "to", "as_strided", "diagonal", "unfold", "_reshape_alias"};
  const std::string prefix = "torch.ops.aten.";
  if (target.rfind(prefix, 0) != 0) return false;
  std::string_view name = target.substr(prefix.size());
  return kViews.count(name.substr(0, name.find('.'))) > 0;
}

Pt2Translation Translator::run() {
  const Path at(root_pointer_);
  const Object root = object_at(root_, at);
  check_version(root, at);
  const Path module_at(at, "graph_module");
  const Object module = object_at(require(root, at, "graph_module"), module_at);
  const Path graph_at(module_at, "graph");
  const Object graph = object_at(require(module, module_at, "graph"), graph_at);
  sizes_ = SymIntSizes(root, at, graph, graph_at, specialize_, names_);
  read_tensor_values(graph, graph_at);
  count_uses(graph, graph_at);
  Pt2Translation out;
  out.trace = {{"format", "thunder-gen-trace"}, {"version", 1}, {"name", trace_name_}, {"source", source_}};
  const Path signature_at(module_at, "signature");
  const Object signature = object_at(require(module, module_at, "signature"), signature_at);
  out.trace["inputs"] = read_inputs(graph, graph_at, signature, signature_at, out.inputs);
  for (const Pt2Input& input : out.inputs)
    if (input.role == "buffer") buffer_fqns_[input.name] = input.fqn;
  read_nodes(graph, graph_at);
  out.trace["outputs"] = read_outputs(graph, graph_at, signature, signature_at, out.outputs);
  out.trace["ops"] = std::move(ops_);
  out.op_origins = std::move(origins_);
  out.symbols = sizes_.symbols();
  if (!out.symbols.empty()) {
    Doc symbols = Doc::object();
    for (const auto& [name, d] : out.symbols.all()) symbols[name] = {{"min", d.min}, {"max", d.max}};
    out.trace["symbols"] = std::move(symbols);
  }
  return out;
}


void Translator::check_version(Object root, const Path& at) {
  const Path version_at(at, "schema_version");
  const Object version = object_at(require(root, at, "schema_version"), version_at);
  const Json major = require(version, version_at, "major"), minor = require(version, version_at, "minor");
  if (!is_int64(major) || !is_int64(minor)) throw UserError(version_at.str(), "expected integers major and minor");
  std::string torch = "an unknown torch";
  if (auto v = find(root, "torch_version"); v && v->is_string()) torch = "torch " + printable_line(string_of(*v));
  const std::string saved = "schema " + std::to_string(int_of(major)) + "." + std::to_string(int_of(minor)) + ", " + torch;
  if (int_of(major) != kSchemaMajor)
    throw UserError(version_at.str(), "saved with " + saved + "; this reader takes schema major version 8 (torch 2.9 to 2.15)");
  if (int_of(minor) < kOldestMinor)
    throw UserError(version_at.str(), "saved with " + saved + " (weights pickled); re-save it with torch.export.save from torch >= 2.9");
  std::string dialect;
  if (auto verifiers = find(root, "verifiers"); verifiers && verifiers->is_array())
    for (Json v : array_of(*verifiers))
      if (v.is_string()) dialect += (dialect.empty() ? "" : ",") + printable_line(string_of(v));
  source_ = "torch.export (" + saved + (dialect.empty() ? "" : ", " + dialect + " dialect") + ")";
}

void Translator::read_tensor_values(Object graph, const Path& graph_at) {
  const Path values_at(graph_at, "tensor_values");
  for (auto [name, meta] : object_at(require(graph, graph_at, "tensor_values"), values_at)) {
    Value v = pt2::tensor_meta(meta, Path(values_at, name), sizes_);
    v.name = scope_ + std::string(name);
    // A region's body names its values in its own scope (<body>__<name>), which an enclosing
    // graph's name may still spell.
    if (!metas_.emplace(v.name, v).second)
      throw UserError(Path(values_at, name).str(), "\"" + printable_line(v.name) + "\" names a value of the enclosing graph too");
  }
}

void Translator::count_uses(Object graph, const Path& graph_at) {
  auto count = [&](Json arg, const Path& where) { for_each_name(scoped(pt2::argument(arg, where, sizes_)), [&](const std::string& n) { ++uses_[n]; }); };
  const Path nodes_at(graph_at, "nodes");
  size_t i = 0;
  for (Json node : list_at(require(graph, graph_at, "nodes"), nodes_at)) {
    const Path node_at(nodes_at, i++);
    // What the node is comes first: a higher-order op's subgraph argument would be refused by
    // itself, with a reason less useful than the op's.
    const std::string target = string_at(require(object_at(node, node_at), node_at, "target"), Path(node_at, "target"));
    if (is_size_arithmetic(target)) continue;
    const bool region = is_autocast_region(target);
    if (!region) aten_target(target, node_at, source_);
    const bool view = is_view(target);
    const Path outputs_at(node_at, "outputs");
    std::vector<std::string> outs;
    size_t j = 0;
    for (Json output : list_at(require(object_at(node, node_at), node_at, "outputs"), outputs_at))
      for (const std::string& name : pt2::output_names(output, Path(outputs_at, j++))) outs.push_back(scope_ + name);
    if (view) viewed_.insert(outs.begin(), outs.end());
    const Path inputs_at(node_at, "inputs");
    j = 0;
    for (Json input : list_at(require(object_at(node, node_at), node_at, "inputs"), inputs_at)) {
      const Path input_at(inputs_at, j++);
      const Json arg_json = require(object_at(input, input_at), input_at, "arg");
      if (region && member_of(arg_json, Path(input_at, "arg"), "Argument").first == "as_graph") continue;  // the body: read when inlined
      const Doc arg = scoped(pt2::argument(arg_json, Path(input_at, "arg"), sizes_));
      for_each_name(arg, [&](const std::string& n) {
        ++uses_[n];
        if (is_reshape(target)) consumers_[n].push_back({target, outs.empty() ? "" : outs.front()});
        if (view) viewed_.insert(n);
      });
    }
  }
  const Path outputs_at(graph_at, "outputs");
  i = 0;
  for (Json output : list_at(require(graph, graph_at, "outputs"), outputs_at)) count(output, Path(outputs_at, i++));
  const Path inputs_at(graph_at, "inputs");
  i = 0;
  for (Json input : list_at(require(graph, graph_at, "inputs"), inputs_at))
    for_each_name(scoped(pt2::argument(input, Path(inputs_at, i++), sizes_)), [&](const std::string& n) { placeholders_.insert(n); });
}

const Value& Translator::meta(const std::string& name, const Path& where) const {
  auto it = metas_.find(name);
  if (it == metas_.end()) throw UserError(where.str(), "no tensor_values entry for \"" + printable_line(name) + "\"");
  return it->second;
}

Doc Translator::declaration(const std::string& name, const Path& where, bool requires_grad) const {
  const Value& v = meta(name, where);
  // (A dynamic-shape export's sizes as expressions: the reader evaluates them again.)
  Doc decl = {{"name", name}, {"shape", shape_json(v.shape)}, {"dtype", std::string(dtype_name(v.dtype))}};
  if (requires_grad && v.requires_grad && is_float(v.dtype)) decl["requires_grad"] = true;
  return decl;
}

std::string Translator::resolve(const std::string& name) const {
  auto it = alias_.find(name);
  return it == alias_.end() ? name : it->second;
}
// The names an argument of the graph being read reads, in the translation's namespace.
Doc Translator::scoped(Doc arg) const {
  if (scope_.empty()) return arg;
  if (arg.is_string()) return scope_ + arg.get<std::string>();
  if (arg.is_array())
    for (Doc& item : arg) item = scoped(std::move(item));
  return arg;
}

Doc Translator::resolve(Doc arg) const {
  if (arg.is_string()) return resolve(arg.get<std::string>());
  if (arg.is_array())
    for (Doc& item : arg) item = resolve(std::move(item));
  return arg;
}


namespace {

// Input specs: which placeholder is a parameter, a buffer, a constant or the user's input.
Pt2Input input_spec(Json spec_json, const Path& at, const pt2::SymIntSizes& sizes) {
  auto [kind, spec] = pt2::member_of(spec_json, at, "InputSpec");
  const Path spec_at(at, kind);
  const Object o = object_at(spec, spec_at);
  auto arg_name = [&] { return string_at(require(object_at(require(o, spec_at, "arg"), Path(spec_at, "arg")), Path(spec_at, "arg"), "name"),
                                         Path(Path(spec_at, "arg"), "name")); };
  if (kind == "parameter") return {arg_name(), "parameter", string_at(require(o, spec_at, "parameter_name"), Path(spec_at, "parameter_name"))};
  if (kind == "buffer") return {arg_name(), "buffer", string_at(require(o, spec_at, "buffer_name"), Path(spec_at, "buffer_name"))};
  if (kind == "tensor_constant")
    return {arg_name(), "constant", string_at(require(o, spec_at, "tensor_constant_name"), Path(spec_at, "tensor_constant_name"))};
  if (kind == "user_input") {
    const Path arg_at(spec_at, "arg");
    const Doc arg = pt2::argument(require(o, spec_at, "arg"), arg_at, sizes);
    if (!arg.is_string()) throw UserError(arg_at.str(), "a user input that is not a tensor (" + arg.dump() + "): export with tensor inputs only");
    return {arg.get<std::string>(), "user_input", arg.get<std::string>()};
  }
  if (kind == "custom_obj" || kind == "token" || kind == "constant_input")
    throw UserError(spec_at.str(), "an input of kind " + std::string(kind) + " is not supported");
  throw UserError(at.str(), "unknown InputSpec member \"" + std::string(kind) + "\"");
}

}  // namespace

Doc Translator::read_inputs(Object graph, const Path& graph_at, Object signature, const Path& signature_at, std::vector<Pt2Input>& inputs) const {
  const Path specs_at(signature_at, "input_specs");
  size_t i = 0;
  for (Json spec : list_at(require(signature, signature_at, "input_specs"), specs_at)) inputs.push_back(input_spec(spec, Path(specs_at, i++), sizes_));
  const Path graph_inputs_at(graph_at, "inputs");
  const Array graph_inputs = list_at(require(graph, graph_at, "inputs"), graph_inputs_at);
  if (graph_inputs.size() != inputs.size())
    throw UserError(specs_at.str(), std::to_string(inputs.size()) + " input specs for " + std::to_string(graph_inputs.size()) + " graph inputs");
  Doc decls = Doc::array();
  i = 0;
  for (Json input : graph_inputs) {
    const Path at(graph_inputs_at, i);
    const Doc name = pt2::argument(input, at, sizes_);
    if (!name.is_string() || name.get<std::string>() != inputs[i].name)
      throw UserError(at.str(), "graph input " + name.dump() + " is not the placeholder its spec names (\"" + inputs[i].name + "\")");
    decls.push_back(declaration(inputs[i].name, at, inputs[i].role == "parameter" || inputs[i].role == "user_input"));
    ++i;
  }
  return decls;
}

// The user outputs, then the buffers the program updates, each through torch.detach (no
// gradient flows into a buffer's new value): each buffer_mutation output (Core ATen, functional),
// then each buffer an op of the training IR wrote in place (batch_norm's running statistics,
// num_batches_tracked += 1), in input order. Their roles and FQNs go to `outputs`.
Doc Translator::read_outputs(Object graph, const Path& graph_at, Object signature, const Path& signature_at, std::vector<Pt2Input>& outputs) {
  const Path specs_at(signature_at, "output_specs");
  const Path outputs_at(graph_at, "outputs");
  const Array graph_outputs = list_at(require(graph, graph_at, "outputs"), outputs_at);
  const Array specs = list_at(require(signature, signature_at, "output_specs"), specs_at);
  if (graph_outputs.size() != specs.size())
    throw UserError(specs_at.str(), std::to_string(specs.size()) + " output specs for " + std::to_string(graph_outputs.size()) + " graph outputs");
  Doc names = Doc::array();
  struct Update {
    std::string value, buffer;  // the new value, and the buffer's placeholder
    Pt2Input output;
  };
  std::vector<Update> updates;
  std::set<std::string> updated;
  auto add_update = [&](const std::string& value, const std::string& buffer, const Path& at) {
    const std::string& fqn = buffer_fqns_.at(buffer);
    if (!updated.insert(buffer).second) throw UserError(at.str(), "the buffer " + fqn + " is updated twice");
    updates.push_back({value, buffer, {value, "buffer_update", fqn}});
  };
  size_t i = 0;
  for (Json spec : specs) {
    const Path at(specs_at, i);
    auto [kind, body] = pt2::member_of(spec, at, "OutputSpec");
    if (kind == "parameter_mutation" || kind == "user_input_mutation") {
      std::string what;
      for (const char* key : {"parameter_name", "user_input_name"})
        if (body.is_object())
          if (auto n = find(object_of(body), key); n && n->is_string()) what = printable_line(string_of(*n));
      throw UserError(Path(at, kind).str(), "the program mutates " + what + " (" + std::string(kind) + "): in-place updates of inputs other than buffers are not supported");
    }
    if (kind != "user_output" && kind != "buffer_mutation") throw UserError(Path(at, kind).str(), "an output of kind " + std::string(kind) + " is not supported");
    const Doc name = pt2::argument(graph_outputs.at(i), Path(outputs_at, i), sizes_);
    if (!name.is_string()) throw UserError(Path(outputs_at, i).str(), "an output that is not a tensor (" + name.dump() + ")");
    if (kind == "buffer_mutation") {
      auto buffer = body.is_object() ? find(object_of(body), "buffer_name") : std::nullopt;
      const std::string fqn = buffer && buffer->is_string() ? printable_line(string_of(*buffer)) : "";
      auto input = std::find_if(buffer_fqns_.begin(), buffer_fqns_.end(), [&](const auto& b) { return b.second == fqn; });
      if (input == buffer_fqns_.end())
        throw UserError(Path(at, kind).str(), "a buffer_mutation of \"" + fqn + "\", which is no buffer input of the program");
      add_update(resolve(name.get<std::string>()), input->first, Path(at, kind));
    } else {
      names.push_back(resolve(name.get<std::string>()));
      outputs.push_back({name.get<std::string>(), "user_output", name.get<std::string>()});
    }
    ++i;
  }
  for (Json input : list_at(require(graph, graph_at, "inputs"), Path(graph_at, "inputs"))) {
    const Doc placeholder = pt2::argument(input, Path(graph_at, "inputs"), sizes_);
    if (!placeholder.is_string()) continue;
    if (auto u = buffer_updates_.find(placeholder.get<std::string>()); u != buffer_updates_.end())
      add_update(resolve(u->second), u->first, Path(graph_at, "inputs"));
  }
  for (Update& u : updates) {
    names.push_back(detached(u.value, u.buffer, signature_at));
    outputs.push_back(std::move(u.output));
  }
  return names;
}

// The new value of `buffer` through torch.detach, as a value named after it.
std::string Translator::detached(const std::string& value, const std::string& buffer, const Path& at) {
  const std::string out = value + "__detached";
  const Value& v = meta(buffer, at);
  ops_.push_back({{"op", "torch.detach"}, {"args", Doc::array({value})},
                  {"out", Doc::array({{{"name", out}, {"shape", symbolic_shape_json(v.shape)}, {"dtype", std::string(dtype_name(v.dtype))}}})}});
  metas_[out] = v;
  origins_.push_back({at.str(), "the update of buffer " + buffer_fqns_.at(buffer), "", ""});
  return out;
}

}  // namespace tg::pt2

namespace tg {
namespace {

using namespace ::tg::json;

std::string trace_name_of(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  std::string name;
  for (char c : stem) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) name = "model_" + name;
  return name;
}

}  // namespace

Pt2Translation translate_program(const std::string& model_json, const std::string& trace_name, const SymbolValues& specialize) {
  return translate_program(model_json, trace_name, specialize, pt2::SymbolNames{});
}

Pt2Translation translate_program(const std::string& model_json, const std::string& trace_name, const SymbolValues& specialize, const pt2::SymbolNames& names) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(model_json);
  const Json doc = parse_document(parser, padded);
  check_duplicate_keys(doc);
  return pt2::Translator(doc, trace_name, specialize, names).run();
}

// The weights' and constants' payload descriptions: a payload stored as a pickle (a tensor
// subclass, a TorchBind or opaque object) holds what a raw tensor cannot say, so it is refused.
void check_payloads(const Pt2Archive& archive) {
  for (const std::string entry : {"data/weights/model_weights_config.json", "data/constants/model_constants_config.json"}) {
    if (!archive.has(entry)) continue;
    const std::string text = archive.read(entry, kMaxPt2JsonBytes);
    try {
      simdjson::dom::parser parser;
      const simdjson::padded_string padded(text);
      const std::string document;  // the root's pointer: ""
      const Path at(document);
      const Object root = object_at(parse_document(parser, padded), at);
      const Path config_at(at, "config");
      for (auto [fqn, payload] : object_at(require(root, at, "config"), config_at)) {
        const Path payload_at(config_at, fqn);
        auto pickled = find(object_at(payload, payload_at), "use_pickle");
        if (pickled && pickled->is_bool() && as<bool>(*pickled))
          throw UserError(Path(payload_at, "use_pickle").str(), "\"" + printable_line(fqn) + "\" is stored as a pickle (a tensor subclass or a Python "
                                                                "object): thunder-gen reads plain tensors only");
      }
    } catch (UserError& e) {
      if (e.file.empty()) e.file = archive.path() + ":" + archive.root() + entry;
      throw;
    }
  }
}

Pt2Translation translate_pt2(const std::string& archive_path, const std::string& trace_name, const SymbolValues& specialize) {
  const Pt2Archive archive(archive_path);
  check_payloads(archive);
  const std::string entry = "models/model.json";
  if (!archive.has(entry)) throw UserError(archive_path, "", "no " + archive.root() + entry + " (the archive holds no model named \"model\")");
  const std::string text = archive.read(entry, kMaxPt2JsonBytes);
  // thunder_gen.export's record of the names given to Dim (torch.export.save's extra files).
  pt2::SymbolNames names;
  if (const std::string names_entry = "extra/thunder_gen_symbols.json"; archive.has(names_entry))
    names = pt2::read_symbol_names(archive.read(names_entry, kMaxPt2JsonBytes), archive_path + ":" + archive.root() + names_entry);
  try {
    Pt2Translation translation = translate_program(text, trace_name, specialize, names);
    translation.entry = archive.root() + entry;
    return translation;
  } catch (UserError& e) {
    if (e.file.empty()) e.file = archive_path + ":" + archive.root() + entry;
    throw;
  }
}

}  // namespace tg

namespace tg {
namespace {

// A reader error about the translated trace, told about the archive: its node, input or output.
UserError about_archive(const UserError& e, const Pt2Translation& t, const std::string& path) {
  const std::string file = path + ":" + t.entry;
  auto index_after = [&](const std::string& prefix) -> std::optional<size_t> {
    if (e.where.rfind(prefix, 0) != 0) return std::nullopt;
    return std::strtoull(e.where.c_str() + prefix.size(), nullptr, 10);
  };
  if (auto op = index_after("/ops/"); op && *op < t.op_origins.size()) {
    const Pt2Origin& origin = t.op_origins[*op];
    const std::string symbol = t.trace["ops"][*op]["op"].get<std::string>();
    return UserError(file, origin.pointer, std::string(e.what()) + " [" + origin.description + ", as " + symbol + "]");
  }
  if (auto input = index_after("/inputs/")) return UserError(file, "/graph_module/graph/inputs/" + std::to_string(*input), e.what());
  if (auto output = index_after("/outputs/")) return UserError(file, "/graph_module/graph/outputs/" + std::to_string(*output), e.what());
  return UserError(file, e.where, std::string(e.what()) + " [in the trace the archive became]");
}

}  // namespace

Trace read_pt2_file(const std::string& path, const SymbolValues& specialize) {
  const Pt2Translation translation = translate_pt2(path, trace_name_of(path), specialize);
  Trace trace;
  try {
    trace = read_trace(translation.trace.dump(), specialize, PlainIntegers::sizes_alone);
  } catch (const UserError& e) {
    throw about_archive(e, translation, path);
  }
  for (size_t i = 0; i < trace.ops.size() && i < translation.op_origins.size(); ++i) {
    const Pt2Origin& origin = translation.op_origins[i];
    trace.ops[i].where = origin.pointer;
    trace.node_origins[origin.pointer] = {origin.target, origin.module};
  }
  for (const Pt2Input& input : translation.inputs) trace.input_origins.push_back({input.role, input.fqn});
  for (const Pt2Input& output : translation.outputs) trace.output_origins.push_back({output.role, output.fqn});
  return trace;
}

}  // namespace tg
