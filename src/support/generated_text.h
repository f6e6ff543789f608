// How trace text enters generated files. A trace is untrusted input: its names, literals, tags
// and file name reach C++ sources, CMake, listings and file names only through these functions,
// one per context, so none of it can end a comment, a string or a line, or meet a keyword, a
// macro or a name the generated code uses itself.
#pragma once
#include <string>
#include <string_view>

namespace tg {

// ---- C++ identifiers -----------------------------------------------------------------------
// A C identifier ([A-Za-z_][A-Za-z0-9_]*): a trace's value names must be one, since generated
// code is made from them.
bool is_identifier(std::string_view s);

// Every identifier made from a trace value's name is a role prefix followed by the name
// (`g_x`: value x in global memory). The prefixes are lower-case stems ending in the only
// underscore they hold, so none is a prefix of another and two identifiers are equal only when
// role and name are; no keyword, no macro of the compilers' or the headers generated code
// includes (tests check their -dM lists), no runtime name and no fixed local (i, row, lane, d0,
// ...: none holds an underscore) starts with one. Global symbols start with the trace's name
// (<trace>_forward, <trace>_pointwise_<value>) and are referred to as ::name where a parameter
// could hide them.
enum class Role {
  global,       // g_: a value in device memory (a pointer), or a scalar parameter
  element,      // v_: a value's element in a kernel (numbered _1, _2 ... where one is live already)
  index,        // ix_: an index into a value computed by a shape op
  accumulator,  // acc_: a reduction's running value
  sum,          // sum_: var_mean's running sum, for the mean
  m2,           // m2_: var_mean's running sum of squared deviations
  deviation,    // dev_: var_mean's running sum of deviations from the mean (its rounding error)
  mean,         // mean_: var_mean's mean
  target,       // at_: the target index a cross-entropy picks
  max_and_sum,  // both_: an online max and sum of exponentials
  run_in,       // r_: a run of elements loaded with one access
  run_out,      // w_: a run of results stored with one access
  run_bits,     // b_: a run's bits of a packed mask
  cached,       // c_: a thread's elements of a row held in registers
  shared,       // s_: a block's partial sums (shared memory) or totals
  harness_input,  // in_: a harness's buffer of a trace input
  storage_view,   // p_: an entry point's argument seen as its storage type (tg::bfloat16, tg::PackedBits)
  element_function,  // element_: a pointwise kernel's element body, by the kernel's label
  result,            // out_: a result the element function hands back (a reference parameter)
  size,              // sz_: a symbol's size, a kernel's parameter (its code taking its sizes at run time)
  divider,           // dv_: a symbol's size as a tg::Divider (a kernel's parameter: division by it as a multiply)
  row_base,          // base_: where a row kernel's row starts in a value (its offset's part the row fixes)
  sine_cosine,       // sc_: the sine and cosine of one angle, computed together (tg::sincos)
};

// The role's prefix ("g_", "v_", ...).
std::string_view role_prefix(Role role);
// Whether `name` is a kernel's divider parameter (dv_<symbol>).
inline bool is_divider_parameter(std::string_view name) { return name.starts_with(role_prefix(Role::divider)); }
// Whether `name` is a kernel's size parameter (sz_<symbol>) or divider parameter.
inline bool is_size_parameter(std::string_view name) { return name.starts_with(role_prefix(Role::size)) || is_divider_parameter(name); }
// The symbol a size or divider parameter is of (T for sz_T and dv_T).
inline std::string_view parameter_symbol(std::string_view name) { return name.substr(name.find('_') + 1); }  // (a prefix's only underscore ends it)
// The C++ type of a size or divider parameter in a kernel whose index arithmetic is `index_type`.
inline std::string size_parameter_type(std::string_view name, const std::string& index_type) { return is_divider_parameter(name) ? "tg::Divider" : index_type; }
// The identifier of `name` (a trace identifier: [A-Za-z_][A-Za-z0-9_]*) in `role`.
std::string ident(Role role, std::string_view name);
// Whether the trace name `name` can be a host entry point's parameter as it is (`w_fc`, not
// `g_w_fc`), there and in the public header, in C and C++: only lower-case letters, digits and
// single underscores, starting with a letter; not a keyword of C or C++, not a lower-case macro
// of the C library or the compilers (tests/hostile_names.py checks the list against every macro
// each build mode sees), not a type or name the entry point's body uses unqualified (int64_t,
// stream, workspace, dim3, ...), and not starting with the prefix of a role the body names values
// in (g_, p_) or the runtime's stems (tg_, thunder_gen, cuda, nccl). Any other name is
// role-prefixed (Role::global). (Kernels keep the role prefixes: a value has several roles there.)
bool usable_as_parameter(std::string_view name);
// Every role, for tests.
inline constexpr Role kAllRoles[] = {Role::global,  Role::element, Role::index,     Role::accumulator, Role::sum,
                                     Role::m2,      Role::deviation, Role::mean, Role::target,    Role::max_and_sum, Role::run_in,
                                     Role::run_out, Role::run_bits, Role::cached,   Role::shared,      Role::harness_input,
                                     Role::storage_view, Role::element_function, Role::result, Role::size,
                                     Role::divider, Role::row_base, Role::sine_cosine};

// ---- comments ------------------------------------------------------------------------------
// `text` made safe inside a // comment (or a CMake # comment): control characters, DEL, bytes
// outside ASCII (invisible direction overrides among them) and backslashes are written as \xNN
// (a backslash as \x5c: one last on a line would join the next line to the comment), so the
// comment is one line that reads as the text does and hides nothing; "*/" is written "*\/".
std::string comment_text(std::string_view text);
// "// " + comment_text(text) + "\n", after `indent`.
std::string comment_line(std::string_view text, std::string_view indent = "");
// `text` as one line of plain ASCII for a terminal (diagnostics, reports): control characters and
// bytes outside ASCII written as \xNN, the rest as is.
std::string printable_line(std::string_view text);

// ---- long lines ----------------------------------------------------------------------------
// Generated C++ with each code line past `width` columns broken at its outermost separators (a
// for's `;`, an assignment's `=`, `? :`, `||`, `&&`, `,`, `+` and `-`, the loosest of the
// shallowest first), its continuations indented 4 past the line's own indent, so that a reviewer
// diffing generated sources reads a line at a time. Breaks replace a space between two tokens:
// the code means what it meant. A long line's trailing comment goes on a line of its own above
// it. Comment lines, preprocessor lines, lines holding a string or character literal, a block
// comment or a backslash, and lines nesting breaks past 64 levels are kept whole.
std::string wrap_code_lines(std::string_view text, size_t width = 100);

// ---- string literals -----------------------------------------------------------------------
// A C++ string literal ("...") holding `text`'s bytes: printable ASCII as it is, quotes and
// backslashes escaped, everything else as three-digit octal escapes (which, unlike \x, end
// where they should).
std::string cpp_string(std::string_view text);
// A quoted CMake argument holding `text`: \, " and $ escaped, control characters refused.
std::string cmake_string(std::string_view text);
// A Python string literal for listings ('...', as repr writes it).
std::string python_string(std::string_view text);

}  // namespace tg
