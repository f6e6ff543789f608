// The PT2 reader's translator (internal to frontend/): a serialized ExportedProgram's graph into
// trace JSON. pt2_program.cpp reads the program (its version, inputs and outputs); pt2_nodes.cpp
// its nodes (through the ATen declarations, in-place ops, autocast regions); pt2_patterns.cpp
// recognises what Core ATen decomposed (a linear as view, permute, addmm, view).
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/aten_table.h"
#include "frontend/json_element.h"
#include "frontend/pt2_program.h"
#include "frontend/pt2_schema.h"

namespace tg::pt2 {

using Doc = nlohmann::json;
using ::tg::json::Object;

// The module a node came from: the last path of its nn_module_stack ("key,path,type;...").
std::string module_path(Object node);
// Every tensor name an argument (as trace JSON) reads.
void for_each_name(const Doc& arg, const std::function<void(const std::string&)>& f);
// "torch.ops.aten.add.Tensor" as "aten.add.Tensor"; other targets refused, saying what they are.
std::string aten_target(const std::string& target, const Path& at, const std::string& source);
// A node computing a SymInt (aten.sym_size.int, _operator.floordiv, torch.sym_max...): its result
// is in the graph's sym_int_values, which its uses read (SymIntSizes), so it is not translated.
bool is_size_arithmetic(std::string_view target);
// wrap_with_autocast, the higher-order op whose body is inlined (pt2_nodes.cpp).
bool is_autocast_region(std::string_view target);
// The nodes the patterns of pt2_patterns.cpp look back at (reshapes, transposes), and reshapes.
bool feeds_patterns(std::string_view aten);
bool is_reshape(std::string_view target);
// ATen's view ops: their results alias `self`.
bool is_view(std::string_view target);
// The functional op of an in-place one ("aten.add_.Tensor" -> "aten.add.Tensor"), or "".
std::string functional_of(const std::string& aten);

class Translator {
 public:
  Translator(Json root, std::string trace_name, SymbolValues specialize, SymbolNames names = {})
      : root_(root), trace_name_(std::move(trace_name)), specialize_(std::move(specialize)), names_(std::move(names)) {}
  Pt2Translation run();

 private:
  const std::string root_pointer_;
  Json root_;
  std::string trace_name_, source_;
  SymbolValues specialize_;
  SymbolNames names_;  // the names given torch's symbols (thunder_gen.export)
  SymIntSizes sizes_;  // the program's symbols and SymInts, at specialize_
  std::map<std::string, Value, std::less<>> metas_;
  std::map<std::string, std::string, std::less<>> alias_;
  std::map<std::string, int, std::less<>> uses_;
  std::set<std::string, std::less<>> placeholders_, viewed_;  // graph inputs; values a view op reads or makes
  // The buffers among the graph inputs (placeholder -> FQN), those an op updated in place (the
  // training IR's batch_norm and add_ on num_batches_tracked): placeholder -> its value after,
  // and which buffer each such value is (a BatchNorm called again updates its last value).
  std::map<std::string, std::string, std::less<>> buffer_fqns_, buffer_updates_, buffer_of_value_;
  // The reshapes reading a value (their target, "torch.ops.aten.view.default", and first output),
  // and the reshape or transpose making it (its ATen target and bound arguments), for the patterns
  // of pt2_patterns.cpp; the values a pattern gave another shape than the archive's.
  struct Consumer {
    std::string target, out;
  };
  struct Producer {
    std::string aten;
    Doc bound;
  };
  std::map<std::string, std::vector<Consumer>, std::less<>> consumers_;
  std::map<std::string, Producer, std::less<>> producers_;
  std::set<std::string, std::less<>> reshaped_;
  Doc ops_ = Doc::array();
  std::vector<Pt2Origin> origins_;
  // Inlining a region's body: its names take this prefix ("submod_1__"), so they cannot meet the
  // enclosing graph's. "" in the program's own graph.
  std::string scope_;
  // Inside an enabled autocast region: its dtype, and the casts made so far (by value and dtype:
  // autocast converts each operand once per region).
  std::optional<DType> autocast_;
  std::map<std::pair<std::string, DType>, std::string> casts_;

  // pt2_program.cpp
  void check_version(Object root, const Path& at);
  void read_tensor_values(Object graph, const Path& graph_at);
  void count_uses(Object graph, const Path& graph_at);
  const Value& meta(const std::string& name, const Path& where) const;
  Doc declaration(const std::string& name, const Path& where, bool requires_grad) const;
  std::string resolve(const std::string& name) const;
  Doc resolve(Doc arg) const;
  Doc scoped(Doc arg) const;
  Doc read_inputs(Object graph, const Path& graph_at, Object signature, const Path& signature_at, std::vector<Pt2Input>& inputs) const;
  Doc read_outputs(Object graph, const Path& graph_at, Object signature, const Path& signature_at, std::vector<Pt2Input>& outputs);
  std::string detached(const std::string& value, const std::string& buffer, const Path& at);

  // pt2_nodes.cpp
  void read_nodes(Object graph, const Path& graph_at);
  void translate_node(Json node_json, const Path& at);
  void inline_autocast(Object node, const Path& at);
  void inline_body(Object body, const Path& body_at, const std::vector<std::string>& args, const std::vector<std::string>& results);
  Doc autocast_operands(Doc bound, const std::vector<std::string>& outs, const Path& at);

  // pt2_patterns.cpp
  bool fold_linear(const std::string& aten, const Doc& bound, const std::vector<std::string>& outs, const Path& at);
  bool fold_view(const std::string& aten, const Doc& bound, const std::vector<std::string>& outs, const Path& at);
  Doc cast_floats(Doc arg, DType to, const Path& at);
  Doc bind_inputs(Object node, const Path& at, const AtenRow& schema) const;
  // The parameters the node gives as integer literals (as_int, as_ints, or SymInts all constant:
  // the same at every size), and those it gives as SymInts that name a symbol, each as the
  // trace's typed literal ({"size": "s0*8"}): a size the code reads at run time (x * x.shape[1],
  // a loss over B*T tokens).
  struct IntegerArguments {
    std::set<std::string> literals;
    std::map<std::string, Doc> sized;
  };
  IntegerArguments integer_arguments(Object node, const Path& at) const;
  bool all_sizes_constant(Json list, const Path& at) const;
  std::string mutated_value(Object node, const Path& at, const std::string& aten) const;
  // `name` holds `value` from here on: later readers read it, and a buffer input's update is an output.
  void record_write(const std::string& name, const std::string& value, const std::string& aten, const Path& at);
  void check_defaults(const AtenRow& row, const Doc& bound, const Path& at) const;
  void emit(const AtenRow& row, const Doc& bound, const std::set<std::string>& literals, const std::map<std::string, Doc>& sized,
            const std::vector<std::string>& outs, const Path& at);
  Doc special_value(const std::string& special, const Doc& bound, const std::vector<std::string>& outs, const Path& at) const;
};

}  // namespace tg::pt2
