#include "frontend/pt2_schema.h"

#include <algorithm>
#include <array>

#include "support/diagnostics.h"

namespace tg::pt2 {
namespace {

using namespace ::tg::json;
using nlohmann::json;

// Argument members torch 2.9 to 2.15 write (schema 8.14 to 8.20), known but not expressible in a
// trace, with the reason given.
struct Unsupported {
  std::string_view member, reason;
};
constexpr Unsupported kUnsupportedArguments[] = {
    {"as_graph", "a subgraph (a higher-order op's body)"},
    {"as_custom_obj", "a custom (TorchBind) object"},
    {"as_operator", "an operator passed as an argument"},
    {"as_complex", "a complex number"},
    {"as_string_to_argument", "a dict argument"},
    {"as_nested_tensors", "nested tensor lists"},
    {"as_int_lists", "lists of int lists"},
    {"as_float_lists", "lists of float lists"},
    {"as_sym_bool", "a symbolic bool (a data-dependent or dynamic-shape guard)"},
    {"as_sym_bools", "symbolic bools"},
    {"as_sym_float", "a symbolic float"},
    {"as_sym_floats", "symbolic floats"},
    {"as_strings", "a list of strings"},
};

int64_t integer_at(Json j, const Path& where) {
  if (!is_int64(j)) throw UserError(where.str(), "expected an integer, got " + kind_name(j));
  return int_of(j);
}

json float_at(Json j, const Path& where) {
  if (j.is_string()) {
    const std::string_view s = string_of(j);
    if (s == "Infinity") return json{{"float", "inf"}};
    if (s == "-Infinity") return json{{"float", "-inf"}};
    if (s == "NaN") return json{{"float", "nan"}};
  }
  if (!j.is_number()) throw UserError(where.str(), "expected a float, got " + kind_name(j));
  return as<double>(j);
}

json list_of(Json j, const Path& where, json (*item)(Json, const Path&)) {
  json list = json::array();
  size_t i = 0;
  for (Json element : list_at(j, where)) list.push_back(item(element, Path(where, i++)));
  return list;
}

std::string tensor_name(Json j, const Path& where) {
  const Object o = object_at(j, where);
  return string_at(require(o, where, "name"), Path(where, "name"));
}

json tensor_argument(Json j, const Path& where) { return tensor_name(j, where); }
json optional_tensor(Json j, const Path& where) {
  auto [member, value] = member_of(j, where, "OptionalTensorArgument");
  if (member == "as_none") return nullptr;
  if (member == "as_tensor") return tensor_name(value, Path(where, member));
  throw UserError(where.str(), "expected as_tensor or as_none, got " + std::string(member));
}
json int_argument(Json j, const Path& where) { return integer_at(j, where); }
json bool_argument(Json j, const Path& where) {
  if (!j.is_bool()) throw UserError(where.str(), "expected true or false, got " + kind_name(j));
  return as<bool>(j);
}

// A Layout enum value: only Strided (7) is a tensor thunder-gen generates code for.
void check_strided(Json j, const Path& where) {
  if (integer_at(j, where) != 7) throw UserError(where.str(), "a sparse or mkldnn layout: thunder-gen generates code for strided tensors");
}

json device_argument(Json j, const Path& where) {
  const Object o = object_at(j, where);
  const std::string type = string_at(require(o, where, "type"), Path(where, "type"));
  if (type != "cpu" && type != "cuda" && type != "meta")
    throw UserError(Path(where, "type").str(), "a tensor on \"" + type + "\": thunder-gen generates CUDA code from graphs captured on cpu, cuda or meta");
  return json{{"device", type}};
}

}  // namespace

std::pair<std::string_view, Json> member_of(Json j, const Path& where, std::string_view kind) {
  const Object o = object_at(j, where);
  if (o.size() != 1) throw UserError(where.str(), "a " + std::string(kind) + " holds exactly one member, this one " + std::to_string(o.size()));
  const auto member = *o.begin();
  return {member.key, member.value};
}

DType scalar_type(Json j, const Path& where) {
  // The schema's ScalarType values (not c10's): 1 u8, 2 i8, 3 i16, 4 i32, 5 i64, 6 f16, 7 f32,
  // 8 f64, 12 bool, 13 bf16; the others (complex, fp8, uint16-64) have no trace dtype.
  static const std::array<std::pair<int64_t, DType>, 10> kTypes = {{{1, DType::u8}, {2, DType::i8}, {3, DType::i16}, {4, DType::i32},
                                                                    {5, DType::i64}, {6, DType::f16}, {7, DType::f32}, {8, DType::f64},
                                                                    {12, DType::b8}, {13, DType::bf16}}};
  const int64_t code = integer_at(j, where);
  for (auto [number, dtype] : kTypes)
    if (number == code) return dtype;
  throw UserError(where.str(), "ScalarType " + std::to_string(code) + " is not a dtype thunder-gen generates code for (b8, u8, i8-i64, f16, bf16, f32, f64)");
}

json argument(Json j, const Path& where, const SymIntSizes& sizes) {
  auto [member, value] = member_of(j, where, "Argument");
  const Path at(where, member);
  if (member == "as_none") return nullptr;
  if (member == "as_tensor") return tensor_name(value, at);
  if (member == "as_tensors") return list_of(value, at, tensor_argument);
  if (member == "as_optional_tensor") return optional_tensor(value, at);
  if (member == "as_optional_tensors") return list_of(value, at, optional_tensor);
  if (member == "as_int") return integer_at(value, at);
  if (member == "as_ints") return list_of(value, at, int_argument);
  if (member == "as_sym_int") return sizes.size(value, at);
  if (member == "as_sym_ints") {
    json list = json::array();
    size_t i = 0;
    for (Json element : list_at(value, at)) list.push_back(sizes.size(element, Path(at, i++)));
    return list;
  }
  if (member == "as_float") return float_at(value, at);
  if (member == "as_floats") return list_of(value, at, float_at);
  if (member == "as_bool") return bool_argument(value, at);
  if (member == "as_bools") return list_of(value, at, bool_argument);
  if (member == "as_string") return json{{"str", string_at(value, at)}};
  if (member == "as_scalar_type") return json{{"dtype", std::string(dtype_name(scalar_type(value, at)))}};
  if (member == "as_device") return device_argument(value, at);
  if (member == "as_memory_format") return json{{"memory_format", integer_at(value, at)}};
  if (member == "as_layout") {
    check_strided(value, at);
    return json{{"layout", "strided"}};
  }
  for (const Unsupported& u : kUnsupportedArguments)
    if (member == u.member) throw UserError(where.str(), std::string(u.reason) + " (" + std::string(member) + ") is not supported");
  throw UserError(where.str(), "unknown Argument member \"" + std::string(member) + "\" (this reader knows the schema up to 8.20, torch 2.15)");
}

std::vector<std::string> output_names(Json j, const Path& where) {
  auto [member, value] = member_of(j, where, "Argument");
  const Path at(where, member);
  if (member == "as_none") return {};
  if (member == "as_tensor") return {tensor_name(value, at)};
  if (member == "as_tensors") {
    std::vector<std::string> names;
    size_t i = 0;
    for (Json t : list_at(value, at)) names.push_back(tensor_name(t, Path(at, i++)));
    return names;
  }
  throw UserError(where.str(), "an output that is not a tensor (" + std::string(member) + ")");
}

namespace {

// A tensor's size in the archive may not be negative at any size its symbols' ranges allow (a
// range wider than the graph's guards: seq - 5 where seq may be 2); said by the expression, not
// by its number at the sizes being read.
void check_never_negative(const SizeExpr& size, const Path& at, const Symbols& symbols) {
  if (size.is_constant() || provably_ge(size, SizeExpr(0), symbols)) return;  // (a negative number: said below, as a number)
  std::string ranges;
  for (const std::string& name : size.symbols()) ranges += (ranges.empty() ? "" : "; ") + symbols.at(name).range_text();
  throw UserError(at.str(), "the size " + size.text() + " may be negative for sizes the symbols allow (" + ranges + ")");
}

}  // namespace

Value tensor_meta(Json j, const Path& where, const SymIntSizes& sizes) {
  const Object o = object_at(j, where);
  Value v;
  v.dtype = scalar_type(require(o, where, "dtype"), Path(where, "dtype"));
  const Path sizes_at(where, "sizes");
  size_t i = 0;
  for (Json size : list_at(require(o, where, "sizes"), sizes_at)) {
    const Path at(sizes_at, i++);
    const SizeExpr expr = sizes.expression(size, at);
    check_never_negative(expr, at, sizes.symbols());
    const int64_t n = sizes.size(size, at);
    if (n < 0) throw UserError(at.str(), "negative size " + std::to_string(n));
    v.shape.push_back(Dim(n, expr));
  }
  if (auto rg = find(o, "requires_grad")) v.requires_grad = bool_argument(*rg, Path(where, "requires_grad")).get<bool>();
  if (auto layout = find(o, "layout")) check_strided(*layout, Path(where, "layout"));
  if (auto device = find(o, "device")) device_argument(*device, Path(where, "device"));
  return v;
}

}  // namespace tg::pt2
