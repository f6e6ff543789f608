#include "driver/run_time_sizes.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <future>
#include <iterator>
#include <set>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include "lower/decompose.h"
#include "ops/op_table.h"
#include "lower/rng.h"
#include "schedule/index_map.h"
#include "support/diagnostics.h"

namespace tg {

namespace {

// The code a compiler sees, line by line: the text's lines with comments (// to the end of the
// line outside literals; # in a kernel IR listing) and trailing blanks removed, empty lines skipped.
class CodeLines {
 public:
  CodeLines(std::string_view text, bool kernel_ir) : rest_(text), kernel_ir_(kernel_ir) {}
  // The next line, or nullopt at the end.
  std::optional<std::string_view> next() {
    while (!rest_.empty()) {
      const size_t eol = rest_.find('\n');
      std::string_view line = rest_.substr(0, eol);
      rest_.remove_prefix(eol == std::string_view::npos ? rest_.size() : eol + 1);
      line = without_comment(line);
      while (!line.empty() && line.back() == ' ') line.remove_suffix(1);
      if (!line.empty()) return line;
    }
    return std::nullopt;
  }

 private:
  std::string_view without_comment(std::string_view line) const {
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote) {
        if (c == '\\') ++i;
        else if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (kernel_ir_ ? c == '#' : c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
        return line.substr(0, i);
      }
    }
    return line;
  }
  std::string_view rest_;
  bool kernel_ir_;
};

std::vector<std::string> code_lines(const std::string& text, bool kernel_ir) {
  std::vector<std::string> lines;
  CodeLines reader(text, kernel_ir);
  while (std::optional<std::string_view> line = reader.next()) lines.emplace_back(*line);
  return lines;
}

// Whether the two texts hold the same code, comments aside.
bool same_code(const std::string& a, const std::string& b, bool kernel_ir) {
  if (a == b) return true;
  CodeLines in_a(a, kernel_ir), in_b(b, kernel_ir);
  for (;;) {
    const std::optional<std::string_view> x = in_a.next(), y = in_b.next();
    if (x != y) return false;
    if (!x) return true;
  }
}

// " (in <name>)": the kernel or function whose definition the line is in, when one is.
std::string enclosing_function(const std::vector<std::string>& lines, std::vector<std::string>::const_iterator at) {
  for (auto it = at; it != lines.begin();) {
    const std::string& line = *--it;
    if (line.starts_with("kernel ")) return " (in " + line.substr(7) + ")";  // a kernel IR listing's
    if (line.starts_with("extern \"C\"") || line.starts_with("__device__") || line.starts_with("static ") || line.starts_with("int main")) {
      const size_t open = line.rfind('(');
      if (open == std::string::npos) return "";
      const size_t start = line.find_last_of(" *", open - 1);
      return " (in " + line.substr(start == std::string::npos ? 0 : start + 1, open - (start == std::string::npos ? 0 : start + 1)) + ")";
    }
  }
  return "";
}

bool is_generated_code(const std::string& name) {
  const bool code = name.ends_with(".cu") || name.ends_with(".h") || name.ends_with(".cpp") || name.ends_with(".cuh") || name.ends_with(".kir");
  return code && !name.starts_with("tg_");
}

}  // namespace

// The second probe's size: the first moved by a step of its own (a prime from 5 up, another for
// each symbol, so that neither T - B nor T//2 nor T//3 is the same at both probes), by a smaller
// one where the range ends first, else by as little as the range allows.
std::optional<int64_t> second_size(const SymbolDecl& d, int64_t first, size_t symbol_index) {
  static constexpr int64_t kSteps[] = {5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43};
  constexpr size_t kCount = std::size(kSteps);
  for (size_t k = 0; k < kCount; ++k) {
    const int64_t step = kSteps[(symbol_index + kCount - k) % kCount];  // its own, then smaller ones
    if (d.multiple_of <= (d.max - first) / step && d.allows(first + step * d.multiple_of)) return first + step * d.multiple_of;
  }
  return d.smallest_from(first + 1);
}

namespace {

// The probes: each symbol's first size, in name order, the smallest from 2 up that no symbol
// before it took and that leaves it a second (by a step of its own); where a symbol finds none,
// those before it try their next sizes, a search of at most kProbeSearchSteps sizes. Or the
// deepest symbol that found none.
std::variant<SizeProbes, std::string> search_probes(const Symbols& symbols) {
  constexpr int kProbeSearchSteps = 100000;
  std::vector<const SymbolDecl*> order;
  for (const auto& [name, decl] : symbols.all()) order.push_back(&decl);
  SizeProbes probes;
  std::set<int64_t> taken_first;
  int steps = 0;
  size_t deepest_stuck = 0;
  std::string stuck;
  std::function<bool(size_t)> place = [&](size_t k) {
    if (k == order.size()) return true;
    const SymbolDecl& d = *order[k];
    for (std::optional<int64_t> first = d.smallest_from(2); first && steps < kProbeSearchSteps; first = d.smallest_from(*first + 1)) {
      ++steps;
      if (taken_first.count(*first)) continue;
      const std::optional<int64_t> second = second_size(d, *first, k);
      if (!second) continue;
      taken_first.insert(*first);
      probes.first[d.name] = *first;
      probes.second[d.name] = *second;
      if (place(k + 1)) return true;
      taken_first.erase(*first);
    }
    if (k >= deepest_stuck) deepest_stuck = k, stuck = d.name;
    return false;
  };
  if (place(0)) return probes;
  return stuck;
}

}  // namespace

std::variant<SizeProbes, std::string> choose_probes(const Symbols& symbols) {
  std::variant<SizeProbes, std::string> chosen = search_probes(symbols);
  if (const std::string* name = std::get_if<std::string>(&chosen))
    return *name + " has too few sizes from 2 up (" + symbols.at(*name).range_text() +
           ") for the two the code is checked at, the first apart from the other symbols' first sizes: name its size with --specialize";
  return chosen;
}

namespace {

// What a composite's lowering to prims depends on, spelled as a key: its symbol, and each
// argument and result as values (dtype, sizes with their expressions, ...) and literals, never
// names. Two ops with the same key lower to prims of the same shapes.
class LoweringKey {
 public:
  explicit LoweringKey(const Trace& t) : t_(t) {}
  std::string of(const Op& op) {
    key_ = op.symbol;
    for (const Arg& a : op.args) arg(a);
    key_ += '>';
    for (ValueId v : op.outs) value(v);
    return std::move(key_);
  }

 private:
  void arg(const Arg& a) {
    key_ += '(' + std::to_string(int(a.kind));
    switch (a.kind) {
      case Arg::Kind::value: value(a.value); break;
      case Arg::Kind::boolean: key_ += a.boolean ? "t" : "f"; break;
      case Arg::Kind::integer: number(a.integer, a.size); break;
      case Arg::Kind::real: key_ += ' ' + std::to_string(std::bit_cast<uint64_t>(a.real)); break;
      case Arg::Kind::dtype: key_ += ' ' + std::to_string(int(a.dtype)); break;
      default: key_ += ' ' + std::to_string(a.integer) + ' ' + std::to_string(a.text.size()) + ':' + a.text;
    }
    for (const Arg& item : a.items) arg(item);
    key_ += ')';
  }
  void value(ValueId id) {
    if (id == kNoValue) {
      key_ += "[-]";
      return;
    }
    const Value& v = t_.value(id);
    key_ += '[' + std::to_string(int(v.dtype)) + (v.is_scalar ? "s" : "") + (v.requires_grad ? "g" : "") + (v.bit_packed ? "p" : "");
    for (const Dim& d : v.shape) number(d, d.expr());
    key_ += ' ' + std::to_string(v.device.size()) + ':' + v.device + ']';
  }
  void number(int64_t n, const SizeExpr* expr) {
    key_ += ' ' + std::to_string(n);
    if (expr) key_ += '@' + std::to_string(reinterpret_cast<uintptr_t>(expr));  // (interned: one pointer per expression)
  }
  const Trace& t_;
  std::string key_;
};

// The ops of `t` whose decomposition may make values (composites, ops with a decomposition of
// their own, custom ops), with one composite of each LoweringKey: a trace of repeated blocks
// lowers each kind of composite once (a tenth of the time at 10,000 ops).
Trace lowered_once_each(const Trace& t) {
  Trace out = t.without_ops();
  LoweringKey key(t);
  std::set<std::string> seen;
  for (const Op& op : t.ops) {
    const bool composite = op.info && op.info->has_lowering();
    if (composite ? seen.insert(key.of(op)).second : !op.info) out.ops.push_back(op);
  }
  return out;
}

}  // namespace

std::vector<const SizeExpr*> probed_sizes(const Trace& t) {
  std::set<const SizeExpr*> seen;  // (interned: one pointer per expression)
  std::vector<const SizeExpr*> out;
  auto add = [&](const SizeExpr* e) {
    if (e && !e->is_constant() && seen.insert(e).second) out.push_back(e);
  };
  // (An operand's size too: x * T//16, an iota from T//16, whose number the code would take
  // where the probes agree on it.)
  std::function<void(const Arg&)> add_arg = [&](const Arg& a) {
    add(a.size);
    for (const Arg& item : a.items) add_arg(item);
  };
  std::function<void(const Op&)> add_op = [&](const Op& op) {
    for (const Arg& a : op.args) add_arg(a);
    for (const auto& [name, a] : op.kwargs) add_arg(a);
    for (const Op& inner : op.sub) add_op(inner);
  };
  auto gather = [&](const Trace& from) {
    for (const Value& v : from.values)
      for (const Dim& d : v.shape) add(d.expr());
    for (const Op& op : from.ops) add_op(op);
  };
  gather(t);
  try {
    // (as the pipeline's front end: a dropout's seed bound first)
    gather(decompose(lowered_once_each(has_unbound_draws(t) ? bind_rng(t) : t)));
  } catch (const UserError&) {  // (the pipeline reports it, with its place)
  }
  return out;
}

namespace {

// The first of `sizes` the same at both probes, if any.
const SizeExpr* same_at_both(const std::vector<const SizeExpr*>& sizes, const SizeProbes& probes) {
  for (const SizeExpr* e : sizes)
    if (e->evaluate(probes.first) == e->evaluate(probes.second)) return e;
  return nullptr;
}

// Each of `sizes` that enters index arithmetic as a number, not as size parameters (index_map.h),
// and why: "T - 1 (it may be 0: a size of its own must be at least 1 ...; raise their min)".
std::string sizes_without_parameters(const Trace& t, const std::vector<const SizeExpr*>& sizes, const SymbolValues& at) {
  const IndexSizes index_sizes(t);
  std::string out;
  for (const SizeExpr* e : sizes) {
    if (index_sizes.scale(Dim(e->evaluate(at), e)).product) continue;
    const SizeRange range = range_of(*e, t.symbols);
    out += (out.empty() ? "" : "; ") + e->text() + (!provably_positive(*e, t.symbols) ? " (it may be " + std::to_string(range.lo) + ": a size of its own must be at least 1 at every size the symbols allow; raise their min)"
                                                                  : " (a symbol has the name its size parameter would have)");
  }
  return out;
}

// Each symbol's size in `from` moved by `times` its step between the probes (second_size's),
// where its range allows; else its size in `otherwise`.
SymbolValues moved_by_steps(const SymbolValues& from, const SizeProbes& probes, int64_t times, const SymbolValues& otherwise, const Symbols& symbols) {
  SymbolValues moved = otherwise;
  for (auto& [name, size] : moved) {
    const SymbolDecl& d = symbols.at(name);
    const int64_t at = from.at(name), step = (probes.second.at(name) - probes.first.at(name)) * times;
    if (step > 0 && at <= d.max - step && d.allows(at + step)) size = at + step;
  }
  return moved;
}

// At `at`, no size of `sizes` is below 2 unless it is at every size, and no two of them, nor two
// symbols, are the same: a kernel takes shapes of the same sizes for one (lower_sizes.cpp).
bool clear_of_one(const std::vector<const SizeExpr*>& sizes, const SymbolValues& at, const Symbols& symbols) {
  std::set<int64_t> taken;
  for (const auto& [name, size] : at)
    if (!taken.insert(size).second) return false;
  std::set<int64_t> values;  // (the sizes are distinct expressions: interned, once each)
  for (const SizeExpr* e : sizes) {
    const int64_t v = e->evaluate(at);
    if ((v < 2 && range_of(*e, symbols).hi >= 2) || !values.insert(v).second) return false;
  }
  return true;
}

// A second probe at which every one of `sizes` differs from the first: probes.second, else it
// moved by its steps (2, 3, ... times them), where the ranges allow.
std::optional<SymbolValues> separating_second(const SizeProbes& probes, const std::vector<const SizeExpr*>& sizes, const Symbols& symbols) {
  if (!same_at_both(sizes, probes)) return probes.second;
  for (int64_t times = 2; times <= 64; ++times) {
    const SizeProbes moved{probes.first, moved_by_steps(probes.first, probes, times, probes.second, symbols), ""};
    if (!same_at_both(sizes, moved)) return moved.second;
  }
  SizeProbes largest{probes.first, {}, ""};  // (each symbol at its largest size: where steps overshoot the range)
  for (const auto& [name, size] : probes.first) {
    const SymbolDecl& d = symbols.at(name);
    largest.second[name] = d.largest() > size ? d.largest() : probes.second.at(name);
  }
  if (!same_at_both(sizes, largest)) return largest.second;
  return std::nullopt;
}

// The probes with `first` for the first, when it is clear of 1 and of coinciding sizes and leaves
// room above it for a second that separates every size.
std::optional<SizeProbes> probes_from(const SymbolValues& first, const std::vector<const SizeExpr*>& sizes, const Symbols& symbols) {
  if (!clear_of_one(sizes, first, symbols)) return std::nullopt;
  SizeProbes lifted{first, {}, ""};
  size_t index = 0;
  for (const auto& [name, size] : first)
    if (std::optional<int64_t> moved = second_size(symbols.at(name), size, index++)) lifted.second[name] = *moved;
  if (lifted.second.size() < first.size()) return std::nullopt;  // (a symbol at the top of its range)
  if (!separating_second(lifted, sizes, symbols)) return std::nullopt;
  return lifted;
}

// A size of `d` from 2 up drawn by `random` (its least where none is).
int64_t drawn_size(const SymbolDecl& d, std::mt19937_64& random) {
  const int64_t lo = d.smallest_from(std::max<int64_t>(d.min, 2)).value_or(d.min), steps = (d.max - lo) / d.multiple_of;
  return steps > 0 ? lo + int64_t(random() % uint64_t(steps + 1)) * d.multiple_of : lo;
}

}  // namespace

bool lift_first_probe(SizeProbes& probes, const Trace& t, const std::vector<const SizeExpr*>& sizes) {
  if (clear_of_one(sizes, probes.first, t.symbols)) return false;
  for (int64_t times = 1; times <= 64; ++times)  // each symbol moved by its own steps ...
    if (std::optional<SizeProbes> lifted = probes_from(moved_by_steps(probes.first, probes, times, probes.first, t.symbols), sizes, t.symbols)) {
      probes = *lifted;
      return true;
    }
  std::mt19937_64 random(20261205);  // ... else drawn (the same draws every run: manifest.json names the sizes)
  for (int tries = 0; tries < 256; ++tries) {
    SymbolValues first;
    for (const auto& [name, size] : probes.first) first[name] = drawn_size(t.symbols.at(name), random);
    if (std::optional<SizeProbes> lifted = probes_from(first, sizes, t.symbols)) {
      probes = *lifted;
      return true;
    }
  }
  return false;  // (then the second probe finds the code that depends on it)
}

void separate_probes(SizeProbes& probes, const Trace& t, const std::vector<const SizeExpr*>& sizes) {
  probes.without_parameters = sizes_without_parameters(t, sizes, probes.first);
  if (std::optional<SymbolValues> second = separating_second(probes, sizes, t.symbols)) {
    probes.second = *second;
    return;
  }
  const SizeExpr* same = same_at_both(sizes, probes);
  throw UserError("", "the size " + same->text() + " is the same at the two sizes checked (" + sizes_text(probes.first) + "; " +
                          sizes_text(probes.second) + ") and at every second size tried, so a number computed from it could pass for a "
                          "constant; name the sizes with --specialize");
}

std::optional<std::string> code_difference(const FileSet& first, const FileSet& second, const SizeProbes& probes) {
  for (const auto& [name, text] : first) {
    if (!is_generated_code(name)) continue;
    const auto other = std::find_if(second.begin(), second.end(), [&](const auto& f) { return f.first == name; });
    if (other == second.end()) return name + " is generated at " + sizes_text(probes.first) + " and not at " + sizes_text(probes.second);
    const bool kernel_ir = name.ends_with(".kir");
    if (same_code(text, other->second, kernel_ir)) continue;
    const std::vector<std::string> a = code_lines(text, kernel_ir), b = code_lines(other->second, kernel_ir);
    const auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    if (at_a == a.end() && at_b == b.end()) continue;
    auto quoted = [](const std::vector<std::string>& lines, std::vector<std::string>::const_iterator at) {
      if (at == lines.end()) return std::string("its end");
      std::string line = *at;
      line.erase(0, line.find_first_not_of(' '));
      return "`" + (line.size() > 160 ? line.substr(0, 160) + "..." : line) + "`";
    };
    return name + " code line " + std::to_string(at_a - a.begin() + 1) + enclosing_function(a, at_a) + ": " + quoted(a, at_a) + " at " +
           sizes_text(probes.first) + ", " + quoted(b, at_b) + " at " + sizes_text(probes.second);
  }
  return std::nullopt;
}

std::optional<std::string> manifest_sizes_difference(const std::vector<std::string>& first, const std::vector<std::string>& second,
                                                     const SizeProbes& probes) {
  const auto [at_a, at_b] = std::mismatch(first.begin(), first.end(), second.begin(), second.end());
  if (at_a == first.end() && at_b == second.end()) return std::nullopt;
  return "manifest.json: " + (at_a != first.end() ? *at_a : std::string("nothing")) + " at " + sizes_text(probes.first) + ", " +
         (at_b != second.end() ? *at_b : std::string("nothing")) + " at " + sizes_text(probes.second);
}

}  // namespace tg
