#include "schedule/gemm_epilogue.h"

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "ops/op_table.h"

namespace tg {
namespace {

class EpilogueFolder {
  static constexpr std::string_view kGelu = "torch.nn.functional.gelu";

 public:
  // The trace is edited in place: only the matmul at hand changes, and what the folds read of
  // other ops (the add, broadcast, GELU and transpose ops after or before it) no fold changes.
  explicit EpilogueFolder(Trace t) : out_(std::move(t)), def_(t_.values.size(), -1), readers_(t_.values.size()) {
    for (size_t i = 0; i < t_.ops.size(); ++i) {
      for (ValueId v : t_.ops[i].outs) def_[v] = int(i);
      for_each_value(t_.ops[i], [&](ValueId v) { readers_[v].push_back(int(i)); });
      if (t_.ops[i].origin == kGelu) gelu_calls_[t_.ops[i].where].push_back(int(i));
    }
    for (ValueId v : t_.outputs) is_output_.insert(v);
  }

  Trace run() {
    removed_.assign(t_.ops.size(), false);
    for (size_t i = 0; i < t_.ops.size(); ++i)
      if (foldable_matmul(out_.ops[i])) {
        fold_bias(int(i));
        fold_gelu(int(i));
        fold_transposes(int(i));
        fold_bias_grad(int(i));
      }
    std::vector<Op> kept;
    for (size_t i = 0; i < out_.ops.size(); ++i)
      if (!removed_[i]) kept.push_back(std::move(out_.ops[i]));
    out_.ops = std::move(kept);
    return std::move(out_);
  }

 private:
  bool foldable_matmul(const Op& op) const {
    if (op.info->kind != OpKind::matmul || !op.has_arg("transpose_b") || op.arg("bias").is_value() || op.arg("epilogue").text != "none" || op.arg("transpose_a").boolean ||
        op.arg("transpose_b").boolean)
      return false;
    const Value& c = t_.value(op.outs[0]);
    return c.dtype != DType::f64 && t_.value(op.arg("b").value).shape.size() == 2;
  }

  // The one op reading v, when v is read by exactly one op and is not an output.
  int only_reader(ValueId v) const {
    const std::vector<int>& readers = readers_[size_t(v)];
    if (is_output_.count(v) || readers.size() != 1) return -1;
    return readers[0];
  }

  bool defined_before(ValueId v, int op) const {
    return def_[size_t(v)] < op;  // (-1 for an input)
  }

  // matmul -> add(c, broadcast_in_dim(bias [n], c's shape, [last dim])).
  void fold_bias(int m) {
    Op& matmul = out_.ops[size_t(m)];
    const ValueId c = matmul.outs[0];
    const int add = only_reader(c);
    if (add < 0 || t_.ops[size_t(add)].info->kind != OpKind::add) return;
    const Op& sum = t_.ops[size_t(add)];
    const Arg& other = sum.arg("a").is_value() && sum.arg("a").value == c ? sum.arg("b") : sum.arg("a");
    if (!other.is_value() || other.value == c || def_[size_t(other.value)] < 0) return;
    const int bcast = def_[size_t(other.value)];
    const Op& b = t_.ops[size_t(bcast)];
    if (b.info->kind != OpKind::broadcast_in_dim || !b.arg("a").is_value()) return;
    const ValueId bias = b.arg("a").value;
    const Value& cv = t_.value(c);
    const int64_t last = int64_t(cv.shape.size()) - 1;
    if (t_.value(bias).shape != Shape{cv.shape.back()} || t_.value(bias).dtype != cv.dtype || b.arg("broadcast_dimensions").int_list() != std::vector<int64_t>{last} ||
        t_.value(sum.outs[0]).dtype != cv.dtype || !defined_before(bias, m))
      return;
    matmul.args[2] = Arg::of_value(bias);
    matmul.outs[0] = sum.outs[0];
    removed_[size_t(add)] = true;
    if (only_reader(other.value) == add) removed_[size_t(bcast)] = true;
  }

  // The prims lowering torch.nn.functional.gelu(d, approximate='tanh'): the ops of that one call
  // (same origin and place) that read d. They must read nothing else from outside, be
  // elementwise, contain the tanh, and leave exactly one value to the rest of the trace.
  void fold_gelu(int m) {
    Op& matmul = out_.ops[size_t(m)];
    const ValueId d = matmul.outs[0];
    const std::vector<int>& readers = readers_[size_t(d)];
    if (readers.empty()) return;
    const Op& first = t_.ops[size_t(readers[0])];
    if (first.origin != kGelu) return;
    std::set<int> group;
    std::set<ValueId> inside = {d};
    for (int i : gelu_calls_.at(first.where)) {
      const Op& op = t_.ops[size_t(i)];
      if (i < readers[0] || removed_[size_t(i)]) continue;
      bool reads_inside = false;
      for_each_value(op, [&](ValueId v) { reads_inside = reads_inside || inside.count(v); });
      if (!reads_inside) continue;
      group.insert(i);
      for (ValueId v : op.outs) inside.insert(v);
    }
    // d kept (an output, e.g. saved for the backward, or read outside the GELU): cuBLASLt writes
    // it beside the GELU's result, in a leading dimension that must be a multiple of 8.
    bool keep_d = is_output_.count(d) > 0;
    for (int r : readers) keep_d = keep_d || !group.count(r);
    if (keep_d && t_.value(d).shape.back() % 8 != 0) return;
    bool has_tanh = false;
    ValueId result = kNoValue;
    for (int i : group) {
      const Op& op = t_.ops[size_t(i)];
      if (op.info->fusion != FusionClass::elementwise) return;
      has_tanh = has_tanh || op.info->kind == OpKind::tanh;
      bool closed = true;
      for_each_value(op, [&](ValueId v) { closed = closed && inside.count(v); });
      if (!closed) return;
      for (ValueId v : op.outs) {
        bool escapes = is_output_.count(v) > 0;
        for (int r : readers_[size_t(v)]) escapes = escapes || !group.count(r);
        if (!escapes) continue;
        if (result != kNoValue) return;
        result = v;
      }
    }
    if (!has_tanh || result == kNoValue || t_.value(result).dtype != t_.value(d).dtype || t_.value(result).shape != t_.value(d).shape) return;
    matmul.args[3].text = keep_d ? "gelu_tanh_aux" : "gelu_tanh";
    matmul.outs = keep_d ? std::vector<ValueId>{result, d} : std::vector<ValueId>{result};
    for (int i : group) removed_[size_t(i)] = true;
  }

  // matmul(transpose(x, [1, 0]), ...) -> matmul(x, ..., transpose_a=True), likewise for b: cuBLASLt
  // reads the operand transposed instead of a kernel writing the transpose out. The transpose goes
  // when the matmul was its only reader.
  void fold_transposes(int m) {
    Op& matmul = out_.ops[size_t(m)];
    for (size_t operand : {size_t(0), size_t(1)}) {
      const ValueId v = matmul.arg(operand).value;
      const int def = def_[size_t(v)];
      if (def < 0 || removed_[size_t(def)]) continue;
      const Op& transpose = t_.ops[size_t(def)];
      if (transpose.info->kind != OpKind::transpose || !transpose.arg("a").is_value() || t_.value(v).shape.size() != 2 ||
          transpose.arg("permutation").int_list() != std::vector<int64_t>{1, 0})
        continue;
      // (A 2-D b is shared by every batch of a, which folds into the GEMM's m, see gemm_shape: b
      // stored [n, k] is one operand whatever a's rank.)
      matmul.args[operand] = Arg::of_value(transpose.arg("a").value);
      matmul.args[4 + operand] = Arg::of_bool(true);
      if (only_reader(v) == m) removed_[size_t(def)] = true;
    }
  }

  // matmul(g, x, transpose_a=True) (a linear layer's weight gradient, g^T x) and sum(g, [0]) (its
  // bias gradient) -> one matmul with the bias_grad epilogue writing both: cuBLASLt sums g over k
  // while it reads it for the product. The sum's readers must all come after the matmul.
  void fold_bias_grad(int m) {
    Op& matmul = out_.ops[size_t(m)];
    if (!matmul.arg("transpose_a").boolean || matmul.arg("bias").is_value() || matmul.arg("epilogue").text != "none") return;
    const ValueId g = matmul.arg("a").value;
    for (int s : readers_[size_t(g)]) {
      const Op& sum = t_.ops[size_t(s)];
      if (removed_[size_t(s)] || sum.info->kind != OpKind::sum || sum.arg("dims").int_list() != std::vector<int64_t>{0}) continue;
      const ValueId grad = sum.outs[0];
      if (t_.value(grad).dtype != t_.value(g).dtype) continue;
      bool read_after = true;
      for (int r : readers_[size_t(grad)]) read_after = read_after && r > m;
      if (!read_after) continue;
      matmul.args[3].text = "bias_grad";
      matmul.outs.push_back(grad);
      removed_[size_t(s)] = true;
      return;
    }
  }

  Trace out_;
  const Trace& t_ = out_;  // for reading
  std::vector<int> def_;                   // by value: the op defining it, -1 for an input
  std::vector<std::vector<int>> readers_;  // by value: the ops reading it, in order
  std::set<ValueId> is_output_;
  std::map<std::string, std::vector<int>, std::less<>> gelu_calls_;  // the ops of each GELU call, by its place
  std::vector<bool> removed_;
};

}  // namespace

Trace fold_gemm_epilogues(Trace trace) { return EpilogueFolder(std::move(trace)).run(); }

}  // namespace tg
