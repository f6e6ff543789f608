#include "schedule/fuse.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "ops/op_table.h"
#include "ops/prim_builder.h"
#include "schedule/kernel_plan.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

// A dim as a kernel's domain sees it: its size, and its expression where it has a symbolic one.
// Two shapes are one domain when they are the same at every size: [B*16, 64] and [32, 64] agree at
// B=2 only, and a kernel fusing them there would be another kernel at other sizes.
std::pair<int64_t, const SizeExpr*> domain_dim(const Dim& d) { return {int64_t(d), d.symbolic() ? d.expr() : nullptr}; }
bool same_domain(const Shape& a, const Shape& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Dim& x, const Dim& y) { return domain_dim(x) == domain_dim(y); });
}
struct DomainLess {
  bool operator()(const Shape& a, const Shape& b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](const Dim& x, const Dim& y) { return domain_dim(x) < domain_dim(y); });
  }
};

}  // namespace

Shape KernelLayout::outer_shape() const {
  Shape s;
  for (int64_t d : outer) s.push_back(domain[d]);
  return s;
}
Shape KernelLayout::reduced_shape() const {
  Shape s;
  for (int64_t d : reduced) s.push_back(domain[d]);
  return s;
}
bool KernelLayout::rows_contiguous() const {
  for (size_t k = 0; k < reduced.size(); ++k)
    if (reduced[k] != int64_t(domain.size() - reduced.size() + k)) return false;
  return true;
}
Index KernelLayout::outer_index() const {
  Index index;
  for (int64_t d : outer) index.push_back(IndexComp::of_var(int(d)));
  return index;
}

namespace {

bool is_reduction(const Op& op) { return op.info->fusion == FusionClass::reduction; }

KernelLayout row_layout(const Trace& t, const Op& reduction) {
  KernelLayout k;
  k.is_row = true;
  k.domain = t.value(reduction.arg("a").value).shape;
  k.reduced = reduction_dims(t, reduction);
  for (int64_t d = 0; d < int64_t(k.domain.size()); ++d)
    if (!std::count(k.reduced.begin(), k.reduced.end(), d)) k.outer.push_back(d);
  return k;
}

struct Kernel {
  KernelLayout layout;
  std::vector<ValueId> members;  // placed values: reductions and written outputs, in order
  // A library call (matmul), or a view (a reshape whose output is its input's memory): the op's
  // index. It is not a kernel: the fused trace keeps the op as it is.
  int standalone_op = -1;
  // A row kernel's sums over its rows (see place_sum_over_rows): computed here in `parts` partial
  // sums, which the `finishers` add up (one for sums by element, one for totals of a value per
  // row). A finisher has finishes >= 0, the row kernel's index.
  std::vector<ValueId> sums_over_rows;
  Dim parts;
  std::vector<int> finishers;
  int finishes = -1;
};

constexpr int kInput = -1;   // a trace input: always in memory
constexpr int kMaxInlineDepth = 16;  // longest chain of ops computed inline before it is written
constexpr int kInline = -2;  // not placed: computed wherever it is needed
// Partial sums a row kernel splits a sum over its rows into: one per block, so the kernel keeps
// one block per row up to this many rows. Each costs a row of the sum's shape written and read
// back (2 x 2 MB for LayerNorm over 1024 features), against re-reading every row.
constexpr int64_t kMaxRowParts = 512;
constexpr int kMaxWaitingTries = 16;  // see place_reduction

// The ops and values of sums over a row kernel's rows computed in parts (place_sum_over_rows).
class PartSums {
 public:
  explicit PartSums(Trace& t) : t_(t) {}

  // In the row kernel `kernel`: v__parts = thunder_gen.partial_sum(a, dims, parts) for
  // v = prims.sum(a, dims). (Built here: PrimBuilder emits only ops a trace may hold.)
  void compute(Op& kernel, const Op& sum, const Dim& parts) {
    const ValueId v = sum.outs[0];
    Op op;
    op.symbol = "thunder_gen.partial_sum";
    op.info = &op_info(OpKind::partial_sum);
    op.args = {sum.arg("a"), sum.arg("dims"), Arg::of_dim(parts)};
    op.where = sum.where;
    op.origin = sum.origin;
    const OutType type = op.info->rule(t_, op).at(0);
    Value part_sums;
    part_sums.name = PrimBuilder(t_, taken(), "").fresh_named(t_.value(v).name + "__parts");
    part_sums.dtype = type.dtype;
    part_sums.shape = type.shape;
    part_sums.device = t_.device;
    op.outs = {t_.add_value(std::move(part_sums))};
    part_of_[v] = op.outs[0];
    kernel.outs.push_back(op.outs[0]);
    kernel.sub.push_back(std::move(op));
  }

  // In the kernel after it, which writes v if anything reads it: v = prims.sum(v__parts, [0]), converted to v's dtype where the parts
  // are f32 sums of a 16-bit float.
  void finish(Op& kernel, ValueId v) {
    const ValueId part_sums = part_of_.at(v);
    kernel.args.push_back(Arg::of_value(part_sums));
    PrimBuilder b(t_, taken(), t_.value(v).name + "__sum");
    ValueId total = b.emit("prims.sum", {Arg::of_value(part_sums), Arg::of_list({Arg::of_int(0)})}).at(0);
    if (t_.value(total).dtype != t_.value(v).dtype) b.emit("prims.convert_element_type", {Arg::of_value(total), Arg::of_dtype(t_.value(v).dtype)});
    std::vector<Op> ops = b.take_ops();
    ops.back().outs = {v};  // the last op defines v itself
    for (Op& op : ops) kernel.sub.push_back(std::move(op));
  }

 private:
  Trace& t_;
  NameSet taken_;  // the trace's names, gathered when the first part sum needs one
  std::map<ValueId, ValueId> part_of_;

  NameSet& taken() {
    if (taken_.empty())
      for (const Value& v : t_.values) taken_.insert(v.name);
    return taken_;
  }
};

class Fuser {
 public:
  // Takes the trace: build() moves each op into the last kernel that uses it (a value inlined in
  // several kernels is computed by a copy of its op in each).
  explicit Fuser(Trace t) : owned_(std::move(t)), home_(t_.values.size(), kInline), producer_(t_.values.size(), -1) {
    input_place_.assign(t_.values.size(), -1);
    for (size_t i = 0; i < t_.inputs.size(); ++i) {
      home_[t_.inputs[i]] = kInput;
      input_place_[t_.inputs[i]] = int(i);
    }
    for (size_t i = 0; i < t_.ops.size(); ++i)
      for (ValueId v : t_.ops[i].outs) producer_[v] = int(i);
    depth_.assign(t_.values.size(), 0);
    from_scalars_.assign(t_.values.size(), false);
    mark_reads();
  }

  Trace run() {
    std::vector<ValueId> placed_last;
    for (size_t i = 0; i < t_.ops.size(); ++i) {
      const Op& op = t_.ops[i];
      TG_CHECK(op.info && op.info->fusion != FusionClass::kernel, "fuse expects a decomposed trace");
      if (is_reduction(op)) {
        place_reduction(op);
        continue;
      }
      if (op.info->fusion == FusionClass::library) {
        place_library_call(int(i));
        continue;
      }
      // Inlining recomputes a value in every kernel (and every row pass) that reads it, so deep
      // chains are cut: past kMaxInlineDepth ops the value is written once and read after.
      int depth = 1;
      for_each_value(op, [&](ValueId u) { depth = std::max(depth, 1 + (home_[u] == kInline ? depth_[u] : 0)); });
      // A value computed from scalars alone (a dropout mask from the Philox seed, an iota) reads no
      // memory. Such an output is placed last, where it joins the latest kernel of its shape (the
      // one using it, typically), rather than a kernel of its own that runs first: a kernel
      // computing it inline spends arithmetic, not bandwidth.
      bool from_scalars = true;
      for_each_value(op, [&](ValueId u) { from_scalars = from_scalars && (t_.value(u).is_scalar || (home_[u] == kInline && from_scalars_[u])); });
      for (ValueId v : op.outs) {
        depth_[v] = depth;
        from_scalars_[v] = from_scalars;
        if (t_.value(v).is_scalar) continue;
        if (outputs_.count(v) && from_scalars && depth <= kMaxInlineDepth) placed_last.push_back(v);
        else if (outputs_.count(v) || depth > kMaxInlineDepth) place_pointwise(v);
      }
    }
    for (ValueId v : placed_last) place_pointwise(v);
    waiting_ = false;  // sums no row kernel took: kernels of their own
    for (const WaitingSum& w : std::exchange(waiting_sums_, {})) place_reduction(*w.sum);
    return build();
  }

 private:
  Trace owned_;
  const Trace& t_ = owned_;  // for reading
  std::set<ValueId> outputs_{t_.outputs.begin(), t_.outputs.end()};
  std::vector<int> home_;      // kernel that computes and places the value, kInput or kInline
  std::vector<int> producer_;  // op index defining the value, -1 for inputs
  std::vector<int> input_place_;  // an input's place among the trace's inputs, -1 for other values
  std::vector<int> depth_;     // inline values: the longest chain of ops computing them
  std::vector<bool> from_scalars_;  // computed from scalar values alone, reading no memory
  bool placing_reduction_ = false;
  std::vector<bool> read_by_ops_;  // does an op read the value? (else only the trace returns it)
  bool waiting_ = true;            // may a sum wait for a row kernel (place_reduction)?
  struct WaitingSum {
    const Op* sum;
    KernelLayout layout;  // its row_layout
    int tries = 0;        // row kernels of its rows it did not fit
  };
  std::vector<WaitingSum> waiting_sums_;
  std::vector<Kernel> kernels_;
  std::map<Shape, int, DomainLess> last_pointwise_;  // domain -> most recent pointwise kernel
  std::map<Shape, int, DomainLess> last_row_;        // domain -> most recent row kernel
  std::map<Shape, int, DomainLess> last_row_outer_;  // reduced-value shape -> most recent row kernel
  // The walks compare reads, not print them: an index a shape op computes as code is replaced by a
  // token standing for it, one per distinct piece of code, so the next shape op builds on the
  // token. (A chain of reshapes pasted each index into the next twice: code that doubled with
  // every op.)
  class IndexTokens : public IndexNamer {
   public:
    std::string name(const IndexExpr& index, const std::string&) override { return token(index_tokens_, index); }
    std::string name(const IndexCond& guard, const std::string&) override { return token(guard_tokens_, guard); }

   private:
    struct Hash {
      template <class T>
      size_t operator()(const T& x) const { return x.hash(); }
    };
    std::unordered_map<IndexExpr, std::string, Hash> index_tokens_;
    std::unordered_map<IndexCond, std::string, Hash> guard_tokens_;
    template <class Map, class Key>
    std::string token(Map& tokens, const Key& key) {
      auto [it, fresh] = tokens.try_emplace(key);
      if (fresh) it->second = "__ix" + std::to_string(index_tokens_.size() + guard_tokens_.size());
      return it->second;
    }
  };
  mutable IndexTokens index_token_;

  // (The dead-code pass ran before: every op here is needed, so every read counts.)
  void mark_reads() {
    read_by_ops_.assign(t_.values.size(), false);
    for (const Op& op : t_.ops) for_each_value(op, [&](ValueId v) { read_by_ops_[size_t(v)] = true; });
  }

  // Walks what computing `v` at `index` inside kernel k reads. Returns false when it would read
  // one of k's reductions at another row; `deepest` collects the latest other kernel it reads.
  // (With a stack of its own: a kernel may hold a chain of 10,000 ops.)
  bool walk(ValueId v, const Index& index, int k, int& deepest, ReadSet& seen) const {
    std::vector<std::pair<ValueId, Index>> pending = {{v, index}};
    while (!pending.empty()) {
      auto [u, at] = std::move(pending.back());
      pending.pop_back();
      if (!seen.insert(u, at)) continue;
      const int home = home_[u];
      if (home == kInput) continue;
      if (home >= 0 && home != k) {
        deepest = std::max(deepest, home);
        continue;
      }
      const Op& op = t_.ops[producer_[u]];
      // A row kernel writes its row-shaped values in its last pass; a reduction reading one would
      // recompute it in its own pass, so it starts a new kernel that reads it instead.
      if (home == k && placing_reduction_ && !is_reduction(op)) return false;
      // What a pointwise kernel's member reads was walked when it joined (no index changes that
      // here: such a kernel reads no reduction); walking it again made a chain of 10,000 sums
      // quadratic.
      if (home == k && !kernels_[k].layout.is_row) continue;
      if (is_reduction(op)) {
        TG_CHECK(home == k, "an unplaced reduction was read");
        if (at != kernels_[k].layout.outer_index()) return false;
        continue;
      }
      for_each_operand(op, at, [&](ValueId w, const Index& i) { pending.emplace_back(w, i); });
    }
    return true;
  }

  bool walk_operands(const Op& op, const Index& index, int k, int& deepest, ReadSet& seen) const {
    bool ok = true;
    for_each_operand(op, index, [&](ValueId u, const Index& i) { ok = ok && walk(u, i, k, deepest, seen); });
    return ok;
  }

  // The (value, index) pairs computing `op` at `index` reads: shape ops map the index, a
  // reduction reads its input over the whole row (the kernel's full index) and its scalar
  // arguments, elementwise ops read their operands at the same index.
  template <class F>
  void for_each_operand(const Op& op, const Index& index, F&& read) const {
    if (op.info->fusion == FusionClass::shape) {
      for (const OperandRead& r : shape_op_reads(t_, op, index, &index_token_)) read(r.value, r.index);
      return;
    }
    if (is_reduction(op)) {
      read(op.arg("a").value, identity_index(t_.value(op.arg("a").value).shape.size()));
      for (size_t i = 1; i < op.args.size(); ++i)
        if (op.args[i].is_value()) read(op.args[i].value, Index{});
      return;
    }
    for (const Arg& a : op.args)
      if (a.is_value()) read(a.value, index);
  }

  // Can `v` (computed by walking from `start`) join kernel k? Fills nothing; just answers.
  bool fits(int k, const std::function<bool(int, int&, ReadSet&)>& start) const {
    int deepest = kInput;
    ReadSet seen;
    return start(k, deepest, seen) && deepest <= k;
  }

  int add_kernel(KernelLayout layout) {
    kernels_.emplace_back().layout = std::move(layout);
    return int(kernels_.size()) - 1;
  }

  void place_reduction(const Op& op) {
    KernelLayout layout = row_layout(t_, op);
    if (place_sum_over_rows(op, layout)) return;
    // A weight gradient often comes before the row kernel computing its input gradient, whose
    // rows it sums: a sum that only the trace returns waits for a row kernel of its input's shape.
    if (waiting_ && sums_leading_dims(op, layout) && !read_by_ops_[size_t(op.outs[0])]) {
      waiting_sums_.push_back({&op, std::move(layout)});
      return;
    }
    auto start = [&](int k, int& deepest, ReadSet& seen) { return walk_operands(op, {}, k, deepest, seen); };
    int k = -1;
    auto it = last_row_.find(layout.domain);
    placing_reduction_ = true;
    if (it != last_row_.end() && kernels_[it->second].layout.reduced == layout.reduced && fits(it->second, start)) k = it->second;
    placing_reduction_ = false;
    if (k < 0) k = add_kernel(layout);
    for (ValueId v : op.outs) {
      home_[v] = k;
      kernels_[k].members.push_back(v);
    }
    last_row_[layout.domain] = k;
    last_row_outer_[layout.outer_shape()] = k;
    // A sum that keeps failing to fit row kernels of its rows is left for the end after
    // kMaxWaitingTries of them, so that a deep stack does not try it again at every layer.
    std::erase_if(waiting_sums_, [&](WaitingSum& w) {
      if (w.tries >= kMaxWaitingTries) return false;
      if (place_sum_over_rows(*w.sum, w.layout)) return true;
      if (same_domain(w.layout.domain, layout.domain)) ++w.tries;  // (this reduction's kernel is one of its rows)
      return false;
    });
  }

  // A float sum over the rows of a row kernel whose rows lie next to each other in memory, that
  // reads that kernel's reductions only at the row being computed: either a sum over its rows of
  // a value shaped like them, element by element (LayerNorm's weight and bias gradients, beside
  // the input gradient), or a sum of a value per row over all rows (a loss's mean over the rows'
  // losses). The row kernel adds its rows up in partial sums as it goes, one per block
  // (thunder_gen.partial_sum), and a small kernel after it adds the parts (a prims.sum over dim 0).
  // The rows are read once, where a kernel of its own would read them all again (or, for the
  // totals, one block would read every row's value).
  bool place_sum_over_rows(const Op& op, const KernelLayout& layout) {
    if (op.info->kind != OpKind::sum || !is_float(t_.value(op.arg("a").value).dtype)) return false;
    int k = -1;
    if (sums_leading_dims(op, layout)) {  // element by element: the kernel of the same rows
      auto it = last_row_.find(layout.domain);
      if (it != last_row_.end() && kernels_[it->second].layout.outer == layout.reduced) k = it->second;
    } else if (layout.outer.empty()) {  // a value per row, over all rows
      auto it = last_row_outer_.find(layout.domain);
      if (it != last_row_outer_.end() && it->second >= 0 && kernels_[it->second].layout.is_row && kernels_[it->second].finishes < 0 &&
          same_domain(kernels_[it->second].layout.outer_shape(), layout.domain))
        k = it->second;
    }
    if (k < 0 || !leading(kernels_[k].layout.outer)) return false;  // (one block a row, each row contiguous)
    // (The parts are added in the kernel's last pass, so unlike a reduction's pass it may read
    // the row outputs computed there.)
    auto start = [&](int kk, int& deepest, ReadSet& seen) { return walk_operands(op, {}, kk, deepest, seen); };
    if (!fits(k, start)) return false;
    const KernelLayout& rows = kernels_[k].layout;
    KernelLayout parts;  // [parts] + what is summed, summed over dim 0
    parts.is_row = true;
    parts.domain = layout.outer.empty() ? Shape{} : rows.reduced_shape();
    // Rows counted at run time get the most parts: blocks past the last row add nothing.
    const Dim row_count = numel_dim(rows.outer_shape());
    parts.domain.insert(parts.domain.begin(), t_.taken_at_run_time(row_count) ? Dim::constant(kMaxRowParts) : Dim(std::min(int64_t(row_count), kMaxRowParts)));
    parts.reduced = {0};
    for (int64_t d = 1; d < int64_t(parts.domain.size()); ++d) parts.outer.push_back(d);
    const std::vector<int>& finishers = kernels_[k].finishers;
    auto f = std::find_if(finishers.begin(), finishers.end(), [&](int i) { return same_domain(kernels_[size_t(i)].layout.domain, parts.domain); });
    int finisher = f == finishers.end() ? -1 : *f;
    if (finisher < 0) {
      kernels_[k].parts = parts.domain[0];
      finisher = add_kernel(parts);  // (`rows` and `finishers` are gone: kernels_ grew)
      kernels_[k].finishers.push_back(finisher);
      kernels_[finisher].finishes = k;
      // Values shaped like the sums may join it (a weight gradient's conversion to bf16, a mean).
      last_row_outer_[kernels_[finisher].layout.outer_shape()] = finisher;
    }
    const ValueId sum = op.outs[0];
    kernels_[k].sums_over_rows.push_back(sum);
    home_[sum] = finisher;
    kernels_[size_t(finisher)].members.push_back(sum);
    return true;
  }

  // Dims 0, 1, ... (at least one).
  static bool leading(const std::vector<int64_t>& dims) {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] != int64_t(i)) return false;
    return !dims.empty();
  }

  // A float sum over leading dims, keeping others (see place_reduction).
  bool sums_leading_dims(const Op& op, const KernelLayout& layout) const {
    return op.info->kind == OpKind::sum && is_float(t_.value(op.arg("a").value).dtype) && !layout.outer.empty() && leading(layout.reduced);
  }

  // A library call reads its operands from memory, so they are placed first; it runs in order
  // between the kernels, and what reads its result joins only kernels after it.
  void place_library_call(int i) {
    const Op& op = t_.ops[i];
    for_each_value(op, [&](ValueId u) { place_in_memory(u); });
    int k = add_kernel(KernelLayout{});
    kernels_[k].standalone_op = i;
    for (ValueId v : op.outs) {
      home_[v] = k;
      kernels_[k].members.push_back(v);
    }
  }

  // Puts an inline value in memory for a library call. Every buffer is contiguous and row-major,
  // so a reshape of a value already in memory is that memory read with another shape: a view,
  // written by no kernel (a linear layer's backward reshapes its [batch, seq, features] operands
  // to 2-D). Anything else a pointwise kernel writes. (A reshape of an inline value is written
  // as it is: writing its input instead costs the same and may not fit the kernels at hand.)
  void place_in_memory(ValueId v) {
    if (home_[v] != kInline) return;
    if (!is_view(v)) {
      place_pointwise(v);
      return;
    }
    const int op = producer_[v];
    place_in_memory(t_.ops[size_t(op)].arg("a").value);  // a view of a view: that one first
    int k = add_kernel(KernelLayout{});
    kernels_[k].standalone_op = op;
    home_[v] = k;
    kernels_[k].members.push_back(v);
  }
  // Whether v, inline, is a reshape of a value in memory (or of such a view).
  bool is_view(ValueId v) const {
    if (home_[v] != kInline || producer_[v] < 0 || outputs_.count(v)) return false;
    const Op& op = t_.ops[size_t(producer_[v])];
    if (op.info->kind != OpKind::reshape || !op.arg("a").is_value()) return false;
    const ValueId base = op.arg("a").value;
    const Value &in = t_.value(base), &out = t_.value(v);
    return !in.is_scalar && !in.bit_packed && !out.bit_packed && (home_[base] != kInline || is_view(base));
  }

  void place_pointwise(ValueId v) {
    if (home_[v] != kInline) return;  // an output listed twice
    const Shape& shape = t_.value(v).shape;
    // Candidates: the latest pointwise kernel of this shape, and the latest row kernel whose rows
    // or reduced values have this shape; try the most recent first.
    std::vector<std::pair<int, Index>> candidates;
    if (auto it = last_pointwise_.find(shape); it != last_pointwise_.end()) candidates.emplace_back(it->second, identity_index(shape.size()));
    if (auto it = last_row_.find(shape); it != last_row_.end()) candidates.emplace_back(it->second, identity_index(shape.size()));
    if (auto it = last_row_outer_.find(shape); it != last_row_outer_.end() && it->second != -1)
      if (!same_domain(kernels_[it->second].layout.domain, shape)) candidates.emplace_back(it->second, kernels_[it->second].layout.outer_index());
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    int k = -1;
    for (const auto& [candidate, index] : candidates) {
      auto start = [&, idx = index](int kk, int& deepest, ReadSet& seen) { return walk(v, idx, kk, deepest, seen); };
      if (fits(candidate, start)) { k = candidate; break; }
    }
    if (k < 0) {
      KernelLayout layout;
      layout.domain = shape;
      k = add_kernel(layout);
      last_pointwise_[shape] = k;
    }
    home_[v] = k;
    kernels_[k].members.push_back(v);
  }

  // Collects, for kernel k, the ops it computes and the values it reads from memory, by walking
  // from its members exactly as the emitter will.
  void collect(int k, ValueId v, const Index& index, std::set<int>& ops, std::set<ValueId>& reads, ReadSet& seen) const {
    std::vector<std::pair<ValueId, Index>> pending = {{v, index}};  // (a stack of its own, as walk's)
    while (!pending.empty()) {
      auto [u, at] = std::move(pending.back());
      pending.pop_back();
      if (!seen.insert(u, at)) continue;
      // Values of earlier kernels are read from memory. A value placed in a later kernel (written
      // there for a matmul operand, or past the inline depth) was still inline when this kernel
      // took it, so this kernel computes it as it was planned to, not read it before it exists.
      if (home_[u] == kInput || (home_[u] >= 0 && home_[u] < k)) {
        reads.insert(u);
        continue;
      }
      if (kernels_[k].finishes >= 0 && home_[u] == k && home_is_reduction(u)) continue;  // a sum its parts make (PartSums::finish)
      const Op& op = t_.ops[producer_[u]];
      TG_CHECK(!(home_[u] > k && (is_reduction(op) || op.info->fusion == FusionClass::library)),
               "kernel " + std::to_string(k) + " reads " + t_.value(u).name + ", which a later kernel reduces or a later call computes");
      ops.insert(producer_[u]);
      if (is_reduction(op) && !at.empty() && at != kernels_[k].layout.outer_index()) TG_CHECK(false, "misplaced reduction read");
      for_each_operand(op, at, [&](ValueId w, const Index& i) { pending.emplace_back(w, i); });
    }
  }

  Index member_index(const Kernel& kernel, ValueId v) const {
    const Shape& shape = t_.value(v).shape;
    if (kernel.layout.is_row && (!same_domain(shape, kernel.layout.domain) || home_is_reduction(v))) return kernel.layout.outer_index();
    return identity_index(shape.size());
  }
  // Where v is defined: its input's place, or after the inputs, its op's place.
  std::pair<int, int> defined_at(ValueId v) const { return producer_[v] >= 0 ? std::pair{1, producer_[v]} : std::pair{0, input_place_[v]}; }
  bool home_is_reduction(ValueId v) const { return producer_[v] >= 0 && is_reduction(t_.ops[producer_[v]]); }

  Trace build() {
    // What each kernel computes and reads.
    std::vector<std::set<int>> ops(kernels_.size());
    std::vector<std::set<ValueId>> reads(kernels_.size());
    std::set<ValueId> read_elsewhere(t_.outputs.begin(), t_.outputs.end());
    for (size_t k = 0; k < kernels_.size(); ++k) {
      ReadSet seen;
      if (kernels_[k].standalone_op >= 0) {
        for_each_value(t_.ops[kernels_[k].standalone_op], [&](ValueId u) { reads[k].insert(u); });
      } else {  // (a finisher also reads the parts, made below)
        for (ValueId v : kernels_[k].members) collect(int(k), v, member_index(kernels_[k], v), ops[k], reads[k], seen);
        for (ValueId v : kernels_[k].sums_over_rows)  // what is summed, at the row element being computed
          for_each_operand(t_.ops[size_t(producer_[v])], {}, [&](ValueId u, const Index& i) { collect(int(k), u, i, ops[k], reads[k], seen); });
      }
      read_elsewhere.insert(reads[k].begin(), reads[k].end());
    }
    std::vector<int> uses_left(t_.ops.size(), 0);
    for (size_t k = 0; k < kernels_.size(); ++k) {
      if (kernels_[k].standalone_op >= 0) ++uses_left[size_t(kernels_[k].standalone_op)];
      for (int i : ops[k]) ++uses_left[size_t(i)];
    }
    auto take = [&](int i) { return --uses_left[size_t(i)] == 0 ? std::move(owned_.ops[size_t(i)]) : owned_.ops[size_t(i)]; };
    Trace out = t_.without_ops();
    PartSums parts(out);
    for (size_t k = 0; k < kernels_.size(); ++k) {
      const Kernel& kernel = kernels_[k];
      if (kernel.standalone_op >= 0) {
        out.ops.push_back(take(kernel.standalone_op));
        continue;
      }
      Op op;
      op.symbol = "thunder_gen.kernel";
      op.info = &op_info(OpKind::fused_kernel);
      if (kernel.finishes >= 0)
        for (ValueId v : kernels_[size_t(kernel.finishes)].sums_over_rows)
          if (home_[v] == int(k)) parts.finish(op, v);
      for (int i : ops[k]) op.sub.push_back(take(i));
      // Reads in the order the trace defines them (inputs, then each op's outputs), for stable
      // signatures that a listing read back (--from-stage) gives too: values a pass made later
      // (a Philox seed input) have larger ids than their place says.
      std::vector<ValueId> in(reads[k].begin(), reads[k].end());
      std::sort(in.begin(), in.end(), [&](ValueId a, ValueId b) { return defined_at(a) < defined_at(b); });
      for (ValueId v : in) op.args.push_back(Arg::of_value(v));
      for (ValueId v : kernel.members)
        if (read_elsewhere.count(v)) op.outs.push_back(v);
      for (ValueId v : kernel.sums_over_rows) parts.compute(op, t_.ops[size_t(producer_[v])], kernel.parts);
      TG_CHECK(!op.outs.empty(), "a kernel writes nothing");
      op.where = op.sub.front().where;
      out.ops.push_back(std::move(op));
    }
    return out;
  }
};

}  // namespace

FusedTrace fuse(Trace trace) { return plan_kernels(Fuser(std::move(trace)).run()); }

KernelLayout kernel_layout(const Trace& t, const Op& kernel) {
  for (const Op& op : kernel.sub)
    if (op.info->fusion == FusionClass::reduction) return row_layout(t, op);
  KernelLayout layout;
  layout.domain = t.value(kernel.outs.at(0)).shape;
  return layout;
}

}  // namespace tg
