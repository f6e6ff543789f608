#include "output/manifest.h"

#include <variant>

#include "ir/dtype.h"
#include "ops/distributed.h"
#include "output/emit_harness.h"
#include "output/emit_sizes.h"
#include "output/json_writer.h"

namespace tg {

struct ManifestWriter::State {
  JsonWriter m;
  std::vector<std::string> sizes;  // sizes_lines()
};

namespace {

// A value's declaration, as an object left open for more members.
void open_declaration(JsonWriter& m, const Value& v) {
  m.open('{').member("name", v.name);
  if (v.is_scalar) {
    m.member("scalar", dtype_name(v.dtype));
  } else {
    m.array("shape", v.shape).member("dtype", dtype_name(v.dtype));
  }
}

// One dim of "sizes": a number, or an expression's text.
using SizeEntry = std::variant<int64_t, std::string>;

// Extension: "sizes", a shape as expressions over the symbols where it depends on them; recorded
// in `lines` as "<where> <name>: [...]" too.
void write_sizes(JsonWriter& m, const std::vector<SizeEntry>& sizes, const std::string& where, std::vector<std::string>& lines) {
  m.key("sizes").open('[');
  std::string line = where + ": [";
  for (const SizeEntry& s : sizes) {
    if (line.back() != '[') line += ", ";
    if (const int64_t* n = std::get_if<int64_t>(&s)) {
      m.value(*n);
      line += std::to_string(*n);
    } else {
      m.value(std::get<std::string>(s));
      line += '"' + std::get<std::string>(s) + '"';  // (symbols' names and operators: nothing to escape)
    }
  }
  m.close(']');
  lines.push_back(line + "]");
}

std::vector<SizeEntry> size_entries(const Shape& shape) {
  std::vector<SizeEntry> entries;
  for (const Dim& d : shape) entries.push_back(d.symbolic() ? SizeEntry(d.expr()->text()) : SizeEntry(int64_t(d)));
  return entries;
}

std::vector<SizeEntry> size_entries(const std::vector<SizeExpr>& sizes) {
  std::vector<SizeEntry> entries;
  for (const SizeExpr& s : sizes) entries.push_back(s.constant() ? SizeEntry(*s.constant()) : SizeEntry(s.text()));
  return entries;
}

// "inputs" and "outputs": the trace's, with (extensions) each one's harness file, its gradient's
// and its cotangent's.
void write_inputs_and_outputs(JsonWriter& m, const Trace& t, const Partition* training, std::vector<std::string>& sizes_lines) {
  const Trace& values = training ? training->backward : t;  // (joint-trace values, as the saved ones)
  const HarnessFiles files = harness_files(t, training != nullptr);
  m.key("inputs").open('[');
  for (size_t k = 0; k < t.inputs.size(); ++k) {
    open_declaration(m, values.value(t.inputs[k]));
    if (!t.value(t.inputs[k]).is_scalar) m.member("requires_grad", t.value(t.inputs[k]).requires_grad);
    if (k < t.input_origins.size()) m.member("role", t.input_origins[k].role).member("fqn", t.input_origins[k].fqn);
    // Extension: a symbolic trace's input, its sizes as expressions (its "shape" is at specialized_at).
    const std::string& name = values.value(t.inputs[k]).name;
    if (auto sizes = t.input_sizes.find(name); sizes != t.input_sizes.end())
      write_sizes(m, size_entries(sizes->second), "input " + name, sizes_lines);
    m.member("file", files.inputs[k] + ".npy");
    if (training && !files.gradients[k].empty()) m.member("grad_file", files.gradients[k] + ".npy");
    m.close('}');
  }
  m.close(']').key("outputs").open('[');
  for (size_t k = 0; k < t.outputs.size(); ++k) {
    open_declaration(m, values.value(t.outputs[k]));
    if (k < t.output_origins.size()) m.member("role", t.output_origins[k].role).member("fqn", t.output_origins[k].fqn);
    m.member("file", files.outputs[k] + ".npy");
    if (training) m.member("cotangent_file", files.cotangents[k] + ".npy");
    m.close('}');
  }
  m.close(']');
}

// "saved_for_backward" (tensors) and "saved_scalars": each the declaration, kind, and for a
// tensor what it occupies; then (an extension) "saved_bytes", the tensors' total, and for a
// symbolic trace the total as an expression over its symbols and the sizes the plan weighed.
void write_saved(JsonWriter& m, const Partition* training) {
  static const char* kinds[] = {"input", "output", "intermediate"};
  int64_t saved_bytes = 0;
  std::optional<SizeExpr> saved_expr = SizeExpr(0);
  const bool symbolic = training && !training->forward.symbols.empty();
  for (bool scalars : {false, true}) {
    m.key(scalars ? "saved_scalars" : "saved_for_backward").open('[');
    if (training)
      for (const SavedValue& s : training->saved) {
        const Value& v = training->backward.value(s.value);
        if (v.is_scalar != scalars) continue;
        open_declaration(m, v);
        m.member("kind", kinds[int(s.kind)]);
        if (!scalars) {
          saved_bytes += stored_bytes(v);
          if (symbolic) saved_expr = add_known(saved_expr, stored_bytes_expr(v, training->forward.symbols));
          m.member("bytes", stored_bytes(v)).member("storage", v.bit_packed ? "bitmask" : "dense");
        }
        m.member("reason", s.reason).close('}');
      }
    m.close(']');
  }
  m.member("saved_bytes", saved_bytes);
  if (!symbolic) return;
  if (saved_expr) m.member("saved_bytes_expression", saved_expr->text());  // (not when a saved tensor's is unknown)
  m.key("plan_at").open('{');
  for (const auto& [name, size] : training->plan_at) m.member(name, size);
  m.close('}');
}

// "communication": the world size, the bytes a rank's collectives move per step (forward,
// backward, both; NCCL's count of each call's size) and each collective.
void write_communication(JsonWriter& m, const Trace& t, const Partition* training) {
  const std::vector<CollectiveCall> calls = training ? training->communication : collectives_of(t, "forward");
  int64_t forward = 0, backward = 0;
  for (const CollectiveCall& c : calls) (c.pass == "forward" ? forward : backward) += c.bytes;
  m.key("communication").open('{').member("world_size", t.world_size).member("forward_bytes", forward).member("backward_bytes", backward);
  m.member("bytes_per_step", forward + backward).key("collectives").open('[');
  for (const CollectiveCall& c : calls)
    m.open('{').member("pass", c.pass).member("op", c.op).member("value", c.value).member("bytes", c.bytes).close('}');
  m.close(']').close('}');
}

// Extension: the public header and each entry point's parameters in order, for programs that
// call them (the PyTorch module): name, kind (input, output, saved, cotangent, gradient), the
// trace input or output it is of, the value, its type and how it is stored.
void write_entry_points(JsonWriter& m, const Trace& t, const Partition* training, const EntryPoint& forward, const EntryPoint* backward,
                        std::vector<std::string>& sizes_lines) {
  m.member("header", forward.header).member("workspace_bytes_function", t.name + "_workspace_bytes");
  // Extension: a symbolic trace's size binder, which takes the dims of the inputs with "sizes", in order.
  if (const std::optional<SizeBinding> sizes = size_binding(t, forward, t.name)) m.member("bind_sizes_function", sizes->function);
  m.key("entry_points").open('{');
  for (const EntryPoint* e : {&forward, backward}) {
    if (!e) continue;
    const Trace& run = e == &forward ? (training ? training->forward : t) : training->backward;
    m.key(e == &forward ? "forward" : "backward").open('{').member("name", e->name).key("params").open('[');
    for (const EntryParam& p : e->params) {
      const Value& v = run.value(p.value);
      m.open('{').member("name", p.name).member("kind", p.kind).member("of", p.of).member("value", p.value_name);
      if (v.is_scalar) m.member("scalar", dtype_name(v.dtype));
      else m.array("shape", v.shape).member("dtype", dtype_name(v.dtype)).member("storage", v.bit_packed ? "bitmask" : "dense").member("bytes", stored_bytes(v));
      if (!v.is_scalar && e->takes_sizes)  // (the shape is at one size in range)
        write_sizes(m, size_entries(v.shape), std::string(e == &forward ? "forward" : "backward") + " parameter " + p.name, sizes_lines);
      m.member("writes", p.writes).close('}');
    }
    m.close(']');
    if (e->takes_comm) m.member("takes_comm", true);  // a thunder_gen_comm after the params (distributed traces)
    if (e->takes_sizes) m.member("takes_sizes", true);  // const int64_t* sizes before the workspace (sizes taken at run time)
    m.close('}');
  }
  m.close('}');
}

}  // namespace

ManifestWriter::ManifestWriter(const Trace& t, const Partition* training, const EntryPoint& forward, const EntryPoint* backward)
    : state_(std::make_unique<State>()) {
  JsonWriter& m = state_->m;
  m.open('{').member("trace", t.name).member("generator", std::string("thunder-gen ") + THUNDER_GEN_VERSION);
  // Extension: the size each symbol of a symbolic trace was specialised to (--specialize).
  if (!t.specialized_at.empty()) {
    m.key("specialized_at").open('{');
    for (const auto& [name, size] : t.specialized_at) m.member(name, size);
    m.close('}');
    // ... and (extension) each symbol's declaration, as the trace's "symbols" has it.
    m.key("symbols").open('{');
    for (const auto& [name, d] : t.symbols.all()) m.key(name).open('{').member("min", d.min).member("max", d.max).member("multiple_of", d.multiple_of).close('}');
    m.close('}');
  }
  write_inputs_and_outputs(m, t, training, state_->sizes);
  write_saved(m, training);
  // Extension, distributed traces: what one rank's step communicates, beside what it saves.
  if (t.world_size > 0) write_communication(m, t, training);
  write_entry_points(m, t, training, forward, backward, state_->sizes);
  // Extensions: the part of the saved bytes that is intermediates (what --activation-budget
  // bounds), and what the backward recomputes instead of reading.
  if (training) {
    m.member("saved_activation_bytes", training->activation_bytes).key("recomputed_in_backward").open('[');
    for (ValueId v : training->recomputed) m.value(training->backward.value(v).name);
    m.close(']');
  }
  m.key("kernels").open('[');
}

ManifestWriter::~ManifestWriter() = default;

void ManifestWriter::add_kernels(const std::string& file, const CudaFile& cuda) {
  JsonWriter& m = state_->m;
  for (const EmittedKernel& k : cuda.kernels) {
    m.open('{').member("name", k.name).member("file", file).array("ops", k.values).array("reads", k.reads).array("writes", k.writes);
    if (!k.library.empty()) m.member("library", k.library);
    if (!k.same_code_as.empty()) m.member("same_code_as", k.same_code_as);  // extension: the kernel function it launches
    if (!k.elementwise_twin.empty()) m.member("elementwise_twin", k.elementwise_twin);  // extension: ... or this one, element by element
    if (!k.streamed_twin.empty()) m.member("streamed_twin", k.streamed_twin);  // extension: ... or this one, for rows it cannot hold
    if (!k.view_of.empty()) m.member("view_of", k.view_of);  // extension: launches nothing, reads that value's memory
    m.close('}');
  }
}

const std::vector<std::string>& ManifestWriter::sizes_lines() const { return state_->sizes; }

std::string ManifestWriter::finish() {
  state_->m.close(']').close('}');
  return state_->m.take() + "\n";
}

}  // namespace tg
