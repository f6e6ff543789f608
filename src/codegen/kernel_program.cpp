#include "codegen/kernel_program.h"

#include <set>
#include <unordered_map>

#include "codegen/lower_kernel.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

bool is_library_call(const Op& op) { return op.info->fusion == FusionClass::library; }
// A reshape between the kernels of a fused trace reads its input's memory with another shape:
// no launch, the same pointer (fuse.cpp places one only for a value already in memory).
bool is_view(const Op& op) { return op.info->kind == OpKind::reshape; }

std::string call_name(const Trace& fused, const Op& call) {
  const std::string kind = is_view(call) ? "view" : call.info->kind == OpKind::matmul ? "matmul" : std::string(call.symbol.substr(call.symbol.rfind('.') + 1));
  return fused.name + "_" + kind + "_" + fused.value(call.outs[0]).name;
}

namespace {

// The manifest's account of a kernel: what it computes, reads and writes.
EmittedKernel describe(const Trace& t, const Op& kernel) {
  EmittedKernel info;
  info.name = kernel.label;
  for (const Op& op : kernel.sub)
    for (ValueId v : op.outs) info.values.push_back(t.value(v).name);
  for (const Arg& a : kernel.args) info.reads.push_back(t.value(a.value).name);
  for (ValueId v : kernel.outs) info.writes.push_back(t.value(v).name);
  return info;
}

// Everything a kernel's code depends on but names: its parameters' types in order, then each op
// (symbol, literals, which value each operand is, its results' types), values numbered by first
// appearance. Kernels with equal signatures are the same computation on different buffers, so
// a file emits the code once and launches it for each (a stack of identical transformer blocks
// would otherwise repeat every kernel once per block).
class KernelSignature {
 public:
  explicit KernelSignature(const Trace& t) : t_(t), number_(t.values.size(), -1) {}

  std::string of(const Op& kernel) {
    s_.clear();
    for (const Arg& a : kernel.args) value(a.value);
    s_ += '|';
    for (ValueId v : kernel.outs) value(v);
    for (const Op& op : kernel.sub) {
      s_ += '\n';
      s_ += op.symbol;
      s_ += '(';
      for (const Arg& a : op.args) arg(a);
      s_ += ")->";
      for (ValueId v : op.outs) value(v);
    }
    for (ValueId v : numbered_) number_[size_t(v)] = -1;
    numbered_.clear();
    return s_;
  }

 private:
  const Trace& t_;
  std::vector<int> number_;         // by value id: its number in the kernel at hand, -1 if none yet
  std::vector<ValueId> numbered_;   // the ids numbered so far
  std::string s_;

  void value(ValueId v) {
    int& n = number_[size_t(v)];
    const bool fresh = n < 0;
    if (fresh) {
      n = int(numbered_.size());
      numbered_.push_back(v);
    }
    s_ += '%';
    append_int(s_, n);
    if (!fresh) return;
    const Value& val = t_.value(v);
    s_ += ':';
    append_type(s_, val);
    if (val.bit_packed) s_ += " packed";
    // Taken at run time, sizes equal here may differ at another size: the launch passes the
    // kernel's own counts, so two launches share code only where their sizes are one expression.
    if (t_.sizes_at_run_time)
      for (const Dim& d : val.shape) {
        s_ += ' ';
        s_ += d.expr() ? interned_text(d.expr()) : std::string("?");
      }
  }


  void arg(const Arg& a) {
    s_ += char('A' + int(a.kind));
    switch (a.kind) {
      case Arg::Kind::value: value(a.value); break;
      case Arg::Kind::boolean: s_ += a.boolean ? '1' : '0'; break;
      case Arg::Kind::integer: case Arg::Kind::process_group: append_int(s_, a.integer); break;
      case Arg::Kind::real: s_ += print_number(a.real); break;
      case Arg::Kind::dtype: s_ += dtype_name(a.dtype); break;
      case Arg::Kind::string: case Arg::Kind::device: case Arg::Kind::opaque:  // (framed by its length: text can hold any byte)
        append_int(s_, int64_t(a.text.size()));
        s_ += ':';
        s_ += a.text;
        break;
      case Arg::Kind::list:
        for (const Arg& item : a.items) arg(item);
        s_ += ']';
        break;
      case Arg::Kind::none: break;
    }
    s_ += ',';
  }
};

// The manifest's account of a view or a library call, which has no kernel of its own.
EmittedKernel describe_call(const Trace& fused, const Op& k) {
  EmittedKernel info;
  const bool gemm = k.info->kind == OpKind::matmul;
  info.name = call_name(fused, k);
  if (is_view(k)) info.view_of = fused.value(k.arg("a").value).name;
  else info.library = gemm ? "cuBLASLt" : "NCCL";
  for (ValueId v : k.outs) info.values.push_back(fused.value(v).name);
  for_each_value(k, [&](ValueId v) { info.reads.push_back(fused.value(v).name); });
  info.writes = info.values;
  return info;
}

// A temporary's bytes rounded up to kTemporaryAlignment; in a folder taking its sizes at run time,
// with the expression (unknown where the value's is).
Dim aligned_bytes(const Trace& fused, const Value& v) {
  const int64_t bytes = stored_bytes(v);
  const int64_t aligned = (bytes + kTemporaryAlignment - 1) / kTemporaryAlignment * kTemporaryAlignment;
  if (!fused.sizes_at_run_time) return Dim::constant(aligned);
  const std::optional<SizeExpr> e = stored_bytes_expr(v, fused.symbols);
  if (!e) return Dim(aligned);
  return Dim(aligned, floor_div(*e + SizeExpr(kTemporaryAlignment - 1), SizeExpr(kTemporaryAlignment), fused.symbols) * SizeExpr(kTemporaryAlignment));
}

WorkspaceLayout lay_out_temporaries(const Trace& fused, const EntryPoint& entry) {
  std::set<ValueId> in_memory;  // the arguments, then the temporaries
  for (const EntryParam& p : entry.params) in_memory.insert(p.value);
  WorkspaceLayout layout;
  for (const Op& k : fused.ops)
    for (ValueId v : k.outs)
      if (!is_view(k) && in_memory.insert(v).second) {
        layout.temporaries.push_back({v, fused.value(v).name, layout.bytes});
        layout.bytes = add_dims(layout.bytes, aligned_bytes(fused, fused.value(v)));
      }
  return layout;
}

EntryValues place_values(const Trace& fused, const EntryPoint& entry, const WorkspaceLayout& workspace) {
  EntryValues values;
  for (const EntryParam& p : entry.params)
    if (!values.pointer.try_emplace(p.value, p.name).second) values.copies.emplace_back(p.name, p.value);
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    const std::string type = (p.writes ? "" : "const ") + storage_type(v) + "*";
    if (v.is_scalar || values.pointer.at(p.value) != p.name || c_param_type(v, p.writes) == type) continue;
    values.storage_views.push_back({type, ident(Role::storage_view, p.name), p.name});
    values.pointer[p.value] = values.storage_views.back().name;
  }
  for (const Temporary& t : workspace.temporaries) values.pointer[t.value] = ident(Role::global, t.name);
  for (const Op& k : fused.ops)
    if (is_view(k)) values.pointer[k.outs[0]] = values.pointer.at(k.arg("a").value);
  return values;
}

// The steps in trace order, each collective on the second stream and joined before the first
// step that reads what it wrote (or a view of it).
void schedule_steps(const Trace& fused, KernelProgram& program) {
  std::map<ValueId, int> pending;  // value -> the collective (not yet joined) whose result it is or views
  std::set<int> joined;
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    const Op& k = fused.ops[i];
    EntryStep step{i, {}, -1};
    if (is_view(k)) {
      if (auto it = pending.find(k.arg("a").value); it != pending.end()) pending[k.outs[0]] = it->second;
      program.steps.push_back(std::move(step));
      continue;
    }
    for_each_value(k, [&](ValueId v) {
      if (auto it = pending.find(v); it != pending.end() && joined.insert(it->second).second) step.joins.push_back(it->second);
    });
    if (is_collective(k.info->kind)) {
      step.collective = program.collectives++;
      for (ValueId v : k.outs) pending[v] = step.collective;
    }
    program.steps.push_back(std::move(step));
  }
  for (int c = 0; c < program.collectives; ++c)
    if (!joined.count(c)) program.last_joins.push_back(c);
}

}  // namespace

KernelProgram lower_kernels(const FusedTrace& planned, const EntryPoint& entry) {
  const Trace& fused = planned.trace;
  KernelProgram program;
  std::vector<std::string> idents(fused.values.size());
  std::unordered_map<std::string, int> code_of;  // kernel signature -> the kernel that has that code
  KernelSignature signature(fused);
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    const Op& k = fused.ops[i];
    if (is_view(k) || is_library_call(k)) {
      program.kernel_of.push_back(-1);
      program.ops.push_back(describe_call(fused, k));
      continue;
    }
    EmittedKernel info = describe(fused, k);
    auto [first, fresh] = code_of.try_emplace(signature.of(k), int(program.kernels.size()));
    if (fresh) program.kernels.push_back(lower_kernel(fused, idents, k, planned.plan(i)));
    else info.same_code_as = program.kernels[size_t(first->second)].name;
    if (const auto& twin = program.kernels[size_t(first->second)].twin)
      (twin->kind == kir::Twin::Kind::elementwise ? info.elementwise_twin : info.streamed_twin) = twin->name;
    program.kernel_of.push_back(first->second);
    program.ops.push_back(std::move(info));
  }
  program.workspace = lay_out_temporaries(fused, entry);
  program.values = place_values(fused, entry, program.workspace);
  schedule_steps(fused, program);
  return program;
}

std::optional<std::string> kernel_lowering_problem(const Trace& fused, const Op& kernel, const KernelPlan& plan) {
  std::vector<std::string> idents(fused.values.size());
  try {
    lower_kernel(fused, idents, kernel, plan);
  } catch (const InternalError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

}  // namespace tg
