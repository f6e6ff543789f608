#include "frontend/reader.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "frontend/json_arguments.h"
#include "frontend/json_document.h"
#include "frontend/json_element.h"
#include "frontend/json_names.h"
#include "frontend/json_symbols.h"
#include "frontend/overrides.h"
#include "ops/op_table.h"
#include "ops/symbolic_dims.h"
#include "ops/verify.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {
namespace {

using namespace json;

// A symbol id as Thunder spells them: identifiers joined by dots (prims.add, torch.Tensor.__getitem__).
bool is_symbol_id(std::string_view id) {
  for (size_t start = 0;;) {
    const size_t dot = id.find('.', start);
    if (!is_identifier(id.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// Whether every op of a decomposition is one thunder-gen can read: it has a rule (its own
// decomposition is decided when it is read), or is a custom-gradient op, or has a readable
// decomposition. A malformed list counts as readable, so reading it reports the error.
bool readable(Json ops) {
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

// The trace document read into a Trace: its fields, value declarations, ops with their
// decompositions and custom-gradient bodies. Names are resolved by `names_`, arguments bound by
// `arguments_`.
class Reader {
 public:
  Reader(Trace& trace, const SymbolValues& specialize, PlainIntegers integers)
      : t_(trace), names_(trace), arguments_(trace, names_, integers), specialize_(specialize), integers_(integers) {}

  void read(Json doc) {
    const std::string document;  // the root's pointer: ""
    const Path at(document);
    const Object root = object_at(doc, at);
    static constexpr std::string_view kTraceFields[] = {"format", "version", "name", "device", "symbols", "inputs", "ops", "outputs", "source"};
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
    if (auto symbols = find(root, "symbols")) t_.symbols = read_symbols(*symbols, Path(at, "symbols"));
    check_specialization(t_.symbols, specialize_, [](const std::string& name) { return "/symbols/" + escape_pointer_token(name); });
    t_.specialized_at = specialize_;

    names_.open_domain(find(root, "ops"), "/ops");
    size_t i = 0;
    const Path inputs_at(at, "inputs");
    for (Json input : list_at(require(root, at, "inputs"), inputs_at)) t_.inputs.push_back(declare(input, Path(inputs_at, i++), true));
    t_.ops = read_ops(list_at(require(root, at, "ops"), Path(at, "ops")), "/ops");
    i = 0;
    const Path outputs_at(at, "outputs");
    for (Json output : list_at(require(root, at, "outputs"), outputs_at))
      t_.outputs.push_back(names_.reference(output, Path(outputs_at, i++)));
    infer_dims(t_);
  }

 private:
  Trace& t_;
  Names names_;
  Arguments arguments_;
  const SymbolValues& specialize_;
  const PlainIntegers integers_;

  // A value declaration: a tensor or a scalar.
  ValueId declare(Json decl, const Path& where, bool is_input) {
    Value v = parse_declaration(decl, where, is_input);
    return names_.define(std::move(v), where);
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
    // An input whose shape names a symbol keeps its sizes as expressions too (input_sizes).
    std::vector<SizeExpr> sizes;
    v.shape = read_shape(require(decl, where, "shape"), Path(where, "shape"), is_input, is_input ? &sizes : nullptr);
    if (std::any_of(sizes.begin(), sizes.end(), [](const SizeExpr& s) { return !s.is_constant(); })) t_.input_sizes[v.name] = std::move(sizes);
    const Path dtype_at(where, "dtype");
    std::string dt = string_at(require(decl, where, "dtype"), dtype_at);
    auto parsed = parse_dtype(dt);
    if (!parsed) throw UserError(dtype_at.str(), "unknown dtype \"" + dt + "\" (expected one of b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64)");
    v.dtype = *parsed;
    if (auto device = find(decl, "device")) {
      v.device = string_at(*device, Path(where, "device"));
      check_device(v.device, Path(where, "device").str());
      check_same_device(t_, v.device, Path(where, "device").str());
    }
    if (auto rg = find(decl, "requires_grad")) {
      if (!rg->is_bool()) throw UserError(Path(where, "requires_grad").str(), "expected true or false, got " + kind_name(*rg));
      const bool requires_grad = as<bool>(*rg);
      if (!is_input && requires_grad) throw UserError(Path(where, "requires_grad").str(), "requires_grad only applies to trace inputs");
      if (requires_grad && !is_float(v.dtype))
        throw UserError(Path(where, "requires_grad").str(), "only floating-point tensors can require grad; this one is " + std::string(dtype_name(v.dtype)));
      v.requires_grad = requires_grad;
    }
    if (auto init = find(decl, "init")) v.init_uniform = read_init(*init, Path(where, "init").str(), is_input, v.dtype);
    return v;
  }

  // Entries are integers, or size expressions over the trace's symbols (at its specialization);
  // `sizes`, when given, gets each entry as an expression. An input's dims are what the trace
  // says at every size: its integers constants, its expressions sizes the ranges must prove
  // never negative. An op output's are checked against its rule: an integer there may be a size
  // a front end evaluated (a PT2 graph's), so it is taken as a size alone, and so is an
  // expression the ranges cannot prove a size (torch's guards may hold it).
  Shape read_shape(Json json, const Path& shape_at, bool is_input, std::vector<SizeExpr>* sizes = nullptr) const {
    const Array shape = list_at(json, shape_at);
    Shape out;
    int64_t elements = 1;
    out.reserve(shape.size());
    size_t i = 0;
    for (Json dim : shape) {
      auto w = [&] { return Path(shape_at, i).str(); };
      if (dim.is_string()) {
        const SizeExpr size = size_expr_of(dim, Path(shape_at, i), t_, is_input);
        const int64_t at = size_at_specialization(size, Path(shape_at, i), t_);
        out.push_back(is_input || provably_ge(size, 0, t_.symbols) ? Dim(at, size) : Dim(at));
        if (sizes) sizes->push_back(size);
      } else {
        if (!is_json_integer(dim)) throw UserError(w(), "a dimension is an integer or a size expression, got " + kind_name(dim));
        if (is_too_large(dim)) throw UserError(w(), "dimension " + dump(dim) + " overflows");
        const bool constant = is_input || integers_ == PlainIntegers::constant;
        out.push_back(constant && !t_.symbols.empty() ? Dim::constant(int_of(dim)) : Dim(int_of(dim)));
        if (sizes) sizes->push_back(SizeExpr(out.back()));
      }
      const int64_t d = out.back();
      if (d < 0) throw UserError(w(), "negative dimension " + std::to_string(d));
      if (d > 0 && elements > (int64_t(1) << 48) / d) throw UserError(w(), "the shape has more than 2^48 elements");
      elements *= d;
      ++i;
    }
    return out;
  }

  // Extension: {"init": {"uniform": [lo, hi]}} on a float input says how a harness draws it
  // when no file is given (realistic weight scales keep deep models finite in f32).
  static std::pair<double, double> read_init(Json init, const std::string& w, bool is_input, DType dtype) {
    if (!is_input) throw UserError(w, "init only applies to trace inputs");
    std::optional<Json> range;
    if (init.is_object() && object_of(init).size() == 1) range = find(object_of(init), "uniform");
    if (!range) throw UserError(w, "expected {\"uniform\": [lo, hi]}");
    std::vector<double> bounds;
    if (range->is_array())
      for (Json bound : array_of(*range))
        if (bound.is_number()) bounds.push_back(as<double>(bound));
    if (!range->is_array() || array_of(*range).size() != 2 || bounds.size() != 2)
      throw UserError(w + "/uniform", "expected [lo, hi], two numbers");
    if (!is_float(dtype)) throw UserError(w, "init applies to float inputs, not " + std::string(dtype_name(dtype)));
    if (!(bounds[0] < bounds[1])) throw UserError(w + "/uniform", "lo must be below hi");
    return {bounds[0], bounds[1]};
  }

  std::vector<Op> read_ops(Array ops, const std::string& where) {
    std::vector<Op> out;
    out.reserve(ops.size());
    size_t i = 0;
    for (Json op : ops) out.push_back(read_op(op, where + "/" + std::to_string(i++), {}));
    return out;
  }

  // `parent_outs` maps the names of the enclosing op's outputs, which a decomposition defines.
  Op read_op(Json json, const std::string& where, const OuterOutputs& parent_outs) {
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
    arguments_.read(j, at, where, op);

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
      read_decomposition(*sub, where, declared, outs_at, parent_outs, op);
    } else {
      for (size_t i = 0; i < declared.size(); ++i) op.outs.push_back(names_.claim_output(declared[i], Path(outs_at, i), parent_outs));
      for (size_t i = 0; i < declared.size(); ++i) names_.bind(declared[i].name, op.outs[i]);
    }
    return op;
  }

  // op.sub and op.outs from the decomposition `sub` of the op at `where`, whose outputs are
  // `declared` (at `outs_at`).
  void read_decomposition(Json sub, const std::string& where, const std::vector<Value>& declared, const Path& outs_at,
                          const OuterOutputs& parent_outs, Op& op) {
    OuterOutputs mine;
    // The decomposition's own names live in a nested scope; the op's outputs are pre-declared
    // there so the last sub-ops can define them.
    std::vector<ValueId> out_ids;
    for (size_t i = 0; i < declared.size(); ++i) out_ids.push_back(names_.claim_output(declared[i], Path(outs_at, i), parent_outs));
    for (size_t i = 0; i < declared.size(); ++i) mine[declared[i].name] = out_ids[i];
    names_.open_scope();
    std::set<ValueId> defined_by_sub;
    const std::string sub_where = where + "/sub";
    for (Json sub_op : list_at(sub, Path(sub_where))) {
      op.sub.push_back(read_op(sub_op, sub_where + "/" + std::to_string(op.sub.size()), mine));
      for (ValueId v : op.sub.back().outs) defined_by_sub.insert(v);
    }
    names_.close_scope();
    for (size_t i = 0; i < out_ids.size(); ++i)
      if (!defined_by_sub.count(out_ids[i]))
        throw UserError(sub_where, "the decomposition does not define output \"" + declared[i].name + "\"");
    op.outs = out_ids;
    for (size_t i = 0; i < out_ids.size(); ++i) names_.bind(declared[i].name, out_ids[i]);
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
    names_.open_domain(find(j, "ops"), where + "/ops");
    SubTrace body;
    size_t i = 0;
    const Path inputs_at(at, "inputs");
    for (Json input : list_at(require(j, at, "inputs"), inputs_at)) body.inputs.push_back(declare(input, Path(inputs_at, i++), false));
    body.ops = read_ops(list_at(require(j, at, "ops"), Path(at, "ops")), where + "/ops");
    i = 0;
    const Path outputs_at(at, "outputs");
    for (Json output : list_at(require(j, at, "outputs"), outputs_at)) {
      const Path output_at(outputs_at, i++);
      body.outputs.push_back(output.is_null() && !is_fwd ? kNoValue : names_.reference(output, output_at));
    }
    if (auto saved = find(j, "saved"); saved && is_fwd) {
      i = 0;
      const Path saved_at(at, "saved");
      for (Json value : list_at(*saved, saved_at)) body.saved.push_back(names_.reference(value, Path(saved_at, i++)));
    }
    names_.close_domain();
    return body;
  }
};

Trace read_padded(const simdjson::padded_string& padded, const SymbolValues& specialize, PlainIntegers integers) {
  simdjson::dom::parser parser;
  const Json doc = parse_document(parser, padded);
  // Duplicate keys are looked for beside the reading (both only read the document); a duplicate
  // is reported first, as though the check had run before.
  std::future<void> duplicates = std::async(std::launch::async, [doc] { check_duplicate_keys(doc); });
  Trace trace;
  try {
    Reader(trace, specialize, integers).read(doc);
  } catch (...) {
    duplicates.get();
    throw;
  }
  duplicates.get();
  verify(trace);
  return trace;
}

}  // namespace

Trace read_trace(const std::string& text, const SymbolValues& specialize, PlainIntegers integers) {
  return read_padded(simdjson::padded_string(text), specialize, integers);
}

Trace read_trace_file(const std::string& path, const SymbolValues& specialize) {
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
      if (uintmax_t(in.gcount()) == size) return read_padded(padded, specialize, PlainIntegers::constant);
    }
    in.clear();
    in.seekg(0);
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return read_trace(std::move(buf).str(), specialize);
}

}  // namespace tg
