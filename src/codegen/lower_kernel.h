// Kernel lowering: one planned kernel of a fused trace (its plan: src/schedule/kernel_plan.h) as
// kernel IR (kernel_ir.h). The plan says how the kernel is written; lowering decides the rest
// (names, where each value is computed, which loads are runs) and the printers decide nothing.
// One class, its parts in a file per kernel kind:
//   lower_values.cpp        the kernel's frame, names and values: every value computed once per
//                           index (v_<name>), loads and their index code, the ops' code
//   lower_pointwise.cpp     pointwise kernels: a loop over 16-byte runs, then one over elements,
//                           both calling the kernel's element function
//   lower_row.cpp           row kernels: one block per row, passes over it, the row held in
//                           registers or streamed (a row of run-time length held up to a limit,
//                           its streamed twin beyond)
//   lower_reductions.cpp    a row kernel's reductions: accumulations, the passes that compute
//                           them; column kernels (a row kernel whose block takes 32 rows)
//   lower_partial_sums.cpp  sums over a row kernel's rows, a part per block
//   lower_sizes.cpp         what depends on the sizes: the index arithmetic's type, the shapes
//                           treated as one, the size parameters
// Only the lower_*.cpp files include it; the rest of the generator calls lower_kernel().
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/kernel_ir.h"
#include "ir/trace.h"
#include "ops/op_table.h"
#include "schedule/fuse.h"
#include "schedule/index_map.h"
#include "schedule/kernel_plan.h"
#include "support/generated_text.h"

namespace tg {

// `kernel`, a thunder_gen.kernel op of `t`, planned by `plan`, as kernel IR. `idents`: the
// g_<name> identifiers of values by id, filled in as kernels need them ("" until then), so each
// is made once per trace rather than once per use. Throws InternalError for a kernel the plan
// cannot be written for (a hand-edited listing's).
kir::Kernel lower_kernel(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan);

// The C++ type a value is stored as in device memory (tg::PackedBits for a bit-packed mask).
std::string storage_type(const Value& v);

namespace lower {

// `held`, a row kernel holding rows of a run-time length up to plan.longest_held_row(), with
// `streamed`, the same kernel lowered by plan.long_rows, as its twin for longer rows.
void add_streamed_twin(kir::Kernel& held, kir::Kernel streamed, const Trace& t, const KernelPlan& plan);

constexpr int64_t kMaxPartSumBytes = 32 * 1024;  // a row kernel's partial sums in shared memory

inline std::string ctype(DType t) { return std::string(compute_ctype(t)); }
// A name in a kernel: a variable, a parameter or a builtin (threadIdx.x).
inline kir::ExprPtr var(const std::string& name) { return kir::name(name); }
// name * factor
inline kir::ExprPtr times(const std::string& name, int64_t factor) { return kir::binary(kir::name(name), "*", kir::integer(factor)); }
// A twin's name: the kernel's label, "<trace>_<kind>_<value>", with `twin_kind` for its kind
// ("elementwise" for "pointwise", "rowstream" for "rowreduce"), which no label made from a plan
// takes. (Twins are made at run-time sizes, which a listing read with --from-stage, the one place
// labels come from elsewhere, never takes.)
std::string twin_label(const Trace& t, const std::string& label, const std::string& kind, const std::string& twin_kind);
// Its value, or taken at run time, the largest it can be (index ranges are bounded by it).
int64_t largest_count(const Trace& t, const Dim& count);
// 0, 1, ..., rank - 1: every dim of `domain`.
std::vector<int64_t> all_dims(const Shape& domain);
// Sets defs[d] for the loop dims d of `dims`: quotients and remainders of `flat`, their row-major
// linear index over `domain`.
void define_dims(std::vector<IndexExpr>& defs, const IndexExpr& flat, const Shape& domain, const std::vector<int64_t>& dims, const IndexSizes& sizes);

class KernelLowering : private IndexNamer {
 public:
  KernelLowering(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan);
  kir::Kernel lower();
  // A streamed twin takes its sizes as the kernel holding rows does: one launch runs either.
  void take_sizes_as(const KernelLowering& held) { size_type_ = held.size_type_; }

 private:
  using ExprPtr = kir::ExprPtr;
  using Block = kir::Block;

  const Trace& t_;
  std::vector<std::string>& idents_;
  const Op& k_;
  const KernelPlan& plan_;
  IndexSizes sizes_;  // how its dims enter index arithmetic (sz_<symbol> parameters, at run time)
  // ... in a run loop that runs only where every size it reads is a multiple of the run's length
  // (its lanes then share their quotients, and rows of such a length are runs): one variant of
  // the kernel for those sizes, the element loop for the rest (pointwise_body chooses it).
  IndexSizes divisible_sizes_;
  bool divisible_runs_ = false;
  // The C type of its index arithmetic: int in a pointwise kernel whose every index stays below
  // 2^30 at every size (its tensors and domain are smaller; int64_t arithmetic on run-time sizes
  // takes twice the registers), else int64_t.
  std::string index_type_;
  // ... and of the sizes it takes (its count, row length and sz_ parameters): the same, but int
  // too in a row kernel holding one element a thread of rows of a run-time length, where its
  // indexes fit one (its arithmetic widens them). A heuristic, measured with nvcc 13 for sm_90
  // (docs/symbolic-shapes.md): there nanoGPT's attention backward took 29 registers, not 32; with
  // several elements a thread a dropout + LayerNorm took 60, not 48, and in every row kernel
  // three went past tests/ptx_corpus.sh's bound.
  std::string size_type_;
  const IndexSizes& run_sizes() const { return divisible_runs_ ? divisible_sizes_ : sizes_; }
  KernelLayout layout_;
  std::vector<IndexExpr> loop_dims_;  // d<k> in the kernel's own indices (loop_dim_definitions)
  std::map<ValueId, const Op*> producer_;
  std::set<ValueId> loaded_;
  std::map<ValueId, std::string> reduced_;  // reductions computed so far: their register
  // A block of statements being built, with what it has computed and declared: a nested loop or
  // branch gets a scope of its own, and sees its parents'.
  struct IndexHash {
    template <class T>
    size_t operator()(const T& x) const { return x.hash(); }
  };
  struct Scope {
    ReadMap<std::string> values;  // value at index -> the variable holding it
    std::unordered_map<IndexExpr, std::string, IndexHash> index_names;  // index code -> its variable
    std::unordered_map<IndexCond, std::string, IndexHash> guard_names;  // guard code -> its variable
    Block code;
    std::set<std::string> declared;  // variable names declared in this scope
  };
  std::vector<Scope> scopes_;
  // From the plan:
  int lanes_ = 1;                   // pointwise: elements per thread in the 16-byte loop
  int column_tile_ = 1;             // row kernels: rows per block (32: a column kernel)
  int cached_ = 0;                  // row kernels: row elements per thread held in registers
  int row_run_ = 1;                 // ... held in runs of this many neighbours
  bool masked_ = false;             // ... a row of run-time length: element j held where j < row_length
  std::vector<const Op*> part_sums_;  // thunder_gen.partial_sum ops: sums over the rows, a part per block
  std::vector<const Op*> row_totals_;  // ... of a value per row (a row kernel's reduced values)
  std::vector<ValueId> row_cached_; // the operands it holds there (c_<name>[k])
  std::vector<ValueId> row_drawn_;  // the random draws it holds there (c_<name>[k], drawn_once)
  bool drawing_ = false;            // ... while lowering those draws
  bool hoist_ = false;              // ... and operands shaped like one row loaded once, before the rows
  std::vector<ValueId> row_hoisted_;  // those (c_<name>[k]: element j of the thread's k-th)
  // Where each row starts in an operand whose offset multiplies the row's dims by run-time sizes,
  // and the variable declared for it once a row (base_<operand>): with_row_base.
  std::vector<std::pair<IndexExpr, std::string>> row_bases_;
  int stream_run_ = 1;              // rows not held: elements a thread streams in a run
  bool in_stream_run_ = false;      // lowering a streamed pass's per-lane body
  std::vector<ValueId> stream_loads_;  // operands that body reads a run at a time (r_<name>[lane])
  std::vector<ValueId> stream_row_loads_;  // ... of those, the ones shaped like one row (a LayerNorm's weight)
  bool in_run_ = false;             // pointwise: lowering the element function for a run loop's lanes
  struct RunLoad {
    ValueId value;
    IndexExpr start;    // the run's first element, in `run`
    std::string array;  // r_<name>, numbered where one operand is read at several starts or types
    std::string param;  // the element function's parameter for this lane's element of it (v_<name>)
    Index index;        // where the element function reads it (what the element loop loads)
    bool stored;        // ... in its storage type, only moved (moved_element), else its compute type
  };
  std::vector<RunLoad> run_loads_;  // operands the run loop loads a run at a time
  std::map<ValueId, std::vector<size_t>> run_loads_of_;  // ... those of each operand
  std::set<std::string> run_arrays_;  // ... their arrays' names
  IndexExpr run_var_;                 // ... its variable `run`
  std::vector<IndexExpr> lane_dims_;  // ... and d<k> in terms of `run` and `lane` there
  std::optional<kir::RunCondition> twin_condition_;  // ... checked at the launch, which then picks the kernel or its twin
  Block twin_body_;                   // ... that twin's body, the element loop alone
  bool element_takes_i_ = false;      // pointwise: whether the element function takes the index i
  std::vector<int64_t> element_dims_;  // ... the loop dims it takes (d<k>, computed by its callers)
  std::vector<std::string> element_sizes_;  // ... the size parameters (sz_<symbol>) it takes
  std::vector<ValueId> element_args_;  // ... the kernel's parameters it takes (pointers, scalars)
  std::set<ValueId> moved_;  // pointwise and row kernels: the results they move unchanged in their storage type (moved_source)

  // One accumulation over the row: acc = combine over j of element(), then a block-wide (or, in a
  // column kernel, column-wide) combine; finish() gets that total and declares the results. The
  // plan's rounds say which share a pass.
  struct Accumulation {
    std::string comment, reducer, acc_type, acc_name;
    std::function<ExprPtr()> element;
    std::function<void(const ExprPtr& total)> finish;
  };

  // ---- the kernel's frame, names and values (lower_values.cpp) -----------------------------------
  // The kernel's count: its elements (pointwise: `n`) or its rows (a row kernel: `rows`), a
  // parameter of the kernel where the code takes it at run time.
  Dim count() const;
  bool count_is_parameter() const;
  std::string count_name() const { return layout_.is_row ? "rows" : "n"; }
  Block count_declaration() const;
  void check_shapes_agree_at_every_size() const;
  // A row kernel's row length: a number, or its parameter `row_length` where the code takes it
  // at run time (the row then streamed element by element: kernel_plan.cpp).
  bool row_length_is_parameter() const;
  ExprPtr row_length() const;
  int64_t longest_row() const;  // ... its number, or the largest the symbols allow
  std::vector<std::string> header() const;
  std::string description() const;
  kir::Param parameter(ValueId v, bool output) const;
  void take_size_parameters(kir::Kernel& k) const;
  ExprPtr all_aligned(const std::vector<ValueId>& values) const;
  static std::string dims_text(const std::vector<int64_t>& dims);
  const std::string& ident(ValueId v) const;
  ExprPtr global(ValueId v) const { return kir::name(ident(v)); }
  std::string local(Role role, ValueId v) const;
  void add(kir::Stmt s);
  void comment(const std::string& text);
  void push();
  Block pop();
  Block& code() { return scopes_.back().code; }
  // Declarations of the loop dims of `dims` that `body` reads (d<k> = loop_dims_[k], or defs[k]).
  Block dim_declarations(const Block& body, const std::vector<int64_t>& dims) const { return dim_declarations(body, dims, loop_dims_); }
  Block dim_declarations(const Block& body, const std::vector<int64_t>& dims, const std::vector<IndexExpr>& defs) const;
  template <class Names, class Key>
  std::string declared_once(Names Scope::*names, const Key& key, const char* type, const std::string& hint, const ExprPtr& value);
  std::string name(const IndexExpr& index, const std::string& hint) override;
  std::string name(const IndexCond& guard, const std::string& hint) override;
  std::string unique_local(const std::string& base);
  std::string fresh_name(ValueId v);
  // A cat of this many pieces or more computes each in a branch of its own (lower_shape_ops.cpp).
  static constexpr size_t kLazyCatPieces = 3;
  std::string cat_piece(const Op& op, const std::vector<OperandRead>& reads);
  bool is_identity(const Index& index) const;
  ExprPtr offset(const Value& v, const Index& index);
  IndexExpr offset_expr(const Value& v, const Index& index);
  bool loop_dims_divide(const IndexExpr& e) const;
  size_t loop_dims_size(const IndexExpr& e) const;  // the atoms of the definitions of the loop dims e reads
  const std::string* memoized(ValueId v, const Index& index) const;
  bool computed_here(ValueId v) const;
  std::vector<std::pair<ValueId, Index>> operand_reads(const Op& op, const Index& index);
  void compute_operands_first(ValueId v, const Index& index);
  std::string value_at(ValueId v, const Index& index);
  ExprPtr value_expr(ValueId v, const Index& index) { return kir::name(value_at(v, index)); }
  std::optional<std::string> held_in_registers(ValueId v, const Index& index);
  std::optional<std::string> drawn_once(ValueId v, const Index& index);
  std::string loaded(ValueId v, const Index& index);
  ExprPtr operand(const Arg& a, const Index& index, DType as);
  ExprPtr as_stored(ExprPtr code, DType as, const Arg& a) const;
  std::string compute(const Op& op, ValueId v, const Index& index);
  ExprPtr elementwise(const Op& op, const Index& index);
  ExprPtr converted(const Op& op, const Index& index);
  ExprPtr source(const Op& op, const Index& index);
  std::optional<ExprPtr> shape_value(const Op& op, const Index& index, std::string& var);
  // A result only moving a 16-bit operand's elements (lower_shape_ops.cpp).
  std::optional<std::pair<ValueId, Index>> moved_source(ValueId v, Index index, IndexNamer* namer);
  std::optional<ExprPtr> moved_element(ValueId v, const Index& index);
  std::string result_type(ValueId v) const;

  // ---- pointwise kernels (lower_pointwise.cpp) ---------------------------------------------------
  kir::Function element_function(bool in_runs);
  std::string param_type(const RunLoad& r) const;
  kir::Stmt element_call(const ExprPtr& i, const std::function<ExprPtr(const RunLoad&)>& read,
                         const std::function<ExprPtr(ValueId)>& result) const;
  Block pointwise_body(std::optional<kir::Function>& element);
  Block element_loop_body();
  Block run_loop(const ExprPtr& thread, const ExprPtr& stride, bool plain_lanes, bool& runs_take_all);
  std::vector<std::string> sizes_to_divide(const Block& body) const;
  ExprPtr run_condition(const std::vector<ValueId>& wide, const std::vector<std::string>& multiples) const;
  bool splits_into_twins(const std::vector<ValueId>& wide, const std::vector<std::string>& multiples) const;
  std::vector<size_t> param_places(const std::vector<ValueId>& values) const;
  size_t lane_arithmetic() const;
  // The run loop's innermost dim where its lanes step it (radix_declarations): lane 0's, and the
  // index outside it, declared before the lanes; what moves them on to the next lane's element.
  struct SteppedDims {
    Block first_lane, step;
  };
  Block lane_body(Block& before_lanes) const;
  Block radix_declarations(const Block& body, const IndexExpr& flat, const std::vector<IndexExpr>& defs, const IndexSizes& sizes,
                           SteppedDims* stepped = nullptr) const;
  bool lanes_cross_rows(const IndexExpr& flat, const IndexScale& extent) const;
  IndexExpr stepped_innermost(SteppedDims& s, const IndexExpr& flat, int64_t k, const IndexScale& extent, bool outer_read) const;
  std::string run_load(ValueId v, const IndexExpr& start, const Index& index, bool stored = false);
  std::optional<IndexExpr> run_start(const Value& val, const Index& index) const;

  // ---- row kernels (lower_row.cpp) ---------------------------------------------------------------
  bool reads_row_element(const Value& val, const Index& index) const;
  ExprPtr offset_of_row_element() const;
  ExprPtr cached_element() const;
  Block over_runs(const std::function<Block(const ExprPtr& at)>& statements) const;
  void reduced_loop(Block body);
  kir::Stmt within_row(Block statements) const;
  Block row_body();
  bool fixed_by_row(const IndexExpr& term) const;
  IndexExpr with_row_base(const IndexExpr& offset, const Value& v);
  Block row_base_declarations() const;
  Block row_draws();
  void store_row_results();
  Block fill_registers(const std::vector<ValueId>& values, Role role, const ExprPtr& offset) const;
  void pass_writing(const std::vector<ValueId>& outs, const std::function<void()>& body);
  ExprPtr row_output(ValueId v, const Index& index);
  void store_row_outputs(const std::vector<ValueId>& outs);
  void declare_row_output_runs(const std::vector<ValueId>& outs);
  void set_row_output_runs(const std::vector<ValueId>& outs);
  void store_row_output_runs(const std::vector<ValueId>& outs);
  void stream_pass(const std::vector<ValueId>& outs, const std::function<void()>& body);
  kir::Stmt stream_loop() const;
  Block streamed_runs(bool wide, const std::vector<ValueId>& outs, const Block& lanes) const;
  ExprPtr stream_run_start(ValueId v) const;

  // ---- a row kernel's reductions; column kernels (lower_reductions.cpp) --------------------------
  static std::string acc_type(DType t);
  void declare_reduced(ValueId v, const ExprPtr& expr);
  std::function<ExprPtr()> row_element(ValueId input);
  std::vector<Accumulation> accumulations(const KernelPlan::Step& step);
  Accumulation accumulate(const Op& op);
  Accumulation online_max_sum(const KernelPlan::Step& step);
  Accumulation variance_mean(const Op& op);
  std::vector<Accumulation> variance_spread(const Op& op);
  void pick(const KernelPlan::Step& step);
  void combine_across_block(const std::vector<Accumulation>& pass);
  void reduction_rounds();
  void reduction_round(const KernelPlan::Round& round);
  kir::Stmt column_row_loop(Block body) const;
  bool column_tail() const;  // a column kernel whose last block may take fewer than 32 rows
  bool indexes_fit_int() const;
  // The global thread index, and the grid's threads (a grid-stride loop's step), in index_type_.
  ExprPtr global_thread() const;
  ExprPtr grid_threads() const;
  // A pointwise kernel's grid-stride loop over `index`, from `start` (a thread's place in the grid,
  // never negative) to `bound`.
  kir::Stmt grid_stride_loop(const std::string& index, ExprPtr start, ExprPtr bound, ExprPtr step, Block body) const;
  ExprPtr index_cast(const ExprPtr& e) const { return kir::call(index_type_, {e}); }
  static ExprPtr column_tile_row();  // that block's thread's row: tile + threadIdx.x % 32
  static ExprPtr column_total(const std::string& reducer, const std::string& acc);

  // ---- partial sums over the rows (lower_partial_sums.cpp) ---------------------------------------
  bool part_sums_shared() const;
  ExprPtr part_row_at(const Op* p) const;
  ExprPtr part_sum_at(const Op* p) const;
  kir::Stmt over_row_elements(Block statements) const;
  std::string row_total(const Op* p) const;
  Block start_part_sums() const;
  void add_to_part_sums();
  Block store_part_sums() const;
};

}  // namespace lower
}  // namespace tg
