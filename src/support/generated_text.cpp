#include "support/generated_text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "support/diagnostics.h"

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
    case Role::size: return "sz_";
    case Role::divider: return "dv_";
    case Role::row_base: return "base_";
    case Role::sine_cosine: return "sc_";
  }
  throw InternalError("unknown identifier role");
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string ident(Role role, std::string_view name) {
  TG_CHECK(is_identifier(name), "an identifier made from \"" + comment_text(name) + "\", which is not one");
  std::string out(role_prefix(role));
  out += name;
  return out;
}

namespace {

// Lower-case words a parameter must not be: C and C++ keywords (C23's and the alternative tokens
// among them), the lower-case macros of the C library and of g++ in its GNU modes, and what an
// entry point's body names unqualified (its locals, the types of its parameters and of the
// runtime's macros).
constexpr std::string_view kNotParameters[] = {
    // keywords
    "alignas", "alignof", "and", "and_eq", "asm", "atomic_cancel", "atomic_commit", "atomic_noexcept", "auto", "bitand",
    "bitor", "bool", "break", "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield",
    "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern",
    "false", "final", "float", "for", "friend", "goto", "if", "import", "inline", "int", "long", "module", "mutable",
    "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "override", "private",
    "protected", "public", "reflexpr", "register", "reinterpret_cast", "requires", "restrict", "return", "short",
    "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "synchronized", "template", "this",
    "thread_local", "throw", "transaction_safe", "transaction_safe_dynamic", "true", "try", "typedef", "typeid",
    "typename", "typeof", "typeof_unqual", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
    "while", "xor", "xor_eq",
    // lower-case macros: g++'s GNU modes, the C library's
    "linux", "unix", "i386", "alloca", "assert", "assert_perror", "errno", "math_errhandling", "offsetof", "stdin",
    "stdout", "stderr", "va_arg", "va_copy", "va_end", "va_start", "st_atime", "st_ctime", "st_mtime", "sched_priority",
    "strdupa", "strndupa", "issubnormal", "isascii", "toascii", "timeradd", "timerclear", "timercmp", "timerisset",
    "timersub", "pthread_cleanup_pop", "pthread_cleanup_pop_restore_np", "pthread_cleanup_push",
    "pthread_cleanup_push_defer_np", "be16toh", "be32toh", "be64toh", "le16toh", "le32toh", "le64toh", "htobe16", "htobe32",
    "htobe64", "htole16", "htole32", "htole64", "isalnum_l", "isalpha_l", "isascii_l", "isblank_l", "iscntrl_l",
    "isdigit_l", "isgraph_l", "islower_l", "isprint_l", "ispunct_l", "isspace_l", "isupper_l", "isxdigit_l", "toascii_l",
    // what an entry point's body names unqualified
    "stream", "handle", "comm", "workspace", "memory", "overlap", "std", "dim3", "int8_t", "int16_t", "int32_t", "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t"};

constexpr std::string_view kNotParameterStems[] = {"tg_", "thunder_gen", "cuda", "nccl"};

bool lower_snake_case(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z' || name.find("__") != std::string_view::npos) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

void append_hex_escape(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
  out += buf;
}

bool printable_ascii(unsigned char c) { return c >= 0x20 && c < 0x7f; }

}  // namespace

bool usable_as_parameter(std::string_view name) {
  if (!lower_snake_case(name) || name == "tg") return false;
  for (std::string_view word : kNotParameters)
    if (name == word) return false;
  for (std::string_view stem : kNotParameterStems)
    if (name.starts_with(stem)) return false;
  for (Role role : {Role::global, Role::storage_view})  // (the roles an entry point's body names values in)
    if (name.starts_with(role_prefix(role))) return false;
  return true;
}

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
    // A run that needs no escape goes in whole (most comments are all run).
    size_t run = i;
    while (run < text.size() && printable_ascii(static_cast<unsigned char>(text[run])) && text[run] != '\\' && text[run] != '*') ++run;
    if (run > i) {
      out.append(text, i, run - i);
      i = run - 1;
      continue;
    }
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

namespace {

// A place a code line may break: the space at `at`, inside `depth` brackets, `looseness` the
// separator's rank (0: a for's `;`, the loosest, to 6: `+` and `-`).
struct LineBreak {
  size_t at;
  int depth, looseness;
};

// The rank of a break at the space `i` of `code` (which holds no literal or comment), if any.
std::optional<int> break_rank(std::string_view code, size_t i, int depth) {
  const char before = i > 0 ? code[i - 1] : ' ';
  auto next_is = [&](std::string_view op) { return code.substr(i + 1, op.size()) == op && i + 1 + op.size() < code.size() && code[i + 1 + op.size()] == ' '; };
  if (before == ';' && depth > 0) return 0;
  if (before == '=' && i > 1 && std::string_view("=!<>").find(code[i - 2]) == std::string_view::npos) return 1;
  if (next_is("?") || (next_is(":") && before != ':')) return 2;
  if (next_is("||")) return 3;
  if (next_is("&&")) return 4;
  if (before == ',') return 5;
  if (next_is("+") || next_is("-")) return 6;
  return std::nullopt;
}

// Every break of a code line, in order, with its bracket depth from the line's start. A part of
// the line has the breaks of the line inside it, and the shallowest of them are its outermost.
std::vector<LineBreak> line_breaks(std::string_view code) {
  std::vector<LineBreak> out;
  int depth = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ' ' && i > 0 && code[i - 1] != ' ')
      if (std::optional<int> rank = break_rank(code, i, depth)) out.push_back({i, depth, *rank});
  }
  return out;
}

// Past this many nested breaks a part is written as it is (generated code nests a few levels).
constexpr int kMostWrapLevels = 64;

// One code line's wrapping: each part of it (code[from, to)) written after its indent, broken at
// its outermost breaks where it passes the width, its continuations indented 4 further.
class LineWrapper {
 public:
  LineWrapper(std::string_view code, size_t width, std::string& out) : code_(code), width_(width), out_(out), breaks_(line_breaks(code)) {}

  void write(size_t indent, size_t from, size_t to, int level) {
    const auto first = std::upper_bound(breaks_.begin(), breaks_.end(), from, [](size_t at, const LineBreak& b) { return at < b.at; });
    const auto last = std::lower_bound(first, breaks_.end(), to, [](const LineBreak& b, size_t at) { return b.at < at; });
    if (indent + (to - from) <= width_ || first == last || level >= kMostWrapLevels) {
      out_.append(indent, ' ').append(code_.substr(from, to - from)).push_back('\n');
      return;
    }
    const LineBreak outermost = *std::min_element(first, last, [](const LineBreak& a, const LineBreak& b) {
      return std::pair(a.depth, a.looseness) < std::pair(b.depth, b.looseness);
    });
    size_t start = from, end = from, line_indent = indent;  // the line being packed: code[start, end)
    auto piece = [&](size_t piece_end) {
      if (end > start && line_indent + (piece_end - start) > width_) {
        write(line_indent, start, end, level + 1);
        start = end + 1;  // (past the break's space)
        line_indent = indent + 4;
      }
      end = piece_end;
    };
    for (auto b = first; b != last; ++b)
      if (b->depth == outermost.depth && b->looseness == outermost.looseness) piece(b->at);
    piece(to);
    write(line_indent, start, end, level + 1);
  }

 private:
  std::string_view code_;
  size_t width_;
  std::string& out_;
  std::vector<LineBreak> breaks_;
};

void wrap_line(std::string_view line, size_t width, std::string& out) {
  const size_t indent = std::min(line.find_first_not_of(' '), line.size());
  std::string_view code = line.substr(indent);
  // (What could hide a `//` or a break that is not between tokens: literals, block comments,
  // directives, a backslash continuing a line.)
  const bool opaque = code.find_first_of("\"'\\") != std::string_view::npos || code.find("/*") != std::string_view::npos ||
                      code.starts_with("#") || code.starts_with("//");
  if (opaque) {
    out.append(line).push_back('\n');
    return;
  }
  if (const size_t note = code.find("  // "); note != std::string_view::npos) {
    out.append(indent, ' ').append(code.substr(note + 2)).push_back('\n');  // (a trailing comment, on the line above)
    code = code.substr(0, note);
  }
  code = code.substr(0, code.find_last_not_of(' ') + 1);
  if (code.empty() || code.find("//") != std::string_view::npos) {
    out.append(indent, ' ').append(code).push_back('\n');
    return;
  }
  LineWrapper(code, width, out).write(indent, 0, code.size(), 0);
}

}  // namespace

std::string wrap_code_lines(std::string_view text, size_t width) {
  std::string out;
  out.reserve(text.size() + text.size() / 32);
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (line.size() <= width) out.append(line).push_back('\n');
    else wrap_line(line, width, out);
    if (end == std::string_view::npos) {
      out.pop_back();  // (no newline was there)
      break;
    }
    text.remove_prefix(end + 1);
  }
  return out;
}

}  // namespace tg
