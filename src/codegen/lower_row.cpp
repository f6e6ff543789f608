// Kernel lowering, row kernels: one block per row of the reductions' input, a loop over the row
// per pass; the row held in registers (in runs) or streamed in runs (docs/design-notes.md, "Row
// kernels").
#include <algorithm>

#include "codegen/lower_kernel.h"
#include "support/diagnostics.h"

namespace tg::lower {

namespace {

// A one-line TG_UNROLL loop over the lanes of a run: `lane` from 0 to `width`, its one statement.
kir::Stmt over_lanes(int width, kir::Stmt statement) {
  kir::Stmt loop = kir::loop("int", "lane", kir::integer(0), kir::integer(width), nullptr, {std::move(statement)}, true);
  loop.one_line = true;
  return loop;
}

}  // namespace

// Whether `index` reads element j of a value shaped like one row (the reduced dims, in order).
bool KernelLowering::reads_row_element(const Value& val, const Index& index) const {
  if (val.shape != layout_.reduced_shape() || index.size() != layout_.reduced.size()) return false;
  for (size_t i = 0; i < index.size(); ++i)
    if (index[i].kind != IndexComp::Kind::var || index[i].var != int(layout_.reduced[i])) return false;
  return true;
}

// "row * R + j" (or "j"): where a row-shaped operand's element j lies, when rows are contiguous
// (null when not).
kir::ExprPtr KernelLowering::offset_of_row_element() const {
  if (!layout_.rows_contiguous()) return nullptr;
  return layout_.outer.empty() ? var("j") : kir::binary(kir::binary(var("row"), "*", row_length()), "+", var("j"));
}

// j of a thread's k-th cached element: runs of row_run_ neighbours, a block's worth of runs apart.
// (A masked row's launch takes as many threads as the row needs, tg::row_block, so a row shorter
// than the planned block is all k = 0's. The stride stays the planned block, a number nvcc folds
// into its addresses: at blockDim.x it kept an address a held element, 72 registers against 48.)
kir::ExprPtr KernelLowering::cached_element() const {
  const int block = plan_.block;
  if (row_run_ == 1) return kir::binary(var("threadIdx.x"), "+", times("k", block));
  if (cached_ == row_run_) return kir::binary(times("threadIdx.x", row_run_), "+", var("k"));  // one run
  const kir::ExprPtr run = kir::binary(kir::paren(kir::binary(var("k"), "/", kir::integer(row_run_))), "*", kir::integer(block * row_run_));
  return kir::binary(kir::binary(run, "+", times("threadIdx.x", row_run_)), "+", kir::binary(var("k"), "%", kir::integer(row_run_)));
}

// Statements moving each run of a thread's cached elements: `statements(at)` for one run whose
// first element is j and whose place in the thread's arrays is `at` past their start (null: the
// start); in a loop over the runs (`run`), or just once where the thread holds one run.
kir::Block KernelLowering::over_runs(const std::function<Block(const ExprPtr& at)>& statements) const {
  if (cached_ == row_run_) {
    Block code = {kir::decl(index_type_, "j", times("threadIdx.x", row_run_))};
    for (kir::Stmt& s : statements(nullptr)) code.push_back(std::move(s));
    return code;
  }
  Block body = {kir::decl(index_type_, "j", kir::binary(times("run", int64_t(plan_.block) * row_run_), "+", times("threadIdx.x", row_run_)))};
  for (kir::Stmt& s : statements(times("run", row_run_))) body.push_back(std::move(s));
  return {kir::loop("int", "run", kir::integer(0), kir::integer(cached_ / row_run_), nullptr, std::move(body), true)};
}

// A thread's loop over the reduced elements j of its row, around `body`, in the current scope.
// With the row in registers: a loop over k = 0 .. cached_-1, unrolled, j = cached_element().
void KernelLowering::reduced_loop(Block body) {
  const Block dims = dim_declarations(body, layout_.reduced);
  Block inner = dims;
  inner.insert(inner.end(), body.begin(), body.end());
  if (cached_ > 0 && (masked_ || kir::names_in(inner).count("j"))) {
    if (masked_) inner = {within_row(std::move(inner))};
    inner.insert(inner.begin(), kir::decl(index_type_, "j", cached_element()));
  }
  if (cached_ > 0) {
    add(kir::loop("int", "k", kir::integer(0), kir::integer(cached_), nullptr, std::move(inner), true));
  } else if (column_tile_ > 1) {  // a thread's elements of its row: every (blockDim.x / 32)-th, from t / 32
    add(kir::loop(index_type_, "j", kir::binary(var("threadIdx.x"), "/", kir::integer(32)), row_length(),
                  kir::binary(var("blockDim.x"), "/", kir::integer(32)), std::move(inner)));
  } else {
    add(kir::loop(index_type_, "j", var("threadIdx.x"), row_length(), var("blockDim.x"), std::move(inner)));
  }
}

// `statements` where the thread's element j is in a masked row (all of them in other rows).
kir::Stmt KernelLowering::within_row(Block statements) const {
  return kir::branch(kir::binary(var("j"), "<", row_length()), std::move(statements));
}

kir::Block KernelLowering::row_body() {
  moved_.clear();
  const std::vector<ValueId>& row_results = plan_.row_results;
  for (ValueId v : k_.outs) {
    const bool one_a_row = std::count(row_results.begin(), row_results.end(), v);
    if (moved_source(v, one_a_row ? layout_.outer_index() : identity_index(layout_.domain.size()), nullptr)) moved_.insert(v);
  }
  push();
  reduction_rounds();
  store_row_results();
  const Block rounds = pop();
  Block body;
  if (!row_cached_.empty()) {
    TG_CHECK(offset_of_row_element(), "kernel " + k_.label + " holds rows that are not contiguous");
    const std::string elements = std::to_string(cached_) + (cached_ == 1 ? " element" : " elements");
    const std::string per_thread = masked_ ? "up to " + elements + " per thread (j < row_length)" : elements + " per thread";
    body.push_back(kir::comment("the row, " + per_thread + (row_run_ > 1 ? " in runs of " + std::to_string(row_run_) : "") + ", read once"));
    for (kir::Stmt& s : fill_registers(row_cached_, Role::cached, offset_of_row_element())) body.push_back(std::move(s));
  }
  for (kir::Stmt& s : row_draws()) body.push_back(std::move(s));
  body.insert(body.end(), rounds.begin(), rounds.end());
  // The rows' bases, which lowering the rounds and draws collected, first in the row, and before
  // the dims are declared, so that the dims they read are.
  const Block row_bases = row_base_declarations();
  body.insert(body.begin(), row_bases.begin(), row_bases.end());
  Block out = count_declaration();
  for (kir::Stmt& s : start_part_sums()) out.push_back(std::move(s));
  if (!row_hoisted_.empty()) {
    out.push_back(kir::comment("operands shaped like a row, the same for every row: this thread's elements, read once"));
    for (kir::Stmt& s : fill_registers(row_hoisted_, Role::cached, var("j"))) out.push_back(std::move(s));
  }
  // Outer dims come from the row; the reduced ones were declared inside each pass from j.
  Block loop_body = dim_declarations(body, layout_.outer);
  loop_body.insert(loop_body.end(), body.begin(), body.end());
  out.push_back(column_tile_ > 1 ? column_row_loop(std::move(loop_body))
                                 : kir::loop(index_type_, "row", var("blockIdx.x"), var("rows"), var("gridDim.x"), std::move(loop_body)));
  for (kir::Stmt& s : store_part_sums()) out.push_back(std::move(s));
  return out;
}

// Whether an offset's term is the same for every element of the row and differs between rows: it
// reads the row's dims (or `row`) and sizes alone, and one of the former. (A size alone, `sz_T *
// 2`, stays with the element's part, so reads at such distances share one base.)
bool KernelLowering::fixed_by_row(const IndexExpr& term) const {
  const std::vector<std::string> sizes = term.size_names();
  bool reads_row = false;
  for (const std::string& n : term.names()) {
    const bool row_dim = n == "row" || std::any_of(layout_.outer.begin(), layout_.outer.end(), [&](int64_t d) { return n == "d" + std::to_string(d); });
    if (!row_dim && std::find(sizes.begin(), sizes.end(), n) == sizes.end()) return false;
    reads_row = reads_row || row_dim;
  }
  return reads_row;
}

// `offset` with the part the row fixes read from a variable declared once a row, where that part
// multiplies by a run-time size: nvcc computes such a part again in every pass over the row (ViT's
// q/k LayerNorm backward, reading a transposed qkv: 54 registers, 51 from a row base).
IndexExpr KernelLowering::with_row_base(const IndexExpr& offset, const Value& v) {
  auto [per_row, per_element] = offset.partition([this](const IndexExpr& term) { return fixed_by_row(term); });
  const IndexRange range = per_row.range();
  if (per_row.size_names().empty() || !range.known) return offset;
  auto known = std::find_if(row_bases_.begin(), row_bases_.end(), [&](const auto& b) { return b.first == per_row; });
  if (known == row_bases_.end()) {
    // (base_<name>: no other local takes the prefix, so only the bases themselves can clash.)
    std::string base = tg::ident(Role::row_base, v.name);
    for (int k = 1; std::any_of(row_bases_.begin(), row_bases_.end(), [&](const auto& b) { return b.second == base; }); ++k)
      base = tg::ident(Role::row_base, v.name + "_" + std::to_string(k));
    known = row_bases_.insert(row_bases_.end(), {per_row, base});
  }
  return IndexExpr::named(known->second, range.lo, range.hi) + per_element;
}

kir::Block KernelLowering::row_base_declarations() const {
  if (row_bases_.empty()) return {};
  Block decls = {kir::comment("where the row starts in operands whose offsets multiply by run-time sizes")};
  for (const auto& [at, base] : row_bases_) decls.push_back(kir::decl(index_type_, base, kir::index(at)));
  return decls;
}

// The random draws the passes use (drawn_once), each drawn once into c_<name>[k].
kir::Block KernelLowering::row_draws() {
  if (row_drawn_.empty()) return {};
  Block draws = {kir::comment("random draws, drawn once for every pass")};
  for (ValueId v : row_drawn_) draws.push_back(kir::array(ctype(t_.value(v).dtype), local(Role::cached, v), cached_));
  drawing_ = true;
  push();
  push();
  for (ValueId v : row_drawn_) {
    const std::string drawn = compute(*producer_.at(v), v, identity_index(layout_.domain.size()));
    add(kir::assign(kir::subscript(kir::name(local(Role::cached, v)), var("k")), var(drawn)));
  }
  reduced_loop(pop());
  for (kir::Stmt& s : pop()) draws.push_back(std::move(s));
  drawing_ = false;
  return draws;
}

// After the passes: the outputs with one element per row, stored by one thread of the row, and
// each row's value added to the block's totals over its rows.
void KernelLowering::store_row_results() {
  const std::vector<ValueId>& outer_outs = plan_.row_results;
  if (!outer_outs.empty()) {
    std::vector<ExprPtr> values;
    for (ValueId v : outer_outs) values.push_back(row_output(v, layout_.outer_index()));
    Block stores;
    for (size_t i = 0; i < outer_outs.size(); ++i) stores.push_back(kir::store(global(outer_outs[i]), var("row"), values[i]));
    kir::ExprPtr storing_thread = column_tile_ > 1 ? kir::binary(var("threadIdx.x"), "<", kir::integer(32))  // one a row
                                                   : kir::binary(var("threadIdx.x"), "==", kir::integer(0));
    if (column_tail()) storing_thread = kir::binary(storing_thread, "&&", kir::binary(column_tile_row(), "<", var("rows")));
    add(kir::branch(storing_thread, std::move(stores)));
  }
  for (const Op* p : row_totals_) add(kir::assign(kir::name(row_total(p)), value_expr(p->arg("a").value, layout_.outer_index()), "+="));
}

// Declares <role prefix><name>[cached_] for each of `values` and loads this thread's elements j into
// them from `offset` (an expression in j): in runs where the pointers are 16-byte aligned.
kir::Block KernelLowering::fill_registers(const std::vector<ValueId>& values, Role role, const ExprPtr& offset) const {
  Block fill;
  for (ValueId v : values) fill.push_back(kir::array(ctype(t_.value(v).dtype), local(role, v), cached_));
  Block loads;
  for (ValueId v : values) loads.push_back(kir::assign(kir::subscript(kir::name(local(role, v)), var("k")), kir::load(global(v), offset)));
  Block by_element = {kir::decl(index_type_, "j", cached_element())};
  if (masked_) by_element.push_back(within_row(std::move(loads)));
  else by_element.insert(by_element.end(), loads.begin(), loads.end());
  kir::Stmt element_by_element = kir::loop("int", "k", kir::integer(0), kir::integer(cached_), nullptr, std::move(by_element), true);
  if (row_run_ == 1) {
    fill.push_back(std::move(element_by_element));
    return fill;
  }
  Block runs = over_runs([&](const ExprPtr& at) {
    Block loads;
    for (ValueId v : values) {
      const kir::ExprPtr array = at ? kir::binary(kir::name(local(role, v)), "+", at) : kir::name(local(role, v));
      loads.push_back(kir::load_run(global(v), offset, array, row_run_, kir::Stmt::RunForm::within));
    }
    return loads;
  });
  fill.push_back(kir::branch(all_aligned(values), std::move(runs), {std::move(element_by_element)}));
  return fill;
}

// A pass over the row: `body` in the loop, and the row outputs `outs` written (in runs where
// the row is held in runs).
void KernelLowering::pass_writing(const std::vector<ValueId>& outs, const std::function<void()>& body) {
  if (stream_run_ > 1) {
    stream_pass(outs, body);
    return;
  }
  if (row_run_ > 1) declare_row_output_runs(outs);
  push();
  body();
  if (row_run_ > 1) set_row_output_runs(outs);
  else store_row_outputs(outs);
  reduced_loop(pop());
  if (row_run_ > 1) store_row_output_runs(outs);
}

// What the kernel writes of output v at `index` (the element's, or the row's for an output with
// one element a row): its value, or where it only moves a 16-bit operand's element
// (moved_element), that element as stored, gathered from memory: the row's registers hold the
// operand widened to float, and the round trip would quiet a signalling NaN.
kir::ExprPtr KernelLowering::row_output(ValueId v, const Index& index) {
  if (moved_.count(v))
    if (std::optional<ExprPtr> moved = moved_element(v, index)) return *moved;
  return value_expr(v, index);
}

// A packed mask in a row held element by element: a warp's lanes hold 32 neighbouring elements
// (the row's length is a multiple of the block), so they write whole words, without atomics.
void KernelLowering::store_row_outputs(const std::vector<ValueId>& outs) {
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) {
    ExprPtr at = offset(t_.value(v), full);
    ExprPtr value = row_output(v, full);
    if (cached_ > 0 && t_.value(v).bit_packed) add(kir::store_run_bits(global(v), at, kir::call("unsigned", {value}), 1));
    else add(kir::store(global(v), at, value));
  }
}

// With the row in registers in runs, a pass writes row outputs in three steps: arrays for the
// values before the loop, the values into them in it, and after it each run stored with one
// access where the outputs are 16-byte aligned, element by element where not.
void KernelLowering::declare_row_output_runs(const std::vector<ValueId>& outs) {
  for (ValueId v : outs) add(kir::array(result_type(v), local(Role::run_out, v), cached_));
}

void KernelLowering::set_row_output_runs(const std::vector<ValueId>& outs) {
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) add(kir::assign(kir::subscript(kir::name(local(Role::run_out, v)), var("k")), row_output(v, full)));
}

void KernelLowering::store_row_output_runs(const std::vector<ValueId>& outs) {
  if (outs.empty()) return;
  Block runs = over_runs([&](const ExprPtr& at) {
    Block stores;
    for (ValueId v : outs) {
      const kir::ExprPtr array = at ? kir::binary(kir::name(local(Role::run_out, v)), "+", at) : kir::name(local(Role::run_out, v));
      stores.push_back(kir::store_run(global(v), offset_of_row_element(), array, row_run_, kir::Stmt::RunForm::within));
    }
    return stores;
  });
  Block by_element = {kir::decl(index_type_, "j", cached_element())};
  for (ValueId v : outs) by_element.push_back(kir::store(global(v), offset_of_row_element(), kir::subscript(kir::name(local(Role::run_out, v)), var("k"))));
  add(kir::branch(all_aligned(outs), std::move(runs),
                  {kir::loop("int", "k", kir::integer(0), kir::integer(cached_), nullptr, std::move(by_element), true)}));
}

// Where v's run starts in a streamed pass: element j = run * L of the row (of v itself where v
// is one row).
kir::ExprPtr KernelLowering::stream_run_start(ValueId v) const {
  const bool one_row = layout_.outer.empty() || std::count(stream_row_loads_.begin(), stream_row_loads_.end(), v);
  const kir::ExprPtr in_row = times("run", stream_run_);
  return one_row ? in_row : kir::binary(times("row", numel(layout_.reduced_shape())), "+", in_row);
}

// The loop over a thread's runs of a streamed pass, without its body: as many runs for every
// thread, and few enough that all of them fit the registers a row held there may take, in a loop
// the compiler unrolls (each thread has all its loads in flight at once); else a loop over the
// runs.
kir::Stmt KernelLowering::stream_loop() const {
  const int64_t runs = numel(layout_.reduced_shape()) / stream_run_, block = plan_.block;
  int64_t words = 0;  // 32-bit registers per lane of all the runs loaded
  for (ValueId v : stream_loads_) words += register_words(t_.value(v).dtype);
  if (runs % block == 0 && runs / block * stream_run_ * words <= 64 * kMaxRowBlock / block) {
    const kir::ExprPtr run = kir::binary(var("threadIdx.x"), "+", times("n", block));
    return kir::loop("int", "n", kir::integer(0), kir::integer(runs / block), nullptr, {kir::decl(index_type_, "run", run)}, true);
  }
  return kir::loop(index_type_, "run", var("threadIdx.x"), kir::integer(runs), kir::integer(block), {});
}

// One way through a streamed pass: each run loaded and stored with one access (`wide`), or
// element by element into the same arrays; `lanes` computes a lane.
kir::Block KernelLowering::streamed_runs(bool wide, const std::vector<ValueId>& outs, const Block& lanes) const {
  const int L = stream_run_;
  kir::Stmt loop = stream_loop();
  Block& body = loop.body;
  for (ValueId v : stream_loads_) {
    const kir::ExprPtr array = kir::name(local(Role::run_in, v));
    body.push_back(kir::array(ctype(t_.value(v).dtype), local(Role::run_in, v), L));
    if (wide) body.push_back(kir::load_run(global(v), stream_run_start(v), array, L, kir::Stmt::RunForm::within));
    else body.push_back(over_lanes(L, kir::assign(kir::subscript(array, var("lane")), kir::load(global(v), kir::binary(stream_run_start(v), "+", var("lane"))))));
  }
  for (ValueId v : outs) body.push_back(kir::array(result_type(v), local(Role::run_out, v), L));
  body.push_back(kir::loop("int", "lane", kir::integer(0), kir::integer(L), nullptr, lanes, true));
  for (ValueId v : outs) {
    const kir::ExprPtr array = kir::name(local(Role::run_out, v));
    if (wide) body.push_back(kir::store_run(global(v), stream_run_start(v), array, L, kir::Stmt::RunForm::within));
    else body.push_back(over_lanes(L, kir::store(global(v), kir::binary(stream_run_start(v), "+", var("lane")), kir::subscript(array, var("lane")))));
  }
  return {std::move(loop)};
}

// A pass streaming the row in runs (stream_run_): thread t takes runs t, t + block, ... and
// computes their lanes. Where every pointer it reads or writes along the row is 16-byte
// aligned, each operand's run is loaded and each output's stored with one access; where not,
// element by element into the same arrays, so both ways add the same elements in the same order
// (the same bits).
void KernelLowering::stream_pass(const std::vector<ValueId>& outs, const std::function<void()>& body) {
  in_stream_run_ = true;
  stream_loads_.clear();
  stream_row_loads_.clear();
  push();
  body();
  const Index full = identity_index(layout_.domain.size());
  for (ValueId v : outs) add(kir::assign(kir::subscript(kir::name(local(Role::run_out, v)), var("lane")), row_output(v, full)));
  const Block lane_code = pop();
  in_stream_run_ = false;
  Block lanes = dim_declarations(lane_code, layout_.reduced);
  lanes.insert(lanes.end(), lane_code.begin(), lane_code.end());
  if (kir::names_in(lanes).count("j")) lanes.insert(lanes.begin(), kir::decl(index_type_, "j", kir::binary(times("run", stream_run_), "+", var("lane"))));
  std::vector<ValueId> along = stream_loads_;
  along.insert(along.end(), outs.begin(), outs.end());
  if (along.empty()) {  // (nothing along the row to read or write)
    kir::Stmt scope;
    scope.kind = kir::Stmt::Kind::scope;
    scope.body = streamed_runs(false, outs, lanes);
    add(std::move(scope));
    return;
  }
  kir::Stmt both = kir::branch(all_aligned(along), streamed_runs(true, outs, lanes), streamed_runs(false, outs, lanes));
  both.note = "runs of " + std::to_string(stream_run_) + ", one access each";
  both.else_note = "element by element, in the same order";
  add(std::move(both));
}

void add_streamed_twin(kir::Kernel& held, kir::Kernel streamed, const Trace& t, const KernelPlan& plan) {
  // One launch runs either: the same grid and arguments, every size parameter either reads (in
  // the order take_size_parameters gives them, by name).
  const kir::Launch &a = held.launch, &b = streamed.launch;
  TG_CHECK(a.block == b.block && a.items == b.items && a.items_per_block == b.items_per_block && a.fixed_grid == b.fixed_grid &&
               a.count == b.count && a.row_length == b.row_length && a.int_sizes == b.int_sizes,
           "kernel " + held.name + " and its streamed twin launch differently");
  std::map<std::string, kir::Param> sizes;
  for (kir::Kernel* k : {&held, &streamed}) {
    const size_t first_size = k->params.size() - k->launch.size_parameters.size();
    for (size_t i = first_size; i < k->params.size(); ++i) {
      const kir::Param& p = k->params[i];
      TG_CHECK(sizes.emplace(p.name, p).first->second.type == p.type, "kernel " + held.name + " and its twin take " + p.name + " as different types");
    }
    k->params.resize(first_size);
  }
  TG_CHECK(std::equal(held.params.begin(), held.params.end(), streamed.params.begin(), streamed.params.end(),
                      [](const kir::Param& x, const kir::Param& y) { return x.name == y.name && x.type == y.type; }),
           "kernel " + held.name + " and its streamed twin take different parameters");
  held.launch.size_parameters.clear();
  for (const auto& [name, param] : sizes) {
    held.params.push_back(param);
    held.launch.size_parameters.push_back(name);
  }
  kir::RunCondition fits;
  fits.longest_row = plan.longest_held_row();
  held.twin = kir::Twin{.kind = kir::Twin::Kind::streamed,
                        .name = twin_label(t, held.name, "rowreduce", "rowstream"),
                        .body = std::move(streamed.body),
                        .condition = std::move(fits),
                        .block_by_row = streamed.launch.block_by_row};
}

}  // namespace tg::lower
