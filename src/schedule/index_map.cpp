#include "schedule/index_map.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <numeric>

#include "ops/op_table.h"
#include "support/diagnostics.h"
#include "support/generated_text.h"

namespace tg {

IndexComp IndexComp::of_expr(IndexExpr e) {
  if (auto c = e.constant()) return of_const(*c);
  if (auto d = e.as_dim()) return of_var(*d);
  IndexComp c;
  c.kind = Kind::expr;
  c.expr = std::move(e);
  return c;
}

namespace {

// `e` as coef * B^p * T^q ... (coef > 0), when it is one: its number read at every symbol 1, each
// power at that symbol 2, and the product so made compared with `e` (canonical, so == decides).
std::optional<std::pair<int64_t, std::vector<SizeProduct::Factor>>> as_product(const SizeExpr& e, const Symbols& symbols, int64_t assumed_multiple) {
  try {
    const std::vector<std::string> names = e.symbols();
    SymbolValues ones;
    for (const std::string& n : names) ones[n] = 1;
    const int64_t coef = e.evaluate(ones);
    if (coef <= 0) return std::nullopt;
    SizeExpr rebuilt(coef);
    std::vector<SizeProduct::Factor> factors;
    for (const std::string& n : names) {
      SymbolValues at = ones;
      at[n] = 2;
      const int power = std::countr_zero(uint64_t(e.evaluate(at) / coef));
      if (power < 1 || power > 8) return std::nullopt;
      for (int k = 0; k < power; ++k) rebuilt = rebuilt * SizeExpr::symbol(n);
      const SymbolDecl& decl = symbols.at(n);
      factors.push_back({ident(Role::size, n), decl.min, decl.max, power, ident(Role::divider, n), std::lcm(decl.multiple_of, assumed_multiple)});
    }
    if (!(rebuilt == e)) return std::nullopt;
    return std::pair(coef, std::move(factors));
  } catch (const SizeExprError&) {
    return std::nullopt;
  }
}

constexpr std::pair<char, char> kSpelled[] = {{'_', 'u'}, {'-', 'm'}, {'+', 'p'}, {'*', 'x'}, {'/', 'd'}, {'(', 'l'}, {')', 'r'}, {',', 'c'}};

// "T - 1" as "T_m1", and back (spaces dropped: the parser needs none); "2*T - 1" as "_s2_xT_m1"
// (`_s`, nothing: an identifier starts with no digit).
std::string spelled_as_identifier(const std::string& text) {
  std::string out = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) ? "_s" : "";
  for (char c : text) {
    if (c == ' ') continue;
    const auto* code = std::find_if(std::begin(kSpelled), std::end(kSpelled), [c](const auto& p) { return p.first == c; });
    if (code == std::end(kSpelled)) out += c;
    else out += {'_', code->second};
  }
  return out;
}

std::string text_of_identifier(std::string_view spelled) {
  std::string out;
  for (size_t i = 0; i < spelled.size(); ++i) {
    if (spelled[i] != '_' || i + 1 == spelled.size()) {
      out += spelled[i];
      continue;
    }
    const char code = spelled[++i];
    if (code == 's') continue;
    const auto* p = std::find_if(std::begin(kSpelled), std::end(kSpelled), [code](const auto& q) { return q.second == code; });
    if (p == std::end(kSpelled)) throw InternalError("not a spelled size: " + std::string(spelled));
    out += p->first;
  }
  return out;
}

}  // namespace

std::optional<SizeProduct::Factor> derived_size_factor(const SizeExpr& e, const Symbols& symbols) {
  const SizeRange range = range_of(e, symbols);
  const std::string spelled = spelled_as_identifier(e.text());
  if (!provably_positive(e, symbols) || symbols.find(spelled)) return std::nullopt;
  return SizeProduct::Factor{ident(Role::size, spelled), std::max<int64_t>(range.lo, 1), range.hi, 1, ident(Role::divider, spelled), 1};
}

SizeExpr parameter_size(std::string_view parameter, const Symbols& symbols) {
  const std::string_view name = parameter_symbol(parameter);
  if (symbols.find(std::string(name))) return SizeExpr::symbol(std::string(name));
  return parse_size_expr(text_of_identifier(name), symbols);
}

IndexScale IndexSizes::scale(const Dim& d) const {
  if (!t_.taken_at_run_time(d)) return {int64_t(d), nullptr};
  return scale_of(*d.expr()).value_or(IndexScale{int64_t(d), nullptr});
}

// A product of symbols; else an atom times the rest, each a scale (B*T - B as sz_B * sz_T_m1);
// else a size parameter of its own.
std::optional<IndexScale> IndexSizes::scale_of(const SizeExpr& e) const {
  if (auto product = as_product(e, t_.symbols, assumed_multiple_)) return IndexScale{product->first, SizeProduct::of(std::move(product->second))};
  for (const auto& [atom, rest] : e.atom_factors())
    if (std::optional<IndexScale> a = scale_of(atom), r = a ? scale_of(rest) : std::nullopt; a && r)
      if (std::optional<IndexScale> both = checked_product(*a, *r)) return both;
  if (auto own = derived_size_factor(e, t_.symbols)) return IndexScale{1, SizeProduct::of({*own})};
  return std::nullopt;
}

// A size that is no scale but a scale plus a number (`T - 1` where T may be 1, so no size
// parameter of its own) is that sum: a slice's start counted from a symbolic dim's end.
IndexExpr IndexSizes::size(const Dim& d) const {
  const IndexScale s = scale(d);
  if (s.product) return IndexExpr::of_scale(s);
  if (!t_.taken_at_run_time(d) || d.expr()->constant_term() == 0) return IndexExpr(int64_t(d));
  const int64_t number = d.expr()->constant_term();
  const std::optional<IndexScale> rest = scale_of(*d.expr() - SizeExpr(number));
  return rest && rest->product ? IndexExpr::of_scale(*rest) + IndexExpr(number) : IndexExpr(int64_t(d));
}

int64_t IndexSizes::largest(const Dim& d) const {
  const IndexScale s = scale(d);
  return s.product ? std::min(s.range().hi, kLargestRunTimeCount) : s.coef;
}

IndexExpr IndexSizes::dim(int k, const Dim& extent) const {
  const IndexScale s = scale(extent);
  return s.product ? IndexExpr::dim(k, s, largest(extent)) : IndexExpr::dim(k, s.coef);
}

IndexExpr IndexSizes::component(const IndexComp& c, const Dim& extent) const {
  switch (c.kind) {
    case IndexComp::Kind::var: return dim(c.var, extent);
    case IndexComp::Kind::constant: return IndexExpr(c.value);
    case IndexComp::Kind::expr: return c.expr;
  }
  return c.expr;
}

bool IndexSizes::symbolic(const Shape& s) const {
  for (const Dim& d : s)
    if (scale(d).product) return true;
  return false;
}

bool IndexSizes::empty(const Shape& s) const {
  return std::any_of(s.begin(), s.end(), [&](const Dim& d) { return scale(d) == IndexScale{0, nullptr}; });
}

std::string IndexComp::text() const {
  switch (kind) {
    case Kind::var: return "d" + std::to_string(var);
    case Kind::constant: return std::to_string(value);
    case Kind::expr: return expr.component_text();
  }
  return "?";
}

bool IndexComp::operator==(const IndexComp& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::var: return var == o.var;
    case Kind::constant: return value == o.value;
    case Kind::expr: return expr == o.expr;
  }
  return false;
}

Index identity_index(size_t rank) {
  Index index;
  for (size_t k = 0; k < rank; ++k) index.push_back(IndexComp::of_var(int(k)));
  return index;
}

size_t hash_index(const Index& index) {
  size_t h = 0;
  auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const IndexComp& c : index) {
    mix(size_t(c.kind));
    switch (c.kind) {
      case IndexComp::Kind::var: mix(std::hash<int>()(c.var)); break;
      case IndexComp::Kind::constant: mix(std::hash<int64_t>()(c.value)); break;
      case IndexComp::Kind::expr: mix(c.expr.hash()); break;
    }
  }
  return h;
}

namespace {

// Dims of length 1 hold index 0, whatever the reader asked for.
Index squash_unit_dims(Index index, const Shape& shape) {
  for (size_t k = 0; k < shape.size(); ++k)
    if (shape[k] == 1) index[k] = IndexComp::of_const(0);
  return index;
}

// Reshape that only inserts or removes length-1 dims keeps the other components as they are.
bool only_unit_dims_differ(const Shape& a, const Shape& b) {
  Shape x, y;
  for (int64_t d : a) if (d != 1) x.push_back(d);
  for (int64_t d : b) if (d != 1) y.push_back(d);
  return x == y;
}

Index reshape_read(const IndexSizes& sizes, const Shape& in_shape, const Shape& out_shape, const Index& out) {
  Index in;
  if (in_shape == out_shape) return out;
  if (only_unit_dims_differ(in_shape, out_shape)) {
    size_t k = 0;
    for (int64_t d : in_shape) {
      if (d == 1) { in.push_back(IndexComp::of_const(0)); continue; }
      while (out_shape[k] == 1) ++k;
      in.push_back(out[k++]);
    }
    return in;
  }
  // General case: through the row-major linear index. (The same reads come back in fusion's walks
  // and the emitter's: each is simplified once per thread, for the sizes' context it was read in.)
  struct KeyDim {
    int64_t size;
    const SizeExpr* expr;  // (interned: one address per expression)
    bool operator==(const KeyDim&) const = default;
  };
  struct Key {
    std::vector<KeyDim> in, out;
    Index index;
    size_t context;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      size_t h = hash_index(k.index) + k.context;
      for (const KeyDim& d : k.in) h = h * 31 + size_t(d.size) + std::hash<const SizeExpr*>()(d.expr);
      for (const KeyDim& d : k.out) h = h * 37 + size_t(d.size) + std::hash<const SizeExpr*>()(d.expr);
      return h;
    }
  };
  thread_local std::unordered_map<Key, Index, KeyHash> done;
  thread_local std::vector<IndexSizes::Context> contexts;
  if (done.size() > 100000 || contexts.size() > 16) {  // (bounds, for a process generating many traces)
    done.clear();
    contexts.clear();
  }
  auto context = std::find_if(contexts.begin(), contexts.end(), [&](const IndexSizes::Context& c) { return sizes.answers_in(c); });
  if (context == contexts.end()) context = contexts.insert(contexts.end(), sizes.context());
  const auto key_dims = [](const Shape& shape) {
    std::vector<KeyDim> dims;
    dims.reserve(shape.size());
    for (const Dim& d : shape) dims.push_back({int64_t(d), d.expr()});
    return dims;
  };
  Key key{key_dims(in_shape), key_dims(out_shape), out, size_t(context - contexts.begin())};
  if (auto it = done.find(key); it != done.end()) return it->second;
  in.resize(in_shape.size(), IndexComp::of_const(0));
  if (sizes.empty(in_shape)) return in;  // (nothing is read from no element)
  const IndexExpr linear = linear_index(out, out_shape, sizes);
  IndexScale stride{1, nullptr};
  for (size_t i = in_shape.size(); i-- > 0;) {
    IndexExpr c = linear / stride;
    if (i > 0) c = c % sizes.scale(in_shape[i]);
    in[i] = in_shape[i] == 1 ? IndexComp::of_const(0) : IndexComp::of_expr(std::move(c));
    stride = stride * sizes.scale(in_shape[i]);
  }
  done.emplace(std::move(key), in);
  return in;
}

}  // namespace

IndexExpr linear_index(const Index& index, const Shape& shape, const IndexSizes& sizes) {
  std::vector<IndexExpr> terms;
  IndexScale stride{1, nullptr};
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] != 1) terms.push_back(sizes.component(index[k], shape[k]) * stride);
    stride = stride * sizes.scale(shape[k]);
  }
  return IndexExpr::sum(terms);
}

namespace {


// Gives the code parts of a read names of their own: "<operand>_i<dim>" and "<operand>_in_<output>".
// Arithmetic stays an expression, so later reads can simplify it, unless it has grown too large.
std::vector<OperandRead> named(const Trace& t, const Op& op, std::vector<OperandRead> reads, IndexNamer* namer) {
  if (!namer) return reads;
  for (OperandRead& r : reads) {
    for (size_t k = 0; k < r.index.size(); ++k) {
      if (r.index[k].kind != IndexComp::Kind::expr) continue;
      const IndexExpr& e = r.index[k].expr;
      const std::string* name = e.as_named();
      if (name ? is_identifier(*name) : e.size() <= kMaxIndexExprSize) continue;
      r.index[k] = IndexComp::of_expr(e.as_variable(namer->name(e, t.value(r.value).name + "_i" + std::to_string(k))));
    }
    if (!r.guard.always()) r.guard = IndexCond::named(namer->name(r.guard, t.value(r.value).name + "_in_" + t.value(op.outs[0]).name));
  }
  return reads;
}

std::vector<OperandRead> reads_of(const Trace& t, const Op& op, const Index& out);

}  // namespace

std::vector<OperandRead> shape_op_reads(const Trace& t, const Op& op, const Index& out, IndexNamer* namer) {
  return named(t, op, reads_of(t, op, out), namer);
}

namespace {

// The single read of most shape ops (an initializer list would copy the index).
std::vector<OperandRead> one_read(ValueId v, Index index, IndexCond guard = {}) {
  std::vector<OperandRead> reads;
  reads.push_back({v, std::move(index), std::move(guard)});
  return reads;
}

// A pad's read: out = lo + p * (interior + 1) for input position p; elsewhere the padding value.
std::vector<OperandRead> pad_reads(const Trace& t, const Op& op, const Index& out) {
  const IndexSizes sizes(t);
  const Shape& out_shape = t.value(op.outs[0]).shape;
  const Value& a = t.value(op.arg("a").value);
  const Arg& config = op.arg("padding_config");
  Index in;
  IndexCond guard;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const Shape lhi = config.items[i].dim_list();  // (lo taken at run time: a gradient of a slice starting at T - 1)
    const int64_t step = lhi[2] + 1;
    if (lhi[0] == 0 && step == 1 && lhi[1] == 0) { in.push_back(out[i]); continue; }
    const IndexExpr p = sizes.component(out[i], out_shape[i]) + sizes.size(lhi[0]) * -1;
    // An operand's size taken at run time bounds p as it is (a slice's gradient: 0 <= p < sz_T_m1;
    // a strided slice's: p <= (sz_T - 1) * step, written p < 1 - step + sz_T * step).
    const bool at_run_time = bool(sizes.scale(a.shape[i]).product);
    const IndexCond inside{{{p, 0, at_run_time ? 1 - step : (a.shape[i] - 1) * step + 1, step, at_run_time ? sizes.size(a.shape[i]) * step : IndexExpr()}}, ""};
    guard.clauses.push_back(inside.clauses[0]);
    in.push_back(IndexComp::of_expr(IndexExpr::select(inside, p, step, 0, sizes.largest(a.shape[i]) - 1)));
  }
  return one_read(op.arg("a").value, squash_unit_dims(std::move(in), a.shape), std::move(guard));
}

// A cat's reads: one per piece, each guarded by the range of the cat's dim it covers.
std::vector<OperandRead> cat_reads(const Trace& t, const Op& op, const Index& out) {
  const IndexSizes sizes(t);
  const Shape& out_shape = t.value(op.outs[0]).shape;
  int64_t rank = int64_t(out_shape.size());
  int64_t dim = op.arg("dim").integer < 0 ? op.arg("dim").integer + rank : op.arg("dim").integer;
  std::vector<OperandRead> reads;
  IndexExpr offset;  // the pieces' sizes before this one's: sizes taken at run time among them
  for (const Arg& piece : op.arg("tensors").items) {
    const Value& v = t.value(piece.value);
    const IndexExpr len = sizes.size(v.shape[dim]), at = sizes.component(out[dim], out_shape[dim]);
    // A number in [offset, offset + len), or, where sizes are taken at run time, at - offset in
    // [0, len) (0 <= d1 - sz_T < sz_T).
    const std::optional<int64_t> start = offset.constant(), count = len.constant();
    const IndexCond guard = start && count ? IndexCond{{{at, *start, *start + *count, 1, {}}}, ""} : IndexCond{{{at + offset * -1, 0, 0, 1, len}}, ""};
    // Clamped to 0 outside the piece, so evaluating every piece never reads out of bounds.
    Index in = out;
    in[dim] = IndexComp::of_expr(IndexExpr::select(guard, at + offset * -1, 1, 0, sizes.largest(v.shape[dim]) - 1));
    reads.push_back({piece.value, squash_unit_dims(in, v.shape), guard});
    offset = offset + len;
  }
  reads.back().guard = {};  // the last piece is what remains: no test needed
  return reads;
}

std::vector<OperandRead> reads_of(const Trace& t, const Op& op, const Index& out) {
  const IndexSizes sizes(t);
  const Shape& out_shape = t.value(op.outs[0]).shape;
  switch (op.info->kind) {
    case OpKind::broadcast_in_dim: {
      const Value& a = t.value(op.arg("a").value);
      auto bdims = op.arg("broadcast_dimensions").int_list();
      Index in;
      in.reserve(a.shape.size());
      for (size_t i = 0; i < a.shape.size(); ++i) in.push_back(a.shape[i] == 1 ? IndexComp::of_const(0) : out[bdims[i]]);
      return one_read(op.arg("a").value, std::move(in));
    }
    case OpKind::reshape: {
      const Value& a = t.value(op.arg("a").value);
      return one_read(op.arg("a").value, squash_unit_dims(reshape_read(sizes, a.shape, out_shape, out), a.shape));
    }
    case OpKind::transpose: {
      auto perm = op.arg("permutation").int_list();
      Index in(perm.size());
      for (size_t j = 0; j < perm.size(); ++j) in[perm[j] < 0 ? perm[j] + int64_t(perm.size()) : perm[j]] = out[j];
      return one_read(op.arg("a").value, std::move(in));
    }
    case OpKind::flip: {  // element n - 1 - k along each flipped dim of length n
      Index in = out;
      for (int64_t d : op.arg("dims").int_list()) {
        const size_t dim = size_t(d < 0 ? d + int64_t(out.size()) : d);
        in[dim] = IndexComp::of_expr(sizes.component(out[dim], out_shape[dim]) * -1 + IndexExpr::of_scale(sizes.scale(out_shape[dim])) + -1);
      }
      return one_read(op.arg("a").value, squash_unit_dims(std::move(in), out_shape));
    }
    case OpKind::squeeze: {
      const Value& a = t.value(op.arg("a").value);
      auto dims = op.arg("dims").int_list();
      Index in;
      size_t k = 0;
      for (size_t i = 0; i < a.shape.size(); ++i) {
        bool squeezed = false;
        for (int64_t d : dims) squeezed |= (d < 0 ? d + int64_t(a.shape.size()) : d) == int64_t(i);
        in.push_back(squeezed ? IndexComp::of_const(0) : out[k++]);
      }
      return one_read(op.arg("a").value, std::move(in));
    }
    case OpKind::slice: {
      const Value& a = t.value(op.arg("a").value);
      const Shape start = op.arg("start_indices").dim_list();  // (a start taken at run time: a cat's gradient's sz_T)
      std::vector<int64_t> strides(a.shape.size(), 1);
      if (op.arg("strides").kind == Arg::Kind::list) strides = op.arg("strides").int_list();
      Index in;
      for (size_t i = 0; i < a.shape.size(); ++i) in.push_back(IndexComp::of_expr(sizes.component(out[i], out_shape[i]) * strides[i] + sizes.size(start[i])));
      return one_read(op.arg("a").value, squash_unit_dims(std::move(in), a.shape));
    }
    case OpKind::pad: return pad_reads(t, op, out);
    case OpKind::cat: return cat_reads(t, op, out);
    default: break;
  }
  throw InternalError("shape_op_reads: not a shape op: " + op.symbol);
}

}  // namespace

}  // namespace tg
