#include "ops/verify.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ops/op_table.h"
#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg {
namespace {

// Which value owns each name in one naming domain: open addressing over value ids in one array,
// since a node per value (std::unordered_map) was a fifth of the verifier's time, and the
// verifier runs after every pass.
class NameOwners {
 public:
  explicit NameOwners(const Trace& t) : t_(t) {}
  void reserve(size_t names) { rehash(std::bit_ceil(2 * names + 2)); }
  // The value owning `id`'s name: `id` itself, made the owner if the name had none.
  ValueId claim(ValueId id) {
    if (2 * (count_ + 1) > slots_.size()) rehash(std::max<size_t>(16, 2 * slots_.size()));
    ValueId& slot = slot_of(t_.value(id).name);
    if (slot == kNoValue) {
      slot = id;
      ++count_;
    }
    return slot;
  }

 private:
  const Trace& t_;
  std::vector<ValueId> slots_;  // kNoValue where empty; a power of two long, at most half full
  size_t count_ = 0;

  ValueId& slot_of(std::string_view name) {
    const size_t mask = slots_.size() - 1;
    size_t i = std::hash<std::string_view>()(name) & mask;
    while (slots_[i] != kNoValue && t_.value(slots_[i]).name != name) i = (i + 1) & mask;
    return slots_[i];
  }
  void rehash(size_t size) {
    if (size <= slots_.size()) return;
    std::vector<ValueId> old = std::exchange(slots_, std::vector<ValueId>(size, kNoValue));
    for (ValueId id : old)
      if (id != kNoValue) slot_of(t_.value(id).name) = id;
  }
};

class Verifier {
 public:
  explicit Verifier(const Trace& t) : t_(t), defined_(t.values.size(), false), names_(t) {}

  void run() {
    names_.reserve(t_.values.size());  // (not for custom bodies: their verifiers are many and small)
    for (ValueId id : t_.inputs) define(id, [] { return std::string("/inputs"); });
    ops(t_.ops);
    for (size_t i = 0; i < t_.outputs.size(); ++i) use(t_.outputs[i], "/outputs/" + std::to_string(i));
  }

 private:
  const Trace& t_;
  std::vector<bool> defined_;
  std::vector<ValueId> defined_order_;  // every define, so a decomposition's can be undone
  NameOwners names_;  // a name belongs to one value in its naming domain

  // `where` gives the place (a function: the text is built only for an error).
  template <class Where>
  void define(ValueId id, const Where& where) {
    if (id < 0 || size_t(id) >= t_.values.size()) throw UserError(where(), "defines a value that does not exist");
    if (defined_[id]) throw UserError(where(), "value \"" + t_.value(id).name + "\" is defined twice");
    if (names_.claim(id) != id) throw UserError(where(), "the name \"" + t_.value(id).name + "\" is used by two values");
    defined_[id] = true;
    defined_order_.push_back(id);
  }
  template <class Where>
  void use(ValueId id, const Where& where) const {
    if (id < 0 || size_t(id) >= t_.values.size()) throw UserError(where(), "refers to a value that does not exist");
    if (!defined_[id]) throw UserError(where(), "value \"" + t_.value(id).name + "\" is used before it is defined");
  }
  void use(ValueId id, const std::string& where) const {
    use(id, [&] { return where; });
  }
  template <class Where>
  void uses(const Arg& a, const Where& where) const {
    if (a.is_value()) use(a.value, where);
    for (const Arg& item : a.items) uses(item, where);
  }

  void ops(const std::vector<Op>& list) {
    for (const Op& op : list) one(op);
  }

  void one(const Op& op) {
    for (size_t i = 0; i < op.args.size(); ++i) uses(op.args[i], [&] { return arg_where(op, int(i)); });
    for (const auto& [name, a] : op.kwargs) uses(a, [&] { return op.where + "/kwargs/" + name; });
    if (op.outs.empty()) throw UserError(op.where, "defines no value");
    if (!op.sub.empty()) {
      // A decomposition defines the op's outputs itself; its other values stay private to it.
      const size_t mark = defined_order_.size();
      ops(op.sub);
      for (ValueId out : op.outs)
        if (!defined_[out]) throw UserError(op.where + "/sub", "the decomposition does not define \"" + t_.value(out).name + "\"");
      for (size_t i = mark; i < defined_order_.size(); ++i) defined_[size_t(defined_order_[i])] = false;  // (names stay taken)
      defined_order_.resize(mark);
    }
    for (size_t i = 0; i < op.outs.size(); ++i) define(op.outs[i], [&] { return op.where + "/out/" + std::to_string(i); });
    if (op.custom) {
      body(op.custom->fwd, op.where + "/fwd");
      body(op.custom->bwd, op.where + "/bwd");
    }
    if (op.info && op.info->rule) check_types(op);
    if (op.info) check_literals(op);
    if (!op.info && op.sub.empty() && !op.custom) throw UserError(op.where + "/op", "unknown op \"" + op.symbol + "\" has no rule and no decomposition");
  }

  void body(const SubTrace& b, const std::string& where) {
    Verifier inner(t_);
    for (size_t i = 0; i < b.inputs.size(); ++i) inner.define(b.inputs[i], [&] { return where + "/inputs/" + std::to_string(i); });
    inner.ops(b.ops);
    for (size_t i = 0; i < b.outputs.size(); ++i)
      if (b.outputs[i] != kNoValue) inner.use(b.outputs[i], where + "/outputs/" + std::to_string(i));
    for (size_t i = 0; i < b.saved.size(); ++i) inner.use(b.saved[i], where + "/saved/" + std::to_string(i));
  }

  static std::string arg_where(const Op& op, int i) {
    if (i >= 0 && size_t(i) < op.arg_where.size() && !op.arg_where[i].empty()) return op.arg_where[i];
    // Read positional arguments, and ops built by passes, keep no pointer of their own.
    if (i >= 0 && size_t(i) < (op.info ? op.info->params.size() : op.args.size())) return op.where + "/args/" + std::to_string(i);
    return op.where;
  }

  // A number an op reads as an integer type must be one that type holds (after truncation, as
  // PyTorch converts a Python float): full(i32, 1e10) and full(i64, nan) are errors there too.
  void check_literals(const Op& op) const {
    auto check = [&](size_t i, DType as) {
      const Arg& a = op.args[i];
      if (!is_integer(as) || !(a.kind == Arg::Kind::real || a.kind == Arg::Kind::integer)) return;
      const IntRange range = integer_range(as);
      const bool fits = a.kind == Arg::Kind::integer ? range.min <= a.integer && a.integer <= range.max
                                                     : std::isfinite(a.real) && std::trunc(a.real) >= double(range.min) &&
                                                           std::trunc(a.real) <= double(range.max) && std::trunc(a.real) != 0x1p63;
      if (!fits)
        throw UserError(arg_where(op, int(i)), std::string(op.info->id) + ": " + print_literal(a, t_) + " does not fit " + std::string(dtype_name(as)));
    };
    if (op.info->fusion == FusionClass::elementwise) {
      const DType as = operand_dtype(t_, op);
      for (size_t i = op.info->kind == OpKind::where ? 1 : 0; i < op.args.size(); ++i) check(i, as);
    } else if (op.info->kind == OpKind::full && op.args.size() > 1) {
      check(1, t_.value(op.outs[0]).dtype);
    } else if (op.info->kind == OpKind::pad && op.args.size() > 1 && op.args[0].is_value()) {
      check(1, t_.value(op.args[0].value).dtype);
    }
  }

  void check_types(const Op& op) const {
    std::vector<OutType> expected;
    try {
      expected = op.info->rule(t_, op);
    } catch (const RuleError& e) {
      throw UserError(arg_where(op, e.arg), std::string(op.info->id) + ": " + e.message);
    }
    if (expected.size() != op.outs.size())
      throw UserError(op.where + "/out", std::string(op.info->id) + " defines " + std::to_string(expected.size()) + " value" +
                                             (expected.size() == 1 ? "" : "s") + ", not " + std::to_string(op.outs.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      const Value& v = t_.value(op.outs[i]);
      if (v.is_scalar || v.dtype != expected[i].dtype || v.shape != expected[i].shape) {
        Value want;
        want.dtype = expected[i].dtype;
        want.shape = expected[i].shape;
        throw UserError(op.where + "/out/" + std::to_string(i), std::string(op.info->id) + " gives " + print_type(want) + ", but \"" +
                                                                     v.name + "\" is declared " + print_type(v));
      }
    }
  }
};

}  // namespace

void verify(const Trace& trace) { Verifier(trace).run(); }

void verify_pass(const Trace& trace, std::string_view pass) {
  try {
    verify(trace);
  } catch (const UserError& e) {
    throw InternalError("pass " + std::string(pass) + " produced an invalid trace: " + e.where + ": " + e.what());
  }
}

}  // namespace tg
