#include "ops/printer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <span>

#include "ops/op_table.h"
#include "support/generated_text.h"

namespace tg {

SizeText comment_sizes(const Trace& t) { return t.sizes_at_run_time ? SizeText::expressions : SizeText::numbers; }

namespace {

void append_size(std::string& out, int64_t size, const SizeExpr* interned, SizeText sizes) {
  if (sizes == SizeText::expressions && interned && !interned->is_constant()) out += interned_text(interned);
  else append_int(out, size);
}

}  // namespace

void append_dim(std::string& out, const Dim& d, SizeText sizes) { append_size(out, d, d.expr(), sizes); }

void append_type(std::string& out, const Value& v, SizeText sizes) {
  out += dtype_name(v.dtype);
  if (v.is_scalar) {
    out += " scalar";
    return;
  }
  out += '[';
  for (size_t i = 0; i < v.shape.size(); ++i) {
    if (i) out += ", ";
    append_dim(out, v.shape[i], sizes);
  }
  out += ']';
}

std::string print_type(const Value& v, SizeText sizes) {
  std::string s;
  append_type(s, v, sizes);
  return s;
}

void append_int(std::string& out, int64_t i) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i);
  out.append(buf, end);
}

std::string print_number(double d) {
  if (std::isnan(d)) return "float('nan')";
  if (std::isinf(d)) return d > 0 ? "float('inf')" : "-float('inf')";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string print_literal(const Arg& a, const Trace& t, SizeText sizes) {
  switch (a.kind) {
    case Arg::Kind::none: return "None";
    case Arg::Kind::value: return t.value(a.value).name;
    case Arg::Kind::boolean: return a.boolean ? "True" : "False";
    case Arg::Kind::integer: {
      std::string s;
      append_size(s, a.integer, a.size, sizes);
      return s;
    }
    case Arg::Kind::real: return print_number(a.real);
    case Arg::Kind::string: return python_string(a.text);
    case Arg::Kind::dtype: return "dtypes." + std::string(dtype_name(a.dtype));
    case Arg::Kind::device: return "devices.Device(" + python_string(a.text) + ")";
    case Arg::Kind::opaque: return a.text;
    case Arg::Kind::process_group: return "ProcessGroup(world_size=" + std::to_string(a.integer) + ")";
    case Arg::Kind::list: {
      std::string s = "[";
      for (size_t i = 0; i < a.items.size(); ++i) s += (i ? ", " : "") + print_literal(a.items[i], t, sizes);
      return s + "]";
    }
  }
  return "?";
}

namespace {

std::string outs_text(const Op& op, const Trace& t) {
  if (op.outs.size() == 1) return t.value(op.outs[0]).name;
  std::string s = "(";
  for (size_t i = 0; i < op.outs.size(); ++i) s += (i ? ", " : "") + t.value(op.outs[i]).name;
  return s + ")";
}

std::string call_text(const Op& op, const Trace& t, SizeText sizes = SizeText::numbers) {
  std::string s = op.symbol;
  if (!op.label.empty()) s += "[" + op.label + "]";
  s += "(";
  bool first = true;
  auto sep = [&] { std::string r = first ? "" : ", "; first = false; return r; };
  for (size_t i = 0; i < op.args.size(); ++i) {
    if (op.info && i < op.info->params.size() && op.info->params[i].keyword_only) {
      const Param& param = op.info->params[i];
      std::string text = print_literal(op.args[i], t, sizes);
      // Keyword arguments at their default are left out, as Python callers write them.
      if (param.has_default && text == print_literal(param.default_value, t)) continue;
      s += sep() + std::string(param.name) + "=" + text;
    }
    else
      s += sep() + print_literal(op.args[i], t, sizes);
  }
  for (const auto& [name, a] : op.kwargs) s += sep() + name + "=" + print_literal(a, t, sizes);
  return s + ")";
}

// In a listing (`listing`), a bit-packed value's type says so and the op's provenance follows
// (where it is in the input, and the torch-level call it came from), so the listing reads back
// (src/frontend/listing_reader.h); a kernel's comments (print_op) leave them out.
std::string types_comment(const Op& op, const Trace& t, bool listing = false, SizeText sizes = SizeText::numbers) {
  std::string s = "  # ";
  for (size_t i = 0; i < op.outs.size(); ++i) {
    const Value& v = t.value(op.outs[i]);
    s += (i ? ", " : "") + v.name + ": " + print_type(v, sizes) + (listing && v.bit_packed ? " packed" : "");
  }
  if (!op.tags.empty()) {
    s += "  tags:";
    for (const std::string& tag : op.tags) s += " " + tag;
  }
  if (listing && !(op.origin.empty() && op.where.empty()))
    s += "  (" + op.origin + (op.origin.empty() || op.where.empty() ? "" : " at ") + op.where + ")";
  return s;
}

void print_ops(std::span<const Op> ops, const Trace& t, const std::string& indent, std::string& out, const OpNote& note = {});

void print_body(const char* label, const SubTrace& body, const Trace& t, const std::string& indent, std::string& out) {
  out += indent + label + "(";
  for (size_t i = 0; i < body.inputs.size(); ++i) out += (i ? ", " : "") + t.value(body.inputs[i]).name;
  out += "):\n";
  print_ops(body.ops, t, indent + "  ", out);
  out += indent + "  return (";
  for (size_t i = 0; i < body.outputs.size(); ++i) out += (i ? ", " : "") + (body.outputs[i] == kNoValue ? std::string("None") : t.value(body.outputs[i]).name);
  out += body.outputs.size() == 1 ? ",)" : ")";
  if (!body.saved.empty()) {
    out += "  # saved:";
    for (ValueId v : body.saved) out += " " + t.value(v).name;
  }
  out += "\n";
}

void print_ops(std::span<const Op> ops, const Trace& t, const std::string& indent, std::string& out, const OpNote& note) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    out += indent + outs_text(op, t) + " = " + call_text(op, t) + types_comment(op, t, true) + "\n";
    if (op.custom) {
      print_body("# fwd", op.custom->fwd, t, indent + "  ", out);
      print_body("# bwd", op.custom->bwd, t, indent + "  ", out);
    }
    if (note)
      if (std::string text = note(i, op); !text.empty()) out += indent + "  # " + text + "\n";
    print_ops(op.sub, t, indent + "  # ", out);
  }
}

}  // namespace

std::string print_op(const Op& op, const Trace& t, bool types) {
  const SizeText sizes = comment_sizes(t);
  return outs_text(op, t) + " = " + call_text(op, t, sizes) + (types ? types_comment(op, t, false, sizes) : "");
}

namespace {

// The listing of `t`; for a joint trace, `joint` marks its cotangent inputs and where its backward
// part starts.
std::string print_listing(const Trace& t, const JointMarks* joint, const OpNote& note = {}) {
  std::string out = "def " + t.name + "(";
  for (size_t i = 0; i < t.inputs.size(); ++i) out += (i ? ", " : "") + t.value(t.inputs[i]).name;
  out += "):\n";
  for (size_t i = 0; i < t.inputs.size(); ++i) {
    const Value& v = t.value(t.inputs[i]);
    out += "  # " + v.name + ": " + print_type(v) + (v.requires_grad ? " requires_grad" : "") + (v.bit_packed ? " packed" : "") +
           (joint && i >= joint->forward_inputs ? " cotangent" : "") + "\n";
  }
  // A symbolic trace's sizes, so that a listing resumed with --from-stage names them as the trace did.
  for (const auto& [name, size] : t.specialized_at)
    if (const SymbolDecl* decl = t.symbols.find(name)) out += "  # specialized at " + name + " = " + std::to_string(size) + " (" + decl->range_text() + ")\n";
  if (!joint) {
    print_ops(t.ops, t, "  ", out, note);
  } else {
    const std::span<const Op> ops(t.ops);
    const size_t forward_ops = std::min(joint->forward_ops, ops.size());
    print_ops(ops.first(forward_ops), t, "  ", out);
    out += "  # backward\n";
    print_ops(ops.subspan(forward_ops), t, "  ", out);
  }
  out += "  return (";
  for (size_t i = 0; i < t.outputs.size(); ++i) out += (i ? ", " : "") + t.value(t.outputs[i]).name;
  out += t.outputs.size() == 1 ? ",)\n" : ")\n";
  return out;
}

}  // namespace

std::string print_trace(const Trace& t, const OpNote& note) { return print_listing(t, nullptr, note); }

std::string print_joint_trace(const Trace& t, const JointMarks& marks) { return print_listing(t, &marks); }

}  // namespace tg
