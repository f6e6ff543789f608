// The PT2 front end: a PT2 archive's ExportedProgram (docs/pt2.md) translated into a trace (format
// v1, docs/trace-format.md) that the JSON reader then reads and verifies like any other. The graph's
// placeholders become the trace's inputs (parameters and buffers by their FQN), its nodes trace ops
// through the ATen declarations (aten_ops.def), its user outputs the trace's outputs.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tg {

// A dim in trace JSON: its size. Where it is an expression over the symbols (a dynamic-shape
// export), the translation writes that instead: shape_json in declarations ("B*T"),
// size_list_json in arguments ({"size": "B*T"}, and a known constant as {"size": "64"}: an
// integer argument is otherwise a size the trace does not know at other sizes).
inline void to_json(nlohmann::json& j, const Dim& d) { j = int64_t(d); }
inline nlohmann::json shape_json(const Shape& shape) {
  nlohmann::json out = nlohmann::json::array();
  for (const Dim& d : shape) out.push_back(d.symbolic() ? nlohmann::json(d.expr()->text()) : nlohmann::json(int64_t(d)));
  return out;
}
// ... a shape with a symbolic dim also writes its known constants as expressions ("4"): a plain
// integer there is a size the trace does not know at other sizes.
inline nlohmann::json symbolic_shape_json(const Shape& shape) {
  bool symbolic = false;
  for (const Dim& d : shape) symbolic |= d.symbolic();
  nlohmann::json out = nlohmann::json::array();
  for (const Dim& d : shape) out.push_back(symbolic && d.expr() ? nlohmann::json(d.expr()->text()) : nlohmann::json(int64_t(d)));
  return out;
}
inline nlohmann::json size_list_json(const Shape& shape) {
  nlohmann::json out = nlohmann::json::array();
  for (const Dim& d : shape) out.push_back(d.expr() ? nlohmann::json{{"size", d.expr()->text()}} : nlohmann::json(int64_t(d)));
  return out;
}
namespace pt2 {
struct SymbolNames;  // frontend/pt2_sizes.h
}  // namespace pt2

// Where a trace op or input came from in the archive, for diagnostics and the manifest.
struct Pt2Origin {
  std::string pointer;      // "/graph_module/graph/nodes/12"
  std::string description;  // "node linear_3 (aten.linear.default) in module layers.0.attn.q_proj"
  std::string target;       // "aten.linear.default"
  std::string module;       // "layers.0.attn.q_proj"
};

struct Pt2Input {
  std::string name;  // the placeholder: the trace input's name
  std::string role;  // "user_input", "parameter", "buffer", "constant"
  std::string fqn;   // "layers.0.attn.q_proj.weight"; a user input's own name
};

struct Pt2Translation {
  nlohmann::json trace;              // the trace document
  std::vector<Pt2Origin> op_origins;  // per op of trace["ops"]
  std::vector<Pt2Input> inputs;       // per input of trace["inputs"]
  std::vector<Pt2Input> outputs;      // per output of trace["outputs"]: role "user_output", or "buffer_update" with the buffer's FQN
  std::string entry;                  // the archive entry read ("model/models/model.json")
  Symbols symbols;                    // a dynamic-shape export's (range_constraints); the trace is at its specialization
};

// Translates the archive's model (torch.export.save names it "model"). A dynamic-shape export is
// translated at the sizes `specialize` gives each of its symbols (docs/symbolic-shapes.md).
Pt2Translation translate_pt2(const std::string& archive_path, const std::string& trace_name, const SymbolValues& specialize = {});
// Translates a serialized ExportedProgram (the text of models/model.json).
Pt2Translation translate_program(const std::string& model_json, const std::string& trace_name, const SymbolValues& specialize = {});
// ... with the names given torch's symbols (the archive's extra/thunder_gen_symbols.json).
Pt2Translation translate_program(const std::string& model_json, const std::string& trace_name, const SymbolValues& specialize,
                                 const pt2::SymbolNames& names);

// The archive read into a verified Trace (frontend/input_file.h); errors name the archive, its
// entry and the node.
Trace read_pt2_file(const std::string& path, const SymbolValues& specialize = {});

}  // namespace tg
