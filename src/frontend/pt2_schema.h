// The serialized ExportedProgram's building blocks (docs/pt2.md), decoded strictly: a union is an
// object with exactly one key, a member this reader knows; enums are their integers in the
// schema's own numbering. Anything else is a UserError at its JSON pointer. Internal to
// frontend/ (the PT2 reader).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "frontend/json_element.h"
#include "frontend/pt2_sizes.h"
#include "ir/trace.h"

namespace tg::pt2 {

using ::tg::json::Json;
using ::tg::json::Path;

// A union's one member: its name and its value. `kind` names the union in messages ("Argument").
std::pair<std::string_view, Json> member_of(Json j, const Path& where, std::string_view kind);

// An Argument as a trace-format argument (aten_table.h): a tensor by its name, numbers, lists,
// null, {"str"}, {"dtype"}, {"float": "inf"}. Members the traces cannot express (a subgraph, a
// custom object, a symbolic bool) are refused by name; a SymInt is its size at `sizes`.
nlohmann::json argument(Json j, const Path& where, const SymIntSizes& sizes);
// The tensor names an output Argument declares: as_tensor, as_tensors, as_none (none).
std::vector<std::string> output_names(Json j, const Path& where);

// A TensorMeta as a value declaration: its sizes (at `sizes`), a dtype the generator has, strided
// layout.
// Its dims carry their expressions over the program's symbols (a dynamic-shape export's).
Value tensor_meta(Json j, const Path& where, const SymIntSizes& sizes);
// The schema's ScalarType numbering onto ours.
DType scalar_type(Json j, const Path& where);

}  // namespace tg::pt2
