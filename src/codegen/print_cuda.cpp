#include "codegen/print_cuda.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg::kir {

namespace {

// `d` as a literal of type float (`f32`) or double: the value the type holds (a number past
// float's range is its infinity, one below its smallest, 0 or a subnormal), subnormals in hex
// (NVRTC refuses a decimal literal it must round to one), non-finite values by their bits.
std::string float_literal(double d, bool f32) {
  const double held = f32 ? double(float(d)) : d;
  if (std::isnan(held)) return f32 ? "tg::bits_float(0x7fc00000u)" : "double(tg::bits_float(0x7fc00000u))";
  if (std::isinf(held)) return std::string(held < 0 ? "-" : "") + (f32 ? "TG_INFINITY" : "double(TG_INFINITY)");
  const bool subnormal = held != 0 && std::fabs(held) < (f32 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min());
  char buf[64];
  std::to_chars_result r;
  if (subnormal) r = f32 ? std::to_chars(buf, buf + sizeof buf, float(held), std::chars_format::hex) : std::to_chars(buf, buf + sizeof buf, held, std::chars_format::hex);
  else r = f32 ? std::to_chars(buf, buf + sizeof buf, float(held)) : std::to_chars(buf, buf + sizeof buf, held);
  std::string s(buf, r.ptr);
  if (subnormal) s.insert(s[0] == '-' ? 1 : 0, "0x");
  else if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f32 ? s + "f" : s;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::vector<std::string> printed(const std::vector<ExprPtr>& operands) {
  std::vector<std::string> out;
  for (const ExprPtr& o : operands) out.push_back(print_expr(*o));
  return out;
}

// An op's code template with {k} replaced by operand k, appended to `out`.
void fill(std::string_view code, const std::vector<ExprPtr>& operands, std::string& out) {
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '{' && i + 2 < code.size() && code[i + 2] == '}') {
      append_expr(*operands.at(size_t(code[i + 1] - '0')), out);
      i += 2;
    } else {
      out += code[i];
    }
  }
}

std::string callee(const Expr& e) {
  return e.template_args.empty() ? e.text : e.text + "<" + joined(e.template_args) + ">";
}

std::string aligned_text(const Expr& e) {
  std::string test;
  for (const ExprPtr& p : e.operands) test += (test.empty() ? "" : " && ") + ("tg::aligned16(" + print_expr(*p) + ")");
  return test;
}

std::string note(const std::string& text) { return text.empty() ? "" : "  // " + text; }

void print_stmt(const Stmt& s, const std::string& indent, std::string& out);

// A statement as the text of one line (without indent or newline): the one-line loop's body.
std::string inline_stmt(const Stmt& s) {
  std::string text;
  print_stmt(s, "", text);
  TG_CHECK(!text.empty() && text.back() == '\n' && text.find('\n') == text.size() - 1, "a one-line loop's body is not one line");
  text.pop_back();
  return text;
}

void append_decl(const Stmt& s, std::string& out) {
  out += std::string(s.is_shared ? "__shared__ " : "") + (s.is_const ? "const " : "") + s.type + " " + s.text;
  if (s.extent > 0) out += "[" + std::to_string(s.extent) + "]";
  if (s.value) {
    out += " = ";
    append_expr(*s.value, out);
  }
  out += ";" + note(s.note);
}

std::string run_text(const Stmt& s) {
  const std::string p = print_expr(*s.pointer), at = print_expr(*s.offset), width = std::to_string(s.width);
  const bool within = s.run_form == Stmt::RunForm::within;
  switch (s.kind) {
    case Stmt::Kind::load_run:
      return (within ? "tg::load_run_to<" + width + ">(" : std::string("tg::load_run(")) + p + ", " + at + ", " + print_expr(*s.target) + ");";
    case Stmt::Kind::store_run:
      return (within ? "tg::store_run_from<" + width + ">(" : std::string("tg::store_run(")) + p + ", " + at + ", " + print_expr(*s.value) + ");";
    default: return "tg::store_run_bits<" + width + ">(" + p + ", " + at + ", " + print_expr(*s.value) + ");";
  }
}

// An eval that wraps: a call whose arguments go one a line past 100 columns.
std::string wrapped_call(const Expr& e, const std::string& indent) {
  TG_CHECK(e.kind == Expr::Kind::call, "only a call wraps its arguments");
  return wrapped_list(indent, callee(e) + "(", printed(e.operands), ");");
}

void print_loop(const Stmt& s, const std::string& indent, std::string& out) {
  const std::string step = s.step ? s.text + " += " + print_expr(*s.step) : "++" + s.text;
  const std::string head = std::string(s.unrolled ? "TG_UNROLL " : "") + "for (" + s.type + " " + s.text + " = " + print_expr(*s.start) + "; " + s.text +
                           " < " + print_expr(*s.bound) + "; " + step + ")";
  if (s.one_line) {
    TG_CHECK(s.body.size() == 1, "a one-line loop holds one statement");
    out += indent + head + " " + inline_stmt(s.body[0]) + "\n";
    return;
  }
  out += indent + head + " {" + note(s.note) + "\n";
  out += print_block(s.body, indent + "  ");
  out += indent + "}\n";
}

// if (...) { } else if (...) { } else { }: an else holding one branch and no note continues the chain.
void print_branch(const Stmt& s, const std::string& indent, std::string& out) {
  out += indent + "if (" + print_expr(*s.value) + ") {" + note(s.note) + "\n";
  const Stmt* at = &s;
  out += print_block(at->body, indent + "  ");
  while (at->orelse.size() == 1 && at->orelse[0].kind == Stmt::Kind::branch && at->else_note.empty() && at->orelse[0].note.empty()) {
    at = &at->orelse[0];
    out += indent + "} else if (" + print_expr(*at->value) + ") {\n";
    out += print_block(at->body, indent + "  ");
  }
  if (!at->orelse.empty()) {
    out += indent + "} else {" + note(at->else_note) + "\n";
    out += print_block(at->orelse, indent + "  ");
  }
  out += indent + "}\n";
}

void print_stmt(const Stmt& s, const std::string& indent, std::string& out) {
  switch (s.kind) {
    case Stmt::Kind::comment: out += comment_line(s.text, indent); return;
    case Stmt::Kind::decl:
      out += indent;
      append_decl(s, out);
      out += "\n";
      return;
    case Stmt::Kind::assign:
      out += indent;
      append_expr(*s.target, out);
      out += " " + s.op + " ";
      append_expr(*s.value, out);
      out += ";\n";
      return;
    case Stmt::Kind::store:
      out += indent + "tg::store(";
      for (const ExprPtr* e : {&s.pointer, &s.offset, &s.value}) {
        append_expr(**e, out);
        out += e == &s.value ? ");\n" : ", ";
      }
      return;
    case Stmt::Kind::load_run:
    case Stmt::Kind::store_run:
    case Stmt::Kind::store_run_bits: out += indent + run_text(s) + "\n"; return;
    case Stmt::Kind::eval: out += indent + (s.wrap ? wrapped_call(*s.value, indent) : print_expr(*s.value) + ";") + "\n"; return;
    case Stmt::Kind::loop: print_loop(s, indent, out); return;
    case Stmt::Kind::branch: print_branch(s, indent, out); return;
    case Stmt::Kind::scope:
      out += indent + "{\n" + print_block(s.body, indent + "  ") + indent + "}\n";
      return;
    case Stmt::Kind::barrier: out += indent + "__syncthreads();\n"; return;
  }
}

std::vector<std::string> param_texts(const std::vector<Param>& params) {
  std::vector<std::string> out;
  for (const Param& p : params) out.push_back(p.type + " " + p.name);
  return out;
}

}  // namespace

std::string number_literal(double d, bool is_integer, int64_t integer, DType as) {
  if (is_bool(as)) return (is_integer ? integer != 0 : d != 0) ? "true" : "false";
  if (is_float(as)) return float_literal(is_integer ? double(integer) : d, as != DType::f64);
  // (The verifier holds a real literal an integer op reads to the integer type's range.)
  std::string v = is_integer ? std::to_string(integer) : std::to_string(int64_t(std::trunc(d)));
  return "static_cast<" + std::string(compute_ctype(as)) + ">(" + v + (as == DType::i64 ? "ll" : "") + ")";
}

void append_expr(const Expr& e, std::string& out) {
  auto each = [&](const std::vector<ExprPtr>& operands) {
    for (size_t i = 0; i < operands.size(); ++i) {
      if (i) out += ", ";
      append_expr(*operands[i], out);
    }
  };
  switch (e.kind) {
    case Expr::Kind::name: out += e.text; return;
    case Expr::Kind::integer: out += std::to_string(e.integer) + e.text; return;
    case Expr::Kind::number: out += number_literal(e.number, e.number_is_integer, e.integer, e.dtype); return;
    case Expr::Kind::index: out += e.component ? e.index.component_text() : e.index.text(); return;
    case Expr::Kind::condition: out += e.condition.text(); return;
    case Expr::Kind::load: out += "tg::load("; each(e.operands); out += ")"; return;
    case Expr::Kind::call: out += callee(e) + "("; each(e.operands); out += ")"; return;
    case Expr::Kind::init: out += e.text + "{"; each(e.operands); out += "}"; return;
    case Expr::Kind::op_code: fill(e.text, e.operands, out); return;
    case Expr::Kind::binary:
      append_expr(*e.operands[0], out);
      out += " " + e.text + " ";
      append_expr(*e.operands[1], out);
      return;
    case Expr::Kind::select:
      append_expr(*e.operands[0], out);
      out += " ? ";
      append_expr(*e.operands[1], out);
      out += " : ";
      append_expr(*e.operands[2], out);
      return;
    case Expr::Kind::paren: out += "("; append_expr(*e.operands[0], out); out += ")"; return;
    case Expr::Kind::member: append_expr(*e.operands[0], out); out += "." + e.text; return;
    case Expr::Kind::subscript:
      append_expr(*e.operands[0], out);
      out += "[";
      append_expr(*e.operands[1], out);
      out += "]";
      return;
    case Expr::Kind::aligned: out += aligned_text(e); return;
    case Expr::Kind::reduce:
      out += "tg::" + e.text + "_reduce" + (e.operands.size() == 2 ? "2<" : "<") + joined(e.template_args) + ">(";
      each(e.operands);
      out += ")";
      return;
  }
  throw InternalError("an expression kind the printer does not know");
}

std::string print_expr(const Expr& e) {
  std::string out;
  append_expr(e, out);
  return out;
}

std::string print_block(const Block& block, const std::string& indent) {
  std::string out;
  for (const Stmt& s : block) print_stmt(s, indent, out);
  return out;
}

std::string print_kernel(const Kernel& k) {
  std::string out;
  for (const std::string& line : k.header) out += comment_line(line);
  if (k.element) {
    const Function& f = *k.element;
    out += wrapped_list("", "__device__ __forceinline__ void " + f.name + "(", param_texts(f.params), ") {") + "\n";
    out += print_block(f.body, "  ") + "}\n";
  }
  auto kernel = [&](const std::string& name, const Block& body) {
    const std::string head = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(k.launch.block) + ") " + name + "(";
    out += wrapped_list("", head, param_texts(k.params), ") {") + "\n" + print_block(body, "  ") + "}\n";
  };
  kernel(k.name, k.body);
  if (k.twin && k.twin->kind == Twin::Kind::elementwise) {
    out += comment_line(k.twin->name + ": the kernel above element by element,") + comment_line("launched where its runs cannot be.");
    kernel(k.twin->name, k.twin->body);
  } else if (k.twin) {
    out += comment_line(k.twin->name + ": the kernel above streaming its rows, launched where they are longer than") +
           comment_line(std::to_string(k.twin->condition.longest_row) + " elements, more than it holds.");
    kernel(k.twin->name, k.twin->body);
  }
  return out;
}

std::string wrapped_list(std::string_view indent, std::string_view head, const std::vector<std::string>& items, std::string_view tail) {
  constexpr size_t kColumns = 100;
  std::string line(head);
  for (size_t i = 0; i < items.size(); ++i) line += (i ? ", " : "") + items[i];
  line += tail;
  if (indent.size() + line.size() <= kColumns || items.size() < 2) return line;
  std::string out(head);
  for (size_t i = 0; i < items.size(); ++i) out += "\n" + std::string(indent) + "    " + items[i] + (i + 1 < items.size() ? "," : "");
  return out + std::string(tail);
}

}  // namespace tg::kir
