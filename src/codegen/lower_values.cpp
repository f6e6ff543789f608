// Kernel lowering: the kernel's frame (its signature, loop dims and launch), the names it
// declares, and values: each computed once per symbolic index, loaded or computed by its op.
#include <algorithm>

#include "codegen/lower_kernel.h"
#include "codegen/share_sine_cosine.h"
#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg {

std::string storage_type(const Value& v) { return v.bit_packed ? "tg::PackedBits" : std::string(storage_ctype(v.dtype)); }

kir::Kernel lower_kernel(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan) {
  lower::KernelLowering held(t, idents, kernel, plan);
  kir::Kernel k = held.lower();
  if (plan.long_rows) {
    lower::KernelLowering streamed(t, idents, kernel, *plan.long_rows);
    streamed.take_sizes_as(held);
    lower::add_streamed_twin(k, streamed.lower(), t, plan);
  }
  kir::share_sine_cosine(k);
  return k;
}

namespace lower {

namespace {

std::string shape_text(const Shape& s, SizeText sizes) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += " x ";
    append_dim(out, s[i], sizes);
  }
  return out.empty() ? "scalar" : out;
}

// A kernel loop's index named `name`, over the elements of `dims`.
IndexExpr loop_index(const std::string& name, const Trace& t, const Shape& domain, const std::vector<int64_t>& dims) {
  Shape looped;
  for (int64_t d : dims) looped.push_back(domain[size_t(d)]);
  return IndexExpr::named(name, 0, std::max<int64_t>(largest_count(t, numel_dim(looped)) - 1, 0));
}

// What each loop dim d<k> of a kernel is in the kernel's own indices: a quotient and remainder of
// the flat index i (pointwise), or of `row` (a row kernel's outer dims) and `j` (its reduced dims).
std::vector<IndexExpr> loop_dim_definitions(const Trace& t, const KernelLayout& layout) {
  std::vector<IndexExpr> defs(layout.domain.size());
  const IndexSizes sizes(t);
  if (!layout.is_row) {
    define_dims(defs, loop_index("i", t, layout.domain, all_dims(layout.domain)), layout.domain, all_dims(layout.domain), sizes);
  } else {
    define_dims(defs, loop_index("row", t, layout.domain, layout.outer), layout.domain, layout.outer, sizes);
    define_dims(defs, loop_index("j", t, layout.domain, layout.reduced), layout.domain, layout.reduced, sizes);
  }
  return defs;
}

}  // namespace

std::string twin_label(const Trace& t, const std::string& label, const std::string& kind, const std::string& twin_kind) {
  const std::string prefix = t.name + "_" + kind + "_";
  TG_CHECK(label.starts_with(prefix), "kernel " + label + " has a twin but no label the plan makes");
  return t.name + "_" + twin_kind + "_" + label.substr(prefix.size());
}

int64_t largest_count(const Trace& t, const Dim& count) {
  if (!t.taken_at_run_time(count)) return count;
  return std::min(range_of(*count.expr(), t.symbols).hi, kLargestRunTimeCount);
}

std::vector<int64_t> all_dims(const Shape& domain) {
  std::vector<int64_t> all(domain.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = int64_t(k);
  return all;
}

void define_dims(std::vector<IndexExpr>& defs, const IndexExpr& flat, const Shape& domain, const std::vector<int64_t>& dims, const IndexSizes& sizes) {
  // Over no element (one of these dims is the number 0) the loop runs none: each dim is 0. (A row
  // kernel's outer dims keep theirs where only its reduced ones are empty: it sums nothing.)
  Shape extents;
  for (int64_t d : dims) extents.push_back(domain[size_t(d)]);
  if (sizes.empty(extents)) {
    for (int64_t d : dims) defs[size_t(d)] = IndexExpr(0);
    return;
  }
  IndexScale stride{1, nullptr};
  for (size_t k = dims.size(); k-- > 0;) {
    const IndexScale extent = sizes.scale(domain[size_t(dims[k])]);
    defs[size_t(dims[k])] = k > 0 ? (flat / stride) % extent : flat / stride;
    stride = stride * extent;
  }
}

KernelLowering::KernelLowering(const Trace& t, std::vector<std::string>& idents, const Op& kernel, const KernelPlan& plan)
    : t_(t), idents_(idents), k_(kernel), plan_(plan), sizes_(t), divisible_sizes_(t, plan.lanes), layout_(kernel_layout(t, kernel)), loop_dims_(loop_dim_definitions(t, layout_)) {
  for (size_t i = 0; i < k_.sub.size(); ++i) {
    for (ValueId v : k_.sub[i].outs) producer_[v] = &k_.sub[i];
    if (k_.sub[i].info->kind == OpKind::partial_sum)  // by element, or a total of a value per row
      (t_.value(k_.sub[i].arg("a").value).shape == layout_.domain ? part_sums_ : row_totals_).push_back(&k_.sub[i]);
  }
  for (const Arg& a : k_.args) loaded_.insert(a.value);
  lanes_ = plan_.lanes;
  column_tile_ = plan_.kind == KernelPlan::Kind::column ? 32 : 1;
  cached_ = plan_.held;
  row_run_ = plan_.held_run;
  masked_ = cached_ > 0 && row_length_is_parameter();
  TG_CHECK(!masked_ || row_run_ == 1, "kernel " + k_.label + " holds rows of a run-time length in runs");
  hoist_ = plan_.hoisted;
  stream_run_ = plan_.stream_run;
  // (Row kernels stay 64-bit: in 32 bits nvcc widens the row's offset at each load, and a held
  // row's 16-byte stores were lost with spills in examples/wide_rows.json's LayerNorm backward.)
  index_type_ = !layout_.is_row && indexes_fit_int() ? "int" : "int64_t";
  size_type_ = masked_ && cached_ == 1 && indexes_fit_int() ? "int" : index_type_;
}

kir::Kernel KernelLowering::lower() {
  if (t_.sizes_at_run_time) check_shapes_agree_at_every_size();
  kir::Kernel k;
  k.name = k_.label;
  k.body = layout_.is_row ? row_body() : pointwise_body(k.element);
  if (twin_condition_)
    k.twin = kir::Twin{.kind = kir::Twin::Kind::elementwise,
                       .name = twin_label(t_, k_.label, "pointwise", "elementwise"),
                       .body = std::move(twin_body_),
                       .condition = *twin_condition_,
                       .block_by_row = false};
  k.header = header();
  for (const Arg& a : k_.args) k.params.push_back(parameter(a.value, false));
  for (ValueId id : k_.outs) k.params.push_back(parameter(id, true));
  if (count_is_parameter()) {
    // A column kernel's block takes its rows 32 at a time, every thread the same iterations: a
    // last block past the rows stores nothing there, which only one value per row allows.
    if (column_tail() && !writes_per_row_only(t_, k_))
      throw UserError("", "kernel " + k_.label + " sums columns 32 rows at a time and writes more than one value per row, and its " + count().expr()->text() +
                              " rows are not a multiple of 32 at every size; declare a multiple_of that makes them one, or name the sizes with --specialize");
    k.params.push_back({size_type_, count_name()});
    k.launch.count = count().expr();
    k.launch.count_per_item = layout_.is_row ? 1 : lanes_;
  }
  if (row_length_is_parameter()) {
    k.params.push_back({size_type_, "row_length"});
    k.launch.row_length = numel_dim(layout_.reduced_shape()).expr();
  }
  take_size_parameters(k);  // (after the counts: the launch passes them in this order)
  k.launch.int_sizes = size_type_ == "int";
  k.launch.block = plan_.block;
  // Work items: a thread's run (pointwise), one row, or a column kernel's 32 rows a block.
  k.launch.items = layout_.is_row ? numel(layout_.outer_shape()) : (numel(layout_.domain) + lanes_ - 1) / lanes_;
  k.launch.items_per_block = layout_.is_row ? column_tile_ : plan_.block;
  for (const std::vector<const Op*>* sums : {&part_sums_, &row_totals_})  // one block per partial sum
    if (!sums->empty()) k.launch.fixed_grid = sums->front()->arg("parts").integer;
  k.launch.block_by_row = row_length_is_parameter() && column_tile_ == 1 && stream_run_ == 1 && k.launch.fixed_grid == 0;
  return k;
}

Dim KernelLowering::count() const {
  return layout_.is_row ? numel_dim(layout_.outer_shape()) : numel_dim(layout_.domain); }
bool KernelLowering::count_is_parameter() const { return t_.taken_at_run_time(count()); }

bool KernelLowering::row_length_is_parameter() const { return layout_.is_row && t_.taken_at_run_time(numel_dim(layout_.reduced_shape())); }

kir::ExprPtr KernelLowering::row_length() const {
  return row_length_is_parameter() ? var("row_length") : kir::integer(numel(layout_.reduced_shape()));
}

int64_t KernelLowering::longest_row() const { return largest_count(t_, numel_dim(layout_.reduced_shape())); }

// `n` or `rows` declared, unless the kernel takes it.
kir::Block KernelLowering::count_declaration() const {
  if (count_is_parameter()) return {};
  return {kir::decl(index_type_, count_name(), kir::integer(count()))};
}

// What the kernel is, then the trace lines it implements, each saying where it came from: an op
// of the trace by its place (/ops/3); the ops lowering or differentiating a torch-level call
// under that call, once.
std::vector<std::string> KernelLowering::header() const {
  std::vector<std::string> lines = {k_.label + ": " + description(), "Implements:"};
  std::string call;
  for (const Op& op : k_.sub) {
    if (op.origin.empty()) {
      call.clear();
      lines.push_back("  " + print_op(op, t_) + (op.where.empty() ? "" : "  (" + op.where + ")"));
      continue;
    }
    const std::string this_call = op.origin + (op.where.empty() ? "" : " at " + op.where);
    if (this_call != call) lines.push_back("  " + (call = this_call) + ":");
    lines.push_back("    " + print_op(op, t_));
  }
  return lines;
}

// What the kernel does, by its kind.
std::string KernelLowering::description() const {
  if (!layout_.is_row) return "pointwise over " + shape_text(layout_.domain, comment_sizes(t_));
  const std::string kind = column_tile_ > 1 ? "column reduction over " : "row reduction over ";
  return kind + shape_text(layout_.domain, comment_sizes(t_)) + ", reducing dims " + dims_text(layout_.reduced);
}

// The kernel's parameter for v: a scalar by value, a tensor by its pointer (an output's writable).
kir::Param KernelLowering::parameter(ValueId v, bool output) const {
  const Value& val = t_.value(v);
  if (output) return {storage_type(val) + "* __restrict__", ident(v)};
  return {val.is_scalar ? ctype(val.dtype) : "const " + storage_type(val) + "* __restrict__", ident(v)};
}

// Whether the pointers of `values` all lie on 16-byte boundaries.
kir::ExprPtr KernelLowering::all_aligned(const std::vector<ValueId>& values) const {
  std::vector<std::string> pointers;
  for (ValueId v : values) pointers.push_back(ident(v));
  return kir::aligned(pointers);
}

std::string KernelLowering::dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

const std::string& KernelLowering::ident(ValueId v) const {
  std::string& id = idents_[size_t(v)];
  if (id.empty()) id = tg::ident(Role::global, t_.value(v).name);
  return id;
}

// Value v's identifier in a local role (its run registers, its accumulator, ...).
std::string KernelLowering::local(Role role, ValueId v) const { return tg::ident(role, t_.value(v).name); }

void KernelLowering::add(kir::Stmt s) { code().push_back(std::move(s)); }

void KernelLowering::comment(const std::string& text) { add(kir::comment(text)); }

void KernelLowering::push() { scopes_.push_back(Scope{}); }

kir::Block KernelLowering::pop() {
  Block code = std::move(scopes_.back().code);
  scopes_.pop_back();
  return code;
}

kir::Block KernelLowering::dim_declarations(const Block& body, const std::vector<int64_t>& dims, const std::vector<IndexExpr>& defs) const {
  const std::set<std::string> used = kir::names_in(body);
  Block out;
  for (int64_t d : dims) {
    const std::string var = "d" + std::to_string(d);
    if (used.count(var)) out.push_back(kir::decl(index_type_, var, kir::index(defs[size_t(d)])));
  }
  return out;
}

// The variable a live scope holds `key` in (its `names`), else a new one, ix_<hint>, declared as
// `type` = `value` in this scope.
template <class Names, class Key>
std::string KernelLowering::declared_once(Names Scope::*names, const Key& key, const char* type, const std::string& hint, const ExprPtr& value) {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (auto m = ((*it).*names).find(key); m != ((*it).*names).end()) return m->second;
  std::string var = unique_local(tg::ident(Role::index, hint));
  add(kir::decl(type, var, value));
  (scopes_.back().*names).emplace(key, var);
  return var;
}

// An index computation of a shape op as a variable, ix_<operand>_i<dim>, declared once per scope.
std::string KernelLowering::name(const IndexExpr& index, const std::string& hint) {
  return declared_once(&Scope::index_names, index, index_type_.c_str(), hint, kir::index(index));
}

// A guard of a pad's or a cat's read as a variable, ix_<operand>_in_<output>, declared once per scope.
std::string KernelLowering::name(const IndexCond& guard, const std::string& hint) {
  return declared_once(&Scope::guard_names, guard, "bool", hint, kir::condition(guard));
}

std::string KernelLowering::unique_local(const std::string& base) {
  auto taken = [&](const std::string& n) {
    for (const Scope& s : scopes_)
      if (s.declared.count(n)) return true;
    return false;
  };
  std::string var = base;
  for (int k = 1; taken(var); ++k) var = base + "_" + std::to_string(k);
  scopes_.back().declared.insert(var);
  return var;
}

// v_<name>, numbered only when a live scope already has that name (the same value at
// another index); sibling loops reuse the plain name.
std::string KernelLowering::fresh_name(ValueId v) { return unique_local(local(Role::element, v)); }

bool KernelLowering::is_identity(const Index& index) const { return index == identity_index(layout_.domain.size()); }

// Offset of a tensor element, with the cheap forms for the kernel's own loop index. (In a row
// kernel, it may add a row base to those the row declares: with_row_base.)
kir::ExprPtr KernelLowering::offset(const Value& v, const Index& index) {
  if (v.shape == layout_.domain && is_identity(index)) {
    if (!layout_.is_row) return kir::name("i");
    if (ExprPtr row_form = offset_of_row_element()) return row_form;
  }
  if (layout_.is_row && v.shape == layout_.outer_shape() && index == layout_.outer_index()) return kir::name("row");
  if (layout_.is_row) return kir::index(with_row_base(offset_expr(v, index), v));
  return kir::index(offset_expr(v, index));
}

// The offset as an expression: in the kernel's own indices (i, or row and j) where that needs no
// division or remainder and the loop dims would (a contiguous reshape read at the kernel's
// element is i), or less than the loop dims' own; else over the loop dims, each piece that
// divides named (ix_<value>_i<k>).
IndexExpr KernelLowering::offset_expr(const Value& v, const Index& index) {
  const IndexExpr at = linear_index(index, v.shape, sizes_);
  const IndexExpr flat = at.with_dims(loop_dims_);
  if (!flat.has_div_or_mod() && (at.has_div_or_mod() || loop_dims_divide(at))) return flat;
  // Less arithmetic than the loop dims it would take ((i / 192) * 3 + (i / 64) % 3 is i / 64);
  // not in a run loop's lanes, which share the dims' quotients (computed once a run) and not i's.
  if (!in_run_ && !at.has_div_or_mod() && loop_dims_divide(at) && flat.size() < loop_dims_size(at)) return flat;
  if (!at.has_div_or_mod()) return at;
  Index named = index;
  for (size_t k = 0; k < named.size(); ++k)
    if (named[k].kind == IndexComp::Kind::expr && named[k].expr.has_div_or_mod())
      named[k] = IndexComp::of_expr(named[k].expr.as_variable(name(named[k].expr, v.name + "_i" + std::to_string(k))));
  return linear_index(named, v.shape, sizes_);
}

bool KernelLowering::loop_dims_divide(const IndexExpr& e) const {
  for (int d : e.dims())
    if (loop_dims_[size_t(d)].has_div_or_mod()) return true;
  return false;
}

size_t KernelLowering::loop_dims_size(const IndexExpr& e) const {
  size_t atoms = 0;
  for (int d : e.dims()) atoms += loop_dims_[size_t(d)].size();
  return atoms;
}

// The variable a live scope holds value v at `index` in, if any.
const std::string* KernelLowering::memoized(ValueId v, const Index& index) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
    if (const std::string* var = it->values.find(v, index)) return var;
  return nullptr;
}

// Is v computed here by an op that reads its operands at indexes known up front: an elementwise
// op or a source (at v's own index), or a shape op (at mapped ones)? Not a reduction, nor loaded.
bool KernelLowering::computed_here(ValueId v) const {
  if (loaded_.count(v) || reduced_.count(v)) return false;
  auto p = producer_.find(v);
  if (p == producer_.end()) return false;
  const FusionClass fusion = p->second->info->fusion;
  return fusion == FusionClass::elementwise || fusion == FusionClass::source || fusion == FusionClass::shape;
}

// What computing op at `index` reads, in the order compute() reads it: a shape op's mapped reads
// (naming their index variables now, as compute() would), or the value arguments at `index`.
std::vector<std::pair<ValueId, Index>> KernelLowering::operand_reads(const Op& op, const Index& index) {
  std::vector<std::pair<ValueId, Index>> reads;
  if (op.info->fusion == FusionClass::shape) {
    for (OperandRead& r : shape_op_reads(t_, op, index, this)) reads.emplace_back(r.value, std::move(r.index));
    return reads;
  }
  for (const Arg& a : op.args)
    if (a.is_value()) reads.emplace_back(a.value, index);
  return reads;
}

// Computes what v's op at `index` reads before v, and what those read before them, in the order a
// recursive walk would (each operand's own operands first, in reading order), but with a stack of
// its own: a kernel may hold a chain of 10,000 ops. value_at(v) then finds them computed. A cat's
// pieces are left to its branches where it has them (cat_piece).
void KernelLowering::compute_operands_first(ValueId v, const Index& index) {
  struct Frame {
    ValueId value;
    std::vector<std::pair<ValueId, Index>> reads;
    size_t next = 0;
  };
  auto reads_first = [&](ValueId u, const Index& at) {
    const Op& op = *producer_.at(u);
    return op.info->kind == OpKind::cat && op.args.at(0).items.size() >= kLazyCatPieces ? std::vector<std::pair<ValueId, Index>>{} : operand_reads(op, at);
  };
  std::vector<Frame> stack;
  stack.push_back({v, reads_first(v, index)});
  std::vector<Index> at = {index};  // the index each frame's value is computed at
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next < frame.reads.size()) {
      const auto [u, u_index] = frame.reads[frame.next++];
      if (memoized(u, u_index)) continue;
      if (!computed_here(u)) {
        value_at(u, u_index);
        continue;
      }
      std::vector<std::pair<ValueId, Index>> reads = reads_first(u, u_index);  // (before the push moves frames)
      stack.push_back({u, std::move(reads)});
      at.push_back(u_index);
      continue;
    }
    const ValueId done = frame.value;
    const Index done_at = std::move(at.back());
    stack.pop_back();
    at.pop_back();
    if (!stack.empty()) value_at(done, done_at);  // (v itself is the caller's)
  }
}

// The variable holding value v at `index`, lowering the code that computes it if needed.
std::string KernelLowering::value_at(ValueId v, const Index& index) {
  if (const std::string* var = memoized(v, index)) return *var;
  if (std::optional<std::string> drawn = drawn_once(v, index)) {
    scopes_.back().values.set(v, index, *drawn);
    return *drawn;
  }
  if (computed_here(v)) compute_operands_first(v, index);
  if (auto r = reduced_.find(v); r != reduced_.end()) {
    TG_CHECK(index == layout_.outer_index(), "a reduction read at another row");
    return r->second;
  }
  const Value& val = t_.value(v);
  if (loaded_.count(v) && val.is_scalar) return ident(v);
  if (loaded_.count(v))
    if (std::optional<std::string> held = held_in_registers(v, index)) {
      scopes_.back().values.set(v, index, *held);
      return *held;
    }
  std::string var;
  if (loaded_.count(v)) {
    var = loaded(v, index);
  } else {
    auto p = producer_.find(v);
    TG_CHECK(p != producer_.end(), "kernel " + k_.label + " needs " + val.name + " but neither computes nor reads it");
    var = compute(*p->second, v, index);
  }
  scopes_.back().values.set(v, index, var);
  return var;
}

// Where a row kernel holds a loaded operand's element in registers: this thread's k-th element of
// the row (c_<name>[k]), its element of an operand shaped like one row loaded before the rows
// (c_<name>[k] as well: one value is not shaped both ways), or this lane's of a streamed run
// (r_<name>[lane]). Nothing where the element comes from memory.
std::optional<std::string> KernelLowering::held_in_registers(ValueId v, const Index& index) {
  const Value& val = t_.value(v);
  auto note = [](std::vector<ValueId>& list, ValueId v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  if (cached_ > 0 && val.shape == layout_.domain && is_identity(index)) {
    note(row_cached_, v);
    return local(Role::cached, v) + "[k]";
  }
  // Element j of a value shaped like one row (there being several rows): the same for every row.
  const bool one_row = !layout_.outer.empty() && !val.bit_packed && reads_row_element(val, index);
  if (hoist_ && one_row) {
    note(row_hoisted_, v);
    return local(Role::cached, v) + "[k]";
  }
  if (in_stream_run_ && !val.bit_packed && ((val.shape == layout_.domain && is_identity(index)) || one_row)) {
    if (std::find(stream_loads_.begin(), stream_loads_.end(), v) == stream_loads_.end()) {
      stream_loads_.push_back(v);
      if (one_row) stream_row_loads_.push_back(v);
    }
    return local(Role::run_in, v) + "[lane]";
  }
  return std::nullopt;
}

// A random draw (Philox, ten rounds an element) in a row held in registers is drawn once, before
// the passes, into c_<name>[k], rather than again in every pass that uses it (see row_draws).
std::optional<std::string> KernelLowering::drawn_once(ValueId v, const Index& index) {
  if (cached_ == 0 || drawing_ || t_.value(v).shape != layout_.domain || !is_identity(index)) return std::nullopt;
  auto p = producer_.find(v);
  if (p == producer_.end() || p->second->info->kind != OpKind::uniform_philox) return std::nullopt;
  if (std::find(row_drawn_.begin(), row_drawn_.end(), v) == row_drawn_.end()) row_drawn_.push_back(v);
  return local(Role::cached, v) + "[k]";
}

// A loaded operand's element from memory: in a run loop's element function, this lane's element
// of a run loaded for it (a parameter of the function); else one tg::load.
std::string KernelLowering::loaded(ValueId v, const Index& index) {
  const Value& val = t_.value(v);
  if (const std::optional<IndexExpr> start = in_run_ ? run_start(val, index) : std::nullopt) return run_load(v, *start, index);
  std::string var = fresh_name(v);
  ExprPtr at = offset(val, index);
  add(kir::decl(ctype(val.dtype), var, kir::load(global(v), at)));
  return var;
}

kir::ExprPtr KernelLowering::operand(const Arg& a, const Index& index, DType as) {
  if (a.is_value()) {
    const Value& v = t_.value(a.value);
    ExprPtr var = value_expr(a.value, index);
    return v.is_scalar && v.dtype != as ? kir::cast(ctype(as), var) : var;
  }
  switch (a.kind) {
    case Arg::Kind::boolean: return kir::whole(a.boolean, as);
    case Arg::Kind::integer:  // (a size at run time: its parameters, sz_T * 64)
      if (const IndexExpr size = sizes_.size(a.dim()); !size.constant()) return kir::cast(ctype(as), kir::index(size));
      return kir::whole(a.integer, as);
    case Arg::Kind::real: return kir::real(a.real, as);
    default: throw InternalError("not a number literal");
  }
}

// An operand of a discontinuous op (a comparison, argmax, floor, ...) of 16-bit type `as`:
// rounded to `as`, as it is stored and as PyTorch's op-by-op rounding has it, unless it is
// a tensor of that type loaded from memory (rounded already).
kir::ExprPtr KernelLowering::as_stored(ExprPtr code, DType as, const Arg& a) const {
  if (as != DType::bf16 && as != DType::f16) return code;
  if (a.is_value() && loaded_.count(a.value) && !t_.value(a.value).is_scalar && t_.value(a.value).dtype == as) return code;
  return kir::call(as == DType::bf16 ? "tg::round_to_bfloat16" : "tg::round_to_half", {std::move(code)});
}

std::string KernelLowering::compute(const Op& op, ValueId v, const Index& index) {
  const Value& out = t_.value(v);
  ExprPtr expr;
  switch (op.info->fusion) {
    case FusionClass::elementwise: expr = op.info->kind == OpKind::convert_element_type ? converted(op, index) : elementwise(op, index); break;
    case FusionClass::source: expr = source(op, index); break;
    case FusionClass::shape: {
      std::string var;
      std::optional<ExprPtr> value = shape_value(op, index, var);
      if (!value) return var;  // a pure index map: no new variable
      expr = *value;
      break;
    }
    default: throw InternalError("kernel " + k_.label + ": cannot compute " + out.name + " (" + op.symbol + ") inline");
  }
  std::string var = fresh_name(v);
  add(kir::decl(ctype(out.dtype), var, expr));
  return var;
}

kir::ExprPtr KernelLowering::converted(const Op& op, const Index& index) {
  const Value& src = t_.value(op.arg("a").value);
  const Value& out = t_.value(op.outs[0]);
  ExprPtr x = as_stored(value_expr(op.arg("a").value, index), src.dtype, op.arg("a"));  // rounding rule 4 (docs/design-notes.md, "Rounding")
  if (out.dtype == DType::b8) return kir::paren(kir::binary(x, "!=", kir::integer(0)));
  if (out.dtype == DType::f16) return kir::call("tg::round_to_half", {kir::cast("float", x)});
  if (out.dtype == DType::bf16) return kir::call("tg::round_to_bfloat16", {kir::cast("float", x)});
  if (ctype(src.dtype) == ctype(out.dtype)) return x;
  return kir::cast(ctype(out.dtype), x);
}

kir::ExprPtr KernelLowering::elementwise(const Op& op, const Index& index) {
  const DType as = operand_dtype(t_, op);
  std::vector<ExprPtr> operands;
  for (size_t i = 0; i < op.args.size(); ++i) {
    const DType want = (op.info->kind == OpKind::where && i == 0) ? DType::b8 : as;
    operands.push_back(operand(op.args[i], index, want));
    if (op.info->discontinuous) operands.back() = as_stored(operands.back(), want, op.args[i]);
  }
  const bool wraps = is_integer(as) && !op.info->integer_code.empty();
  return kir::op_code(std::string(wraps ? op.info->integer_code : op.info->code), std::move(operands));
}

kir::ExprPtr KernelLowering::source(const Op& op, const Index& index) {
  const Value& out = t_.value(op.outs[0]);
  const std::string type = ctype(out.dtype);
  if (op.info->kind == OpKind::full)
    return op.arg("fill_value").is_value() ? kir::cast(type, value_expr(op.arg("fill_value").value, index)) : operand(op.arg("fill_value"), index, out.dtype);
  if (op.info->kind == OpKind::uniform_philox) {
    // The element's linear position in the drawn tensor picks its Philox counter.
    std::vector<ExprPtr> args = {kir::cast("uint64_t", operand(op.arg("seed"), index, DType::i64)),
                                 kir::cast("uint64_t", operand(op.arg("offset"), index, DType::i64)), offset(out, index)};
    if (const int64_t stream = op.arg("stream").integer) args.push_back(kir::integer(stream, "ull"));
    const ExprPtr u = kir::call("tg::philox_uniform", std::move(args));
    const ExprPtr lo = operand(op.arg("minval"), index, DType::f32), hi = operand(op.arg("maxval"), index, DType::f32);
    return kir::cast(type, kir::binary(lo, "+", kir::binary(kir::paren(kir::binary(hi, "-", lo)), "*", u)));
  }
  // iota (its start a size taken at run time where it is one: counting down from T - 1)
  const ExprPtr position = kir::component(sizes_.component(index.at(0), out.shape.at(0)));
  const IndexExpr start = sizes_.size(op.arg("start").dim());
  const ExprPtr first = start.constant() ? kir::integer(op.arg("start").integer) : kir::index(start);
  return kir::cast(type, kir::binary(first, "+", kir::binary(position, "*", kir::integer(op.arg("step").integer))));
}

}  // namespace lower
}  // namespace tg
