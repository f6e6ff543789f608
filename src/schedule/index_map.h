// Index maps: which element of an operand a shape op's output element reads. Kernels evaluate a
// fused expression at a symbolic index (one component per dim of the value); shape ops map it to
// their operand's index. Components stay structural (a loop variable, a constant) as long as they
// can, so fusion can tell whether two reads hit the same element, and otherwise are expressions
// (index_expr.h), simplified as the shape ops build them: a reshape of a reshape reads its
// operand at the loop dims again, and an offset can be seen to be the kernel's flat index.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/index_expr.h"
#include "ir/trace.h"

namespace tg {

struct IndexComp {
  enum class Kind { var, constant, expr };
  Kind kind = Kind::constant;
  int var = 0;       // Kind::var: the kernel's loop dimension d<var>
  int64_t value = 0; // Kind::constant
  IndexExpr expr;    // Kind::expr: anything else

  static IndexComp of_var(int v) { IndexComp c; c.kind = Kind::var; c.var = v; return c; }
  static IndexComp of_const(int64_t v) { IndexComp c; c.kind = Kind::constant; c.value = v; return c; }
  // `e` as a component: a loop dim or a constant where it is one.
  static IndexComp of_expr(IndexExpr e);
  std::string text() const;  // parenthesized unless a name or a number
  bool operator==(const IndexComp& o) const;
};
using Index = std::vector<IndexComp>;

Index identity_index(size_t rank);

// The most elements a kernel's count can be at run time: past every tensor a device can hold
// (2^46 elements), so that index arithmetic on it cannot overflow; entry points check it.
constexpr int64_t kLargestRunTimeCount = int64_t(1) << 46;

// A kernel's size parameter for a size that is no product of symbols (`T - 1`, `B*T - B`): a
// factor of its own, sz_<its text spelled as an identifier> (sz_T_m1: `_m` minus, `_p` plus, `_x`
// times, `_d` a slash, `_l` `_r` parentheses, `_c` a comma, `_u` an underscore, `_s` first where
// it starts with a digit), in its declared
// range, with a divider. None where that range reaches below 1 or the name is a symbol's.
std::optional<SizeProduct::Factor> derived_size_factor(const SizeExpr& e, const Symbols& symbols);
// The size a kernel's size or divider parameter (sz_T, dv_T, sz_T_m1) stands for.
SizeExpr parameter_size(std::string_view parameter, const Symbols& symbols);

// How a trace's dims enter index arithmetic: as numbers; or, in a folder taking its sizes at run
// time, a dim whose expression is a number times a product of symbols (`64*B*T`) as that scale of
// the kernel's size parameters (`sz_B * sz_T * 64`, ir/index_scale.h), so its code holds at every
// size, and a symbolic dim of another form (`T - 1`) as a size parameter of its own
// (derived_size_factor), where it has one; where not, it enters as its size: the two probes' code
// then differs, and the folder is refused (docs/symbolic-shapes.md). Each size parameter is known to be
// a multiple of its symbol's multiple_of, and of `assumed_multiple` too where code checks that it
// is before it runs (a run loop's guard: KernelLowering::divisible_runs_).
class IndexSizes {
 public:
  explicit IndexSizes(const Trace& t, int64_t assumed_multiple = 1) : t_(t), assumed_multiple_(assumed_multiple) {}
  IndexScale scale(const Dim& d) const;
  // d as index arithmetic: its scale of the size parameters where it has one (sz_T * 64), else its
  // number (which may be 0).
  IndexExpr size(const Dim& d) const;
  int64_t largest(const Dim& d) const;                               // its number, or its range's top (at most kLargestRunTimeCount)
  IndexExpr dim(int k, const Dim& extent) const;                     // d<k>, in [0, extent)
  IndexExpr component(const IndexComp& c, const Dim& extent) const;  // c, an index into a dim of `extent`
  bool symbolic(const Shape& s) const;  // some dim enters as a scale with a product
  // Some dim enters as the number 0: no element at these sizes, nothing to divide by.
  bool empty(const Shape& s) const;

  // What its answers depend on besides the dims asked about, for a memo of them to key on.
  struct Context {
    Symbols symbols;
    int64_t assumed_multiple = 1;
    bool sizes_at_run_time = false;
    bool operator==(const Context&) const = default;
  };
  Context context() const { return {t_.symbols, assumed_multiple_, t_.sizes_at_run_time}; }
  bool answers_in(const Context& c) const {
    return c.sizes_at_run_time == t_.sizes_at_run_time && c.assumed_multiple == assumed_multiple_ && c.symbols == t_.symbols;
  }

 private:
  std::optional<IndexScale> scale_of(const SizeExpr& e) const;
  const Trace& t_;
  int64_t assumed_multiple_;
};

// A map from reads (value v at an index) to T, hashed and compared on the index's structure, so
// no key text is built: the emitter's memo of computed values, and (as ReadSet) fusion's visited
// sets.
template <class T>
class ReadMap {
 public:
  const T* find(ValueId v, const Index& index) const { return find(Probe{v, index, hash_read(v, index)}); }
  void set(ValueId v, const Index& index, T value) {
    const size_t hash = hash_read(v, index);
    map_.insert_or_assign(Read{v, index, hash}, std::move(value));
  }
  // Adds the read with `value` unless it is there; false if it was. (One hash for both.)
  bool insert(ValueId v, const Index& index, T value) {
    const Probe probe{v, index, hash_read(v, index)};
    if (find(probe)) return false;
    map_.emplace(Read{v, index, probe.hash}, std::move(value));
    return true;
  }

 private:
  struct Read {
    ValueId value;
    Index index;
    size_t hash;  // hash_read(value, index), kept so rehashing and inserting compute it once
  };
  struct Probe {  // a read looked up without copying its index
    ValueId value;
    const Index& index;
    size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    template <class Key>
    size_t operator()(const Key& k) const { return k.hash; }
  };
  struct Equal {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return a.hash == b.hash && a.value == b.value && a.index == b.index; }
  };
  const T* find(const Probe& probe) const {
    auto it = map_.find(probe);
    return it == map_.end() ? nullptr : &it->second;
  }
  static size_t hash_read(ValueId v, const Index& index);
  std::unordered_map<Read, T, Hash, Equal> map_;
};

class ReadSet {
 public:
  // Adds the read; false if it was there.
  bool insert(ValueId v, const Index& index) { return reads_.insert(v, index, true); }

 private:
  ReadMap<bool> reads_;
};

size_t hash_index(const Index& index);  // (equal indexes hash alike)

template <class T>
size_t ReadMap<T>::hash_read(ValueId v, const Index& index) {
  const size_t h = hash_index(index);
  return h ^ (std::hash<ValueId>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

// One operand read of a shape op. `guard` says when the read is the one that counts (always, when
// empty): pad reads its input only inside the padded region, cat reads one piece.
struct OperandRead {
  ValueId value;
  Index index;
  IndexCond guard;
};

// Names pieces of index code so emitted kernels stay readable and expressions small: a variable
// standing for an index (int64_t) or a guard (bool), with a hint for its name. shape_op_reads
// names guards, the pieces of pad and cat, and expressions grown past kMaxIndexExprSize (a chain
// of reshapes and transposes); fusion's walks name them by tokens; analysis passes none.
class IndexNamer {
 public:
  virtual ~IndexNamer() = default;
  virtual std::string name(const IndexExpr& index, const std::string& hint) = 0;
  virtual std::string name(const IndexCond& guard, const std::string& hint) = 0;
};

constexpr size_t kMaxIndexExprSize = 24;

// The reads that element `out` of shape op `op` makes. For every op but cat this is one read.
std::vector<OperandRead> shape_op_reads(const Trace& t, const Op& op, const Index& out, IndexNamer* namer = nullptr);

// Row-major linear offset of `index` into a tensor of `shape` (0 for scalars), simplified.
IndexExpr linear_index(const Index& index, const Shape& shape, const IndexSizes& sizes);

}  // namespace tg
