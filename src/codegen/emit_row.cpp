// KernelWriter, row kernels: one block per row of the reductions' input, a loop over the row per
// pass; the row held in registers (in runs) or streamed in runs (docs/design-notes.md, "Row kernels").
#include <algorithm>

#include "codegen/emit_kernel.h"

namespace tg::emit {

// Whether `index` reads element j of a value shaped like one row (the reduced dims, in order).
bool KernelWriter::reads_row_element(const Value& val, const Index& index) const {
  if (val.shape != layout_.reduced_shape() || index.size() != layout_.reduced.size()) return false;
  for (size_t i = 0; i < index.size(); ++i)
    if (index[i].kind != IndexComp::Kind::var || index[i].var != int(layout_.reduced[i])) return false;
  return true;
}

// "row * R + j" (or "j"): where a row-shaped operand's element j lies, when rows are contiguous.
std::string KernelWriter::offset_of_row_element() const {
  if (!layout_.rows_contiguous()) return "";
  return layout_.outer.empty() ? "j" : "row * " + std::to_string(numel(layout_.reduced_shape())) + " + j";
}

// j of a thread's k-th cached element: runs of row_run_ neighbours, a block's worth of runs apart.
std::string KernelWriter::cached_element() const {
  const std::string block = std::to_string(block_size());
  if (row_run_ == 1) return "threadIdx.x + k * " + block;
  const std::string run = std::to_string(row_run_);
  if (cached_ == row_run_) return "threadIdx.x * " + run + " + k";  // one run
  return "(k / " + run + ") * " + std::to_string(block_size() * row_run_) + " + threadIdx.x * " + run + " + k % " + run;
}

// Code moving each run of a thread's cached elements, inside an `if` on alignment: `statements(at)`
// for one run whose first element is j and whose place in the thread's arrays is `at` after
// their name; in a loop over the runs (`run`), or just once where the thread holds one run.
std::string KernelWriter::over_runs(const std::string& indent, const std::function<std::vector<std::string>(const std::string& at)>& statements) const {
  const std::string run_length = std::to_string(row_run_);
  std::string code;
  if (cached_ == row_run_) {
    code += indent + "const int64_t j = threadIdx.x * " + run_length + ";\n";
    for (const std::string& statement : statements("")) code += indent + statement + "\n";
    return code;
  }
  code += indent + "TG_UNROLL for (int run = 0; run < " + std::to_string(cached_ / row_run_) + "; ++run) {\n";
  code += indent + "  const int64_t j = run * " + std::to_string(block_size() * row_run_) + " + threadIdx.x * " + run_length + ";\n";
  for (const std::string& statement : statements(" + run * " + run_length)) code += indent + "  " + statement + "\n";
  return code + indent + "}\n";
}

// A thread's loop over the reduced elements j of its row, around `body`, in the current scope.
// With the row in registers: a loop over k = 0 .. cached_-1, unrolled, j = cached_element().
void KernelWriter::reduced_loop(const std::string& body) {
  const std::string r = std::to_string(numel(layout_.reduced_shape()));
  const std::string dims = dim_declarations(body, loop_dims_, layout_.reduced, scopes_.back().indent + "  ");
  if (cached_ > 0) {
    line("TG_UNROLL for (int k = 0; k < " + std::to_string(cached_) + "; ++k) {");
    if (uses_word(body + dims, "j")) line("  const int64_t j = " + cached_element() + ";");
  } else {
    line(column_tile_ > 1 ? column_element_loop(r) : "for (int64_t j = threadIdx.x; j < " + r + "; j += blockDim.x) {");
  }
  scopes_.back().code += dims + body;
  line("}");
}

std::string KernelWriter::row_body() {
  push("    ");
  reduction_rounds();
  const std::vector<ValueId>& outer_outs = plan_.row_results;
  if (!outer_outs.empty()) {
    std::vector<std::string> vars;
    for (ValueId v : outer_outs) vars.push_back(value_at(v, layout_.outer_index()));
    line(column_tile_ > 1 ? column_result_guard() : "if (threadIdx.x == 0) {");
    for (size_t i = 0; i < outer_outs.size(); ++i) line("  tg::store(" + ident(outer_outs[i]) + ", row, " + vars[i] + ");");
    line("}");
  }
  for (const Op* p : row_totals_) line(row_total(p) + " += " + value_at(p->arg("a").value, layout_.outer_index()) + ";");
  std::string body = pop();
  if (!row_cached_.empty())
    body = "    // the row, " + std::to_string(cached_) + " elements per thread" + (row_run_ > 1 ? " in runs of " + std::to_string(row_run_) : "") +
           ", read once\n" + fill_registers(row_cached_, Role::cached, offset_of_row_element(), "    ") + body;
  std::string out = "  const int64_t rows = " + std::to_string(numel(layout_.outer_shape())) + ";\n" + start_part_sums();
  if (!row_hoisted_.empty())
    out += "  // operands shaped like a row, the same for every row: this thread's elements, read once\n" +
           fill_registers(row_hoisted_, Role::cached, "j", "  ");
  out += column_tile_ > 1 ? column_row_loop() : "  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {\n";
  // Outer dims come from the row; the reduced ones were declared inside each pass from j.
  out += dim_declarations(body, loop_dims_, layout_.outer, "    ");
  out += body + "  }\n";
  return out + store_part_sums();
}

// Declares <role prefix><name>[cached_] for each of `values` and loads this thread's elements j into
// them from `offset` (an expression in j): in runs where the pointers are 16-byte aligned.
std::string KernelWriter::fill_registers(const std::vector<ValueId>& values, Role role, const std::string& offset, const std::string& indent) const {
  const std::string n = std::to_string(cached_), run = std::to_string(row_run_);
  std::string fill;
  for (ValueId v : values) fill += indent + ctype(t_.value(v).dtype) + " " + local(role, v) + "[" + n + "];\n";
  auto element_by_element = [&](const std::string& in) {
    std::string code = in + "TG_UNROLL for (int k = 0; k < " + n + "; ++k) {\n";
    code += in + "  const int64_t j = " + cached_element() + ";\n";
    for (ValueId v : values) code += in + "  " + local(role, v) + "[k] = tg::load(" + ident(v) + ", " + offset + ");\n";
    return code + in + "}\n";
  };
  if (row_run_ == 1) return fill + element_by_element(indent);
  fill += indent + if_aligned(values) + "\n";
  fill += over_runs(indent + "  ", [&](const std::string& at) {
    std::vector<std::string> loads;
    for (ValueId v : values) loads.push_back("tg::load_run_to<" + run + ">(" + ident(v) + ", " + offset + ", " + local(role, v) + at + ");");
    return loads;
  });
  return fill + indent + "} else {\n" + element_by_element(indent + "  ") + indent + "}\n";
}

// A pass over the row: `body` in the loop, and the row outputs `outs` written (in runs where
// the row is held in runs).
void KernelWriter::pass_writing(const std::vector<ValueId>& outs, const std::function<void()>& body) {
  if (stream_run_ > 1) {
    stream_pass(outs, body);
    return;
  }
  if (row_run_ > 1) declare_row_output_runs(outs);
  push(scopes_.back().indent + "  ");
  body();
  if (row_run_ > 1) set_row_output_runs(outs);
  else store_row_outputs(outs);
  reduced_loop(pop());
  if (row_run_ > 1) store_row_output_runs(outs);
}

void KernelWriter::store_row_outputs(const std::vector<ValueId>& outs) {
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) {
    const Value& val = t_.value(v);
    line("tg::store(" + ident(v) + ", " + offset(val, full) + ", " + value_at(v, full) + ");");
  }
}

// With the row in registers in runs, a pass writes row outputs in three steps: arrays for the
// values before the loop, the values into them in it, and after it each run stored with one
// access where the outputs are 16-byte aligned, element by element where not.
void KernelWriter::declare_row_output_runs(const std::vector<ValueId>& outs) {
  for (ValueId v : outs) line(ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + std::to_string(cached_) + "];");
}

void KernelWriter::set_row_output_runs(const std::vector<ValueId>& outs) {
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) line(local(Role::run_out, v) + "[k] = " + value_at(v, full) + ";");
}

void KernelWriter::store_row_output_runs(const std::vector<ValueId>& outs) {
  if (outs.empty()) return;
  const std::string run = std::to_string(row_run_);
  line(if_aligned(outs));
  scopes_.back().code += over_runs(scopes_.back().indent + "  ", [&](const std::string& at) {
    std::vector<std::string> stores;
    for (ValueId v : outs) stores.push_back("tg::store_run_from<" + run + ">(" + ident(v) + ", " + offset_of_row_element() + ", " + local(Role::run_out, v) + at + ");");
    return stores;
  });
  line("} else {");
  line("  TG_UNROLL for (int k = 0; k < " + std::to_string(cached_) + "; ++k) {");
  line("    const int64_t j = " + cached_element() + ";");
  for (ValueId v : outs) line("    tg::store(" + ident(v) + ", " + offset_of_row_element() + ", " + local(Role::run_out, v) + "[k]);");
  line("  }");
  line("}");
}

// A pass streaming the row in runs (stream_run_): thread t takes runs t, t + block, ... and
// computes their lanes. Where every pointer it reads or writes along the row is 16-byte
// aligned, each operand's run is loaded and each output's stored with one access; where not,
// element by element into the same arrays, so both ways add the same elements in the same order
// (the same bits).
void KernelWriter::stream_pass(const std::vector<ValueId>& outs, const std::function<void()>& body) {
  const std::string L = std::to_string(stream_run_), indent = scopes_.back().indent;
  const int64_t row_length = numel(layout_.reduced_shape());
  in_stream_run_ = true;
  stream_loads_.clear();
  stream_row_loads_.clear();
  push(indent + "      ");
  body();
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) line(local(Role::run_out, v) + "[lane] = " + value_at(v, full) + ";");
  const std::string lane_body = pop();
  in_stream_run_ = false;
  // Where v's run starts: element j = run * L of the row (of v itself where v is one row).
  auto first = [&](ValueId v) {
    const bool one_row = layout_.outer.empty() || std::count(stream_row_loads_.begin(), stream_row_loads_.end(), v);
    return one_row ? "run * " + L : "row * " + std::to_string(row_length) + " + run * " + L;
  };
  // As many runs for every thread, and few enough that all of them fit the registers a row held
  // there may take (row_cache): a loop the compiler unrolls, so that each thread has all its
  // loads in flight at once. Else a loop over the runs.
  const int64_t runs = row_length / stream_run_, block = block_size();
  int64_t words = 0;  // 32-bit registers per lane of all the runs loaded
  for (ValueId v : stream_loads_) words += register_words(t_.value(v).dtype);
  const std::string loop = runs % block == 0 && runs / block * stream_run_ * words <= 64 * kMaxRowBlock / block
                               ? "TG_UNROLL for (int n = 0; n < " + std::to_string(runs / block) + "; ++n) {\n" + indent + "    const int64_t run = threadIdx.x + n * " +
                                     std::to_string(block) + ";\n"
                               : "for (int64_t run = threadIdx.x; run < " + std::to_string(runs) + "; run += " + std::to_string(block) + ") {\n";
  const std::string dims = dim_declarations(lane_body, loop_dims_, layout_.reduced, indent + "      ");
  auto pass = [&](bool wide) {
    std::string code = indent + "  " + loop;
    for (ValueId v : stream_loads_) {
      code += indent + "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_in, v) + "[" + L + "];\n";
      if (wide) code += indent + "    tg::load_run_to<" + L + ">(" + ident(v) + ", " + first(v) + ", " + local(Role::run_in, v) + ");\n";
      else code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) " + local(Role::run_in, v) + "[lane] = tg::load(" + ident(v) + ", " + first(v) + " + lane);\n";
    }
    for (ValueId v : outs) code += indent + "    " + ctype(t_.value(v).dtype) + " " + local(Role::run_out, v) + "[" + L + "];\n";
    code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) {\n";
    if (uses_word(lane_body + dims, "j")) code += indent + "      const int64_t j = run * " + L + " + lane;\n";
    code += dims + lane_body + indent + "    }\n";
    for (ValueId v : outs) {
      if (wide) code += indent + "    tg::store_run_from<" + L + ">(" + ident(v) + ", " + first(v) + ", " + local(Role::run_out, v) + ");\n";
      else code += indent + "    TG_UNROLL for (int lane = 0; lane < " + L + "; ++lane) tg::store(" + ident(v) + ", " + first(v) + " + lane, " + local(Role::run_out, v) + "[lane]);\n";
    }
    return code + indent + "  }\n";
  };
  std::vector<ValueId> along = stream_loads_;
  along.insert(along.end(), outs.begin(), outs.end());
  if (along.empty()) {  // (nothing along the row to read or write)
    line("{");
    scopes_.back().code += pass(false);
    line("}");
    return;
  }
  line(if_aligned(along) + "  // runs of " + L + ", one access each");
  scopes_.back().code += pass(true);
  line("} else {  // element by element, in the same order");
  scopes_.back().code += pass(false);
  line("}");
}

}  // namespace tg::emit
