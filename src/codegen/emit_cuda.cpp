#include "codegen/emit_cuda.h"

#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/lower_kernel.h"
#include "codegen/print_cuda.h"
#include "codegen/size_code.h"
#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

namespace {

// A cuBLASLt call (the library calls that are not collectives): it takes a part of the workspace.
bool is_gemm(const Op& op) { return op.info->kind == OpKind::matmul; }
bool is_collective_call(const Op& op) { return is_collective(op.info->kind); }

// tg::GemmShape{batch, m, n, k, b_batched} of a matmul. A b without batch dims is shared by every
// batch, which then folds into m: one larger GEMM.
// transpose_a / transpose_b mean a is stored [k, m] (a 2-D a) and b [n, k] (a 2-D b, shared).
std::string gemm_shape(const Trace& t, const Op& op, SizeCode& sizes) {
  const Shape& a = t.value(op.arg("a").value).shape;
  const Shape& b = t.value(op.arg("b").value).shape;
  const bool transpose_a = op.has_arg("transpose_a") && op.arg("transpose_a").boolean, transpose_b = op.has_arg("transpose_b") && op.arg("transpose_b").boolean;
  Dim m = transpose_a ? a.back() : a[a.size() - 2], k = transpose_a ? a[0] : a.back(), n = transpose_b ? b[0] : b.back();
  Dim batch = transpose_a ? Dim::constant(1) : numel_dim(a, a.size() - 2);  // a transposed a is 2-D
  bool b_batched = b.size() > 2;
  if (!b_batched) {
    m = multiply_dims(m, batch);
    batch = Dim::constant(1);
  }
  if (sizes.active())
    for (const Dim* d : {&batch, &m, &n, &k})
      if (d->symbolic() && !provably_positive(*d->expr(), t.symbols))
        throw UserError("", "the matrix product computing " + t.value(op.outs[0]).name + " has a size, " + d->expr()->text() +
                                ", that is 0 at sizes the symbols allow; raise their min, or name the sizes with --specialize");
  std::string s = "tg::GemmShape{" + sizes.of(batch) + ", " + sizes.of(m) + ", " + sizes.of(n) + ", " + sizes.of(k) + ", " + (b_batched ? "true" : "false");
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
  if (entry.takes_sizes) params.push_back("const int64_t* tg_sizes");
  params.push_back("void* workspace");
  params.push_back("thunder_gen_stream handle");
  return params;
}

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
std::string collective_call(const Trace& t, const Op& k, const std::map<ValueId, std::string>& pointer, const std::string& stream, SizeCode& sizes) {
  const Value& in = t.value(k.arg("a").value);
  const Value& out = t.value(k.outs[0]);
  const std::string buffers = "comm, " + pointer.at(k.arg("a").value) + ", " + pointer.at(k.outs[0]) + ", ";
  const std::string type = comm_type(in.dtype);
  switch (k.info->kind) {
    case OpKind::all_reduce: return "tg::all_reduce(" + buffers + sizes.of(numel_dim(in.shape)) + ", " + type + ", " + reduce_op(k.arg("op").text) + ", " + stream + ")";
    case OpKind::all_gather: return "tg::all_gather(" + buffers + sizes.of(numel_dim(in.shape)) + ", " + type + ", " + stream + ")";
    case OpKind::reduce_scatter:
      return "tg::reduce_scatter(" + buffers + sizes.of(numel_dim(out.shape)) + ", " + type + ", " + reduce_op(k.arg("op").text) + ", " + stream + ")";
    default: return "tg::broadcast(" + buffers + sizes.of(numel_dim(in.shape)) + ", " + type + ", " + std::to_string(k.arg("root").integer) + ", " + stream + ")";
  }
}

// A value's bytes as stored, as code.
std::string stored_bytes_code(const Trace& fused, const Value& v, SizeCode& sizes) {
  if (sizes.active())
    if (std::optional<SizeExpr> e = stored_bytes_expr(v, fused.symbols)) return sizes.of(*e);
  return std::to_string(stored_bytes(v));
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

// The argument checks, and the views of arguments whose C type is not the kernels' storage type.
void write_arguments(const Trace& fused, const EntryPoint& entry, const EntryValues& values, SizeCode& sizes, std::ostream& out) {
  for (const EntryParam& p : entry.params) {
    const Value& v = fused.value(p.value);
    if (!v.is_scalar)
      out << "  TG_TRY(tg::check_pointer(" << p.name << ", alignof(" << storage_type(v) << "), " << sizes.of(numel_dim(v.shape)) << "));\n";
  }
  for (const EntryValues::StorageView& view : values.storage_views)
    out << "  " << view.type << " " << view.name << " = reinterpret_cast<" << view.type << ">(" << view.argument << ");\n";
}

// The temporaries, as the workspace layout places them: in the caller's workspace, or allocated
// for the call.
void write_temporaries(const Trace& fused, const KernelProgram& program, SizeCode& sizes, std::ostream& out) {
  const WorkspaceLayout& layout = program.workspace;
  if (!layout.temporaries.empty()) {
    out << "  tg::Memory memory(workspace, " << sizes.of(layout.bytes) << ", stream);  // the temporaries\n";
    out << "  TG_TRY(memory.status());\n";
  }
  for (const Temporary& t : layout.temporaries) {
    const std::string type = storage_type(fused.value(t.value));
    out << "  " << type << "* " << program.values.pointer.at(t.value) << " = memory.at<" << type << ">(" << sizes.of(t.offset) << ");\n";
  }
}

// How the entry point runs one op: the kernels' code and launches, the pointers, the workspace
// the GEMMs take, and the stream the op runs on.
struct StepContext {
  const Trace& fused;
  const KernelProgram& program;
  const EntryValues& values;
  std::string gemm_space;
  SizeCode& sizes;
};

// "if (a && b && c)" and `tail`, one clause a line where that passes 100 columns.
std::string wrapped_condition(const std::string& indent, const std::vector<std::string>& clauses, const std::string& tail) {
  std::string line;
  for (const std::string& clause : clauses) line += (line.empty() ? "" : " && ") + clause;
  if (indent.size() + line.size() + 5 + tail.size() <= 100 || clauses.size() < 2) return "if (" + line + ")" + tail;
  std::string out = "if (";
  for (size_t i = 0; i < clauses.size(); ++i) out += (i ? " &&\n" + indent + "    " : "") + clauses[i];
  return out + ")" + tail;
}

// A kernel's launch: TG_LAUNCH with its grid and block, and its arguments.
void write_launch(const StepContext& c, size_t op_index, const std::string& stream, std::ostream& out) {
  const Op& k = c.fused.ops[op_index];
  const kir::Kernel& kernel = c.program.kernels[size_t(c.program.kernel_of[op_index])];
  const kir::Launch& launch = kernel.launch;
  if (launch.items == 0) {
    out << comment_line(k.label + ": nothing to compute (empty)", "  ");
    return;
  }
  if (kernel.name != k.label) out << comment_line(k.label + ": the same code as " + kernel.name, "  ");
  const std::string count = launch.count ? c.sizes.count(*launch.count) : "";
  std::string items = launch.count ? count : std::to_string(launch.items);
  if (launch.count && launch.count_per_item > 1) items = "(" + count + " + " + std::to_string(launch.count_per_item - 1) + ") / " + std::to_string(launch.count_per_item);
  const std::string blocks = launch.fixed_grid > 0 ? std::to_string(launch.fixed_grid) : "tg::grid_for(" + items + ", " + std::to_string(launch.items_per_block) + ")";
  auto block_for = [&](bool by_row) {
    return by_row ? "tg::row_block(" + c.sizes.count(*launch.row_length) + ", " + std::to_string(launch.block) + ")" : std::to_string(launch.block);
  };
  std::vector<std::string> args = {kernel.name, blocks, block_for(launch.block_by_row), stream};
  for (const Arg& a : k.args) args.push_back(c.values.pointer.at(a.value));
  for (ValueId v : k.outs) args.push_back(c.values.pointer.at(v));
  // (Passed as the kernel's parameters are declared: NVRTC's launch hands over their bytes.)
  auto as_parameter = [&](const std::string& size) { return launch.int_sizes ? "int(" + size + ")" : size; };
  if (launch.count) args.push_back(as_parameter(count));
  if (launch.row_length) args.push_back(as_parameter(c.sizes.count(*launch.row_length)));
  for (const std::string& name : launch.size_parameters) {
    const std::string size = c.sizes.count(parameter_size(name, c.fused.symbols));
    args.push_back(is_divider_parameter(name) ? "tg::divider(" + size + ")" : as_parameter(size));
  }
  // No launch of nothing, except a kernel whose blocks are fixed: it writes every part of its sums.
  const bool guarded = launch.count && launch.fixed_grid == 0;
  const std::string indent = guarded ? "    " : "  ";
  if (guarded) out << "  if (" << count << " > 0)" << (kernel.twin ? " {" : "") << "  // (no launch of nothing)\n";
  if (!kernel.twin) {
    out << indent << kir::wrapped_list(indent, "TG_TRY(TG_LAUNCH(", args, "));") << "\n";
    return;
  }
  // The kernel where its condition holds, else its twin.
  const kir::Twin& twin = *kernel.twin;
  const kir::RunCondition& condition = twin.condition;
  const bool elementwise = twin.kind == kir::Twin::Kind::elementwise;
  std::vector<std::string> holds;
  for (size_t place : condition.aligned) holds.push_back("tg::aligned16(" + args.at(4 + place) + ")");
  for (const std::string& size : condition.multiples)
    holds.push_back(c.sizes.count(parameter_size(size, c.fused.symbols)) + " % " + std::to_string(condition.lanes) + " == 0");
  if (condition.longest_row > 0) holds.push_back(c.sizes.count(*launch.row_length) + " <= " + std::to_string(condition.longest_row));
  const std::string inner = indent + "  ";
  const std::string holds_note = elementwise ? "runs of " + std::to_string(condition.lanes) : "rows held in registers";
  out << indent << wrapped_condition(indent, holds, "  // " + holds_note) << "\n";
  out << inner << kir::wrapped_list(inner, "TG_TRY(TG_LAUNCH(", args, "));") << "\n";
  args[0] = twin.name;
  if (elementwise) args[1] = "tg::grid_for(" + count + ", " + std::to_string(launch.items_per_block) + ")";
  args[2] = block_for(twin.block_by_row);
  out << indent << "else  // " << (elementwise ? "element by element" : "rows streamed") << "\n";
  out << inner << kir::wrapped_list(inner, "TG_TRY(TG_LAUNCH(", args, "));") << "\n";
  if (guarded) out << "  }\n";
}

// Op i's step of the entry point, on `stream`: a view's comment, a library call, or a kernel's launch.
void write_step(const StepContext& c, size_t op_index, const std::string& stream, std::ostream& out) {
  const Op& k = c.fused.ops[op_index];
  const std::map<ValueId, std::string>& pointer = c.values.pointer;
  if (is_view(k)) {
    out << comment_line(print_op(k, c.fused) + "  (a view: " + pointer.at(k.outs[0]) + " read as " + print_type(c.fused.value(k.outs[0]), comment_sizes(c.fused)) + ")", "  ");
    return;
  }
  if (is_collective_call(k)) {
    out << comment_line(print_op(k, c.fused), "  ");
    out << "  TG_TRY(" << collective_call(c.fused, k, pointer, stream, c.sizes) << ");\n";
    return;
  }
  if (is_library_call(k)) {
    out << comment_line(print_op(k, c.fused), "  ");
    out << "  TG_TRY(tg::matmul(" << pointer.at(k.arg("a").value) << ", " << pointer.at(k.arg("b").value) << ", " << pointer.at(k.outs[0]) << ", "
        << gemm_shape(c.fused, k, c.sizes) << ", " << stream << ", " << c.gemm_space << gemm_epilogue(k, pointer) << "));\n";
    return;
  }
  write_launch(c, op_index, stream, out);
}

// The steps of an entry point with collectives (EntryStep says how they overlap).
void write_overlapped_steps(const StepContext& c, std::ostream& out) {
  out << "  tg::Overlap overlap(stream, " << c.program.collectives << ");  // collectives on a second stream\n";
  auto join = [&](int collective) { out << "  TG_TRY(overlap.join(" << collective << "));\n"; };
  for (const EntryStep& step : c.program.steps) {
    for (int collective : step.joins) join(collective);
    if (step.collective < 0) {
      write_step(c, step.op, "stream", out);
      continue;
    }
    out << "  TG_TRY(overlap.start(" << step.collective << "));\n";
    write_step(c, step.op, "overlap.side()", out);
    out << "  TG_TRY(overlap.finish(" << step.collective << "));\n";
  }
  for (int collective : c.program.last_joins) join(collective);
}

// The entry point's opening: the host runtime's includes, the NVRTC kernel module, the signature.
void write_entry_head(const Trace& fused, const EntryPoint& entry, std::ostream& out) {
  out << "#ifndef __CUDACC_RTC__\n#include \"tg_host.h\"\n#include " << cpp_string(entry.header) << "\n";
  if (library_calls_in(fused)) out << "#include \"tg_gemm.h\"\n";
  if (entry.takes_sizes) out << "#include \"tg_sizes.h\"\n";
  if (entry.takes_comm) out << "#include \"tg_comm.h\"\n";
  out << "\n";
  out << "#if defined(TG_NVRTC_HOST)\n";
  out << "static tg::KernelModule& tg_kernels() { return tg::trace_kernels(TG_KERNEL_DIR); }  // kernels.cu: every kernel of the trace\n";
  out << "#endif\n\n";
  out << "// What each argument is: " << entry.header << ". Device pointers; runs asynchronously on the stream; returns a\n"
      << "// tg::Status (0: success). With a workspace of <trace>_workspace_bytes() bytes it allocates nothing.\n";
  out << kir::wrapped_list("", "extern \"C\" int " + entry.name + "(", definition_params(entry), ") {") << "\n";
  out << "  const tg::Stream stream = tg::stream_of(handle);\n";
  if (entry.takes_comm)
    out << "  TG_TRY(tg::check_comm(comm, " << fused.world_size << "));  // the trace's process group: " << fused.world_size << " ranks\n";
}

// The host entry point, behind #ifndef __CUDACC_RTC__: checks its arguments, lays out its
// temporaries, then runs the ops in order.
void write_entry_point(const Trace& fused, const KernelProgram& program, const EntryPoint& entry, std::ostream& file) {
  write_entry_head(fused, entry, file);
  SizeCode sizes(fused.symbols, entry.takes_sizes);
  std::ostringstream out;  // what follows the sizes' declarations, which it names as it goes
  write_arguments(fused, entry, program.values, sizes, out);
  write_temporaries(fused, program, sizes, out);
  const std::string gemm_space = program.workspace.temporaries.empty()
                                     ? "tg::Memory::Span{workspace, tg::kGemmWorkspaceBytes}"
                                     : "memory.gemm_space(" + sizes.of(program.workspace.bytes) + ", tg::kGemmWorkspaceBytes)";
  const StepContext context{fused, program, program.values, gemm_space, sizes};
  if (program.collectives > 0) {
    write_overlapped_steps(context, out);
  } else {
    for (const EntryStep& step : program.steps) write_step(context, step.op, "stream", out);
  }
  // Outputs not written by a kernel: inputs returned as they are, or an output listed twice.
  for (const auto& [name, v] : program.values.copies)
    out << "  TG_TRY(tg::copy_on_device(" << name << ", " << program.values.pointer.at(v) << ", " << stored_bytes_code(fused, fused.value(v), sizes) << ", stream));\n";
  out << "  return tg::kOk;\n";
  out << "}\n#endif  // __CUDACC_RTC__\n";
  if (entry.takes_sizes) file << "  if (!tg_sizes) return tg::kNullPointer;\n" << sizes.declarations("tg::kBadSizes");
  file << out.str();
}

}  // namespace

CudaFile emit_cuda(const FusedTrace& planned, const KernelProgram& program, const EntryPoint& entry, const std::string& file,
                   const std::string& input_file) {
  const Trace& fused = planned.trace;
  CudaFile result;
  std::ostringstream out;
  out << file_banner(fused, entry, file, input_file);
  out << "#if !defined(TG_NVRTC_HOST)\n\n";
  for (const kir::Kernel& kernel : program.kernels) out << kir::print_kernel(kernel) << "\n";
  out << "#endif  // !TG_NVRTC_HOST\n\n";
  write_entry_point(fused, program, entry, out);
  result.text = wrap_code_lines(out.str());
  result.kernels = program.ops;
  result.temporary_bytes = program.workspace.bytes;
  result.calls_library = library_calls_in(fused) > 0;
  return result;
}

}  // namespace tg
