#include "reader.h"

#include <cerrno>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"
#include "verify.h"

namespace tg {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 64;  // JSON nesting deeper than any real trace; refused, never recursed
constexpr const char* kCustomGradOp = "torch.ops.higher_order.autograd_function_apply";

std::string escape_pointer_token(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string kind_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    default: return "an unexpected value";
  }
}


// Names visible at a point of the program: a stack of scopes, innermost last. A trace's sub-ops
// see the names before their op; a custom-gradient body sees only its own.
class Scope {
 public:
  ValueId find(const std::string& name) const {
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
  std::vector<std::map<std::string, ValueId>> frames_;
};

class Reader {
 public:
  explicit Reader(Trace& trace) : t_(trace) {}

  void read(const json& doc) {
    expect_object(doc, "");
    const json& format = require(doc, "", "format");
    if (!format.is_string() || format.get<std::string>() != "thunder-gen-trace")
      throw UserError("/format", "expected \"thunder-gen-trace\", got " + format.dump());
    const json& version = require(doc, "", "version");
    if (!version.is_number_integer() || version.get<int64_t>() != 1)
      throw UserError("/version", "unsupported format version " + version.dump() + " (this reader knows version 1)");
    const json& name = require(doc, "", "name");
    if (!name.is_string() || !is_identifier(name.get<std::string>()))
      throw UserError("/name", "the trace name must be a C identifier, got " + name.dump());
    t_.name = name.get<std::string>();
    if (doc.contains("device")) t_.device = string_at(doc["device"], "/device");
    if (doc.contains("source")) t_.source = string_at(doc["source"], "/source");

    scope_.push();
    names_.emplace_back();
    const json& inputs = list_at(require(doc, "", "inputs"), "/inputs");
    for (size_t i = 0; i < inputs.size(); ++i)
      t_.inputs.push_back(declare(inputs[i], "/inputs/" + std::to_string(i), true));
    domain_ops_ = &require(doc, "", "ops");
    domain_ops_where_ = "/ops";
    t_.ops = read_ops(list_at(require(doc, "", "ops"), "/ops"), "/ops");
    const json& outputs = list_at(require(doc, "", "outputs"), "/outputs");
    for (size_t i = 0; i < outputs.size(); ++i)
      t_.outputs.push_back(reference(outputs[i], "/outputs/" + std::to_string(i)));
  }

 private:
  Trace& t_;
  Scope scope_;
  std::vector<std::set<std::string>> names_;  // every name declared in each naming domain
  // The op list of the current naming domain (the trace's, or a custom-gradient body's), for
  // telling a use before the definition from a name never defined, when a reference fails.
  const json* domain_ops_ = nullptr;
  std::string domain_ops_where_;
  std::deque<json> spelled_out_;  // lists gathered from variadic arguments (stable addresses)

  static void expect_object(const json& j, const std::string& where) {
    if (!j.is_object()) throw UserError(where.empty() ? "/" : where, "expected an object, got " + kind_name(j));
  }
  static const json& require(const json& obj, const std::string& where, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end()) throw UserError(where.empty() ? "/" : where, std::string("missing required field \"") + key + "\"");
    return *it;
  }
  static const json& list_at(const json& j, const std::string& where) {
    if (!j.is_array()) throw UserError(where, "expected a list, got " + kind_name(j));
    return j;
  }
  static std::string string_at(const json& j, const std::string& where) {
    if (!j.is_string()) throw UserError(where, "expected a string, got " + kind_name(j));
    return j.get<std::string>();
  }

  // A value declaration: a tensor or a scalar.
  ValueId declare(const json& decl, const std::string& where, bool is_input) {
    Value v = parse_declaration(decl, where, is_input);
    return define(std::move(v), where);
  }

  Value parse_declaration(const json& decl, const std::string& where, bool is_input) {
    expect_object(decl, where);
    Value v;
    v.name = string_at(require(decl, where, "name"), where + "/name");
    if (!is_identifier(v.name)) throw UserError(where + "/name", "value names must be identifiers, got \"" + v.name + "\"");
    v.device = t_.device;
    if (decl.contains("scalar")) {
      v.is_scalar = true;
      std::string s = string_at(decl["scalar"], where + "/scalar");
      if (s != "i64" && s != "f64" && s != "b8") throw UserError(where + "/scalar", "a scalar is i64, f64 or b8, not \"" + s + "\"");
      v.dtype = *parse_dtype(s);
      return v;
    }
    const json& shape = list_at(require(decl, where, "shape"), where + "/shape");
    int64_t elements = 1;
    v.shape.reserve(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      auto w = [&] { return where + "/shape/" + std::to_string(i); };
      if (!shape[i].is_number_integer()) throw UserError(w(), "a dimension must be an integer, got " + kind_name(shape[i]));
      if (shape[i].is_number_unsigned() && shape[i].get<uint64_t>() > uint64_t(INT64_MAX))
        throw UserError(w(), "dimension " + shape[i].dump() + " overflows");
      int64_t d = shape[i].get<int64_t>();
      if (d < 0) throw UserError(w(), "negative dimension " + std::to_string(d));
      if (d > 0 && elements > (int64_t(1) << 48) / d) throw UserError(w(), "the shape has more than 2^48 elements");
      elements *= d;
      v.shape.push_back(d);
    }
    std::string dt = string_at(require(decl, where, "dtype"), where + "/dtype");
    auto parsed = parse_dtype(dt);
    if (!parsed) throw UserError(where + "/dtype", "unknown dtype \"" + dt + "\" (expected one of b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64)");
    v.dtype = *parsed;
    if (decl.contains("device")) v.device = string_at(decl["device"], where + "/device");
    if (decl.contains("requires_grad")) {
      const json& rg = decl["requires_grad"];
      if (!rg.is_boolean()) throw UserError(where + "/requires_grad", "expected true or false, got " + kind_name(rg));
      if (!is_input && rg.get<bool>()) throw UserError(where + "/requires_grad", "requires_grad only applies to trace inputs");
      v.requires_grad = rg.get<bool>();
    }
    // Extension: {"init": {"uniform": [lo, hi]}} on a float input says how a harness draws it
    // when no file is given (realistic weight scales keep deep models finite in f32).
    if (decl.contains("init")) {
      const std::string w = where + "/init";
      if (!is_input) throw UserError(w, "init only applies to trace inputs");
      const json& init = decl["init"];
      if (!init.is_object() || init.size() != 1 || !init.contains("uniform")) throw UserError(w, "expected {\"uniform\": [lo, hi]}");
      const json& range = init["uniform"];
      if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
        throw UserError(w + "/uniform", "expected [lo, hi], two numbers");
      if (!is_float(v.dtype)) throw UserError(w, "init applies to float inputs, not " + std::string(dtype_name(v.dtype)));
      v.init_uniform = {range[0].get<double>(), range[1].get<double>()};
      if (!(v.init_uniform->first < v.init_uniform->second)) throw UserError(w + "/uniform", "lo must be below hi");
    }
    return v;
  }

  ValueId define(Value v, const std::string& where) {
    if (!names_.back().insert(v.name).second)
      throw UserError(where + "/name", "value \"" + v.name + "\" is defined twice");
    std::string name = v.name;
    ValueId id = t_.add_value(std::move(v));
    scope_.define(name, id);
    return id;
  }

  ValueId reference(const json& j, const std::string& where) {
    if (!j.is_string()) throw UserError(where, "expected a value name, got " + kind_name(j));
    const std::string& name = j.get_ref<const std::string&>();
    ValueId id = scope_.find(name);
    if (id != kNoValue) return id;
    std::map<std::string, std::string> defined_anywhere;  // name -> the op defining it
    if (domain_ops_) note_definitions(*domain_ops_, domain_ops_where_, defined_anywhere);
    auto later = defined_anywhere.find(name);
    if (later != defined_anywhere.end()) {
      // A name defined inside a decomposition is visible only later in that decomposition.
      const std::string& def = later->second;
      size_t sub = def.rfind("/sub/");
      if (sub != std::string::npos && where.compare(0, sub + 5, def, 0, sub + 5) != 0)
        throw UserError(where, "value \"" + name + "\" exists only inside the decomposition at " + def.substr(0, sub));
      throw UserError(where, "value \"" + name + "\" is used before it is defined (at " + def + ")");
    }
    throw UserError(where, "undefined value \"" + name + "\"");
  }

  // Where each name is defined, anywhere in an op list (decompositions included), so a use
  // before the definition can be told from a name that is never defined.
  static void note_definitions(const json& ops, const std::string& where, std::map<std::string, std::string>& defined_anywhere) {
    if (!ops.is_array()) return;
    for (size_t i = 0; i < ops.size(); ++i) {
      const json& op = ops[i];
      if (!op.is_object()) continue;
      std::string w = where + "/" + std::to_string(i);
      if (auto out = op.find("out"); out != op.end() && out->is_array())
        for (const json& d : *out)
          if (d.is_object() && d.contains("name") && d["name"].is_string()) defined_anywhere.emplace(d["name"].get<std::string>(), w);
      if (auto sub = op.find("sub"); sub != op.end()) note_definitions(*sub, w + "/sub", defined_anywhere);
    }
  }

  std::vector<Op> read_ops(const json& ops, const std::string& where) {
    std::vector<Op> out;
    out.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) out.push_back(read_op(ops[i], where + "/" + std::to_string(i), {}));
    return out;
  }

  // `parent_outs` maps the names of the enclosing op's outputs, which a decomposition defines.
  Op read_op(const json& j, const std::string& where, const std::map<std::string, ValueId>& parent_outs) {
    expect_object(j, where);
    Op op;
    op.where = where;
    op.symbol = string_at(require(j, where, "op"), where + "/op");
    op.info = find_op(op.symbol);
    bool custom = op.symbol == kCustomGradOp;
    if (!op.info && !custom && !j.contains("sub"))
      throw UserError(where + "/op", "unknown op \"" + op.symbol + "\" has no rule and no decomposition (\"sub\")");

    if (j.contains("tags")) {
      const json& tags = list_at(j["tags"], where + "/tags");
      for (size_t i = 0; i < tags.size(); ++i) op.tags.push_back(string_at(tags[i], where + "/tags/" + std::to_string(i)));
    }

    // Arguments refer to values defined before this op.
    std::vector<std::pair<std::string, const json*>> positional, keyword;
    if (j.contains("args")) {
      const json& args = list_at(j["args"], where + "/args");
      for (size_t i = 0; i < args.size(); ++i) positional.emplace_back(where + "/args/" + std::to_string(i), &args[i]);
    }
    std::vector<std::string> keyword_names;
    if (j.contains("kwargs")) {
      const json& kwargs = j["kwargs"];
      expect_object(kwargs, where + "/kwargs");
      for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
        keyword.emplace_back(where + "/kwargs/" + escape_pointer_token(it.key()), &it.value());
        keyword_names.push_back(it.key());
      }
    }
    if (op.info) {
      bind(op, positional, keyword, keyword_names, where);
    } else {
      for (auto& [w, a] : positional) {
        op.args.push_back(literal_or_ref(*a, w, 1));
        op.arg_where.push_back(w);
      }
      for (size_t i = 0; i < keyword.size(); ++i)
        op.kwargs.emplace_back(keyword_names[i], literal_or_ref(*keyword[i].second, keyword[i].first, 1));
    }

    // Outputs: new values, except inside a decomposition, where the enclosing op's outputs are
    // redefined under the same names.
    const json& outs = list_at(require(j, where, "out"), where + "/out");
    if (outs.empty()) throw UserError(where + "/out", "an op must define at least one value");
    std::vector<Value> declared;
    for (size_t i = 0; i < outs.size(); ++i) declared.push_back(parse_declaration(outs[i], where + "/out/" + std::to_string(i), false));

    if (custom) op.custom = read_custom(j, op, declared, where);
    // A symbol with a rule of its own never uses its decomposition. Real traces decompose such
    // symbols into prims thunder-gen need not know (prims.take_along_axis inside cross_entropy,
    // say); then the decomposition is not read at all.
    if (j.contains("sub") && (!op.info || readable(j["sub"]))) {
      std::map<std::string, ValueId> mine;
      // The decomposition's own names live in a nested scope; the op's outputs are pre-declared
      // there so the last sub-ops can define them.
      std::vector<ValueId> out_ids;
      for (size_t i = 0; i < declared.size(); ++i) out_ids.push_back(claim_output(declared[i], where + "/out/" + std::to_string(i), parent_outs));
      for (size_t i = 0; i < declared.size(); ++i) mine[declared[i].name] = out_ids[i];
      scope_.push();
      const json& sub = list_at(j["sub"], where + "/sub");
      std::set<ValueId> defined_by_sub;
      for (size_t i = 0; i < sub.size(); ++i) {
        op.sub.push_back(read_op(sub[i], where + "/sub/" + std::to_string(i), mine));
        for (ValueId v : op.sub.back().outs) defined_by_sub.insert(v);
      }
      scope_.pop();
      for (size_t i = 0; i < out_ids.size(); ++i)
        if (!defined_by_sub.count(out_ids[i]))
          throw UserError(where + "/sub", "the decomposition does not define output \"" + declared[i].name + "\"");
      op.outs = out_ids;
      for (size_t i = 0; i < out_ids.size(); ++i) scope_.define(declared[i].name, out_ids[i]);
    } else {
      for (size_t i = 0; i < declared.size(); ++i) op.outs.push_back(claim_output(declared[i], where + "/out/" + std::to_string(i), parent_outs));
      for (size_t i = 0; i < declared.size(); ++i) scope_.define(declared[i].name, op.outs[i]);
    }
    return op;
  }

  // Inside a decomposition an output named like one of the enclosing op's is that value (and must
  // be declared the same); any other name is a new value.
  ValueId claim_output(const Value& v, const std::string& where, const std::map<std::string, ValueId>& parent_outs) {
    auto it = parent_outs.find(v.name);
    if (it == parent_outs.end()) {
      if (!names_.back().insert(v.name).second) throw UserError(where + "/name", "value \"" + v.name + "\" is defined twice");
      return t_.add_value(v);
    }
    const Value& outer = t_.value(it->second);
    if (outer.is_scalar != v.is_scalar || outer.dtype != v.dtype || outer.shape != v.shape)
      throw UserError(where, "\"" + v.name + "\" is declared differently here than by the op this decomposes");
    return it->second;
  }

  // Whether every op of a decomposition is one thunder-gen can read: it has a rule (its own
  // decomposition is decided when it is read), or is a custom-gradient op, or has a readable
  // decomposition. A malformed list counts as readable, so reading it reports the error.
  static bool readable(const json& ops) {
    if (!ops.is_array()) return true;
    for (const json& op : ops) {
      auto id = op.is_object() ? op.find("op") : op.end();
      if (!op.is_object() || id == op.end() || !id->is_string()) continue;
      if (find_op(id->get<std::string>()) || *id == kCustomGradOp) continue;
      auto sub = op.find("sub");
      if (sub == op.end() || !readable(*sub)) return false;
    }
    return true;
  }

  // Binds positional and keyword arguments to the op's signature the way Python does.
  void bind(Op& op, const std::vector<std::pair<std::string, const json*>>& positional,
            const std::vector<std::pair<std::string, const json*>>& keyword, const std::vector<std::string>& keyword_names,
            const std::string& where) {
    const auto& params = op.info->params;
    size_t positional_slots = 0;
    while (positional_slots < params.size() && !params[positional_slots].keyword_only) ++positional_slots;
    // Thunder's torch.reshape(a, *shape) and torch.permute(a, *dims): integers past a last
    // positional list parameter are that list, spelled out.
    std::vector<std::pair<std::string, const json*>> gathered;
    if (positional.size() > positional_slots && positional_slots > 0 && params[positional_slots - 1].kind == ParamKind::int_list) {
      size_t first = positional_slots - 1;
      bool all_integers = true;
      for (size_t i = first; i < positional.size(); ++i) all_integers = all_integers && positional[i].second->is_number_integer();
      if (all_integers) {
        json& list = spelled_out_.emplace_back(json::array());
        for (size_t i = first; i < positional.size(); ++i) list.push_back(*positional[i].second);
        gathered.assign(positional.begin(), positional.begin() + std::ptrdiff_t(first));
        gathered.emplace_back(positional[first].first, &list);
      }
    }
    const auto& given = gathered.empty() ? positional : gathered;
    bind_given(op, given, keyword, keyword_names, where, positional_slots);
  }

  void bind_given(Op& op, const std::vector<std::pair<std::string, const json*>>& positional,
                  const std::vector<std::pair<std::string, const json*>>& keyword, const std::vector<std::string>& keyword_names,
                  const std::string& where, size_t positional_slots) {
    const auto& params = op.info->params;
    std::vector<const json*> bound(params.size(), nullptr);
    std::vector<std::string> bound_where(params.size());
    if (positional.size() > positional_slots)
      throw UserError(positional[positional_slots].first, std::string(op.info->id) + " takes " + std::to_string(positional_slots) +
                                                           " positional argument" + (positional_slots == 1 ? "" : "s") + " but " +
                                                           std::to_string(positional.size()) + " were given");
    for (size_t i = 0; i < positional.size(); ++i) {
      bound[i] = positional[i].second;
      bound_where[i] = positional[i].first;
    }
    for (size_t k = 0; k < keyword.size(); ++k) {
      size_t i = 0;
      while (i < params.size() && params[i].name != keyword_names[k]) ++i;
      if (i == params.size()) throw UserError(keyword[k].first, std::string(op.info->id) + " has no parameter \"" + keyword_names[k] + "\"");
      if (bound[i]) throw UserError(keyword[k].first, "argument \"" + keyword_names[k] + "\" is given twice");
      bound[i] = keyword[k].second;
      bound_where[i] = keyword[k].first;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      if (!bound[i]) {
        if (!params[i].has_default)
          throw UserError(where, std::string(op.info->id) + " is missing its argument \"" + std::string(params[i].name) + "\"");
        op.args.push_back(params[i].default_value);
        op.arg_where.push_back("");
        continue;
      }
      op.args.push_back(typed_arg(*bound[i], params[i], bound_where[i]));
      op.arg_where.push_back(bound_where[i]);
    }
  }

  // What an argument is, for messages: "the scalar \"alpha\"", "a list", ...
  std::string describe(const Arg& a, const json& j) const {
    if (a.is_value()) return (t_.value(a.value).is_scalar ? "the scalar \"" : "the tensor \"") + t_.value(a.value).name + "\"";
    if (a.kind == Arg::Kind::dtype) return "a dtype";
    if (a.kind == Arg::Kind::device) return "a device";
    if (a.kind == Arg::Kind::string) return "a string";
    if (a.kind == Arg::Kind::opaque) return a.text;
    return kind_name(j);
  }

  Arg typed_arg(const json& j, const Param& param, const std::string& where) {
    Arg a = literal_or_ref(j, where, 1);
    auto fail = [&](const std::string& at, const Arg& got, const json& got_json, const char* what) {
      throw UserError(at, "argument \"" + std::string(param.name) + "\" must be " + what + ", got " + describe(got, got_json));
    };
    auto expect = [&](bool ok, const char* what) {
      if (!ok) fail(where, a, j, what);
    };
    auto is_tensor = [&](const Arg& x) { return x.is_value() && !t_.value(x.value).is_scalar; };
    auto is_scalar_value = [&](const Arg& x) { return x.is_value() && t_.value(x.value).is_scalar; };
    // A list whose every element satisfies `ok`; otherwise the first bad element is named.
    auto expect_list = [&](bool allow_null, bool non_empty, const char* what, const char* element_what, auto&& ok) {
      if (allow_null && a.kind == Arg::Kind::none) return;
      expect(a.kind == Arg::Kind::list, what);
      if (non_empty && a.items.empty()) fail(where, a, j, what);
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!ok(a.items[i])) fail(where + "/" + std::to_string(i), a.items[i], j[i], element_what);
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
      case ParamKind::device: expect(a.kind == Arg::Kind::device || a.kind == Arg::Kind::string, "a device literal such as {\"device\": \"cuda:0\"}"); break;
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
      case ParamKind::string: expect(a.kind == Arg::Kind::string, "a string such as {\"str\": \"tanh\"}"); break;
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

  Arg literal_or_ref(const json& j, const std::string& where, int depth) {
    if (depth > kMaxDepth) throw UserError(where, "arguments nest deeper than " + std::to_string(kMaxDepth) + " levels");
    Arg a;
    switch (j.type()) {
      case json::value_t::null: return a;
      case json::value_t::boolean: return Arg::of_bool(j.get<bool>());
      case json::value_t::number_unsigned:
        if (j.get<uint64_t>() > uint64_t(INT64_MAX)) throw UserError(where, "integer " + j.dump() + " overflows 64 bits");
        return Arg::of_int(j.get<int64_t>());
      case json::value_t::number_integer: return Arg::of_int(j.get<int64_t>());
      case json::value_t::number_float: return Arg::of_real(j.get<double>());
      case json::value_t::string: return Arg::of_value(reference(j, where));
      case json::value_t::array: {
        std::vector<Arg> items;
        for (size_t i = 0; i < j.size(); ++i) items.push_back(literal_or_ref(j[i], where + "/" + std::to_string(i), depth + 1));
        return Arg::of_list(std::move(items));
      }
      case json::value_t::object: return typed_literal(j, where);
      default: throw UserError(where, "unsupported argument " + kind_name(j));
    }
  }

  Arg typed_literal(const json& j, const std::string& where) {
    if (j.size() != 1) throw UserError(where, "a typed literal has exactly one key (dtype, device, str, float, slice, ellipsis or memory_format)");
    auto it = j.begin();
    std::string w = where + "/" + escape_pointer_token(it.key());
    if (it.key() == "slice") return slice_literal(it.value(), w);
    std::string text = string_at(it.value(), w);
    Arg a;
    if (it.key() == "dtype") {
      auto dt = parse_dtype(text);
      if (!dt) throw UserError(w, "unknown dtype \"" + text + "\"");
      return Arg::of_dtype(*dt);
    }
    if (it.key() == "device") { a.kind = Arg::Kind::device; a.text = text; return a; }
    if (it.key() == "str") { a.kind = Arg::Kind::string; a.text = text; return a; }
    if (it.key() == "ellipsis") {
      if (text != "...") throw UserError(w, "the ellipsis literal is {\"ellipsis\": \"...\"}");
      a.kind = Arg::Kind::opaque;
      a.text = "...";
      return a;
    }
    if (it.key() == "memory_format") {
      if (!is_identifier(text)) throw UserError(w, "a memory format is a name such as \"contiguous_format\"");
      a.kind = Arg::Kind::opaque;
      a.text = "torch." + text;
      return a;
    }
    if (it.key() == "float") {
      if (text == "inf") return Arg::of_real(std::numeric_limits<double>::infinity());
      if (text == "-inf") return Arg::of_real(-std::numeric_limits<double>::infinity());
      if (text == "nan") return Arg::of_real(std::numeric_limits<double>::quiet_NaN());
      throw UserError(w, "a float literal is \"inf\", \"-inf\" or \"nan\", not \"" + text + "\"");
    }
    throw UserError(where, "unknown typed literal \"" + it.key() + "\" (expected dtype, device, str, float, slice, ellipsis or memory_format)");
  }

  // {"slice": [start, stop, step]}, each an integer or null: Python's slice(start, stop, step).
  Arg slice_literal(const json& j, const std::string& where) {
    if (!j.is_array() || j.size() != 3) throw UserError(where, "a slice literal is [start, stop, step], each an integer or null");
    Arg a;
    a.kind = Arg::Kind::opaque;
    a.text = "slice(";
    for (size_t i = 0; i < 3; ++i) {
      if (!j[i].is_null() && !j[i].is_number_integer()) throw UserError(where + "/" + std::to_string(i), "a slice bound is an integer or null");
      a.text += (i ? ", " : "") + (j[i].is_null() ? std::string("None") : std::to_string(j[i].get<int64_t>()));
    }
    a.text += ")";
    return a;
  }

  // fwd/bwd bodies of a custom-gradient op: each its own scope and naming domain.
  std::shared_ptr<const CustomGrad> read_custom(const json& j, const Op& op, const std::vector<Value>& outs, const std::string& where) {
    auto grad = std::make_shared<CustomGrad>();
    std::vector<ValueId> tensor_args;  // ids: reading the bodies adds values and moves Trace::values
    for (const Arg& a : op.args)
      if (a.is_value() && !t_.value(a.value).is_scalar) tensor_args.push_back(a.value);
    grad->fwd = read_body(require(j, where, "fwd"), where + "/fwd", true);
    grad->bwd = read_body(require(j, where, "bwd"), where + "/bwd", false);
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

  SubTrace read_body(const json& j, const std::string& where, bool is_fwd) {
    expect_object(j, where);
    Scope outer = std::move(scope_);
    const json* outer_ops = domain_ops_;
    std::string outer_ops_where = std::move(domain_ops_where_);
    domain_ops_ = j.contains("ops") ? &j["ops"] : nullptr;
    domain_ops_where_ = where + "/ops";
    scope_ = Scope();
    scope_.push();
    names_.emplace_back();
    SubTrace body;
    const json& inputs = list_at(require(j, where, "inputs"), where + "/inputs");
    for (size_t i = 0; i < inputs.size(); ++i) body.inputs.push_back(declare(inputs[i], where + "/inputs/" + std::to_string(i), false));
    body.ops = read_ops(list_at(require(j, where, "ops"), where + "/ops"), where + "/ops");
    const json& outputs = list_at(require(j, where, "outputs"), where + "/outputs");
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string w = where + "/outputs/" + std::to_string(i);
      body.outputs.push_back(outputs[i].is_null() && !is_fwd ? kNoValue : reference(outputs[i], w));
    }
    if (is_fwd && j.contains("saved")) {
      const json& saved = list_at(j["saved"], where + "/saved");
      for (size_t i = 0; i < saved.size(); ++i) body.saved.push_back(reference(saved[i], where + "/saved/" + std::to_string(i)));
    }
    names_.pop_back();
    scope_ = std::move(outer);
    domain_ops_ = outer_ops;
    domain_ops_where_ = std::move(outer_ops_where);
    return body;
  }
};

// line:col of a byte offset, for syntax errors.
std::string line_col(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}

// What the JSON library would accept silently or recurse into: nesting deeper than kMaxDepth
// (refused before parsing, at the bracket that goes too deep) and integers beyond 64 bits (which
// it would turn into floats). Strings are skipped; syntax errors are left to the parser.
void scan_lexically(const std::string& text) {
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
      std::string digits = text.substr(start, end - start);
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

// Builds the document as the library's own DOM parser would, but refuses a duplicate key (which
// the library keeps the last of silently) where it is inserted, naming its place. One pass: a
// separate SAX check before the plain parse cost a tenth of reading, and the library's DOM
// parser with a callback spent 58% of reading a 100,000-op trace in its end_object.
class DomWithoutDuplicates : public nlohmann::json_sax<json> {
 public:
  explicit DomWithoutDuplicates(json& root) : root_(root) {}

  bool null() override { return put(nullptr); }
  bool boolean(bool b) override { return put(b); }
  bool number_integer(json::number_integer_t n) override { return put(n); }
  bool number_unsigned(json::number_unsigned_t n) override { return put(n); }
  bool number_float(json::number_float_t x, const json::string_t&) override { return put(x); }
  bool string(json::string_t& s) override { return put(std::move(s)); }
  bool binary(json::binary_t& b) override { return put(json::binary(std::move(b))); }
  bool start_object(std::size_t) override {
    open_.push_back(put_container(json::object()));
    return true;
  }
  bool key(json::string_t& k) override {
    json::object_t& object = *open_.back()->get_ptr<json::object_t*>();
    auto [slot, inserted] = object.try_emplace(std::move(k));
    if (!inserted) throw UserError(pointer() + "/" + escape_pointer_token(slot->first), "duplicate key \"" + slot->first + "\"");
    slot_ = &slot->second;
    key_of_.push_back(&slot->first);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    open_.push_back(put_container(json::array()));
    return true;
  }
  bool end_array() override { return close(); }
  // A syntax error stops the parse; read_trace reports it at its line and column.
  bool parse_error(std::size_t byte, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte = byte;
    error = e.what();
    return false;
  }
  size_t error_byte = 0;
  std::string error;

 private:
  json& root_;
  std::vector<json*> open_;                  // the containers being filled, innermost last
  std::vector<const std::string*> key_of_;   // the key of each object member being read
  json* slot_ = nullptr;                     // where an object's next value goes

  // Where the next value goes: the root, the end of the open array, or the slot its key made.
  json* place() {
    if (open_.empty()) return &root_;
    json* c = open_.back();
    if (c->is_array()) return &c->get_ptr<json::array_t*>()->emplace_back();
    return slot_;
  }
  template <class T>
  bool put(T&& v) {
    *place() = std::forward<T>(v);
    after_value();
    return true;
  }
  json* put_container(json empty) {
    json* p = place();
    *p = std::move(empty);
    return p;
  }
  bool close() {
    open_.pop_back();
    after_value();
    return true;
  }
  // A member of an object is complete: its key is no longer part of the path.
  void after_value() {
    if (!open_.empty() && open_.back()->is_object()) key_of_.pop_back();
  }
  // The JSON pointer of the container being filled.
  std::string pointer() const {
    std::string p;
    size_t key = 0;
    for (size_t i = 0; i + 1 < open_.size(); ++i) {  // each container but the innermost: where its child is
      if (open_[i]->is_array()) p += "/" + std::to_string(open_[i]->size() - 1);
      else p += "/" + escape_pointer_token(*key_of_[key++]);
    }
    return p;
  }
};

}  // namespace

Trace read_trace(const std::string& text) {
  scan_lexically(text);
  json doc;
  DomWithoutDuplicates builder(doc);
  if (!json::sax_parse(text, &builder)) {
    auto pos = builder.error.find("syntax error");
    throw UserError(line_col(text, builder.error_byte > 0 ? builder.error_byte - 1 : 0),
                    "invalid JSON: " + (pos == std::string::npos ? builder.error : builder.error.substr(pos)));
  }
  Trace trace;
  Reader(trace).read(doc);
  verify(trace);
  return trace;
}

Trace read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("", "cannot open file");
  std::ostringstream buf;
  buf << in.rdbuf();
  return read_trace(std::move(buf).str());  // (C++20: moves the text out; a trace can be 50 MB)
}

}  // namespace tg
