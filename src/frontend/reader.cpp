#include "frontend/reader.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <simdjson.h>
#include <sstream>

#include "frontend/overrides.h"
#include "ops/op_table.h"
#include "ops/verify.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"
#include "support/spelling.h"

namespace tg {
namespace {

// The document is read with simdjson's DOM (a flat tape: no allocation per node, strings as
// views). nlohmann's parser (several times slower, and its DOM a map per object) only words the
// message when simdjson refuses the text.
using Json = simdjson::dom::element;
using Object = simdjson::dom::object;
using Array = simdjson::dom::array;
using simdjson::dom::element_type;

constexpr int kMaxDepth = 64;  // JSON nesting deeper than any real trace; refused, never recursed
constexpr int64_t kMaxWorldSize = 1 << 20;  // ranks in a process group: far beyond any job, small enough to multiply shapes by

std::string escape_pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string kind_name(Json j) {
  switch (j.type()) {
    case element_type::NULL_VALUE: return "null";
    case element_type::BOOL: return "a boolean";
    case element_type::INT64:
    case element_type::UINT64: return "an integer";
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::ARRAY: return "a list";
    case element_type::OBJECT: return "an object";
  }
  return "an unexpected value";
}

// Devices generated code runs on: "cuda" or "cuda:N".
void check_device(std::string_view device, const std::string& where) {
  const bool indexed = device.size() > 5 && device.substr(0, 5) == "cuda:" && device.size() <= 14 &&
                       device.find_first_not_of("0123456789", 5) == std::string_view::npos && (device[5] != '0' || device.size() == 6);
  if (device != "cuda" && !indexed)
    throw UserError(where, "unsupported device \"" + std::string(device) + "\": generated code runs on \"cuda\" or \"cuda:N\"");
}

// A symbol id as Thunder spells them: identifiers joined by dots (prims.add, torch.Tensor.__getitem__).
bool is_symbol_id(std::string_view id) {
  for (size_t start = 0;;) {
    const size_t dot = id.find('.', start);
    if (!is_identifier(id.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// The element as JSON text, for messages.
std::string dump(Json j) { return simdjson::minify(j); }

// simdjson stores integers that fit int64 as INT64 and larger ones (below 2^64) as UINT64. (Its
// is_int64() and is_uint64() ask whether the value fits, not how it is stored.)
bool is_int64(Json j) { return j.type() == element_type::INT64; }
bool is_too_large(Json j) { return j.type() == element_type::UINT64; }
bool is_json_integer(Json j) { return is_int64(j) || is_too_large(j); }
// The element as a T, which the caller has checked it is (the type tests come first, for messages).
template <class T>
T as(Json j) {
  T value{};
  TG_CHECK(j.get(value) == simdjson::SUCCESS, "a JSON element read as the wrong type");
  return value;
}
std::string_view string_of(Json j) { return as<std::string_view>(j); }
int64_t int_of(Json j) { return as<int64_t>(j); }
Array array_of(Json j) { return as<Array>(j); }
Object object_of(Json j) { return as<Object>(j); }

// A member of an object, if present (objects are short: a linear search).
std::optional<Json> find(Object o, std::string_view key) {
  for (const simdjson::dom::key_value_pair& member : o)
    if (member.key == key) return member.value;
  return std::nullopt;
}
// The i-th element of a list (linear: only for messages).
Json item(Json list, size_t i) {
  Json element;
  TG_CHECK(array_of(list).at(i).get(element) == simdjson::SUCCESS, "a list element past the end");
  return element;
}


// Names visible at a point of the program: a stack of scopes, innermost last. A trace's sub-ops
// see the names before their op; a custom-gradient body sees only its own.
class Scope {
 public:
  ValueId find(std::string_view name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return kNoValue;
  }
  void push() { frames_.emplace_back(); }
  void pop() { frames_.pop_back(); }
  void define(const std::string& name, ValueId id) { frames_.back()[name] = id; }

 private:
  std::vector<std::map<std::string, ValueId, std::less<>>> frames_;
};

// A JSON pointer spelled out only when a message, or an op's stored location, needs it: one
// already spelled, or a parent's and one more token. Parents are the callers' locals and outlive
// their children, so a Path is passed down, never stored. (Building every pointer eagerly was a
// sixth of reading.)
class Path {
 public:
  explicit Path(const std::string& spelled) : spelled_(&spelled) {}
  Path(std::string&&) = delete;  // would dangle
  Path(const Path& parent, std::string_view key) : parent_(&parent), key_(key) {}
  Path(const Path& parent, size_t index) : parent_(&parent), index_(index), is_index_(true) {}
  std::string str() const {
    if (spelled_) return *spelled_;
    std::string s = parent_->str();
    s += '/';
    s += is_index_ ? std::to_string(index_) : escape_pointer_token(key_);
    return s;
  }
  std::string str_or_root() const {  // "/" for the document itself
    std::string s = str();
    return s.empty() ? "/" : s;
  }

 private:
  const std::string* spelled_ = nullptr;
  const Path* parent_ = nullptr;
  std::string_view key_;
  size_t index_ = 0;
  bool is_index_ = false;
};

// An argument as given: where it is (spelled only for a message), and its element.
struct Given {
  Path where;
  Json json;
  bool keyword = false;
};

class Reader {
 public:
  explicit Reader(Trace& trace) : t_(trace) {}

  void read(Json doc) {
    const std::string document;  // the root's pointer: ""
    const Path at(document);
    const Object root = object_at(doc, at);
    static constexpr std::string_view kTraceFields[] = {"format", "version", "name", "device", "inputs", "ops", "outputs", "source"};
    check_fields(root, at, kTraceFields);
    const Json format = require(root, at, "format");
    if (!format.is_string() || string_of(format) != "thunder-gen-trace")
      throw UserError("/format", "expected \"thunder-gen-trace\", got " + dump(format));
    const Json version = require(root, at, "version");
    if (!is_int64(version) || int_of(version) != 1)
      throw UserError("/version", "unsupported format version " + dump(version) + " (this reader knows version 1)");
    const Json name = require(root, at, "name");
    if (!name.is_string() || !is_identifier(string_of(name)))
      throw UserError("/name", "the trace name must be a C identifier, got " + dump(name));
    t_.name = string_of(name);
    if (auto device = find(root, "device")) {
      t_.device = string_at(*device, Path(at, "device"));
      check_device(t_.device, "/device");
    }
    if (auto source = find(root, "source")) t_.source = string_at(*source, Path(at, "source"));

    scope_.push();
    names_.emplace_back();
    size_t i = 0;
    const Path inputs_at(at, "inputs");
    for (Json input : list_at(require(root, at, "inputs"), inputs_at)) t_.inputs.push_back(declare(input, Path(inputs_at, i++), true));
    const Json ops = require(root, at, "ops");
    domain_ops_ = ops;
    domain_ops_where_ = "/ops";
    t_.ops = read_ops(list_at(ops, Path(at, "ops")), "/ops");
    i = 0;
    const Path outputs_at(at, "outputs");
    for (Json output : list_at(require(root, at, "outputs"), outputs_at)) t_.outputs.push_back(reference(output, Path(outputs_at, i++)));
  }

 private:
  Trace& t_;
  Scope scope_;
  std::vector<std::set<std::string, std::less<>>> names_;  // every name declared in each naming domain
  // The op list of the current naming domain (the trace's, or a custom-gradient body's), for
  // telling a use before the definition from a name never defined, when a reference fails.
  std::optional<Json> domain_ops_;
  std::string domain_ops_where_;

  // An object's members must be among `known`: a misspelt field ("requires_gard", "tag") would
  // otherwise be ignored, and with it what it says.
  static void check_fields(Object obj, const Path& where, std::span<const std::string_view> known) {
    for (const simdjson::dom::key_value_pair& member : obj)
      if (std::find(known.begin(), known.end(), member.key) == known.end())
        throw UserError(Path(where, member.key).str(), "unknown field \"" + std::string(member.key) + "\" (did you mean \"" +
                                                          std::string(closest_word(member.key, known)) + "\"?)");
  }

  // Generated code runs on one device: the trace's ("cuda" is "cuda:0").
  void check_same_device(std::string_view device, const std::string& where) const {
    auto normal = [](std::string_view d) { return d == "cuda" ? std::string_view("cuda:0") : d; };
    if (normal(device) != normal(t_.device))
      throw UserError(where, "device \"" + std::string(device) + "\" is not the trace's (\"" + t_.device + "\"): generated code runs on one device");
  }

  static Object object_at(Json j, const Path& where) {
    if (!j.is_object()) throw UserError(where.str_or_root(), "expected an object, got " + kind_name(j));
    return object_of(j);
  }
  static Json require(Object obj, const Path& where, const char* key) {
    std::optional<Json> member = find(obj, key);
    if (!member) throw UserError(where.str_or_root(), std::string("missing required field \"") + key + "\"");
    return *member;
  }
  static Array list_at(Json j, const Path& where) {
    if (!j.is_array()) throw UserError(where.str(), "expected a list, got " + kind_name(j));
    return array_of(j);
  }
  static std::string string_at(Json j, const Path& where) {
    if (!j.is_string()) throw UserError(where.str(), "expected a string, got " + kind_name(j));
    return std::string(string_of(j));
  }

  // A value declaration: a tensor or a scalar.
  ValueId declare(Json decl, const Path& where, bool is_input) {
    Value v = parse_declaration(decl, where, is_input);
    return define(std::move(v), where);
  }

  Value parse_declaration(Json json, const Path& where, bool is_input) {
    const Object decl = object_at(json, where);
    static constexpr std::string_view kValueFields[] = {"name", "shape", "dtype", "device", "requires_grad", "scalar", "init"};
    check_fields(decl, where, kValueFields);
    Value v;
    const Path name_at(where, "name");
    v.name = string_at(require(decl, where, "name"), name_at);
    if (!is_identifier(v.name)) throw UserError(name_at.str(), "value names must be identifiers, got \"" + v.name + "\"");
    v.device = t_.device;
    if (auto scalar = find(decl, "scalar")) {
      v.is_scalar = true;
      const Path scalar_at(where, "scalar");
      std::string s = string_at(*scalar, scalar_at);
      if (s != "i64" && s != "f64" && s != "b8") throw UserError(scalar_at.str(), "a scalar is i64, f64 or b8, not \"" + s + "\"");
      v.dtype = *parse_dtype(s);
      return v;
    }
    const Path shape_at(where, "shape");
    const Array shape = list_at(require(decl, where, "shape"), shape_at);
    int64_t elements = 1;
    v.shape.reserve(shape.size());
    size_t i = 0;
    for (Json dim : shape) {
      auto w = [&] { return Path(shape_at, i).str(); };
      if (!is_json_integer(dim)) throw UserError(w(), "a dimension must be an integer, got " + kind_name(dim));
      if (is_too_large(dim)) throw UserError(w(), "dimension " + dump(dim) + " overflows");
      int64_t d = int_of(dim);
      if (d < 0) throw UserError(w(), "negative dimension " + std::to_string(d));
      if (d > 0 && elements > (int64_t(1) << 48) / d) throw UserError(w(), "the shape has more than 2^48 elements");
      elements *= d;
      v.shape.push_back(d);
      ++i;
    }
    const Path dtype_at(where, "dtype");
    std::string dt = string_at(require(decl, where, "dtype"), dtype_at);
    auto parsed = parse_dtype(dt);
    if (!parsed) throw UserError(dtype_at.str(), "unknown dtype \"" + dt + "\" (expected one of b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64)");
    v.dtype = *parsed;
    if (auto device = find(decl, "device")) {
      v.device = string_at(*device, Path(where, "device"));
      check_device(v.device, Path(where, "device").str());
      check_same_device(v.device, Path(where, "device").str());
    }
    if (auto rg = find(decl, "requires_grad")) {
      if (!rg->is_bool()) throw UserError(Path(where, "requires_grad").str(), "expected true or false, got " + kind_name(*rg));
      const bool requires_grad = as<bool>(*rg);
      if (!is_input && requires_grad) throw UserError(Path(where, "requires_grad").str(), "requires_grad only applies to trace inputs");
      if (requires_grad && !is_float(v.dtype))
        throw UserError(Path(where, "requires_grad").str(), "only floating-point tensors can require grad; this one is " + std::string(dtype_name(v.dtype)));
      v.requires_grad = requires_grad;
    }
    // Extension: {"init": {"uniform": [lo, hi]}} on a float input says how a harness draws it
    // when no file is given (realistic weight scales keep deep models finite in f32).
    if (auto init = find(decl, "init")) {
      const std::string w = Path(where, "init").str();
      if (!is_input) throw UserError(w, "init only applies to trace inputs");
      std::optional<Json> range;
      if (init->is_object() && object_of(*init).size() == 1) range = find(object_of(*init), "uniform");
      if (!range) throw UserError(w, "expected {\"uniform\": [lo, hi]}");
      std::vector<double> bounds;
      if (range->is_array())
        for (Json bound : array_of(*range))
          if (bound.is_number()) bounds.push_back(as<double>(bound));
      if (!range->is_array() || array_of(*range).size() != 2 || bounds.size() != 2)
        throw UserError(w + "/uniform", "expected [lo, hi], two numbers");
      if (!is_float(v.dtype)) throw UserError(w, "init applies to float inputs, not " + std::string(dtype_name(v.dtype)));
      v.init_uniform = {bounds[0], bounds[1]};
      if (!(v.init_uniform->first < v.init_uniform->second)) throw UserError(w + "/uniform", "lo must be below hi");
    }
    return v;
  }

  ValueId define(Value v, const Path& where) {
    if (!names_.back().insert(v.name).second)
      throw UserError(Path(where, "name").str(), "value \"" + v.name + "\" is defined twice");
    std::string name = v.name;
    ValueId id = t_.add_value(std::move(v));
    scope_.define(name, id);
    return id;
  }

  ValueId reference(Json j, const Path& at) {
    if (!j.is_string()) throw UserError(at.str(), "expected a value name, got " + kind_name(j));
    const std::string_view name = string_of(j);
    ValueId id = scope_.find(name);
    if (id != kNoValue) return id;
    const std::string where = at.str();
    std::map<std::string, std::string, std::less<>> defined_anywhere;  // name -> the op defining it
    if (domain_ops_) note_definitions(*domain_ops_, domain_ops_where_, defined_anywhere);
    auto later = defined_anywhere.find(name);
    if (later != defined_anywhere.end()) {
      // A name defined inside a decomposition is visible only later in that decomposition.
      const std::string& def = later->second;
      size_t sub = def.rfind("/sub/");
      if (sub != std::string::npos && where.compare(0, sub + 5, def, 0, sub + 5) != 0)
        throw UserError(where, "value \"" + std::string(name) + "\" exists only inside the decomposition at " + def.substr(0, sub));
      throw UserError(where, "value \"" + std::string(name) + "\" is used before it is defined (at " + def + ")");
    }
    throw UserError(where, "undefined value \"" + std::string(name) + "\"");
  }

  // Where each name is defined, anywhere in an op list (decompositions included), so a use
  // before the definition can be told from a name that is never defined.
  static void note_definitions(Json ops, const std::string& where, std::map<std::string, std::string, std::less<>>& defined_anywhere) {
    if (!ops.is_array()) return;
    size_t i = 0;
    for (Json op : array_of(ops)) {
      std::string w = where + "/" + std::to_string(i++);
      if (!op.is_object()) continue;
      const Object o = object_of(op);
      if (auto out = find(o, "out"); out && out->is_array())
        for (Json d : array_of(*out))
          if (std::optional<Json> name = d.is_object() ? find(object_of(d), "name") : std::nullopt; name && name->is_string())
            defined_anywhere.emplace(string_of(*name), w);
      if (auto sub = find(o, "sub")) note_definitions(*sub, w + "/sub", defined_anywhere);
    }
  }

  std::vector<Op> read_ops(Array ops, const std::string& where) {
    std::vector<Op> out;
    out.reserve(ops.size());
    size_t i = 0;
    for (Json op : ops) out.push_back(read_op(op, where + "/" + std::to_string(i++), {}));
    return out;
  }

  // `parent_outs` maps the names of the enclosing op's outputs, which a decomposition defines.
  Op read_op(Json json, const std::string& where, const std::map<std::string, ValueId, std::less<>>& parent_outs) {
    const Path at(where);
    const Object j = object_at(json, at);
    static constexpr std::string_view kOpFields[] = {"op", "args", "kwargs", "out", "tags", "sub", "fwd", "bwd"};
    check_fields(j, at, kOpFields);
    Op op;
    op.where = where;
    op.symbol = string_at(require(j, at, "op"), Path(at, "op"));
    if (!is_symbol_id(op.symbol)) throw UserError(Path(at, "op").str(), "\"" + op.symbol + "\" is not a symbol id (identifiers joined by dots, as prims.add)");
    op.info = find_op(op.symbol);
    bool custom = op.symbol == kCustomGradOp;
    const std::optional<Json> sub = find(j, "sub");
    if (!op.info && !custom && !sub)
      throw UserError(Path(at, "op").str(), "unknown op \"" + op.symbol + "\" has no rule and no decomposition (\"sub\")");

    if (auto tags = find(j, "tags")) {
      size_t i = 0;
      const Path tags_at(at, "tags");
      for (Json tag : list_at(*tags, tags_at)) op.tags.push_back(string_at(tag, Path(tags_at, i++)));
      check_op_tags(op.tags, tags_at.str());
    }

    // Arguments refer to values defined before this op.
    std::vector<Given> positional, keyword;
    const Path args_at(at, "args"), kwargs_at(at, "kwargs");
    if (auto args = find(j, "args")) {
      size_t i = 0;
      for (Json arg : list_at(*args, args_at)) positional.push_back({Path(args_at, i++), arg});
    }
    std::vector<std::string> keyword_names;
    if (auto kwargs = find(j, "kwargs")) {
      for (const simdjson::dom::key_value_pair& member : object_at(*kwargs, kwargs_at)) {
        keyword.push_back({Path(kwargs_at, member.key), member.value, true});
        keyword_names.emplace_back(member.key);
      }
    }
    if (op.info) {
      bind(op, positional, keyword, keyword_names, where);
    } else {
      for (const Given& a : positional) op.args.push_back(literal_or_ref(a.json, a.where, 1));
      for (size_t i = 0; i < keyword.size(); ++i) {
        if (!is_identifier(keyword_names[i])) throw UserError(keyword[i].where.str(), "a keyword argument's name must be an identifier");
        op.kwargs.emplace_back(keyword_names[i], literal_or_ref(keyword[i].json, keyword[i].where, 1));
      }
    }

    // Outputs: new values, except inside a decomposition, where the enclosing op's outputs are
    // redefined under the same names.
    const Path outs_at(at, "out");
    const Array outs = list_at(require(j, at, "out"), outs_at);
    if (outs.size() == 0) throw UserError(outs_at.str(), "an op must define at least one value");
    std::vector<Value> declared;
    for (Json out : outs) declared.push_back(parse_declaration(out, Path(outs_at, declared.size()), false));

    if (custom) op.custom = read_custom(j, op, declared, where);
    // A symbol with a rule of its own never uses its decomposition. Real traces decompose such
    // symbols into prims thunder-gen need not know (prims.take_along_axis inside cross_entropy,
    // say); then the decomposition is not read at all.
    if (sub && (!op.info || readable(*sub))) {
      std::map<std::string, ValueId, std::less<>> mine;
      // The decomposition's own names live in a nested scope; the op's outputs are pre-declared
      // there so the last sub-ops can define them.
      std::vector<ValueId> out_ids;
      for (size_t i = 0; i < declared.size(); ++i) out_ids.push_back(claim_output(declared[i], Path(outs_at, i), parent_outs));
      for (size_t i = 0; i < declared.size(); ++i) mine[declared[i].name] = out_ids[i];
      scope_.push();
      std::set<ValueId> defined_by_sub;
      for (Json sub_op : list_at(*sub, Path(at, "sub"))) {
        op.sub.push_back(read_op(sub_op, where + "/sub/" + std::to_string(op.sub.size()), mine));
        for (ValueId v : op.sub.back().outs) defined_by_sub.insert(v);
      }
      scope_.pop();
      for (size_t i = 0; i < out_ids.size(); ++i)
        if (!defined_by_sub.count(out_ids[i]))
          throw UserError(where + "/sub", "the decomposition does not define output \"" + declared[i].name + "\"");
      op.outs = out_ids;
      for (size_t i = 0; i < out_ids.size(); ++i) scope_.define(declared[i].name, out_ids[i]);
    } else {
      for (size_t i = 0; i < declared.size(); ++i) op.outs.push_back(claim_output(declared[i], Path(outs_at, i), parent_outs));
      for (size_t i = 0; i < declared.size(); ++i) scope_.define(declared[i].name, op.outs[i]);
    }
    return op;
  }

  // Inside a decomposition an output named like one of the enclosing op's is that value (and must
  // be declared the same); any other name is a new value.
  ValueId claim_output(const Value& v, const Path& where, const std::map<std::string, ValueId, std::less<>>& parent_outs) {
    auto it = parent_outs.find(v.name);
    if (it == parent_outs.end()) {
      if (!names_.back().insert(v.name).second) throw UserError(Path(where, "name").str(), "value \"" + v.name + "\" is defined twice");
      return t_.add_value(v);
    }
    const Value& outer = t_.value(it->second);
    if (outer.is_scalar != v.is_scalar || outer.dtype != v.dtype || outer.shape != v.shape)
      throw UserError(where.str(), "\"" + v.name + "\" is declared differently here than by the op this decomposes");
    return it->second;
  }

  // Whether every op of a decomposition is one thunder-gen can read: it has a rule (its own
  // decomposition is decided when it is read), or is a custom-gradient op, or has a readable
  // decomposition. A malformed list counts as readable, so reading it reports the error.
  static bool readable(Json ops) {
    if (!ops.is_array()) return true;
    for (Json op : array_of(ops)) {
      if (!op.is_object()) continue;
      const Object o = object_of(op);
      std::optional<Json> id = find(o, "op");
      if (!id || !id->is_string()) continue;
      if (find_op(string_of(*id)) || string_of(*id) == kCustomGradOp) continue;
      std::optional<Json> sub = find(o, "sub");
      if (!sub || !readable(*sub)) return false;
    }
    return true;
  }

  // Binds positional and keyword arguments to the op's signature the way Python does.
  void bind(Op& op, const std::vector<Given>& positional, const std::vector<Given>& keyword, const std::vector<std::string>& keyword_names,
            const std::string& where) {
    const auto& params = op.info->params;
    size_t positional_slots = 0;
    while (positional_slots < params.size() && !params[positional_slots].keyword_only) ++positional_slots;
    std::vector<const Given*> bound(params.size(), nullptr);
    // Thunder's torch.reshape(a, *shape) and torch.permute(a, *dims): integers past a last
    // positional list parameter are that list, spelled out (bound where its first integer is).
    std::optional<Arg> spelled_out;
    if (positional.size() > positional_slots && positional_slots > 0 && params[positional_slots - 1].kind == ParamKind::int_list) {
      const size_t first = positional_slots - 1;
      bool all_integers = true;
      for (size_t i = first; i < positional.size(); ++i) all_integers = all_integers && is_json_integer(positional[i].json);
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
  std::string describe(const Arg& a, Json j) const {
    if (a.is_value()) return (t_.value(a.value).is_scalar ? "the scalar \"" : "the tensor \"") + t_.value(a.value).name + "\"";
    if (a.kind == Arg::Kind::dtype) return "a dtype";
    if (a.kind == Arg::Kind::device) return "a device";
    if (a.kind == Arg::Kind::string) return "a string";
    if (a.kind == Arg::Kind::opaque) return a.text;
    if (a.kind == Arg::Kind::process_group) return "a process group";
    return kind_name(j);
  }

  Arg typed_arg(Json j, const Param& param, const Path& where) {
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

  Arg literal_or_ref(Json j, const Path& where, int depth) {
    if (depth > kMaxDepth) throw UserError(where.str(), "arguments nest deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (j.type()) {
      case element_type::NULL_VALUE: return Arg();
      case element_type::BOOL: return Arg::of_bool(as<bool>(j));
      case element_type::UINT64: throw UserError(where.str(), "integer " + dump(j) + " overflows 64 bits");
      case element_type::INT64: return Arg::of_int(int_of(j));
      case element_type::DOUBLE: return Arg::of_real(as<double>(j));
      case element_type::STRING: return Arg::of_value(reference(j, where));
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

  Arg typed_literal(Object j, const Path& where) {
    if (j.size() != 1) throw UserError(where.str(), "a typed literal has exactly one key (dtype, device, str, float, slice, ellipsis, memory_format or process_group)");
    const simdjson::dom::key_value_pair member = *j.begin();
    const std::string key(member.key);
    const std::string w = where.str() + "/" + escape_pointer_token(key);
    if (key == "slice") return slice_literal(member.value, w);
    if (key == "process_group") return process_group_literal(member.value, w);
    std::string text = string_at(member.value, Path(w));
    Arg a;
    if (key == "dtype") {
      auto dt = parse_dtype(text);
      if (!dt) throw UserError(w, "unknown dtype \"" + text + "\"");
      return Arg::of_dtype(*dt);
    }
    if (key == "device") {
      check_device(text, w);
      check_same_device(text, w);
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
    throw UserError(where.str(), "unknown typed literal \"" + key + "\" (expected dtype, device, str, float, slice, ellipsis, memory_format or process_group)");
  }

  // {"process_group": {"world_size": N}}: a distributed prim's group. Every group of a trace is the
  // same one (its world size is the trace's); the rank is the communicator's, at run time.
  Arg process_group_literal(Json j, const std::string& where) {
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
  Arg slice_literal(Json j, const std::string& where) {
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

  // fwd/bwd bodies of a custom-gradient op: each its own scope and naming domain.
  std::shared_ptr<const CustomGrad> read_custom(Object j, const Op& op, const std::vector<Value>& outs, const std::string& where) {
    const Path at(where);
    auto grad = std::make_shared<CustomGrad>();
    std::vector<ValueId> tensor_args;  // ids: reading the bodies adds values and moves Trace::values
    for (const Arg& a : op.args)
      if (a.is_value() && !t_.value(a.value).is_scalar) tensor_args.push_back(a.value);
    grad->fwd = read_body(require(j, at, "fwd"), where + "/fwd", true);
    grad->bwd = read_body(require(j, at, "bwd"), where + "/bwd", false);
    const SubTrace& fwd = grad->fwd;
    const SubTrace& bwd = grad->bwd;
    auto same_type = [&](ValueId id, const Value& v) {
      const Value& x = t_.value(id);
      return x.is_scalar == v.is_scalar && x.dtype == v.dtype && x.shape == v.shape;
    };
    if (fwd.inputs.size() != tensor_args.size())
      throw UserError(where + "/fwd/inputs", "has " + std::to_string(fwd.inputs.size()) + " inputs for " + std::to_string(tensor_args.size()) + " tensor arguments");
    for (size_t i = 0; i < fwd.inputs.size(); ++i)
      if (!same_type(fwd.inputs[i], t_.value(tensor_args[i]))) throw UserError(where + "/fwd/inputs/" + std::to_string(i), "does not match the type of tensor argument " + std::to_string(i));
    if (fwd.outputs.size() != outs.size()) throw UserError(where + "/fwd/outputs", "has " + std::to_string(fwd.outputs.size()) + " outputs for the op's " + std::to_string(outs.size()));
    for (size_t i = 0; i < outs.size(); ++i)
      if (fwd.outputs[i] == kNoValue || !same_type(fwd.outputs[i], outs[i])) throw UserError(where + "/fwd/outputs/" + std::to_string(i), "does not match the op's output \"" + outs[i].name + "\"");
    size_t expect_inputs = outs.size() + fwd.saved.size();
    if (bwd.inputs.size() != expect_inputs)
      throw UserError(where + "/bwd/inputs", "expected " + std::to_string(expect_inputs) + " inputs (one cotangent per forward output, then the saved values), got " + std::to_string(bwd.inputs.size()));
    for (size_t i = 0; i < outs.size(); ++i)
      if (!same_type(bwd.inputs[i], outs[i])) throw UserError(where + "/bwd/inputs/" + std::to_string(i), "the cotangent of \"" + outs[i].name + "\" must have its type");
    for (size_t i = 0; i < fwd.saved.size(); ++i)
      if (!same_type(bwd.inputs[outs.size() + i], t_.value(fwd.saved[i])))
        throw UserError(where + "/bwd/inputs/" + std::to_string(outs.size() + i), "does not match the type of saved value \"" + t_.value(fwd.saved[i]).name + "\"");
    if (bwd.outputs.size() != tensor_args.size())
      throw UserError(where + "/bwd/outputs", "needs one gradient (or null) per tensor argument: " + std::to_string(tensor_args.size()));
    for (size_t i = 0; i < bwd.outputs.size(); ++i)
      if (bwd.outputs[i] != kNoValue && !same_type(bwd.outputs[i], t_.value(tensor_args[i])))
        throw UserError(where + "/bwd/outputs/" + std::to_string(i), "the gradient must have the type of tensor argument " + std::to_string(i));
    return grad;
  }

  SubTrace read_body(Json json, const std::string& where, bool is_fwd) {
    const Path at(where);
    const Object j = object_at(json, at);
    static constexpr std::string_view kBodyFields[] = {"inputs", "ops", "outputs", "saved"};
    check_fields(j, at, kBodyFields);
    Scope outer = std::move(scope_);
    const std::optional<Json> outer_ops = domain_ops_;
    std::string outer_ops_where = std::move(domain_ops_where_);
    domain_ops_ = find(j, "ops");
    domain_ops_where_ = where + "/ops";
    scope_ = Scope();
    scope_.push();
    names_.emplace_back();
    SubTrace body;
    size_t i = 0;
    const Path inputs_at(at, "inputs");
    for (Json input : list_at(require(j, at, "inputs"), inputs_at)) body.inputs.push_back(declare(input, Path(inputs_at, i++), false));
    body.ops = read_ops(list_at(require(j, at, "ops"), Path(at, "ops")), where + "/ops");
    i = 0;
    const Path outputs_at(at, "outputs");
    for (Json output : list_at(require(j, at, "outputs"), outputs_at)) {
      const Path output_at(outputs_at, i++);
      body.outputs.push_back(output.is_null() && !is_fwd ? kNoValue : reference(output, output_at));
    }
    if (auto saved = find(j, "saved"); saved && is_fwd) {
      i = 0;
      const Path saved_at(at, "saved");
      for (Json value : list_at(*saved, saved_at)) body.saved.push_back(reference(value, Path(saved_at, i++)));
    }
    names_.pop_back();
    scope_ = std::move(outer);
    domain_ops_ = outer_ops;
    domain_ops_where_ = std::move(outer_ops_where);
    return body;
  }
};

// line:col of a byte offset, for syntax errors.
std::string line_col(std::string_view text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// Nesting deeper than kMaxDepth (at the bracket that goes too deep) and integers beyond 64 bits,
// refused at their line and column; run when simdjson refuses the text, which it does for both
// (with no position). Strings are skipped; syntax errors are left to the parser.
void scan_lexically(std::string_view text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) throw UserError(line_col(text, i), "JSON nests deeper than " + std::to_string(kMaxDepth) + " levels");
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i, end = i + (c == '-');
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
      bool integer = end == text.size() || (text[end] != '.' && text[end] != 'e' && text[end] != 'E');
      std::string digits(text.substr(start, end - start));
      if (integer && digits.size() > 1) {
        errno = 0;
        if (c == '-') (void)std::strtoll(digits.c_str(), nullptr, 10);
        else (void)std::strtoull(digits.c_str(), nullptr, 10);
        if (errno == ERANGE) throw UserError(line_col(text, start), "integer " + digits + " overflows 64 bits");
      }
      i = end - 1;
    }
  }
}

// The message for text simdjson refuses, worded by nlohmann's parser: what the syntax error is,
// at its line and column. (Only ever run on invalid input.)
class SyntaxError : public nlohmann::json_sax<nlohmann::json> {
 public:
  using json = nlohmann::json;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(json::string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte = byte;
    error = e.what();
    return false;
  }
  size_t error_byte = 0;
  std::string error;
};

[[noreturn]] void throw_syntax_error(std::string_view text, simdjson::error_code refused) {
  SyntaxError handler;
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &handler))  // accepted here: say what simdjson said
    throw UserError("/", "invalid JSON: " + std::string(simdjson::error_message(refused)));
  // The library's message after its "[json.exception.<kind>.<id>] " tag; for a syntax error, from
  // "syntax error" on (its "parse error at line L, column C" repeats our position).
  std::string message = handler.error;
  if (message.rfind("[json.exception.", 0) == 0 && message.find("] ") != std::string::npos) message.erase(0, message.find("] ") + 2);
  if (auto pos = message.find("syntax error"); pos != std::string::npos) message.erase(0, pos);
  throw UserError(line_col(text, handler.error_byte > 0 ? handler.error_byte - 1 : 0), "invalid JSON: " + message);
}

// Refuses a key an object repeats (a JSON library keeps one of the two silently), at the first
// repetition in document order, naming its place.
class DuplicateKeys {
 public:
  void check(Json j) {
    if (j.is_array()) {
      size_t i = 0;
      for (Json element : array_of(j)) {
        path_.push_back({true, {}, i++});
        check(element);
        path_.pop_back();
      }
    } else if (j.is_object()) {
      const size_t mark = keys_.size();  // this object's keys are keys_[mark, end)
      for (const simdjson::dom::key_value_pair& member : object_of(j)) {
        if (std::find(keys_.begin() + ptrdiff_t(mark), keys_.end(), member.key) != keys_.end())  // (objects are short)
          throw UserError(pointer() + "/" + escape_pointer_token(std::string(member.key)), "duplicate key \"" + std::string(member.key) + "\"");
        keys_.push_back(member.key);
        path_.push_back({false, member.key, 0});
        check(member.value);
        path_.pop_back();
      }
      keys_.resize(mark);
    }
  }

 private:
  struct Step {  // into a list at `index`, or into an object at `key`
    bool in_list;
    std::string_view key;
    size_t index;
  };
  std::vector<Step> path_;  // from the root down to the element being checked
  std::vector<std::string_view> keys_;

  std::string pointer() const {
    std::string p;
    for (const Step& step : path_) p += "/" + (step.in_list ? std::to_string(step.index) : escape_pointer_token(std::string(step.key)));
    return p;
  }
};

}  // namespace

namespace {

Trace read_padded(const simdjson::padded_string& padded) {
  // simdjson refuses what scan_lexically would (nesting past kMaxDepth, integers past 64 bits);
  // the error path runs it first, for its line:col messages.
  const std::string_view text(padded);
  simdjson::dom::parser parser;
  Json doc;
  simdjson::error_code error = parser.allocate(padded.size(), kMaxDepth);
  if (!error) error = parser.parse(padded).get(doc);
  if (error) {
    scan_lexically(text);
    throw_syntax_error(text, error);
  }
  // Duplicate keys are looked for beside the reading (both only read the document); a duplicate
  // is reported first, as though the check had run before.
  std::future<void> duplicates = std::async(std::launch::async, [doc] { DuplicateKeys().check(doc); });
  Trace trace;
  try {
    Reader(trace).read(doc);
  } catch (...) {
    duplicates.get();
    throw;
  }
  duplicates.get();
  verify(trace);
  return trace;
}

}  // namespace

Trace read_trace(const std::string& text) { return read_padded(simdjson::padded_string(text)); }

Trace read_trace_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError("", "is a folder, not a trace file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("", "cannot open file");
  // A regular file goes straight into simdjson's padded buffer; anything else (a pipe) through a string.
  if (std::filesystem::is_regular_file(path, ec)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) {
      simdjson::padded_string padded{size_t(size)};
      in.read(padded.data(), std::streamsize(size));
      if (uintmax_t(in.gcount()) == size) return read_padded(padded);
    }
    in.clear();
    in.seekg(0);
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return read_trace(std::move(buf).str());
}

}  // namespace tg
