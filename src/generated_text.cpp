#include "generated_text.h"

#include <cstdio>

#include "thunder_gen/diagnostics.h"
#include "thunder_gen/op_table.h"

namespace tg {

std::string_view role_prefix(Role role) {
  switch (role) {
    case Role::global: return "g_";
    case Role::element: return "v_";
    case Role::index: return "ix_";
    case Role::accumulator: return "acc_";
    case Role::sum: return "sum_";
    case Role::m2: return "m2_";
    case Role::deviation: return "dev_";
    case Role::mean: return "mean_";
    case Role::target: return "at_";
    case Role::max_and_sum: return "both_";
    case Role::run_in: return "r_";
    case Role::run_out: return "w_";
    case Role::run_bits: return "b_";
    case Role::cached: return "c_";
    case Role::shared: return "s_";
    case Role::harness_input: return "in_";
    case Role::storage_view: return "p_";
    case Role::element_function: return "element_";
    case Role::result: return "out_";
  }
  throw InternalError("unknown identifier role");
}

std::string ident(Role role, std::string_view name) {
  TG_CHECK(is_identifier(name), "an identifier made from \"" + comment_text(name) + "\", which is not one");
  std::string out(role_prefix(role));
  out += name;
  return out;
}

namespace {

void append_hex_escape(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
  out += buf;
}

bool printable_ascii(unsigned char c) { return c >= 0x20 && c < 0x7f; }

}  // namespace

std::string printable_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (printable_ascii(c)) out += ch;
    else append_hex_escape(out, c);
  }
  return out;
}

std::string comment_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\\') out += "\\x5c";  // (never a backslash last on the line: it would join the next line to the comment)
    else if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') out += "*\\";
    else if (printable_ascii(c)) out += char(c);
    else append_hex_escape(out, c);
  }
  return out;
}

std::string comment_line(std::string_view text, std::string_view indent) {
  std::string out(indent);
  out += "// ";
  out += comment_text(text);
  out += '\n';
  return out;
}

std::string cpp_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (printable_ascii(c) && c != '?') {  // (a ? could start a trigraph in old dialects)
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", unsigned(c));
      out += buf;
    }
  }
  return out + "\"";
}

std::string cmake_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\' || c == '$') {
      out += '\\';
      out += char(c);
    } else if (printable_ascii(c)) {
      out += char(c);
    } else {
      throw InternalError("a control or non-ASCII byte in a CMake string");
    }
  }
  return out + "\"";
}

std::string python_string(std::string_view text) {
  std::string out = "'";
  for (const char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\'': out += "\\'"; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) append_hex_escape(out, c);
        else out += char(c);  // UTF-8 as it is (the reader takes only valid UTF-8)
    }
  }
  return out + "'";
}

}  // namespace tg
