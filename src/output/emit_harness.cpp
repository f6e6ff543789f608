#include "output/emit_harness.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "ir/dtype.h"
#include "codegen/size_code.h"
#include "lower/rng.h"
#include "ops/printer.h"
#include "output/emit_sizes.h"
#include "support/generated_text.h"

namespace tg {

namespace {
// Scalar inputs that seed or offset a Philox draw anywhere in the trace (decompositions and
// custom bodies included), so the harness's --philox-seed / --philox-offset can set them.
std::map<ValueId, std::string> philox_roles(const Trace& t) {
  std::map<ValueId, std::string> roles;
  for_each_nested_op(t.ops, [&](const Op& op) {
    if (size_t seed = philox_seed_param(op)) {
      if (op.arg(seed).is_value()) roles[op.arg(seed).value] = "philox_seed";
      if (op.arg(seed + 1).is_value()) roles[op.arg(seed + 1).value] = "philox_offset";
    }
  });
  return roles;
}

// {2, 5, 64}; in a folder taking its sizes at run time, {size_B, size_T, 64}.
std::string shape_init(const Shape& s, SizeCode& sizes) {
  std::string out = "{";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + sizes.of(s[i]);
  return out + "}";
}

// Hands out file stems that no other stem of the folder equals, even on a file system that
// ignores case, and that fit in a file name (255 bytes on common file systems, with ".npy").
class FileStems {
 public:
  std::string claim(const std::string& wanted) {
    if (wanted.size() <= kMaxStem && taken_.insert(folded(wanted)).second) return wanted;
    const std::string head = wanted.substr(0, kMaxStem - 9);
    for (uint64_t& salt = next_salt_[wanted];; ++salt) {  // (an output listed 10,000 times: each try once)
      std::string stem = head + "-" + hex8(fnv1a(wanted + "#" + std::to_string(salt)));
      if (taken_.insert(folded(stem)).second) return stem;
    }
  }

 private:
  static constexpr size_t kMaxStem = 200;
  std::set<std::string> taken_;
  std::map<std::string, uint64_t> next_salt_;  // per wanted stem: the salt to try next

  static std::string folded(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  static uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    return h;
  }
  static std::string hex8(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
    return buf;
  }
};
}  // namespace

HarnessFiles harness_files(const Trace& t, bool training) {
  HarnessFiles files;
  FileStems stems;
  std::map<ValueId, std::string> file_of;  // values written once: an output that is an input shares its file
  for (ValueId id : t.inputs) file_of[id] = files.inputs.emplace_back(stems.claim(t.value(id).name));
  for (ValueId id : t.outputs) {
    auto [at, fresh] = file_of.try_emplace(id);
    if (fresh) at->second = stems.claim(t.value(id).name);
    files.outputs.push_back(at->second);
  }
  if (!training) return files;
  for (ValueId id : t.outputs) files.cotangents.push_back(stems.claim("cotangent_" + t.value(id).name));
  for (ValueId id : t.inputs) files.gradients.push_back(t.value(id).requires_grad ? stems.claim("grad_" + t.value(id).name) : "");
  return files;
}

namespace {

// The argument a harness passes for parameter `p`, held in buffer `var`: a scalar's value, or its
// device memory as the header's C type.
std::string argument(const EntryParam& p, const std::string& var) {
  if (p.c_type.back() != '*') return var + ".scalar<" + p.c_type + ">()";
  return "static_cast<" + p.c_type + ">(" + var + ".device)";
}

// ::entry(arguments..., workspace, stream), its status the step's (a buffer's name could hide it).
std::string call(const EntryPoint& entry, const std::vector<std::string>& vars) {
  std::string s = "return ::" + entry.name + "(";
  for (size_t i = 0; i < vars.size(); ++i) s += argument(entry.params.at(i), vars[i]) + ", ";
  if (entry.takes_comm) s += "rank.comm, ";
  if (entry.takes_sizes) s += "tg_sizes.data(), ";
  return s + "workspace, static_cast<thunder_gen_stream>(stream));";
}

// Declares the harness's buffers (tg::Buffer& <var> = h.input(...), h.output, h.internal) and
// collects, for each entry point, the buffers its parameters are, in their order.
class Buffers {
 public:
  Buffers(std::ostream& out, const Trace& t, const HarnessFiles& files, SizeCode& sizes)
      : out_(out), t_(t), files_(files), sizes_(sizes), roles_(philox_roles(t)) {}

  std::vector<std::string> forward_vars, backward_vars;

  // The trace's inputs and outputs: the forward's parameters.
  void declare_inputs_and_outputs() {
    for (size_t k = 0; k < t_.inputs.size(); ++k) {
      const Value& v = t_.value(t_.inputs[k]);
      input_var_.push_back(ident(Role::harness_input, v.name));
      declare(input_var_.back(), "input", files_.inputs[k], v, t_.inputs[k]);
      forward_vars.push_back(input_var_.back());
    }
    for (size_t k = 0; k < t_.outputs.size(); ++k) {
      output_var_.push_back("out" + std::to_string(k));
      declare(output_var_.back(), "output", files_.outputs[k], t_.value(t_.outputs[k]));
      forward_vars.push_back(output_var_.back());
    }
  }

  // What the forward saves (intermediates are parameters of both), the cotangents and the
  // gradients: the backward's parameters.
  void declare_training(const Partition& training) {
    const Trace& b = training.backward;
    out_ << "  // Saved for the backward: inputs and outputs are passed again, the rest live in these.\n";
    for (const SavedValue& s : training.saved) {
      const Value& v = b.value(s.value);
      switch (s.kind) {
        case SavedValue::Kind::input: backward_vars.push_back(input_var_.at(s.index)); break;
        case SavedValue::Kind::output: backward_vars.push_back(output_var_.at(s.index)); break;
        case SavedValue::Kind::intermediate: {
          std::string var = "saved" + std::to_string(s.index);
          out_ << "  tg::Buffer& " << var << " = h.internal(" << cpp_string(v.name) << ", \"" << dtype_name(v.dtype) << "\", " << shape_init(v.shape, sizes_)
               << (v.bit_packed ? ", tg::Harness::Storage::bits" : "") << ");\n";
          forward_vars.push_back(var);
          backward_vars.push_back(var);
          break;
        }
      }
    }
    for (size_t k = 0; k < t_.outputs.size(); ++k) {
      std::string var = "cot" + std::to_string(k);
      declare(var, "input", files_.cotangents[k], t_.value(t_.outputs[k]));
      backward_vars.push_back(var);
    }
    size_t k = 0;
    for (size_t i = 0; i < t_.inputs.size(); ++i) {
      const Value& v = t_.value(t_.inputs[i]);
      if (!v.requires_grad) continue;
      std::string var = "grad" + std::to_string(k++);
      declare(var, "output", files_.gradients[i], v);
      backward_vars.push_back(var);
    }
  }

 private:
  std::ostream& out_;
  const Trace& t_;
  const HarnessFiles& files_;
  SizeCode& sizes_;
  std::map<ValueId, std::string> roles_;
  std::vector<std::string> input_var_, output_var_;  // by trace input and output position

  void declare(const std::string& var, const char* kind, const std::string& file_name, const Value& v, ValueId id = kNoValue) {
    // Only trace inputs (id given) have a Philox role or an "init" range.
    const bool role = id != kNoValue && roles_.count(id), init = id != kNoValue && v.init_uniform;
    out_ << "  tg::Buffer& " << var << " = h." << kind << "(" << cpp_string(file_name) << ", \"" << dtype_name(v.dtype) << "\", " << shape_init(v.shape, sizes_);
    if (v.is_scalar || role || init) out_ << (v.is_scalar ? ", true" : ", false");
    if (role || init) out_ << ", tg::Harness::Role::" << (role ? roles_[id] : "data");
    if (init) out_ << ", " << print_number(v.init_uniform->first) << ", " << print_number(v.init_uniform->second);
    out_ << ");\n";
  }
};

// The size a harness draws inputs at by default: the smallest allowed from 2 up (1 where that is
// all the range allows).
int64_t default_draw_size(const SymbolDecl& d) { return d.smallest_from(2).value_or(d.largest()); }

// A folder taking its sizes at run time: the call's sizes bound from the inputs' shapes (their .npy
// headers, or drawn at --sizes, by default each symbol's smallest from 2 up), as `tg_sizes`.
void bind_sizes_first(std::ostream& out, const SizeBinding& sizes, const Trace& t, const HarnessFiles& files) {
  out << comment_line("The trace's sizes are taken at run time: bound from the inputs' shapes (" + sizes.function + "); inputs not read", "  ");
  out << comment_line("are drawn at --sizes NAME=N,..., by default each symbol's smallest size from 2 up.", "  ");
  std::string names, drawn_at;
  for (size_t k = 0; k < sizes.symbols.size(); ++k) {
    names += (k ? ", " : "") + cpp_string(sizes.symbols[k].name);
    drawn_at += (k ? ", " : "") + std::to_string(default_draw_size(sizes.symbols[k]));
  }
  out << "  const std::vector<int64_t> tg_sizes = h.bind_sizes({" << names << "}, {" << drawn_at << "}, {\n";
  for (const SizeBinding::Input& in : sizes.inputs) {
    size_t k = 0;
    while (t.value(t.inputs[k]).name != in.name) ++k;
    auto symbol_code = [&](const std::string& name) {
      const auto at = std::find_if(sizes.symbols.begin(), sizes.symbols.end(), [&](const SymbolDecl& s) { return s.name == name; });
      return "s[" + std::to_string(at - sizes.symbols.begin()) + "]";
    };
    std::string dims;
    bool arithmetic = false;
    for (const SizeExpr& d : in.sizes) {
      std::string code = d.constant()                ? std::to_string(*d.constant())
                         : !d.lone_symbol().empty() ? symbol_code(d.lone_symbol())
                                                    : "int64_t(a.narrow(" + d.code("a", symbol_code) + "))";
      arithmetic = arithmetic || code.starts_with("int64_t(");
      dims += (dims.empty() ? "" : ", ") + code;
    }
    // (A shape past int64 at the sizes given is {-1}: Harness::bind_shapes says so.)
    out << "      {" << cpp_string(files.inputs[k]) << ", [](const int64_t* s) { "
        << (arithmetic ? "tg::SizeArith a; std::vector<int64_t> d{" + dims + "}; return a.overflowed() ? std::vector<int64_t>{-1} : d;"
                       : "return std::vector<int64_t>{" + dims + "};")
        << " }},\n";
  }
  out << "  }, [](const int64_t* const* dims, const int* ranks, int64_t* sizes, char* message, size_t bytes) {\n";
  out << "    return ::" << sizes.function << "_array(dims, ranks, sizes, message, bytes);\n  });\n";
}

// A symbolic trace's folder: the inputs' shapes (their .npy headers, or the folder's sizes) are
// bound by symbol before any is read, so a size the folder does not run at is said by symbol.
void check_sizes_first(std::ostream& out, const SizeBinding& sizes, const Trace& t, const HarnessFiles& files) {
  if (sizes.at_run_time) return bind_sizes_first(out, sizes, t, files);
  out << comment_line("The trace's sizes are symbolic: the inputs' shapes are bound by symbol first (" + sizes.function + ").", "  ");
  SizeCode static_sizes(t.symbols, false);
  out << "  h.check_sizes({";
  for (size_t i = 0; i < sizes.inputs.size(); ++i) {
    size_t k = 0;
    while (t.value(t.inputs[k]).name != sizes.inputs[i].name) ++k;
    out << (i ? ", " : "") << "{" << cpp_string(files.inputs[k]) << ", " << shape_init(t.value(t.inputs[k]).shape, static_sizes) << "}";
  }
  out << "}, [](const int64_t* const* dims, const int* ranks, char* message, size_t bytes) {\n";
  out << "    return " << bind_sizes_call(sizes, "dims", "ranks") << ";\n  });\n";
}

}  // namespace

std::string emit_harness(const Trace& t, const Partition* training, const EntryPoint& forward, const EntryPoint* backward,
                         const std::string& input_file) {
  std::ostringstream out;
  out << comment_line("harness.cpp: generated by thunder-gen " + std::string(THUNDER_GEN_VERSION) + " from " + input_file + " (trace \"" + t.name +
                      "\"). Do not edit.");
  out << comment_line("Runs " + forward.name + (backward ? " then " + backward->name : "") +
                      " on inputs from --inputs DIR (or seeded draws) and writes .npy files to --outputs DIR.");
  const bool distributed = forward.takes_comm;
  out << "#include \"tg_harness.h\"\n" << (distributed ? "#include \"tg_ranks.h\"\n" : "") << (forward.takes_sizes ? "#include \"tg_sizes.h\"\n" : "")
      << "#include " << cpp_string(forward.header) << "\n\n";
  if (distributed) {
    out << comment_line("One rank of the job (tg_ranks.h starts them: threads under emulation, processes as torchrun starts them on GPUs);");
    out << comment_line("it reads --inputs DIR/rank<r>/ and writes --outputs DIR/rank<r>/.");
    out << "static int run_rank(int argc, char** argv, const tg::Rank& rank) {\n";
    out << "  tg::Harness h(argc, argv, " << cpp_string(t.name) << ", rank.rank);\n";
  } else {
    out << "int main(int argc, char** argv) {\n";
    out << "  tg::Harness h(argc, argv, " << cpp_string(t.name) << ");\n";
  }
  const HarnessFiles files = harness_files(t, training != nullptr);
  if (const std::optional<SizeBinding> sizes = size_binding(t, forward, t.name)) check_sizes_first(out, *sizes, t, files);
  SizeCode sizes(t.symbols, t.sizes_at_run_time);
  std::ostringstream buffer_lines;  // after the sizes they name
  Buffers buffers(buffer_lines, t, files, sizes);
  buffers.declare_inputs_and_outputs();
  if (training) buffers.declare_training(*training);
  out << sizes.declarations("(std::fprintf(stderr, \"%s: the shapes at these sizes overflow int64\\n\", " + cpp_string(t.name) + "), 1)")
      << buffer_lines.str();
  out << "  void* workspace = h.workspace(::" << t.name << "_workspace_bytes(" << (sizes.active() ? "tg_sizes.data()" : "") << "));  // null unless --workspace\n";
  out << "  return h.run({\n";
  out << "      {\"forward\", [&](tg::Stream stream) { " << call(forward, buffers.forward_vars) << " }},\n";
  if (backward) out << "      {\"backward\", [&](tg::Stream stream) { " << call(*backward, buffers.backward_vars) << " }},\n";
  out << "  }, ::" << t.name << "_status_string);\n}\n";
  if (distributed) out << "\nint main(int argc, char** argv) { return tg::run_ranks(argc, argv, " << cpp_string(t.name) << ", run_rank); }\n";
  return out.str();
}

}  // namespace tg
