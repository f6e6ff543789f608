// The kernel writer: one kernel of a fused trace as CUDA source (emit_cuda.cpp writes the file
// around the kernels and the host entry point). One class, its parts in a file per kernel kind:
//   emit_values.cpp        the kernel's frame, names and values: every value computed once per
//                          index (v_<name>), loads and their index code, the ops' code
//   emit_pointwise.cpp     pointwise kernels: a loop over 16-byte runs, then one over elements,
//                          both calling the kernel's element function
//   emit_row.cpp           row kernels: one block per row, passes over it, the row held in
//                          registers or streamed
//   emit_reductions.cpp    a row kernel's reductions: accumulations, the passes that compute them
//   emit_column.cpp        column kernels: a row kernel whose block takes 32 neighbouring rows
//   emit_partial_sums.cpp  sums over a row kernel's rows, a part per block
// Only the emit_*.cpp files include it.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/emit_cuda.h"
#include "ir/trace.h"
#include "ops/op_table.h"
#include "schedule/fuse.h"
#include "schedule/index_map.h"
#include "schedule/kernel_plan.h"
#include "support/generated_text.h"

namespace tg::emit {

constexpr int64_t kMaxPartSumBytes = 32 * 1024;  // a row kernel's partial sums in shared memory

inline std::string ctype(DType t) { return std::string(compute_ctype(t)); }
// Does `text` contain `word` as a whole identifier (not part of a longer one)?
bool uses_word(const std::string& text, const std::string& word);
// Declares the loop dims of `dims` that a body uses, d<k> = defs[k] (see loop_dim_definitions).
std::string dim_declarations(const std::string& body, const std::vector<IndexExpr>& defs, const std::vector<int64_t>& dims,
                             const std::string& indent);
// Sets defs[d] for the loop dims d of `dims`: quotients and remainders of `flat`, their row-major
// linear index over `domain`.
void define_dims(std::vector<IndexExpr>& defs, const IndexExpr& flat, const Shape& domain, const std::vector<int64_t>& dims);
// 0, 1, ..., rank - 1: every dim of `domain`.
std::vector<int64_t> all_dims(const Shape& domain);
// `head`, the items separated by ", ", then `tail`: on one line when that fits in 100 columns
// after `indent`, else one item a line, four columns in from `indent`, so that a diff of the
// generated code shows an added or renamed parameter as one line. (No indent before `head`.)
std::string wrapped_list(std::string_view indent, std::string_view head, const std::vector<std::string>& items, std::string_view tail);

class KernelWriter {
 public:
  // `idents`: the g_<name> identifiers of values by id, filled in as kernels need them ("" until
  // then), so each is made once per trace rather than once per use.
  // `plan` (src/schedule/kernel_plan.h) says how to write `kernel`.
  KernelWriter(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan);
  std::string write();
  int block_size() const;
  // Threads' worth of work: runs in a pointwise kernel with a run loop (known once written).
  int64_t work_items() const;
  // Work items a block takes: a thread each (pointwise), one row, or a column kernel's 32 rows.
  int items_per_block() const;
  // Blocks to launch where the problem fixes them (0: from the work items): one per partial sum.
  int64_t fixed_grid() const;

 private:
  const Trace& t_;
  std::vector<std::string>& idents_;
  const Op& k_;
  const KernelPlan& plan_;
  KernelLayout layout_;
  std::vector<IndexExpr> loop_dims_;  // d<k> in the kernel's own indices (loop_dim_definitions)
  std::map<ValueId, const Op*> producer_;
  std::set<ValueId> loaded_;
  std::map<ValueId, std::string> reduced_;  // reductions computed so far: their register
  struct Scope {
    ReadMap<std::string> values;  // value at index -> the variable holding it
    std::map<std::string, std::string> index_names;  // index code -> the variable holding it
    std::string code;
    std::string indent;
    std::set<std::string> declared;  // variable names declared in this scope
  };
  std::vector<Scope> scopes_;
  // From the plan:
  int lanes_ = 1;                   // pointwise: elements per thread in the 16-byte loop
  int column_tile_ = 1;             // row kernels: rows per block (32: a column kernel)
  int cached_ = 0;                  // row kernels: row elements per thread held in registers
  int row_run_ = 1;                 // ... held in runs of this many neighbours
  std::vector<const Op*> part_sums_;  // thunder_gen.partial_sum ops: sums over the rows, a part per block
  std::vector<const Op*> row_totals_;  // ... of a value per row (a row kernel's reduced values)
  std::vector<ValueId> row_cached_; // the operands it holds there (c_<name>[k])
  bool hoist_ = false;              // ... and operands shaped like one row loaded once, before the rows
  std::vector<ValueId> row_hoisted_;  // those (c_<name>[k]: element j of the thread's k-th)
  int stream_run_ = 1;              // rows not held: elements a thread streams in a run
  bool in_stream_run_ = false;      // writing a streamed pass's per-lane body
  std::vector<ValueId> stream_loads_;  // operands that body reads a run at a time (r_<name>[lane])
  std::vector<ValueId> stream_row_loads_;  // ... of those, the ones shaped like one row (a LayerNorm's weight)
  bool in_run_ = false;             // pointwise: writing the element function for a run loop's lanes
  struct RunLoad {
    ValueId value;
    IndexExpr start;    // the run's first element, in `run`
    std::string array;  // r_<name>, numbered where one operand is read at several starts
    std::string param;  // the element function's parameter for this lane's element of it (v_<name>)
    Index index;        // where the element function reads it (what the element loop loads)
  };
  std::vector<RunLoad> run_loads_;  // operands the run loop loads a run at a time
  std::map<ValueId, std::vector<size_t>> run_loads_of_;  // ... those of each operand
  std::set<std::string> run_arrays_;  // ... their arrays' names
  IndexExpr run_var_;                 // ... its variable `run`
  std::vector<IndexExpr> lane_dims_;  // ... and d<k> in terms of `run` and `lane` there
  std::string element_function_;      // pointwise: the element function, written before the kernel
  bool element_takes_i_ = false;      // ... whether it takes the element's index i
  std::vector<ValueId> element_args_;  // ... the kernel's parameters it takes (pointers, scalars)

  // One accumulation over the row: acc = combine over j of element(), then a block-wide (or, in a
  // column kernel, column-wide) combine; finish() gets that total's expression and declares the
  // results. The plan's rounds say which share a pass.
  struct Accumulation {
    std::string comment, reducer, acc_type, acc_name;
    std::function<std::string()> element;
    std::function<void(const std::string& total)> finish;
  };

  // ---- the kernel's frame, names and values (emit_values.cpp) -----------------------------------
  std::string description() const;
  std::string parameter(ValueId v, bool output) const;
  bool has_packed_output() const;
  std::string all_aligned(const std::vector<ValueId>& values) const;
  std::string if_aligned(const std::vector<ValueId>& values) const;
  static std::string dims_text(const std::vector<int64_t>& dims);
  const std::string& ident(ValueId v) const;
  std::string local(Role role, ValueId v) const;
  void line(const std::string& s);
  void comment(const std::string& text);
  void push(const std::string& indent);
  std::string pop();
  std::string name_index(const std::string& code, const char* type, const std::string& hint);
  std::string unique_local(const std::string& base);
  std::string fresh_name(ValueId v);
  IndexNamer index_namer();
  bool is_identity(const Index& index) const;
  std::string offset(const Value& v, const Index& index);
  IndexExpr offset_expr(const Value& v, const Index& index);
  bool loop_dims_divide(const IndexExpr& e) const;
  const std::string* memoized(ValueId v, const Index& index) const;
  bool computed_here(ValueId v) const;
  std::vector<std::pair<ValueId, Index>> operand_reads(const Op& op, const Index& index);
  void compute_operands_first(ValueId v, const Index& index);
  std::string value_at(ValueId v, const Index& index);
  std::string operand(const Arg& a, const Index& index, DType as);
  std::string as_stored(const std::string& code, DType as, const Arg& a) const;
  static std::string format(std::string_view code, const std::vector<std::string>& operands);
  std::string compute(const Op& op, ValueId v, const Index& index);

  // ---- pointwise kernels (emit_pointwise.cpp) ---------------------------------------------------
  std::string element_function(bool in_runs);
  std::string element_call(const std::string& indent, const std::string& i, const std::function<std::string(const RunLoad&)>& read,
                           const std::function<std::string(ValueId)>& result) const;
  std::string pointwise_body();
  std::string element_loop_body(const std::string& indent);
  std::string run_loop(const std::string& thread, const std::string& stride);
  std::string lane_body(const std::string& indent) const;
  std::string run_load(ValueId v, const IndexExpr& start, const Index& index);
  std::optional<IndexExpr> run_start(const Value& val, const Index& index) const;

  // ---- row kernels (emit_row.cpp) ---------------------------------------------------------------
  bool reads_row_element(const Value& val, const Index& index) const;
  std::string offset_of_row_element() const;
  std::string cached_element() const;
  std::string over_runs(const std::string& indent, const std::function<std::vector<std::string>(const std::string& at)>& statements) const;
  void reduced_loop(const std::string& body);
  std::string row_body();
  std::string fill_registers(const std::vector<ValueId>& values, Role role, const std::string& offset, const std::string& indent) const;
  void pass_writing(const std::vector<ValueId>& outs, const std::function<void()>& body);
  void store_row_outputs(const std::vector<ValueId>& outs);
  void declare_row_output_runs(const std::vector<ValueId>& outs);
  void set_row_output_runs(const std::vector<ValueId>& outs);
  void store_row_output_runs(const std::vector<ValueId>& outs);
  void stream_pass(const std::vector<ValueId>& outs, const std::function<void()>& body);

  // ---- a row kernel's reductions (emit_reductions.cpp) ------------------------------------------
  static std::string acc_type(DType t);
  void declare_reduced(ValueId v, const std::string& expr);
  std::function<std::string()> row_element(ValueId input);
  std::vector<Accumulation> accumulations(const KernelPlan::Step& step);
  Accumulation accumulate(const Op& op);
  Accumulation online_max_sum(const KernelPlan::Step& step);
  Accumulation variance_mean(const Op& op);
  std::vector<Accumulation> variance_spread(const Op& op);
  void pick(const KernelPlan::Step& step);
  void combine_across_block(const std::vector<Accumulation>& pass);
  void reduction_rounds();

  // ---- column kernels (emit_column.cpp) ---------------------------------------------------------
  static std::string column_row_loop();
  static std::string column_element_loop(const std::string& length);
  static std::string column_total(const std::string& reducer, const std::string& acc);
  static std::string column_result_guard();

  // ---- partial sums over the rows (emit_partial_sums.cpp) ---------------------------------------
  bool part_sums_shared() const;
  std::string part_row_at(const Op* p) const;
  std::string part_sum_at(const Op* p) const;
  std::string over_row_elements(const std::string& statements) const;
  std::string row_total(const Op* p) const;
  std::string start_part_sums() const;
  void add_to_part_sums();
  std::string store_part_sums() const;
};

}  // namespace tg::emit
