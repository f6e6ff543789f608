// KernelWriter, row kernels: one block per row of the reductions' input, a loop over the row per
// pass; the row held in registers (in runs) or streamed in runs (docs/design-notes.md, "Row kernels").
#include <algorithm>

#include "emit_kernel.h"

namespace tg::emit {

// Threads per row: the row's length rounded up to a power of two, at most kMaxRowBlock; a row
// longer than kMaxRowBlock * 16 (LayerNorm over 8192 features) gets the smallest larger block
// that holds it in registers, where one does, so its passes need not re-read it from memory.
int KernelWriter::row_block() const {
  if (!layout_.is_row || column_tile_ > 1) return 0;
  const int64_t r = numel(layout_.reduced_shape());
  int block = 32;
  while (block < kMaxRowBlock && block < r) block *= 2;
  if (row_cache(block) > 0 || r <= int64_t(block) * kMaxCachedPerThread) return block;
  for (int wide = 2 * block; wide <= kMaxRowBlockWide; wide *= 2)
    if (row_cache(wide) > 0) return wide;
  return block;
}

// Elements of its row a thread keeps in registers (0: none), so that a row kernel's passes
// (mean, variance, write ...) read memory once, with `block` threads: when the row splits evenly
// into at most 16 elements per thread and the operands read along it fit the registers: 64
// registers' worth at 256 threads, fewer in larger blocks (1024 threads leave 64 a thread in all).
int KernelWriter::row_cache(int block) const {
  if (!layout_.is_row || column_tile_ > 1) return 0;
  const std::string j_form = offset_of_row_element();
  if (j_form.empty()) return 0;
  const int64_t r = numel(layout_.reduced_shape());
  if (r % block != 0 || r / block > kMaxCachedPerThread) return 0;
  return row_words() * (r / block) <= 64 * kMaxRowBlock / block ? int(r / block) : 0;
}

// 32-bit registers per cached element (2 for an f64 operand) of the operands shaped like the
// domain (row_cache), and of those shaped like one row: a LayerNorm's weight and bias, the same
// for every row, which a thread holding its part of the row loads once for all its rows (hoist_).
int64_t KernelWriter::row_words() const {
  return operand_words(layout_.domain);
}

int64_t KernelWriter::hoisted_words() const {
  return layout_.outer.empty() ? 0 : operand_words(layout_.reduced_shape());
}

int64_t KernelWriter::operand_words(const Shape& shape) const {
  int64_t words = 0;
  for (const Arg& a : k_.args) {
    const Value& v = t_.value(a.value);
    if (!v.is_scalar && v.shape == shape) words += register_words(v.dtype);
  }
  return words;
}

int64_t KernelWriter::register_words(DType t) {
  return (dtype_bytes(t) + 3) / 4;
}

// Whether `index` reads element j of a value shaped like one row (the reduced dims, in order).
bool KernelWriter::reads_row_element(const Value& val, const Index& index) const {
  if (val.shape != layout_.reduced_shape() || index.size() != layout_.reduced.size()) return false;
  for (size_t i = 0; i < index.size(); ++i)
    if (index[i].kind != IndexComp::Kind::var || index[i].var != int(layout_.reduced[i])) return false;
  return true;
}

// Neighbouring row elements a thread holds together when its part of the row is in registers:
// 16 bytes of the widest row-shaped operand or output (fewer where the part does not split so),
// so that the row is read and written in 16-byte runs. 1: elements a block apart.
int KernelWriter::row_run() const {
  if (cached_ == 0 || has_packed_output()) return 1;
  int run = 16 / std::max(1, widest_along_row());
  while (run > 1 && cached_ % run != 0) run /= 2;
  return run;
}

// A row not held in registers is streamed by each pass: thread t takes runs t, t + block, ... of
// 16 bytes of the widest row-shaped operand or output, read (and written) with one access each
// where the pointers are aligned, so a thread has whole runs in flight rather than one element.
// 1 where the row does not split into runs (its length, or rows not contiguous), would leave
// threads without a run, or a packed mask is written.
int KernelWriter::stream_run() const {
  if (!layout_.is_row || column_tile_ > 1 || cached_ > 0 || has_packed_output() || offset_of_row_element().empty()) return 1;
  const int widest = widest_along_row();
  if (widest == 0 || widest > 8) return 1;
  const int run = 16 / widest;
  // (Every thread of the block takes at least one run: a shorter row keeps its threads busy
  // element by element instead.)
  const int64_t length = numel(layout_.reduced_shape());
  return length % run == 0 && length >= int64_t(run) * block_size() ? run : 1;
}

// Bytes of the widest element a run moves: of the operands and outputs shaped like the rows, and
// of the operands shaped like one row (loaded in runs of the same length), so that no run is
// wider than 16 bytes. 0 when there are none.
int KernelWriter::widest_along_row() const {
  int widest = 0;
  for (const Arg& a : k_.args) {
    const Value& v = t_.value(a.value);
    const bool one_row = !layout_.outer.empty() && v.shape == layout_.reduced_shape();
    if (!v.is_scalar && !v.bit_packed && (v.shape == layout_.domain || one_row)) widest = std::max(widest, dtype_bytes(v.dtype));
  }
  for (ValueId id : k_.outs)
    if (t_.value(id).shape == layout_.domain) widest = std::max(widest, dtype_bytes(t_.value(id).dtype));
  return widest;
}

// "row * R + j" (or "j"): where a row-shaped operand's element j lies, when rows are contiguous.
std::string KernelWriter::offset_of_row_element() const {
  for (size_t k = 0; k < layout_.reduced.size(); ++k)
    if (layout_.reduced[k] != int64_t(layout_.domain.size() - layout_.reduced.size() + k)) return "";
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
  ++passes_over_row_;
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
  // Outputs shaped like a row are written in a pass: the first, when they need no reduction.
  std::vector<ValueId> row_outs, early_outs, outer_outs;
  for (ValueId v : k_.outs) {
    const Op* p = producer_.count(v) ? producer_.at(v) : nullptr;
    if (p && p->info->kind == OpKind::partial_sum) continue;  // (written after the rows)
    bool is_reduced = p && p->info->fusion == FusionClass::reduction;
    if (is_reduced || t_.value(v).shape != layout_.domain) outer_outs.push_back(v);
    else (reductions_needed(v).empty() ? early_outs : row_outs).push_back(v);
  }
  for (const Op& op : k_.sub)
    if (op.info->fusion == FusionClass::reduction) reduction(op);
  reduction_passes(early_outs);
  if (!row_outs.empty() || !part_sums_.empty()) {
    comment(part_sums_.empty() ? "write the row" : row_outs.empty() ? "add the row to the block's partial sums" : "write the row, and add it to the block's partial sums");
    pass_writing(row_outs, [&] { add_to_part_sums(); });
  }
  if (!outer_outs.empty()) {
    std::vector<std::string> vars;
    for (ValueId v : outer_outs) vars.push_back(value_at(v, layout_.outer_index()));
    line(column_tile_ > 1 ? column_result_guard() : "if (threadIdx.x == 0) {");
    for (size_t i = 0; i < outer_outs.size(); ++i) line("  tg::store(" + ident(outer_outs[i]) + ", row, " + vars[i] + ");");
    line("}");
  }
  for (const Op* p : row_totals_) line(row_total(p) + " += " + value_at(p->arg(0).value, layout_.outer_index()) + ";");
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
  ++passes_over_row_;
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
