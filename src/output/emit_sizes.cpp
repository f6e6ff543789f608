#include "output/emit_sizes.h"

#include <sstream>

#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

namespace {

size_t symbol_index(const SizeBinding& b, const std::string& name) {
  size_t k = 0;
  while (k < b.symbols.size() && b.symbols[k].name != name) ++k;
  return k;
}

// "[B, T, 64]"
std::string size_list_text(const std::vector<SizeExpr>& sizes) {
  std::string out = "[";
  for (size_t d = 0; d < sizes.size(); ++d) out += (d ? ", " : "") + sizes[d].text();
  return out + "]";
}

// A folder that takes its sizes at run time binds each symbol from an input's dim that is the
// symbol alone; one that no input has alone (only 2*T, say) leaves it nothing to bind from.
void require_bound_alone(const SizeBinding& b) {
  for (const SymbolDecl& s : b.symbols) {
    bool bound = false;
    for (const SizeBinding::Input& in : b.inputs)
      for (const SizeExpr& size : in.sizes) bound = bound || size.lone_symbol() == s.name;
    if (!bound)
      throw UserError("/symbols/" + s.name, "no input has a dim that is " + s.name +
                                                                     " alone, so a call's size of it cannot be bound from the inputs' shapes; name its size with --specialize");
  }
}

const char* kOutParams = "int64_t* sizes, char* message, size_t message_bytes)";

std::string prototype(const SizeBinding& b) {
  std::string params;
  for (const SizeBinding::Input& in : b.inputs) params += "const int64_t* " + in.param + "_dims, int " + in.param + "_rank, ";
  return "int " + b.function + "(" + params + kOutParams;
}

std::string array_prototype(const SizeBinding& b) { return "int " + b.function + "_array(const int64_t* const* dims, const int* ranks, " + kOutParams; }

// The checks of one input's dims that are not a symbol alone: constants, then expressions.
void check_dims(std::ostream& out, const SizeBinding& b, size_t i) {
  const SizeBinding::Input& in = b.inputs[i];
  const std::string shape = "in[" + std::to_string(i) + "]";
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    const SizeExpr& size = in.sizes[d];
    if (!size.lone_symbol().empty()) continue;
    const std::string where = shape + ", " + std::to_string(d);
    if (const std::optional<int64_t> n = size.constant()) {
      out << "  if (!b.expect(" << where << ", " << size.code("a", {}) << ")) return b.status();\n";
      continue;
    }
    std::string named;
    for (const std::string& name : size.symbols()) named += (named.empty() ? "" : ", ") + std::to_string(symbol_index(b, name));
    out << "  {\n";
    out << comment_line(in.name + " dim " + std::to_string(d) + ": " + size.text(), "    ");
    out << "    tg::SizeArith a;\n    const int named[] = {" << named << "};\n";
    out << "    const tg::SizeArith::Wide want = a.narrow("
        << size.code("a", [&](const std::string& name) { return "b.value(" + std::to_string(symbol_index(b, name)) + ")"; }) << ");\n";
    out << "    if (!b.expect(" << where << ", want, a, " << cpp_string(size.text()) << ", named, " << size.symbols().size() << ")) return b.status();\n";
    out << "  }\n";
  }
}

}  // namespace

std::optional<SizeBinding> size_binding(const Trace& t, const EntryPoint& forward, const std::string& trace_name) {
  if (t.input_sizes.empty()) return std::nullopt;
  SizeBinding b{trace_name + "_bind_sizes", {}, {}, t.specialized_at, t.sizes_at_run_time};
  for (const auto& [name, decl] : t.symbols.all()) b.symbols.push_back(decl);
  for (const EntryParam& p : forward.params) {
    if (p.kind != "input") continue;
    if (auto sizes = t.input_sizes.find(p.value_name); sizes != t.input_sizes.end()) b.inputs.push_back({p.value_name, p.name, sizes->second});
  }
  if (b.at_run_time) require_bound_alone(b);
  return b;
}

std::string bind_sizes_declaration(const SizeBinding& b) {
  std::ostringstream out;
  out << "#ifndef THUNDER_GEN_BAD_SIZES\n";
  out << comment_line("The inputs' shapes do not fit the symbols the trace sizes them with: <trace>_bind_sizes says how.");
  out << "#define THUNDER_GEN_BAD_SIZES 9\n#endif\n\n";
  out << comment_line(b.function + ": binds each symbol from the dims of the inputs sized with it and checks them: between the inputs,");
  out << comment_line(b.at_run_time ? "against each symbol's range, then every other dim against its size. This folder runs at every size in range."
                                    : "against each symbol's range, every other dim against its size, then against the sizes this folder runs at.");
  for (const SizeBinding::Input& in : b.inputs)
    out << comment_line("  " + in.param + "_dims, " + in.param + "_rank: the dims of input " + in.name + ", " + size_list_text(in.sizes));
  out << comment_line("  sizes: NULL, or " + std::to_string(b.symbols.size()) + " int64_t, written on success:");
  for (size_t k = 0; k < b.symbols.size(); ++k)
    out << comment_line("    sizes[" + std::to_string(k) + "]: " + b.symbols[k].name + ", " + b.symbols[k].range_text());
  out << comment_line("  message: NULL, or message_bytes bytes for what is wrong, naming the input, dim, symbol and range (cut to fit)");
  out << comment_line("Returns THUNDER_GEN_SUCCESS, THUNDER_GEN_BAD_SIZES, or THUNDER_GEN_NULL_POINTER for NULL dims of a rank above 0.");
  out << prototype(b) << ";\n";
  out << comment_line("The same, with the inputs' dims and ranks in two arrays, in the order above (dims[0], ranks[0]: input " +
                      b.inputs.front().name + ").");
  out << array_prototype(b) << ";\n";
  return out.str();
}

std::string bind_sizes_definition(const SizeBinding& b) {
  std::ostringstream out;
  out << "\n#ifndef __CUDACC_RTC__\n#include \"tg_sizes.h\"\n";
  out << comment_line("The sizes of a call, bound from its inputs' shapes (tg_sizes.h says what each check does and says).");
  out << "extern \"C\" " << array_prototype(b) << " {\n";
  out << "  if (!dims || !ranks) {\n";
  out << "    tg::SizeMessage(message, message_bytes).add(\"the dims or ranks array is a null pointer\");\n";
  out << "    return tg::kNullPointer;\n  }\n";
  out << "  static const tg::SizeSymbol symbols[] = {";
  for (size_t k = 0; k < b.symbols.size(); ++k) {
    const SymbolDecl& s = b.symbols[k];
    out << (k ? ", " : "") << "{" << cpp_string(s.name) << ", " << s.min << ", " << s.max << ", " << s.multiple_of << ", "
        << (b.at_run_time ? 0 : b.specialized_at.at(s.name)) << "}";
  }
  out << "};\n  tg::BoundSize bound[" << b.symbols.size() << "];\n";
  out << "  tg::SizeBinder b(symbols, bound, " << b.symbols.size() << ", message, message_bytes);\n";
  out << "  const tg::CallShape in[] = {";
  for (size_t i = 0; i < b.inputs.size(); ++i)
    out << (i ? ", " : "") << "{" << cpp_string(b.inputs[i].name) << ", dims[" << i << "], ranks[" << i << "]}";
  out << "};\n";
  for (size_t i = 0; i < b.inputs.size(); ++i)
    out << "  if (!b.has_rank(in[" << i << "], " << b.inputs[i].sizes.size() << ", " << cpp_string(size_list_text(b.inputs[i].sizes))
        << ")) return b.status();\n";
  for (size_t i = 0; i < b.inputs.size(); ++i)
    for (size_t d = 0; d < b.inputs[i].sizes.size(); ++d)
      if (const std::string name = b.inputs[i].sizes[d].lone_symbol(); !name.empty())
        out << "  if (!b.bind(" << symbol_index(b, name) << ", in[" << i << "], " << d << ")) return b.status();  // " << name << "\n";
  out << "  if (!b.in_range()) return b.status();\n";
  for (size_t i = 0; i < b.inputs.size(); ++i) check_dims(out, b, i);
  if (!b.at_run_time) out << "  if (!b.at_specialization()) return b.status();\n";
  out << "  if (sizes)\n    for (int k = 0; k < " << b.symbols.size() << "; ++k) sizes[k] = b.value(k);\n";
  out << "  return tg::kOk;\n}\n";
  out << "extern \"C\" " << prototype(b) << " {\n";
  std::string dims, ranks;
  for (const SizeBinding::Input& in : b.inputs) {
    dims += (dims.empty() ? "" : ", ") + in.param + "_dims";
    ranks += (ranks.empty() ? "" : ", ") + in.param + "_rank";
  }
  out << "  const int64_t* const dims[] = {" << dims << "};\n  const int ranks[] = {" << ranks << "};\n";
  out << "  return " << b.function << "_array(dims, ranks, sizes, message, message_bytes);\n}\n";
  out << "#endif  // __CUDACC_RTC__\n";
  return out.str();
}

std::string bind_sizes_call(const SizeBinding& b, const std::string& dims, const std::string& ranks) {
  return "::" + b.function + "_array(" + dims + ", " + ranks + ", nullptr, message, bytes)";
}

}  // namespace tg
