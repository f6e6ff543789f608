#include "frontend/listing_arguments.h"

#include <cctype>
#include <optional>

#include "ops/op_table.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::listing {
namespace {

// What an argument of `kind` must be, when `a` is not one (the JSON reader's rules); "" when it is.
std::string mismatch(const Arg& a, ParamKind kind, const Trace& t) {
  using K = Arg::Kind;
  auto tensor = [&](const Arg& x) { return x.is_value() && !t.value(x.value).is_scalar; };
  auto scalar = [&](const Arg& x) { return x.is_value() && t.value(x.value).is_scalar; };
  auto integer = [](const Arg& x) { return x.kind == K::integer; };
  auto all = [&](auto&& ok) {
    for (const Arg& x : a.items)
      if (!ok(x)) return false;
    return a.kind == K::list;
  };
  auto device = [&] { return (a.kind == K::device || a.kind == K::string) && (a.text == "cuda" || a.text == "cuda:0"); };
  auto need = [](bool ok, const char* what) { return ok ? std::string() : std::string(what); };
  switch (kind) {
    case ParamKind::tensor: return need(tensor(a), "a tensor");
    case ParamKind::tensor_or_number: return need(a.is_value() || a.is_number(), "a tensor or a number");
    case ParamKind::number: return need(a.is_number() || scalar(a), "a number");
    case ParamKind::integer: return need(integer(a), "an integer");
    case ParamKind::optional_integer: return need(integer(a) || a.kind == K::none, "an integer or None");
    case ParamKind::int_list: return need(all(integer), "a list of integers");
    case ParamKind::optional_int_list: return need(a.kind == K::none || all(integer), "a list of integers or None");
    case ParamKind::dtype: return need(a.kind == K::dtype, "a dtype such as dtypes.f32");
    case ParamKind::device: return need(device(), "the device devices.Device('cuda:0')");
    case ParamKind::tensor_list: return need(all(tensor) && !a.items.empty(), "a non-empty list of tensors");
    case ParamKind::optional_tensor: return need(tensor(a) || a.kind == K::none, "a tensor or None");
    case ParamKind::optional_dtype: return need(a.kind == K::dtype || a.kind == K::none, "a dtype or None");
    case ParamKind::dims: return need(integer(a) || a.kind == K::none || all(integer), "an integer, a list of integers or None");
    case ParamKind::boolean: return need(a.kind == K::boolean, "True or False");
    case ParamKind::string: return need(a.kind == K::string, "a string");
    case ParamKind::optional_string: return need(a.kind == K::string || a.kind == K::none, "a string or None");
    case ParamKind::optional_number: return need(a.is_number() || scalar(a) || a.kind == K::none, "a number or None");
    case ParamKind::int_or_int_list: return need(integer(a) || (all(integer) && !a.items.empty()), "an integer or a list of integers");
    case ParamKind::optional_int_or_int_list:
      return need(integer(a) || a.kind == K::none || (all(integer) && !a.items.empty()), "an integer, a list of integers or None");
    case ParamKind::dim_or_tensor: return need(integer(a) || tensor(a) || a.kind == K::none, "an integer, a tensor or None");
    case ParamKind::optional_tensor_or_number: return need(a.is_value() || a.is_number() || a.kind == K::none, "a tensor, a number or None");
    case ParamKind::process_group: return need(a.kind == K::process_group, "a process group");
    case ParamKind::padding_config: {
      bool ok = a.kind == K::list;
      for (const Arg& x : a.items) {
        ok = ok && x.kind == K::list && x.items.size() == 3;
        for (const Arg& v : x.items) ok = ok && integer(v);
      }
      return need(ok, "a list of [lo, hi, interior] integer triples");
    }
  }
  return "";
}

Arg opaque(std::string text) {
  Arg a;
  a.kind = Arg::Kind::opaque;
  a.text = std::move(text);
  return a;
}

// slice(start, stop, step), each an integer or None, kept as its text (an opaque literal).
Arg slice(Cursor& c) {
  std::string text = "slice(";
  for (int i = 0; i < 3; ++i) {
    if (i) c.expect(", ");
    text += i ? ", " : "";
    text += c.eat("None") ? std::string("None") : std::to_string(c.integer("an integer or None"));
  }
  c.expect(")");
  return opaque(text + ")");
}

}  // namespace

ValueId value_named(Cursor& c, const ValueIds& ids, const std::string& name) {
  auto it = ids.find(name);
  if (it == ids.end()) c.fail_at("undefined value \"" + name + "\"", c.pos() - name.size());
  return it->second;
}

void Call::read(Cursor& c, Op& op) { bind(c, op, read_call(c)); }

// "(a, [1, 2], dtype=dtypes.f32)": positional then keyword arguments.
std::vector<Call::Written> Call::read_call(Cursor& c) {
  c.expect("(");
  std::vector<Written> args;
  while (!c.eat(")")) {
    if (!args.empty()) c.expect(", ");
    Written w;
    const std::string_view rest = c.rest();
    const size_t name_end = rest.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    if (name_end != std::string_view::npos && name_end > 0 && rest[name_end] == '=') {
      w.keyword = c.identifier("a keyword");
      c.expect("=");
    } else if (!args.empty() && !args.back().keyword.empty()) {
      c.fail("a positional argument after a keyword argument");
    }
    w.arg = literal(c, 0);
    args.push_back(std::move(w));
  }
  return args;
}

Arg Call::literal(Cursor& c, int depth) {
  if (depth > kMaxNesting) c.fail("arguments nest deeper than " + std::to_string(kMaxNesting) + " levels");
  if (c.eat("[")) {
    std::vector<Arg> items;
    while (!c.eat("]")) {
      if (!items.empty()) c.expect(", ");
      items.push_back(literal(c, depth + 1));
    }
    return Arg::of_list(std::move(items));
  }
  if (c.at("'")) {
    Arg a;
    a.kind = Arg::Kind::string;
    a.text = c.quoted();
    return a;
  }
  if (c.at("-") || c.at("float(") || (!c.done() && std::isdigit(static_cast<unsigned char>(c.rest()[0])))) return c.number();
  if (c.eat("...")) return opaque("...");
  return named_literal(c);
}

// A literal spelled with a name (None, True, dtypes.f32, slice(...), ...) or a value's name.
Arg Call::named_literal(Cursor& c) {
  if (c.eat("devices.Device(")) {
    Arg a;
    a.kind = Arg::Kind::device;
    a.text = c.quoted();
    c.expect(")");
    return a;
  }
  if (c.eat("ProcessGroup(world_size=")) return process_group(c);
  if (c.eat("slice(")) return slice(c);
  const std::string word = c.identifier("an argument", true);
  if (word == "None") return Arg();
  if (word == "True" || word == "False") return Arg::of_bool(word == "True");
  if (word.rfind("dtypes.", 0) == 0) {
    const std::optional<DType> dtype = parse_dtype(word.substr(7));
    if (!dtype) c.fail("unknown dtype \"" + word + "\"");
    return Arg::of_dtype(*dtype);
  }
  if (word.rfind("torch.", 0) == 0 && is_identifier(word.substr(6))) return opaque(word);  // a memory format
  if (!is_identifier(word)) c.fail("\"" + word + "\" is neither a value nor a literal");
  return Arg::of_value(value_named(c, ids_, word));
}

Arg Call::process_group(Cursor& c) {
  const int64_t size = c.integer("a world size");
  c.expect(")");
  if (size < 1 || size > (1 << 20)) c.fail("world_size must be from 1 to 1048576");
  if (t_.world_size != 0 && t_.world_size != size) c.fail("a second process group: a trace runs on one");
  t_.world_size = size;
  Arg a;
  a.kind = Arg::Kind::process_group;
  a.integer = size;
  return a;
}

// Arguments bound to the op's signature as Python binds them, defaults filled in; a kernel's
// are the values it reads; a symbol with no row keeps them as written.
void Call::bind(Cursor& c, Op& op, std::vector<Written> args) const {
  if (!op.info) {  // a torch-level call with no row, lowered by its decomposition
    for (Written& w : args)
      if (w.keyword.empty()) op.args.push_back(std::move(w.arg));
      else op.kwargs.emplace_back(w.keyword, std::move(w.arg));
    return;
  }
  if (op.info->fusion == FusionClass::kernel) {
    for (Written& w : args) {
      if (!w.keyword.empty() || !w.arg.is_value()) c.fail("a kernel's arguments are the values it reads");
      op.args.push_back(std::move(w.arg));
    }
    return;
  }
  const std::vector<Param>& params = op.info->params;
  std::vector<std::optional<Arg>> bound(params.size());
  size_t positional = 0;
  for (Written& w : args) {
    size_t i = positional;
    if (w.keyword.empty()) {
      if (i >= params.size() || params[i].keyword_only) c.fail(op.symbol + " takes " + std::to_string(i) + " positional arguments");
      ++positional;
    } else {
      i = 0;
      while (i < params.size() && params[i].name != w.keyword) ++i;
      if (i == params.size()) c.fail(op.symbol + " has no parameter \"" + w.keyword + "\"");
      if (bound[i]) c.fail("argument \"" + w.keyword + "\" is given twice");
    }
    bound[i] = std::move(w.arg);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (!bound[i] && !params[i].has_default) c.fail(op.symbol + " is missing its argument \"" + std::string(params[i].name) + "\"");
    op.args.push_back(bound[i] ? std::move(*bound[i]) : params[i].default_value);
    const std::string expected = mismatch(op.args.back(), params[i].kind, t_);
    if (!expected.empty()) c.fail("argument \"" + std::string(params[i].name) + "\" of " + op.symbol + " must be " + expected);
  }
}

}  // namespace tg::listing
