#include "codegen/emit_cuda.h"

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/emit_kernel.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

std::string storage_type(const Value& v) { return v.bit_packed ? "tg::PackedBits" : std::string(storage_ctype(v.dtype)); }

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

bool is_library_call(const Op& op) { return op.info->fusion == FusionClass::library; }
// A cuBLASLt call (the library calls that are not collectives): it takes a part of the workspace.
bool is_gemm(const Op& op) { return op.info->kind == OpKind::matmul; }
bool is_collective_call(const Op& op) { return is_collective(op.info->kind); }
// A reshape between the kernels of a fused trace reads its input's memory with another shape:
// no launch, the same pointer (fuse.cpp places one only for a value already in memory).
bool is_view(const Op& op) { return op.info->kind == OpKind::reshape; }

// tg::GemmShape{batch, m, n, k, b_batched} of a matmul. A b without batch dims is shared by every
// batch, which then folds into m: one larger GEMM.
// transpose_a / transpose_b mean a is stored [k, m] (a 2-D a) and b [n, k] (a 2-D b, shared).
std::string gemm_shape(const Trace& t, const Op& op) {
  const Shape& a = t.value(op.arg("a").value).shape;
  const Shape& b = t.value(op.arg("b").value).shape;
  const bool transpose_a = op.has_arg("transpose_a") && op.arg("transpose_a").boolean, transpose_b = op.has_arg("transpose_b") && op.arg("transpose_b").boolean;
  int64_t m = transpose_a ? a.back() : a[a.size() - 2], k = transpose_a ? a[0] : a.back(), n = transpose_b ? b[0] : b.back();
  int64_t batch = numel(a) / (m * k);
  bool b_batched = b.size() > 2;
  if (!b_batched) {
    m *= batch;
    batch = 1;
  }
  std::string s = "tg::GemmShape{" + std::to_string(batch) + ", " + std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) +
                  ", " + (b_batched ? "true" : "false");
  if (transpose_a || transpose_b) s += std::string(", ") + (transpose_a ? "true" : "false") + ", " + (transpose_b ? "true" : "false");
  return s + "}";
}

// The trailing epilogue arguments of tg::matmul: the bias pointer, the epilogue and its second
// output (the GELU's input, or the bias gradient), as far as they are not the defaults.
std::string gemm_epilogue(const Op& op, const std::map<ValueId, std::string>& pointer) {
  const bool bias = op.has_arg("bias") && op.arg("bias").is_value();
  const std::string epilogue = op.has_arg("epilogue") ? op.arg("epilogue").text : "none";
  std::string s;
  if (bias || epilogue != "none") s += ", " + (bias ? pointer.at(op.arg("bias").value) : std::string("nullptr"));
  if (epilogue != "none") s += ", tg::Epilogue::" + epilogue;
  if (op.outs.size() > 1) s += ", " + pointer.at(op.outs[1]);
  return s;
}

// The entry point's parameters as the .cu defines them: as the header declares them (the .cu
// includes the header, so the compiler holds them to it), then the workspace and the stream.
std::vector<std::string> definition_params(const EntryPoint& entry) {
  std::vector<std::string> params;
  for (const EntryParam& p : entry.params) params.push_back(p.c_type + " " + p.name);
  if (entry.takes_comm) params.push_back("thunder_gen_comm comm");
  params.push_back("void* workspace");
  params.push_back("thunder_gen_stream handle");
  return params;
}

// Bytes each temporary starts at: cuBLASLt and vector accesses want 256-byte alignment at most.
constexpr int64_t kTemporaryAlignment = 256;
int64_t aligned(int64_t bytes) { return (bytes + kTemporaryAlignment - 1) / kTemporaryAlignment * kTemporaryAlignment; }

size_t library_calls_in(const Trace& fused) {
  size_t calls = 0;
  for (const Op& op : fused.ops) calls += is_gemm(op);
  return calls;
}
size_t collectives_in(const Trace& fused) {
  size_t calls = 0;
  for (const Op& op : fused.ops) calls += is_collective_call(op);
  return calls;
}

// tg::CommType of a dtype (the shape rules refused the others: b8, i16).
std::string comm_type(DType t) { return "tg::CommType::" + std::string(dtype_name(t)); }
// tg::ReduceOp of Thunder's DistributedReduceOps name.
std::string reduce_op(const std::string& name) {
  if (name == "SUM") return "tg::ReduceOp::sum";
  if (name == "AVG") return "tg::ReduceOp::avg";
  if (name == "PRODUCT") return "tg::ReduceOp::prod";
  if (name == "MIN") return "tg::ReduceOp::min";
  return "tg::ReduceOp::max";
}

// A collective's call: tg::all_reduce and its kin (tg_comm.h), NCCL's arguments in NCCL's order.
std::string collective_call(const Trace& t, const Op& k, const std::map<ValueId, std::string>& pointer) {
  const Value& in = t.value(k.arg("a").value);
  const Value& out = t.value(k.outs[0]);
  const std::string buffers = "comm, " + pointer.at(k.arg("a").value) + ", " + pointer.at(k.outs[0]) + ", ";
  const std::string type = comm_type(in.dtype);
  switch (k.info->kind) {
    case OpKind::all_reduce: return "tg::all_reduce(" + buffers + std::to_string(numel(in.shape)) + ", " + type + ", " + reduce_op(k.arg("op").text) + ", stream)";
    case OpKind::all_gather: return "tg::all_gather(" + buffers + std::to_string(numel(in.shape)) + ", " + type + ", stream)";
    case OpKind::reduce_scatter:
      return "tg::reduce_scatter(" + buffers + std::to_string(numel(out.shape)) + ", " + type + ", " + reduce_op(k.arg("op").text) + ", stream)";
    default: return "tg::broadcast(" + buffers + std::to_string(numel(in.shape)) + ", " + type + ", " + std::to_string(k.arg("root").integer) + ", stream)";
  }
}

// The file's opening lines: what it is, what it holds, how it builds; then the runtime's include.
std::string file_banner(const Trace& fused, const EntryPoint& entry, const std::string& file, const std::string& input_file) {
  std::ostringstream out;
  out << comment_line(file + ": generated by thunder-gen " + THUNDER_GEN_VERSION + " from " + input_file + " (trace \"" + fused.name +
                      "\"). Do not edit.");
  size_t views = 0;
  for (const Op& op : fused.ops) views += is_view(op);
  const size_t library_calls = library_calls_in(fused), collectives = collectives_in(fused);
  const size_t kernels = fused.ops.size() - library_calls - collectives - views;
  out << "// " << kernels << " kernel" << (kernels == 1 ? "" : "s");
  if (library_calls) out << " and " << library_calls << " cuBLASLt call" << (library_calls == 1 ? "" : "s");
  if (collectives) out << ", " << collectives << " collective" << (collectives == 1 ? "" : "s") << " (NCCL)";
  out << "; host entry point: " << entry.name << "() (declared in " << entry.header << ").\n";
  out << "// nvcc builds all of it; NVRTC compiles the kernels (the host part is behind __CUDACC_RTC__);\n";
  out << "// g++ runs it on the CPU through tg_emu.h (see the generated CMakeLists.txt).\n";
  out << "#include \"tg_runtime.cuh\"\n\n";
  return out.str();
}

// How the entry point launches an op of the fused trace (nothing for a view or a library call).
struct Launch {
  std::string kernel;  // the kernel function: its own, or an earlier one with the same code
  int block = 0;
  int64_t items = 0;
  int items_per_block = 0;
  int64_t grid = 0;  // blocks, where the kernel fixes them (else tg::grid_for(items, items_per_block))
};

// The manifest's account of a view or a cuBLASLt call, which has no kernel of its own.
EmittedKernel describe_call(const Trace& fused, const Op& k) {
  EmittedKernel info;
  const std::string kind = is_view(k) ? "view" : is_gemm(k) ? "matmul" : std::string(k.symbol.substr(k.symbol.rfind('.') + 1));
  info.name = fused.name + "_" + kind + "_" + fused.value(k.outs[0]).name;
  if (is_view(k)) info.view_of = fused.value(k.arg("a").value).name;
  else info.library = is_gemm(k) ? "cuBLASLt" : "NCCL";
  for (ValueId v : k.outs) info.values.push_back(fused.value(v).name);
  for_each_value(k, [&](ValueId v) { info.reads.push_back(fused.value(v).name); });
  info.writes = info.values;
  return info;
}

// Writes each kernel's code (once for kernels with the same code), describes every op in
// `kernels`, and returns how to launch each op.
std::vector<Launch> write_kernels(const FusedTrace& planned, std::ostream& out, std::vector<EmittedKernel>& kernels) {
  const Trace& fused = planned.trace;
  std::vector<Launch> launch;
  std::vector<std::string> idents(fused.values.size());
  std::unordered_map<std::string, size_t> code_of;  // kernel signature -> the launch that emitted it
  KernelSignature signature(fused);
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    const Op& k = fused.ops[i];
    if (is_view(k) || is_library_call(k)) {
      launch.push_back({});
      kernels.push_back(describe_call(fused, k));
      continue;
    }
    EmittedKernel info = describe(fused, k);
    auto [first, fresh] = code_of.try_emplace(signature.of(k), launch.size());
    if (fresh) {
      emit::KernelWriter writer(fused, idents, k, planned.plan(i));
      out << writer.write() << "\n";
      launch.push_back({k.label, writer.block_size(), writer.work_items(), writer.items_per_block(), writer.fixed_grid()});
    } else {
      launch.push_back(launch[first->second]);
      info.same_code_as = launch.back().kernel;
    }
    kernels.push_back(std::move(info));
  }
  return launch;
}

// Where the entry point finds each value: its argument (or the argument seen as its storage type),
// a temporary, or the memory of the value a view reads.
struct HostValues {
  std::map<ValueId, std::string> pointer;
  std::vector<std::pair<std::string, ValueId>> copies;  // outputs that are a copy: (argument, value)
  std::vector<std::pair<ValueId, int64_t>> temporaries;  // (value, offset)
};

// The arguments: the kernels take them by value id; an output that is a copy (of an input, or of
// an output listed before) gets its bytes last. Writes the pointer checks, and views of arguments
// whose C type is not the kernels' storage type (bf16 and f16 bits, packed masks).
void write_arguments(const Trace& fused, const EntryPoint& entry, HostValues& values, std::ostream& out) {
  for (const EntryParam& p : entry.params)
    if (!values.pointer.try_emplace(p.value, p.name).second) values.copies.emplace_back(p.name, p.value);
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    if (!v.is_scalar)
      out << "  TG_TRY(tg::check_pointer(" << p.name << ", alignof(" << storage_type(v) << "), " << numel(v.shape) << "));\n";
  }
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    if (v.is_scalar || values.pointer.at(p.value) != p.name || c_param_type(v, p.writes) == (p.writes ? "" : "const ") + storage_type(v) + "*") continue;
    const std::string type = (p.writes ? "" : "const ") + storage_type(v) + "*", view = ident(Role::storage_view, p.name);
    out << "  " << type << " " << view << " = reinterpret_cast<" << type << ">(" << p.name << ");\n";
    values.pointer[p.value] = view;
  }
}

// Values written by one kernel and read by a later one, that are not arguments, live in
// temporaries at fixed offsets: in the caller's workspace, or allocated for the call.
void write_temporaries(const Trace& fused, HostValues& values, std::ostream& out, CudaFile& result) {
  for (const Op& k : fused.ops)
    for (ValueId v : k.outs)
      if (is_view(k)) {
        values.pointer[v] = values.pointer.at(k.arg("a").value);
      } else if (!values.pointer.count(v)) {
        values.pointer[v] = ident(Role::global, fused.value(v).name);
        values.temporaries.emplace_back(v, result.temporary_bytes);
        result.temporary_bytes += aligned(stored_bytes(fused.value(v)));
      }
  if (!values.temporaries.empty()) {
    out << "  tg::Memory memory(workspace, " << result.temporary_bytes << ", stream);  // the temporaries\n";
    out << "  TG_TRY(memory.status());\n";
  }
  for (const auto& [v, offset] : values.temporaries)
    out << "  " << storage_type(fused.value(v)) << "* " << values.pointer[v] << " = memory.at<" << storage_type(fused.value(v)) << ">(" << offset << ");\n";
}

// Op k's step of the entry point: a view's comment, a cuBLASLt call, or a kernel's launch.
void write_step(const Trace& fused, const Op& k, const Launch& launch, const HostValues& values, const std::string& gemm_space, std::ostream& out) {
  const std::map<ValueId, std::string>& pointer = values.pointer;
  if (is_view(k)) {
    out << comment_line(print_op(k, fused) + "  (a view: " + pointer.at(k.outs[0]) + " read as " + print_type(fused.value(k.outs[0])) + ")", "  ");
    return;
  }
  if (is_collective_call(k)) {
    out << comment_line(print_op(k, fused), "  ");
    out << "  TG_TRY(" << collective_call(fused, k, pointer) << ");\n";
    return;
  }
  if (is_library_call(k)) {
    out << comment_line(print_op(k, fused), "  ");
    out << "  TG_TRY(tg::matmul(" << pointer.at(k.arg("a").value) << ", " << pointer.at(k.arg("b").value) << ", " << pointer.at(k.outs[0]) << ", "
        << gemm_shape(fused, k) << ", stream, " << gemm_space << gemm_epilogue(k, pointer) << "));\n";
    return;
  }
  const auto& [kernel, block, items, per_block, grid] = launch;
  if (items == 0) {
    out << comment_line(k.label + ": nothing to compute (empty)", "  ");
    return;
  }
  if (kernel != k.label) out << comment_line(k.label + ": the same code as " + kernel, "  ");
  const std::string blocks = grid > 0 ? std::to_string(grid) : "tg::grid_for(" + std::to_string(items) + ", " + std::to_string(per_block) + ")";
  std::vector<std::string> args = {kernel, blocks, std::to_string(block), "stream"};
  for (const Arg& a : k.args) args.push_back(pointer.at(a.value));
  for (ValueId v : k.outs) args.push_back(pointer.at(v));
  out << "  " << emit::wrapped_list("  ", "TG_TRY(TG_LAUNCH(", args, "));") << "\n";
}

// The steps of an entry point with collectives: each collective runs on a second stream
// (tg::Overlap, tg_comm.h), which waits for the stream's work so far; the stream goes on with the
// kernels after it and waits for the collective only before the first step that reads its result
// (or a view of it), and for every collective before returning. Temporaries are never reused
// within a call, so no later kernel writes what a collective still reads.
void write_overlapped_steps(const Trace& fused, const std::vector<Launch>& launches, const HostValues& values, const std::string& gemm_space,
                            size_t collectives, std::ostream& out) {
  out << "  tg::Overlap overlap(stream, " << collectives << ");  // collectives on a second stream\n";
  std::map<ValueId, int> pending;  // value -> the collective (not yet joined) whose result it is or views
  std::set<int> joined;
  auto join = [&](int c) {
    if (!joined.insert(c).second) return;
    out << "  TG_TRY(overlap.join(" << c << "));\n";
  };
  int next = 0;
  for (size_t i = 0; i < fused.ops.size(); ++i) {
    const Op& k = fused.ops[i];
    if (is_view(k)) {
      if (auto it = pending.find(k.arg("a").value); it != pending.end()) pending[k.outs[0]] = it->second;
      write_step(fused, k, launches[i], values, gemm_space, out);
      continue;
    }
    for_each_value(k, [&](ValueId v) {
      if (auto it = pending.find(v); it != pending.end()) join(it->second);
    });
    if (!is_collective_call(k)) {
      write_step(fused, k, launches[i], values, gemm_space, out);
      continue;
    }
    const int c = next++;
    out << "  TG_TRY(overlap.start(" << c << "));\n";
    std::ostringstream step;
    write_step(fused, k, launches[i], values, gemm_space, step);
    std::string text = step.str();
    text.replace(text.rfind(", stream)"), 9, ", overlap.side())");
    out << text;
    out << "  TG_TRY(overlap.finish(" << c << "));\n";
    for (ValueId v : k.outs) pending[v] = c;
  }
  for (int c = 0; c < next; ++c) join(c);
}

// The host entry point, behind #ifndef __CUDACC_RTC__: checks its arguments, lays out its
// temporaries, then runs the ops in order.
void write_entry_point(const Trace& fused, const EntryPoint& entry, const std::vector<Launch>& launches, std::ostream& out, CudaFile& result) {
  const size_t library_calls = library_calls_in(fused);
  out << "#ifndef __CUDACC_RTC__\n#include \"tg_host.h\"\n#include " << cpp_string(entry.header) << "\n";
  if (library_calls) out << "#include \"tg_gemm.h\"\n";
  if (entry.takes_comm) out << "#include \"tg_comm.h\"\n";
  out << "\n";
  out << "#if defined(TG_NVRTC_HOST)\n";
  out << "static tg::KernelModule& tg_kernels() { return tg::trace_kernels(TG_KERNEL_DIR); }  // kernels.cu: every kernel of the trace\n";
  out << "#endif\n\n";
  out << "// What each argument is: " << entry.header << ". Device pointers; runs asynchronously on the stream; returns a\n"
      << "// tg::Status (0: success). With a workspace of <trace>_workspace_bytes() bytes it allocates nothing.\n";
  out << emit::wrapped_list("", "extern \"C\" int " + entry.name + "(", definition_params(entry), ") {") << "\n";
  out << "  const tg::Stream stream = tg::stream_of(handle);\n";
  if (entry.takes_comm)
    out << "  TG_TRY(tg::check_comm(comm, " << fused.world_size << "));  // the trace's process group: " << fused.world_size << " ranks\n";
  HostValues values;
  write_arguments(fused, entry, values, out);
  write_temporaries(fused, values, out, result);
  result.calls_library = library_calls > 0;
  const std::string gemm_space = values.temporaries.empty() ? "tg::Memory::Span{workspace, tg::kGemmWorkspaceBytes}"
                                                            : "memory.gemm_space(" + std::to_string(result.temporary_bytes) + ", tg::kGemmWorkspaceBytes)";
  const size_t collectives = collectives_in(fused);
  if (collectives == 0) {
    for (size_t i = 0; i < fused.ops.size(); ++i) write_step(fused, fused.ops[i], launches[i], values, gemm_space, out);
  } else {
    write_overlapped_steps(fused, launches, values, gemm_space, collectives, out);
  }
  // Outputs not written by a kernel: inputs returned as they are, or an output listed twice.
  for (const auto& [name, v] : values.copies)
    out << "  TG_TRY(tg::copy_on_device(" << name << ", " << values.pointer.at(v) << ", " << stored_bytes(fused.value(v)) << ", stream));\n";
  out << "  return tg::kOk;\n";
  out << "}\n#endif  // __CUDACC_RTC__\n";
}

}  // namespace

std::optional<std::string> kernel_emission_problem(const Trace& fused, const Op& kernel, const KernelPlan& plan) {
  std::vector<std::string> idents(fused.values.size());
  try {
    emit::KernelWriter(fused, idents, kernel, plan).write();
  } catch (const InternalError& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

CudaFile emit_cuda(const FusedTrace& planned, const EntryPoint& entry, const std::string& file, const std::string& input_file) {
  const Trace& fused = planned.trace;
  CudaFile result;
  std::ostringstream out;
  out << file_banner(fused, entry, file, input_file);
  out << "#if !defined(TG_NVRTC_HOST)\n\n";
  const std::vector<Launch> launches = write_kernels(planned, out, result.kernels);
  out << "#endif  // !TG_NVRTC_HOST\n\n";
  write_entry_point(fused, entry, launches, out, result);
  result.text = out.str();
  return result;
}

}  // namespace tg
