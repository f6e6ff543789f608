// Kernel lowering, pointwise kernels: a grid-stride loop over runs of 16 bytes (one vector access
// per operand read contiguously), then one over the elements left; both call the kernel's element
// function, its element body written once (docs/design-notes.md, "Pointwise kernels in runs").
#include <algorithm>

#include "codegen/lower_kernel.h"
#include "support/diagnostics.h"

namespace tg::lower {

namespace {
bool mentions(const IndexExpr& e, const std::string& name) {
  const std::vector<std::string> names = e.names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether an element function is plain arithmetic on its parameters: no load (a gather), no
// index code, no call into the runtime (tg::exp, tg::div, ...: a "tg::" in an op's code). A
// heuristic for how heavy a loop over it is to nvcc (run_loop); it decides no result.
bool plain_arithmetic(const kir::Function& f) {
  bool plain = true;
  kir::for_each_expr(f.body, [&plain](const kir::Expr& e) {
    using Kind = kir::Expr::Kind;
    const bool runtime_call = (e.kind == Kind::op_code || e.kind == Kind::call) && e.text.find("tg::") != std::string::npos;
    if (runtime_call || e.kind == Kind::load || e.kind == Kind::index || e.kind == Kind::condition) plain = false;
  });
  return plain;
}
}  // namespace

// Element i's results, written once as a function the run loop's lanes and the element loop both
// call (one element per thread: the element loop only). What the run loop reads a run at a time
// comes in as values (its lanes pass r_x[lane], the element loop the element it loads); the
// function reads everything else through the kernel's own parameters, and hands its results back
// through references (out_<name>), which the callers store. The loop dims it reads come in as
// parameters: a lane computes them from `run` and `lane`, where what is the same for every lane of
// a run (a quotient by a size, say) is written the same and computed once.
kir::Function KernelLowering::element_function(bool in_runs) {
  const std::vector<int64_t> all = all_dims(layout_.domain);
  in_run_ = in_runs;
  run_loads_.clear();
  run_loads_of_.clear();
  run_arrays_.clear();
  if (in_runs) {
    lane_dims_.assign(layout_.domain.size(), IndexExpr());
    run_var_ = IndexExpr::named("run", 0, std::max<int64_t>(largest_count(t_, count()) / lanes_ - 1, 0));
    define_dims(lane_dims_, run_var_ * lanes_ + IndexExpr::named("lane", 0, lanes_ - 1), layout_.domain, all, run_sizes());
  }
  push();
  moved_.clear();
  for (ValueId v : k_.outs) {
    const std::optional<ExprPtr> moved = moved_element(v, identity_index(layout_.domain.size()));
    if (moved) moved_.insert(v);
    add(kir::assign(kir::name(local(Role::result, v)), moved ? *moved : kir::name(value_at(v, identity_index(layout_.domain.size())))));
  }
  Block body = pop();
  in_run_ = false;
  const std::set<std::string> used = kir::names_in(body);
  element_takes_i_ = used.count("i") > 0;
  element_dims_.clear();
  for (int64_t d : all)
    if (used.count("d" + std::to_string(d))) element_dims_.push_back(d);
  kir::Function f{tg::ident(Role::element_function, k_.label), {}, std::move(body)};
  if (element_takes_i_) f.params.push_back({index_type_, "i"});
  for (int64_t d : element_dims_) f.params.push_back({index_type_, "d" + std::to_string(d)});
  element_sizes_.clear();
  for (const std::string& name : used)
    if (is_size_parameter(name)) {
      element_sizes_.push_back(name);
      f.params.push_back({size_parameter_type(name, index_type_), name});
    }
  for (const RunLoad& r : run_loads_) f.params.push_back({param_type(r), r.param});
  element_args_.clear();
  for (const Arg& a : k_.args) {
    if (!used.count(ident(a.value))) continue;
    element_args_.push_back(a.value);
    f.params.push_back(parameter(a.value, false));
  }
  for (ValueId v : k_.outs) f.params.push_back({result_type(v) + "&", local(Role::result, v)});
  return f;
}

// The type of a run's elements, and of the element function's parameter for a lane's element.
std::string KernelLowering::param_type(const RunLoad& r) const {
  return r.stored ? storage_type(t_.value(r.value)) : ctype(t_.value(r.value).dtype);
}

// A call of the element function at element `i`, each value parameter `read(r)`, each result
// into `result(v)`.
kir::Stmt KernelLowering::element_call(const ExprPtr& i, const std::function<ExprPtr(const RunLoad&)>& read,
                                       const std::function<ExprPtr(ValueId)>& result) const {
  std::vector<ExprPtr> args;
  if (element_takes_i_) args.push_back(i);
  for (int64_t d : element_dims_) args.push_back(var("d" + std::to_string(d)));
  for (const std::string& size : element_sizes_) args.push_back(var(size));
  for (const RunLoad& r : run_loads_) args.push_back(read(r));
  for (ValueId v : element_args_) args.push_back(global(v));
  for (ValueId v : k_.outs) args.push_back(result(v));
  kir::Stmt call = kir::eval(kir::call(tg::ident(Role::element_function, k_.label), std::move(args)));
  call.wrap = true;
  return call;
}

kir::ExprPtr KernelLowering::global_thread() const {
  if (index_type_ == "int") return index_cast(kir::binary(kir::binary(var("blockIdx.x"), "*", var("blockDim.x")), "+", var("threadIdx.x")));
  return kir::binary(kir::binary(index_cast(var("blockIdx.x")), "*", var("blockDim.x")), "+", var("threadIdx.x"));
}

kir::ExprPtr KernelLowering::grid_threads() const {
  if (index_type_ == "int") return index_cast(kir::binary(var("gridDim.x"), "*", var("blockDim.x")));
  return kir::binary(index_cast(var("gridDim.x")), "*", var("blockDim.x"));
}

// The index starts at a thread's place in the grid and, with the stride, stays below 2^31 (an int
// index means counts below 2^30, and tg::grid_for launches no more threads than elements), so it
// is never negative; nvcc cannot tell, as int(blockIdx.x * blockDim.x + threadIdx.x) might wrap
// for all it knows. Told (TG_ASSUME), it can divide a lane's element by a constant with a shift
// once a run, and load the lanes at offsets from one address. Only at run-time sizes: at fixed
// sizes ptxas then spilled in two kernels of the corpus (Llama's rotary gradients) to keep 32
// registers (docs/symbolic-shapes.md, "One folder for every size"). (Row and column kernels'
// indices are int64_t, which nvcc already knows non-negative from blockIdx.x.)
kir::Stmt KernelLowering::grid_stride_loop(const std::string& index, ExprPtr start, ExprPtr bound, ExprPtr step, Block body) const {
  if (index_type_ == "int" && t_.sizes_at_run_time)
    body.insert(body.begin(), kir::eval(kir::call("TG_ASSUME", {kir::binary(var(index), ">=", kir::integer(0))})));
  return kir::loop(index_type_, index, std::move(start), std::move(bound), std::move(step), std::move(body));
}

kir::Block KernelLowering::pointwise_body(std::optional<kir::Function>& element) {
  const ExprPtr thread = global_thread(), stride = grid_threads();
  element = element_function(lanes_ > 1);
  if (lanes_ > 1 && t_.sizes_at_run_time && sizes_.symbolic(layout_.domain)) {
    // The run loop for sizes that are multiples of the run's length, where that gives it more
    // runs, or less arithmetic per lane at as many; the element loop takes the other sizes.
    const size_t runs = run_loads_.size(), arithmetic = lane_arithmetic();
    divisible_runs_ = true;
    std::optional<kir::Function> divisible = element_function(true);
    if (run_loads_.size() > runs || (run_loads_.size() == runs && lane_arithmetic() < arithmetic)) {
      element = std::move(divisible);
    } else {
      divisible_runs_ = false;
      element = element_function(true);
    }
  }
  Block out = count_declaration();
  ExprPtr first = thread;
  twin_condition_.reset();
  bool runs_take_all = false;
  if (lanes_ > 1) {
    Block runs = run_loop(thread, stride, plain_arithmetic(*element), runs_take_all);
    out.insert(out.end(), runs.begin(), runs.end());
    first = kir::binary(kir::binary(var("runs"), "*", kir::integer(lanes_)), "+", thread);
  }
  Block elements = element_loop_body();
  if (!runs_take_all) out.push_back(grid_stride_loop("i", first, var("n"), stride, elements));
  if (twin_condition_) {
    twin_body_ = count_declaration();
    twin_body_.push_back(grid_stride_loop("i", thread, var("n"), stride, std::move(elements)));
  }
  return out;
}

// The element loop's iteration: element i's value parameters loaded, the call, its results stored.
kir::Block KernelLowering::element_loop_body() {
  push();
  std::vector<ExprPtr> reads;
  for (const RunLoad& r : run_loads_) {
    const ExprPtr at = offset(t_.value(r.value), r.index);
    reads.push_back(r.stored ? kir::call("tg::load_as_stored", {global(r.value), at}) : kir::load(global(r.value), at));
  }
  for (ValueId v : k_.outs) add(kir::decl(result_type(v), local(Role::element, v), nullptr, false));
  size_t next = 0;
  add(element_call(var("i"), [&](const RunLoad&) { return reads[next++]; }, [&](ValueId v) { return kir::name(local(Role::element, v)); }));
  for (ValueId v : k_.outs) add(kir::store(global(v), var("i"), kir::name(local(Role::element, v))));
  Block code = pop();
  Block out = radix_declarations(code, IndexExpr::named("i", 0, std::max<int64_t>(largest_count(t_, count()) - 1, 0)), loop_dims_, sizes_);
  out.insert(out.end(), code.begin(), code.end());
  return out;
}

// The declarations of the loop dims `body` reads, of the flat index `flat` (i, or a lane's
// run * lanes + lane; defs: each dim's definition). Where the kernel divides by sizes taken at run
// time, as one mixed radix from the innermost dim out: each quotient by a size is declared once
// (outer<k>, the index over the dims outside d<k>) and the dims outside it divide that, where
// dims defined apart would each divide the flat index by their own product of sizes, and nvcc
// would keep those partial quotients live side by side. In the run loop (`stepped`), where the
// lanes cross rows whose length is taken at run time, the lanes step the innermost dim instead
// (stepped_innermost).
kir::Block KernelLowering::radix_declarations(const Block& body, const IndexExpr& flat, const std::vector<IndexExpr>& defs, const IndexSizes& sizes,
                                              SteppedDims* stepped) const {
  const std::vector<int64_t> all = all_dims(layout_.domain);
  if (!t_.sizes_at_run_time || !sizes_.symbolic(layout_.domain) || sizes_.empty(layout_.domain)) return dim_declarations(body, all, defs);
  const std::set<std::string> used = kir::names_in(body);
  size_t outermost = all.size();  // the outermost dim the body reads
  for (size_t k = all.size(); k-- > 0;)
    if (used.count("d" + std::to_string(k))) outermost = k;
  Block out;
  Block* decls = &out;
  IndexExpr rest = flat;
  IndexScale inside{1, nullptr};  // the extents of the dims declared so far
  bool lanes_stepped = false;
  for (size_t k = all.size(); k-- > outermost;) {
    const IndexScale extent = sizes.scale(layout_.domain[k]);
    const std::string dim = "d" + std::to_string(k);
    inside = inside * extent;
    if (stepped && k + 1 == all.size() && k > 0 && lanes_cross_rows(rest, extent)) {
      rest = stepped_innermost(*stepped, rest, int64_t(k), extent, k > outermost);
      lanes_stepped = true;
      continue;
    }
    if (used.count(dim)) decls->push_back(kir::decl(index_type_, dim, kir::index(k > 0 ? rest % extent : rest)));
    if (k == outermost) break;
    rest = rest / extent;
    // Outside the stepped dims, where the index no lane changes (the dims inside take a multiple
    // of the run at every size): from the run alone, declared once before the lanes.
    bool first_from_run = false;
    if (lanes_stepped && decls == &out)
      if (IndexExpr of_run = flat / inside; !mentions(of_run, "lane")) {
        rest = std::move(of_run);
        decls = &stepped->first_lane;
        first_from_run = true;
      }
    if ((extent.product || first_from_run) && rest.has_div_or_mod()) {
      const std::string outer = "outer" + std::to_string(k);
      decls->push_back(kir::decl(index_type_, outer, kir::index(rest)));
      rest = rest.as_variable(outer);
    }
  }
  return out;
}

// The 16-byte loop: each thread takes a run of lanes_ neighbouring elements, loads each
// contiguous operand's run with one access, computes the lanes, stores each result's run with
// one access. Only when all those pointers are 16-byte aligned. A packed mask's run is lanes_
// bits, which the warp gathers into whole words (no atomics); the loop then covers whole warps'
// worth of runs only, so every lane of a warp takes part.
// Where the launch checks the runs' condition (else launching the twin) and n is a multiple of the
// run at every size, the run loop takes every element; the loop after it, which then runs no
// element, is left out where the lanes are plain arithmetic (`plain_lanes`): nvcc unrolls such a
// light loop and keeps registers live across both (ViT's t206: 38 registers with it, 32 without),
// where around heavier lanes (a GELU's gradient) leaving it out took 32 registers to 39.
kir::Block KernelLowering::run_loop(const ExprPtr& thread, const ExprPtr& stride, bool plain_lanes, bool& runs_take_all) {
  std::vector<ValueId> run_stores, run_bits;
  for (ValueId v : k_.outs) (t_.value(v).bit_packed ? run_bits : run_stores).push_back(v);
  const std::string L = std::to_string(lanes_);
  const ExprPtr lanes = kir::integer(lanes_), run_start = kir::binary(var("run"), "*", lanes);
  std::vector<ValueId> wide;  // (each operand once, in the order of first use)
  for (size_t i = 0; i < run_loads_.size(); ++i)
    if (run_loads_of_.at(run_loads_[i].value).front() == i) wide.push_back(run_loads_[i].value);
  wide.insert(wide.end(), run_stores.begin(), run_stores.end());
  Block body;
  for (ValueId v : run_bits) body.push_back(kir::decl("unsigned", local(Role::run_bits, v), kir::integer(0), false));
  for (const RunLoad& r : run_loads_) {
    body.push_back(kir::array(param_type(r), r.array, lanes_));
    body.push_back(kir::load_run(global(r.value), kir::index(r.start), kir::name(r.array), lanes_));
  }
  for (ValueId v : run_stores) body.push_back(kir::array(result_type(v), local(Role::run_out, v), lanes_));
  Block before_lanes, lanes_body = lane_body(before_lanes);
  body.insert(body.end(), before_lanes.begin(), before_lanes.end());
  body.push_back(kir::loop("int", "lane", kir::integer(0), lanes, nullptr, std::move(lanes_body), true));
  for (ValueId v : run_stores) body.push_back(kir::store_run(global(v), run_start, kir::name(local(Role::run_out, v)), lanes_));
  for (ValueId v : run_bits) body.push_back(kir::store_run_bits(global(v), run_start, kir::name(local(Role::run_bits, v)), lanes_));
  const std::vector<std::string> multiples = sizes_to_divide(body);
  Block out;
  ExprPtr condition;
  if (splits_into_twins(wide, multiples)) {
    twin_condition_ = kir::RunCondition{.aligned = param_places(wide), .multiples = multiples, .lanes = lanes_, .longest_row = 0};
    runs_take_all = plain_lanes && run_bits.empty() && count_is_parameter() && provably_divisible(*count().expr(), lanes_, t_.symbols);
    out = {kir::comment("Runs of " + L + " elements, one 16-byte (or narrower) access per operand: the launch checks that"),
           kir::comment(std::string(wide.empty() ? "" : multiples.empty() ? "they are aligned" : "they are aligned and ") +
                        (multiples.empty() ? "" : "the sizes multiples of " + L) + " (else it launches the twin below); " +
                        (runs_take_all ? "they take" : "the loop")),
           kir::comment(runs_take_all ? "every element, n being a multiple of " + L + " at every size." : "after this one takes the few elements left.")};
  } else {
    condition = run_condition(wide, multiples);
    out = {kir::comment("Runs of " + L + " elements, one 16-byte (or narrower) access per operand, when aligned" + (divisible_runs_ ? " and" : ";")),
           kir::comment(divisible_runs_ ? "the sizes multiples of " + L + "; the loop after this one takes the rest, or everything."
                                        : "the loop after this one takes the rest, or everything.")};
  }
  if (run_bits.empty()) {
    const ExprPtr all_runs = kir::binary(var("n"), "/", lanes);
    out.push_back(kir::decl(index_type_, "runs", condition ? kir::select(condition, all_runs, kir::integer(0)) : all_runs));
  } else {
    out.push_back(kir::comment("Whole warps of runs only: their lanes gather each mask's bits into words together."));
    const ExprPtr whole_warps = kir::binary(kir::binary(var("n"), "/", kir::paren(kir::binary(kir::integer(32), "*", lanes))), "*", kir::integer(32));
    out.push_back(kir::decl(index_type_, "runs", condition ? kir::select(condition, whole_warps, kir::integer(0)) : whole_warps));
  }
  out.push_back(grid_stride_loop("run", thread, var("runs"), stride, std::move(body)));
  return out;
}

// In the divisible variant, the size parameters (sz_<symbol>) the run loop's `body` reads that
// must be multiples of the run's length (where the symbol's multiple_of does not say so already).
std::vector<std::string> KernelLowering::sizes_to_divide(const Block& body) const {
  if (!divisible_runs_) return {};
  std::vector<std::string> out;
  const std::set<std::string> used = kir::names_in(body);
  for (const auto& [symbol, decl] : t_.symbols.all()) {
    const std::string size = tg::ident(Role::size, symbol);
    if (decl.multiple_of % lanes_ != 0 && (used.count(size) || used.count(tg::ident(Role::divider, symbol)))) out.push_back(size);
  }
  return out;
}

// When the run loop runs: its wide operands' pointers 16-byte aligned, and those sizes multiples
// of the run's length. nullptr: always.
kir::ExprPtr KernelLowering::run_condition(const std::vector<ValueId>& wide, const std::vector<std::string>& multiples) const {
  ExprPtr condition = wide.empty() ? nullptr : all_aligned(wide);
  for (const std::string& size : multiples) {
    const ExprPtr divisible = kir::binary(kir::binary(var(size), "%", kir::integer(lanes_)), "==", kir::integer(0));
    condition = condition ? kir::binary(condition, "&&", divisible) : divisible;
  }
  return condition;
}

// Whether the run loop's condition is checked at the launch, choosing between the kernel and its
// element-by-element twin (kir::Twin): at run-time sizes over a symbolic domain, where
// the element loop divides by run-time sizes and takes every size that is no multiple.
bool KernelLowering::splits_into_twins(const std::vector<ValueId>& wide, const std::vector<std::string>& multiples) const {
  return t_.sizes_at_run_time && sizes_.symbolic(layout_.domain) && !(wide.empty() && multiples.empty());
}

// Where `values`' pointers are among the kernel's params (its args, then its results).
std::vector<size_t> KernelLowering::param_places(const std::vector<ValueId>& values) const {
  std::vector<size_t> out;
  for (ValueId v : values) {
    size_t place = 0;
    while (place < k_.args.size() && k_.args[place].value != v) ++place;
    if (place == k_.args.size()) place += size_t(std::find(k_.outs.begin(), k_.outs.end(), v) - k_.outs.begin());
    TG_CHECK(place < k_.args.size() + k_.outs.size(), "a run loop's operand is no parameter of kernel " + k_.label);
    out.push_back(place);
  }
  return out;
}

// The atoms of the index code each lane computes for its dims (what the lanes of a run share,
// nvcc computes once).
size_t KernelLowering::lane_arithmetic() const {
  size_t atoms = 0;
  for (int64_t d : element_dims_) atoms += lane_dims_[size_t(d)].size();
  return atoms;
}

// Whether a run's lanes may sit in two rows of `extent`, a length taken at run time, so that
// each lane's dim in the row, `flat` % extent, divides its own element by it.
bool KernelLowering::lanes_cross_rows(const IndexExpr& flat, const IndexScale& extent) const {
  if (!extent.product) return false;
  return mentions((flat % extent) + IndexExpr::named("lane", 0, lanes_ - 1) * -1, "lane");
}

// Lane 0's innermost dim d<k> (and the index outside it, outer<k>, where dims outside are read),
// computed once a run and stepped on to each next lane's element after its body: a lane's
// element divided by the row's run-time length would cost each lane a quotient, and nvcc the
// registers to hold them all. Returns outer<k>, standing for flat / extent.
IndexExpr KernelLowering::stepped_innermost(SteppedDims& s, const IndexExpr& flat, int64_t k, const IndexScale& extent, bool outer_read) const {
  const IndexExpr first_lane = run_var_ * lanes_;
  const std::string dim = "d" + std::to_string(k), outer = "outer" + std::to_string(k);
  s.first_lane.push_back(kir::comment("Lane 0's " + dim + (outer_read ? " and " + outer : "") + "; each lane steps them on to the next lane's element."));
  s.first_lane.push_back(kir::decl(index_type_, dim, kir::index(first_lane % extent), false));
  Block wrap = {kir::assign(kir::name(dim), kir::integer(0))};
  if (outer_read) {
    s.first_lane.push_back(kir::decl(index_type_, outer, kir::index(first_lane / extent), false));
    wrap.push_back(kir::assign(kir::name(outer), kir::integer(1), "+="));
  }
  s.step = {kir::assign(kir::name(dim), kir::integer(1), "+="),
            kir::branch(kir::binary(kir::name(dim), "==", kir::index(IndexExpr::of_scale(extent))), std::move(wrap))};
  return (flat / extent).as_variable(outer);
}

// A lane of the run loop: its element from the runs' elements, its results into the runs of
// results (w_<name>[lane]) or a mask's bits (b_<name>); what the lanes share, before them.
kir::Block KernelLowering::lane_body(Block& before_lanes) const {
  Block out;
  for (ValueId v : k_.outs)
    if (t_.value(v).bit_packed) out.push_back(kir::decl(ctype(t_.value(v).dtype), local(Role::element, v), nullptr, false));
  auto result = [&](ValueId v) {
    return t_.value(v).bit_packed ? kir::name(local(Role::element, v)) : kir::subscript(kir::name(local(Role::run_out, v)), var("lane"));
  };
  const ExprPtr element = kir::binary(kir::binary(var("run"), "*", kir::integer(lanes_)), "+", var("lane"));
  out.push_back(element_call(element, [](const RunLoad& r) { return kir::subscript(kir::name(r.array), kir::name("lane")); }, result));
  for (ValueId v : k_.outs)
    if (t_.value(v).bit_packed)
      out.push_back(kir::assign(kir::name(local(Role::run_bits, v)), kir::binary(kir::call("unsigned", {kir::name(local(Role::element, v))}), "<<", var("lane")), "|="));
  SteppedDims stepped;
  Block dims = radix_declarations(out, run_var_ * lanes_ + IndexExpr::named("lane", 0, lanes_ - 1), lane_dims_, run_sizes(), &stepped);
  dims.insert(dims.end(), out.begin(), out.end());
  dims.insert(dims.end(), stepped.step.begin(), stepped.step.end());
  before_lanes = std::move(stepped.first_lane);
  return dims;
}

// The run of v that starts at `start`, loaded for the run loop (r_<name>, numbered where one
// operand is read at several starts, or in both its compute and its storage type: `stored`); its
// element is a value parameter of the element function.
std::string KernelLowering::run_load(ValueId v, const IndexExpr& start, const Index& index, bool stored) {
  std::vector<size_t>& loads = run_loads_of_[v];
  for (size_t i : loads)
    if (run_loads_[i].start == start && run_loads_[i].stored == stored) return run_loads_[i].param;
  const std::string base = local(Role::run_in, v);
  std::string array = base;
  for (int k = 2; run_arrays_.count(array); ++k) array = base + "_" + std::to_string(k);
  run_arrays_.insert(array);
  loads.push_back(run_loads_.size());
  run_loads_.push_back({v, start, array, fresh_name(v), index, stored});
  return run_loads_.back().param;
}

// In a pointwise kernel's run loop: the element of `val` where the run its lanes read at `index`
// starts, in `run`, when lane k reads element start + k and start is a multiple of the run length
// (so aligned where the pointer is), each element no wider than 16 bytes allow: an operand read at
// the kernel's own element (i, i + c, a contiguous reshape), or a row of a broadcast whose length
// is a multiple of the run's.
std::optional<IndexExpr> KernelLowering::run_start(const Value& val, const Index& index) const {
  if (val.bit_packed || lanes_ * dtype_bytes(val.dtype) > 16) return std::nullopt;
  if (val.shape == layout_.domain && is_identity(index)) return run_var_ * lanes_;
  const IndexExpr lane = IndexExpr::named("lane", 0, lanes_ - 1);
  const IndexExpr start = linear_index(index, val.shape, run_sizes()).with_dims(lane_dims_) + lane * -1;
  // (Code the lanes compute, a pad's or cat's piece, may differ from lane to lane: only `run` and
  // the sizes may appear.)
  const std::vector<std::string> sizes = start.size_names();
  for (const std::string& name : start.names())
    if (name != "run" && !std::binary_search(sizes.begin(), sizes.end(), name)) return std::nullopt;
  return start.multiple_of(lanes_) ? std::optional<IndexExpr>(start) : std::nullopt;
}

}  // namespace tg::lower
