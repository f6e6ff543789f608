// Kernel lowering, what depends on the sizes a kernel takes (lower_kernel.h): the C type of its
// index arithmetic, the shapes it treats as one (the same at every size), and its size parameters.
#include <algorithm>

#include "codegen/lower_kernel.h"
#include "support/diagnostics.h"

namespace tg::lower {

namespace {

constexpr int64_t kIntIndexLimit = int64_t(1) << 30;

// Whether every size parameter `e` reads (sz_<symbol>, each symbol's own size) fits an int, and so
// does `e` (an iota's start, a size an op takes as an operand): a shape's element count bounds
// neither (`T - P` may be small where T and P are not).
bool sizes_fit_int(const SizeExpr& e, const Symbols& symbols) {
  const SizeRange r = range_of(e, symbols);
  if (r.lo <= -kIntIndexLimit || r.hi >= kIntIndexLimit) return false;
  for (const std::string& name : e.symbols())
    if (symbols.at(name).max >= kIntIndexLimit) return false;
  return true;
}

bool arg_sizes_fit_int(const Arg& a, const Symbols& symbols) {
  if (a.size && !sizes_fit_int(*a.size, symbols)) return false;
  return std::all_of(a.items.begin(), a.items.end(), [&](const Arg& item) { return arg_sizes_fit_int(item, symbols); });
}

}  // namespace

// Every index the kernel computes is an offset into one of its tensors (or a piece of one: a
// partial sum of non-negative terms), its domain's flat index, or a grid-stride loop's variable,
// below twice its count: below 2^31 where they all have fewer than 2^30 elements, and where every
// size parameter it may read, and every size its ops take as an integer, is below 2^30 too.
bool KernelLowering::indexes_fit_int() const {
  auto dims_fit = [&](const Shape& s) {
    return std::all_of(s.begin(), s.end(), [&](const Dim& d) { return !d.symbolic() || sizes_fit_int(*d.expr(), t_.symbols); });
  };
  auto fits = [&](const Shape& s) { return largest_count(t_, numel_dim(s)) < kIntIndexLimit && dims_fit(s); };
  if (!fits(layout_.domain)) return false;
  for (const Arg& a : k_.args)
    if (!t_.value(a.value).is_scalar && !fits(t_.value(a.value).shape)) return false;
  for (ValueId v : k_.outs)
    if (!fits(t_.value(v).shape)) return false;
  for (const Op& op : k_.sub) {
    for (ValueId v : op.outs)
      if (!dims_fit(t_.value(v).shape)) return false;
    for (const Arg& a : op.args)
      if (!arg_sizes_fit_int(a, t_.symbols)) return false;
  }
  return true;
}

namespace {

// "[B, T//16 + 1]": a shape as its expressions (? for a dim without one).
std::string expressions_text(const Shape& s) {
  std::string out;
  for (const Dim& d : s) out += (out.empty() ? "" : ", ") + (d.expr() ? d.expr()->text() : std::string("?"));
  return "[" + out + "]";
}

// Two dims the same at every size, as far as their expressions say. A constant and a symbol's
// expression equal here are not at the second probe (separate_probes moves it until every
// expression differs there), and a dim without an expression is a number the probes compare:
// only two different expressions can be equal at both.
bool same_at_every_size(const Dim& a, const Dim& b) { return !a.symbolic() || !b.symbolic() || *a.expr() == *b.expr(); }

}  // namespace

// A kernel's code treats shapes with the same sizes as one shape (its index maps, its row): taken
// at run time, they must be one at every size, not only at the probes' (T//16 + 1 and 1 are both 1
// at T = 3 and T = 10). Refused where they are not.
void KernelLowering::check_shapes_agree_at_every_size() const {
  std::map<std::vector<int64_t>, std::pair<Shape, std::string>> seen;
  auto consider = [&](const Shape& s, const std::string& what) {
    std::vector<int64_t> sizes(s.begin(), s.end());
    auto [it, fresh] = seen.try_emplace(sizes, s, what);
    if (fresh) return;
    for (size_t d = 0; d < s.size(); ++d)
      if (!same_at_every_size(s[d], it->second.first[d]))
        throw UserError("", "kernel " + k_.label + " takes " + it->second.second + ", " + expressions_text(it->second.first) + ", and " + what + ", " +
                                expressions_text(s) + ", for one shape: the same sizes at both probes, not at every size; name the sizes with --specialize");
  };
  consider(layout_.domain, "its domain");
  if (layout_.is_row) consider(layout_.reduced_shape(), "its row");
  auto value = [&](ValueId v) {
    if (!t_.value(v).is_scalar) consider(t_.value(v).shape, "\"" + t_.value(v).name + "\"");
  };
  for (const Arg& a : k_.args) value(a.value);
  for (const Op& op : k_.sub)
    for (ValueId v : op.outs) value(v);
}

// The symbols' sizes its index arithmetic reads (sz_<symbol>) and divides by (dv_<symbol>), as
// parameters its launch passes.
void KernelLowering::take_size_parameters(kir::Kernel& k) const {
  for (const std::string& name : kir::names_in(k.body)) {
    if (!is_size_parameter(name)) continue;
    k.params.push_back({size_parameter_type(name, size_type_), name});
    k.launch.size_parameters.push_back(name);
  }
}

}  // namespace tg::lower
