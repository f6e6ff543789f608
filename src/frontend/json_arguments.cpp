#include "frontend/json_arguments.h"

#include <limits>
#include <optional>

#include "frontend/json_symbols.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::json {
namespace {

constexpr int64_t kMaxWorldSize = 1 << 20;  // ranks in a process group: far beyond any job, small enough to multiply shapes by

}  // namespace

void check_device(std::string_view device, const std::string& where) {
  const bool indexed = device.size() > 5 && device.substr(0, 5) == "cuda:" && device.size() <= 14 &&
                       device.find_first_not_of("0123456789", 5) == std::string_view::npos && (device[5] != '0' || device.size() == 6);
  if (device != "cuda" && !indexed)
    throw UserError(where, "unsupported device \"" + std::string(device) + "\": generated code runs on \"cuda\" or \"cuda:N\"");
}

void check_same_device(const Trace& trace, std::string_view device, const std::string& where) {
  auto normal = [](std::string_view d) { return d == "cuda" ? std::string_view("cuda:0") : d; };
  if (normal(device) != normal(trace.device))
    throw UserError(where, "device \"" + std::string(device) + "\" is not the trace's (\"" + trace.device + "\"): generated code runs on one device");
}

void Arguments::read(Object op_json, const Path& at, const std::string& where, Op& op) {
  // Arguments refer to values defined before this op.
  std::vector<Given> positional, keyword;
  const Path args_at(at, "args"), kwargs_at(at, "kwargs");
  if (auto args = find(op_json, "args")) {
    size_t i = 0;
    for (Json arg : list_at(*args, args_at)) positional.push_back({Path(args_at, i++), arg});
  }
  std::vector<std::string> keyword_names;
  if (auto kwargs = find(op_json, "kwargs")) {
    for (const simdjson::dom::key_value_pair& member : object_at(*kwargs, kwargs_at)) {
      keyword.push_back({Path(kwargs_at, member.key), member.value, true});
      keyword_names.emplace_back(member.key);
    }
  }
  if (op.info) {
    bind(op, positional, keyword, keyword_names, where);
    return;
  }
  for (const Given& a : positional) op.args.push_back(literal_or_ref(a.json, a.where, 1));
  for (size_t i = 0; i < keyword.size(); ++i) {
    if (!is_identifier(keyword_names[i])) throw UserError(keyword[i].where.str(), "a keyword argument's name must be an identifier");
    op.kwargs.emplace_back(keyword_names[i], literal_or_ref(keyword[i].json, keyword[i].where, 1));
  }
}

// Binds positional and keyword arguments to the op's signature the way Python does.
void Arguments::bind(Op& op, const std::vector<Given>& positional, const std::vector<Given>& keyword, const std::vector<std::string>& keyword_names,
                     const std::string& where) {
  const auto& params = op.info->params;
  size_t positional_slots = 0;
  while (positional_slots < params.size() && !params[positional_slots].keyword_only) ++positional_slots;
  std::vector<const Given*> bound(params.size(), nullptr);
  // Thunder's torch.reshape(a, *shape) and torch.permute(a, *dims): integers (or {"size"}
  // literals) past a last positional list parameter are that list, spelled out (bound where its
  // first integer is).
  std::optional<Arg> spelled_out;
  if (positional.size() > positional_slots && positional_slots > 0 && params[positional_slots - 1].kind == ParamKind::int_list) {
    const size_t first = positional_slots - 1;
    bool all_integers = true;
    auto is_size = [](Json j) { return j.is_object() && object_of(j).size() == 1 && find(object_of(j), "size"); };
    for (size_t i = first; i < positional.size(); ++i) all_integers = all_integers && (is_json_integer(positional[i].json) || is_size(positional[i].json));
    if (all_integers) {
      std::vector<Arg> items;
      for (size_t i = first; i < positional.size(); ++i) items.push_back(literal_or_ref(positional[i].json, positional[i].where, 2));
      spelled_out = Arg::of_list(std::move(items));
    }
  }
  const size_t given = spelled_out ? positional_slots : positional.size();
  if (given > positional_slots)
    throw UserError(positional[positional_slots].where.str(), std::string(op.info->id) + " takes " + std::to_string(positional_slots) +
                                                         " positional argument" + (positional_slots == 1 ? "" : "s") + " but " +
                                                         std::to_string(positional.size()) + " were given");
  for (size_t i = 0; i < given; ++i) bound[i] = &positional[i];
  for (size_t k = 0; k < keyword.size(); ++k) {
    size_t i = 0;
    while (i < params.size() && params[i].name != keyword_names[k]) ++i;
    if (i == params.size()) throw UserError(keyword[k].where.str(), std::string(op.info->id) + " has no parameter \"" + keyword_names[k] + "\"");
    if (bound[i]) throw UserError(keyword[k].where.str(), "argument \"" + keyword_names[k] + "\" is given twice");
    bound[i] = &keyword[k];
  }
  op.args.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    if (!bound[i]) {
      if (!params[i].has_default)
        throw UserError(where, std::string(op.info->id) + " is missing its argument \"" + std::string(params[i].name) + "\"");
      op.args.push_back(params[i].default_value);
      continue;
    }
    const bool is_spelled_out = spelled_out && i + 1 == positional_slots;
    op.args.push_back(is_spelled_out ? std::move(*spelled_out) : typed_arg(bound[i]->json, params[i], bound[i]->where));
    // A positional argument is where the verifier looks by default (/args/i); a keyword one is not.
    if (bound[i]->keyword) {
      op.arg_where.resize(params.size());
      op.arg_where[i] = bound[i]->where.str();
    }
  }
}

// What an argument is, for messages: "the scalar \"alpha\"", "a list", ...
std::string Arguments::describe(const Arg& a, Json j) const {
  if (a.is_value()) return (t_.value(a.value).is_scalar ? "the scalar \"" : "the tensor \"") + t_.value(a.value).name + "\"";
  if (a.kind == Arg::Kind::dtype) return "a dtype";
  if (a.kind == Arg::Kind::device) return "a device";
  if (a.kind == Arg::Kind::string) return "a string";
  if (a.kind == Arg::Kind::opaque) return a.text;
  if (a.kind == Arg::Kind::process_group) return "a process group";
  return kind_name(j);
}

Arg Arguments::typed_arg(Json j, const Param& param, const Path& where) {
  Arg a = literal_or_ref(j, where, 1);
  auto fail = [&](const std::string& at, const Arg& got, Json got_json, const char* what) {
    throw UserError(at, "argument \"" + std::string(param.name) + "\" must be " + what + ", got " + describe(got, got_json));
  };
  auto expect = [&](bool ok, const char* what) {
    if (!ok) fail(where.str(), a, j, what);
  };
  auto is_tensor = [&](const Arg& x) { return x.is_value() && !t_.value(x.value).is_scalar; };
  auto is_scalar_value = [&](const Arg& x) { return x.is_value() && t_.value(x.value).is_scalar; };
  // A list whose every element satisfies `ok`; otherwise the first bad element is named.
  auto expect_list = [&](bool allow_null, bool non_empty, const char* what, const char* element_what, auto&& ok) {
    if (allow_null && a.kind == Arg::Kind::none) return;
    expect(a.kind == Arg::Kind::list, what);
    if (non_empty && a.items.empty()) fail(where.str(), a, j, what);
    for (size_t i = 0; i < a.items.size(); ++i)
      if (!ok(a.items[i])) fail(Path(where, i).str(), a.items[i], item(j, i), element_what);
  };
  auto integer = [](const Arg& x) { return x.kind == Arg::Kind::integer; };
  switch (param.kind) {
    case ParamKind::tensor: expect(is_tensor(a), "a tensor"); break;
    case ParamKind::tensor_or_number: expect(a.is_value() || a.is_number(), "a tensor or a number"); break;
    case ParamKind::number: expect(a.is_number() || is_scalar_value(a), "a number"); break;
    case ParamKind::integer: expect(a.kind == Arg::Kind::integer, "an integer"); break;
    case ParamKind::optional_integer: expect(a.kind == Arg::Kind::integer || a.kind == Arg::Kind::none, "an integer or null"); break;
    case ParamKind::int_list: expect_list(false, false, "a list of integers", "an integer", integer); break;
    case ParamKind::optional_int_list: expect_list(true, false, "a list of integers or null", "an integer", integer); break;
    case ParamKind::dtype: expect(a.kind == Arg::Kind::dtype, "a dtype literal such as {\"dtype\": \"f32\"}"); break;
    case ParamKind::device:
      expect(a.kind == Arg::Kind::device || a.kind == Arg::Kind::string, "a device literal such as {\"device\": \"cuda:0\"}");
      check_device(a.text, where.str());
      break;
    case ParamKind::tensor_list: expect_list(false, true, "a non-empty list of tensors", "a tensor", is_tensor); break;
    case ParamKind::optional_tensor: expect(is_tensor(a) || a.kind == Arg::Kind::none, "a tensor or null"); break;
    case ParamKind::optional_dtype: expect(a.kind == Arg::Kind::dtype || a.kind == Arg::Kind::none, "a dtype literal or null"); break;
    case ParamKind::dims:
      if (a.kind != Arg::Kind::integer) expect_list(true, false, "an integer, a list of integers or null", "an integer", integer);
      break;
    case ParamKind::boolean: expect(a.kind == Arg::Kind::boolean, "true or false"); break;
    case ParamKind::int_or_int_list:
      if (a.kind != Arg::Kind::integer) expect_list(false, true, "an integer or a list of integers", "an integer", integer);
      break;
    case ParamKind::optional_int_or_int_list:
      if (a.kind != Arg::Kind::integer) expect_list(true, true, "an integer, a list of integers or null", "an integer", integer);
      break;
    case ParamKind::optional_number: expect(a.is_number() || is_scalar_value(a) || a.kind == Arg::Kind::none, "a number or null"); break;
    case ParamKind::dim_or_tensor: expect(a.kind == Arg::Kind::integer || is_tensor(a) || a.kind == Arg::Kind::none, "an integer, a tensor or null"); break;
    case ParamKind::optional_tensor_or_number:
      expect(a.is_value() || a.is_number() || a.kind == Arg::Kind::none, "a tensor, a number or null");
      break;
    case ParamKind::string: expect(a.kind == Arg::Kind::string, "a string such as {\"str\": \"tanh\"}"); break;
    case ParamKind::process_group: expect(a.kind == Arg::Kind::process_group, "a process group such as {\"process_group\": {\"world_size\": 2}}"); break;
    case ParamKind::optional_string: expect(a.kind == Arg::Kind::string || a.kind == Arg::Kind::none, "a string or null"); break;
    case ParamKind::padding_config:
      expect_list(false, false, "a list of [lo, hi, interior] integer triples", "a [lo, hi, interior] integer triple", [&](const Arg& x) {
        if (x.kind != Arg::Kind::list || x.items.size() != 3) return false;
        for (const Arg& v : x.items)
          if (!integer(v)) return false;
        return true;
      });
      break;
  }
  return a;
}

Arg Arguments::literal_or_ref(Json j, const Path& where, int depth) {
  if (depth > kMaxDepth) throw UserError(where.str(), "arguments nest deeper than " + std::to_string(kMaxDepth) + " levels");
  switch (j.type()) {
    case element_type::NULL_VALUE: return Arg();
    case element_type::BOOL: return Arg::of_bool(as<bool>(j));
    case element_type::UINT64: throw UserError(where.str(), "integer " + dump(j) + " overflows 64 bits");
    case element_type::INT64: return integer_literal(int_of(j));
    case element_type::DOUBLE: return Arg::of_real(as<double>(j));
    case element_type::STRING: return Arg::of_value(names_.reference(j, where));
    case element_type::ARRAY: {
      std::vector<Arg> items;
      for (Json element : array_of(j))
        items.push_back(literal_or_ref(element, Path(where, items.size()), depth + 1));
      return Arg::of_list(std::move(items));
    }
    case element_type::OBJECT: return typed_literal(object_of(j), where);
  }
  throw UserError(where.str(), "unsupported argument " + kind_name(j));
}

// An integer read as the same at every size carries that as its expression, so the dims a rule
// makes of it are known constants (past a size's range it cannot be one, and stays plain).
Arg Arguments::integer_literal(int64_t value) const {
  constexpr int64_t kLargestSize = int64_t(1) << 48;
  const bool constant = integers_ == PlainIntegers::constant && !t_.symbols.empty() && value >= -kLargestSize && value <= kLargestSize;
  return constant ? Arg::of_dim(Dim::constant(value)) : Arg::of_int(value);
}

Arg Arguments::typed_literal(Object j, const Path& where) {
  if (j.size() != 1) throw UserError(where.str(), "a typed literal has exactly one key (dtype, device, str, float, slice, ellipsis, memory_format, process_group or size)");
  const simdjson::dom::key_value_pair member = *j.begin();
  const std::string key(member.key);
  const std::string w = where.str() + "/" + escape_pointer_token(key);
  if (key == "slice") return slice_literal(member.value, w);
  if (key == "process_group") return process_group_literal(member.value, w);
  if (key == "size") {  // an integer written as an expression over the trace's symbols
    if (!member.value.is_string()) throw UserError(w, "a size literal is a string: {\"size\": \"B*T\"}");
    const Path size_at(w);
    const SizeExpr size = size_expr_of(member.value, size_at, t_);
    return Arg::of_dim(Dim(size_at_specialization(size, size_at, t_), size));
  }
  std::string text = string_at(member.value, Path(w));
  Arg a;
  if (key == "dtype") {
    auto dt = parse_dtype(text);
    if (!dt) throw UserError(w, "unknown dtype \"" + text + "\"");
    return Arg::of_dtype(*dt);
  }
  if (key == "device") {
    check_device(text, w);
    check_same_device(t_, text, w);
    a.kind = Arg::Kind::device;
    a.text = text;
    return a;
  }
  if (key == "str") { a.kind = Arg::Kind::string; a.text = text; return a; }
  if (key == "ellipsis") {
    if (text != "...") throw UserError(w, "the ellipsis literal is {\"ellipsis\": \"...\"}");
    a.kind = Arg::Kind::opaque;
    a.text = "...";
    return a;
  }
  if (key == "memory_format") {
    if (!is_identifier(text)) throw UserError(w, "a memory format is a name such as \"contiguous_format\"");
    a.kind = Arg::Kind::opaque;
    a.text = "torch." + text;
    return a;
  }
  if (key == "float") {
    if (text == "inf") return Arg::of_real(std::numeric_limits<double>::infinity());
    if (text == "-inf") return Arg::of_real(-std::numeric_limits<double>::infinity());
    if (text == "nan") return Arg::of_real(std::numeric_limits<double>::quiet_NaN());
    throw UserError(w, "a float literal is \"inf\", \"-inf\" or \"nan\", not \"" + text + "\"");
  }
  throw UserError(where.str(), "unknown typed literal \"" + key + "\" (expected dtype, device, str, float, slice, ellipsis, memory_format, process_group or size)");
}

// {"process_group": {"world_size": N}}: a distributed prim's group. Every group of a trace is the
// same one (its world size is the trace's); the rank is the communicator's, at run time.
Arg Arguments::process_group_literal(Json j, const std::string& where) {
  const Path at(where);
  const Object group = object_at(j, at);
  static constexpr std::string_view kGroupFields[] = {"world_size"};
  check_fields(group, at, kGroupFields);
  const Json size = require(group, at, "world_size");
  const std::string size_at = where + "/world_size";
  if (!is_int64(size) || int_of(size) < 1 || int_of(size) > kMaxWorldSize)
    throw UserError(size_at, "world_size must be an integer from 1 to " + std::to_string(kMaxWorldSize) + ", got " + dump(size));
  if (t_.world_size != 0 && t_.world_size != int_of(size))
    throw UserError(size_at, "world_size " + std::to_string(int_of(size)) + " differs from the trace's other process groups (" +
                                 std::to_string(t_.world_size) + "): a trace runs on one group");
  t_.world_size = int_of(size);
  Arg a;
  a.kind = Arg::Kind::process_group;
  a.integer = t_.world_size;
  return a;
}

// {"slice": [start, stop, step]}, each an integer or null: Python's slice(start, stop, step).
Arg Arguments::slice_literal(Json j, const std::string& where) {
  if (!j.is_array() || array_of(j).size() != 3) throw UserError(where, "a slice literal is [start, stop, step], each an integer or null");
  Arg a;
  a.kind = Arg::Kind::opaque;
  a.text = "slice(";
  size_t i = 0;
  for (Json bound : array_of(j)) {
    if (!bound.is_null() && !is_int64(bound)) throw UserError(where + "/" + std::to_string(i), "a slice bound is an integer or null");
    a.text += (i++ ? ", " : "") + (bound.is_null() ? std::string("None") : std::to_string(int_of(bound)));
  }
  a.text += ")";
  return a;
}

}  // namespace tg::json
