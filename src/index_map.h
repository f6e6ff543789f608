// Index maps: which element of an operand a shape op's output element reads. Kernels evaluate a
// fused expression at a symbolic index (one component per dim of the value); shape ops map it to
// their operand's index. Components stay structural (a loop variable, a constant) as long as they
// can, so fusion can tell whether two reads hit the same element, and otherwise become code.
#pragma once
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "thunder_gen/ir.h"

namespace tg {

struct IndexComp {
  enum class Kind { var, constant, code };
  Kind kind = Kind::constant;
  int var = 0;       // Kind::var: the kernel's loop dimension d<var>
  int64_t value = 0; // Kind::constant
  std::string code;  // Kind::code: a C++ int64 expression over d<k> variables

  static IndexComp of_var(int v) { IndexComp c; c.kind = Kind::var; c.var = v; return c; }
  static IndexComp of_const(int64_t v) { IndexComp c; c.kind = Kind::constant; c.value = v; return c; }
  static IndexComp of_code(std::string s) { IndexComp c; c.kind = Kind::code; c.code = std::move(s); return c; }
  std::string text() const;
  bool operator==(const IndexComp& o) const;
};
using Index = std::vector<IndexComp>;

Index identity_index(size_t rank);
// A text equal exactly when two reads (value v at `index`) are the same read: the key of the
// emitter's memo (fusion's visited sets are ReadSets).
std::string read_key(ValueId v, const Index& index);

// A set of reads (value v at an index): the visited sets of fusion's walks. Hashed on the index's
// structure, so no key text is built (building read_key's was a fifth of fusion).
class ReadSet {
 public:
  // Adds the read; false if it was there.
  bool insert(ValueId v, const Index& index);

 private:
  struct Read {
    ValueId value;
    Index index;
  };
  struct Probe {  // a read looked up without copying its index
    ValueId value;
    const Index& index;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const Read& r) const { return of(r.value, r.index); }
    size_t operator()(const Probe& p) const { return of(p.value, p.index); }
    static size_t of(ValueId v, const Index& index);
  };
  struct Equal {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return a.value == b.value && a.index == b.index; }
  };
  std::unordered_set<Read, Hash, Equal> reads_;
};

// One operand read of a shape op. `guard` (code, empty = always) says when the read is the one
// that counts: pad reads its input only inside the padded region, cat reads one piece.
struct OperandRead {
  ValueId value;
  Index index;
  std::string guard;
};

// Names a piece of index code so emitted kernels stay readable: given the code, its C++ type
// ("int64_t" or "bool") and a hint, returns the expression to use instead (a variable). Analysis
// passes none and gets the code itself.
using IndexNamer = std::function<std::string(const std::string& code, const char* type, const std::string& hint)>;

// The reads that element `out` of shape op `op` makes. For every op but cat this is one read.
std::vector<OperandRead> shape_op_reads(const Trace& t, const Op& op, const Index& out, const IndexNamer& namer = nullptr);

// Row-major linear offset of `index` into a tensor of `shape`, as code ("0" for scalars).
std::string linear_offset(const Index& index, const Shape& shape);

}  // namespace tg
