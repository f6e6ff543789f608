#include "driver/run_time_sizes.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/diagnostics.h"

namespace tg {

namespace {

// The smallest allowed size from `from` up that no other symbol was given in `taken`.
std::optional<int64_t> free_size(const SymbolDecl& d, int64_t from, std::set<int64_t>& taken) {
  for (std::optional<int64_t> v = d.smallest_from(from); v; v = d.smallest_from(*v + 1)) {
    if (taken.insert(*v).second) return v;
  }
  return std::nullopt;
}

std::string sizes_text(const SymbolValues& values) {
  std::string s;
  for (const auto& [name, size] : values) s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  return s;
}

// The text's lines with comments (// to the end of the line outside literals; # in a kernel IR
// listing) and trailing blanks removed: the code a compiler sees, line by line.
std::vector<std::string> code_lines(const std::string& text, bool kernel_ir) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    char quote = 0;
    size_t end = line.size();
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (quote) {
        if (c == '\\') ++i;
        else if (c == quote) quote = 0;
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (kernel_ir ? c == '#' : c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
        end = i;
        break;
      }
    }
    line.resize(end);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(line);
  }
  std::erase(lines, std::string());
  return lines;
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

// What manifest.json says of the shapes at every size: each input's and each entry-point
// parameter's "sizes", as "where: sizes" lines (Python allocates from them).
std::vector<std::string> manifest_sizes(const FileSet& files) {
  std::vector<std::string> lines;
  const auto manifest = std::find_if(files.begin(), files.end(), [](const auto& f) { return f.first == "manifest.json"; });
  if (manifest == files.end()) return lines;
  const nlohmann::json m = nlohmann::json::parse(manifest->second);
  auto add = [&](const std::string& what, const nlohmann::json& v) {
    if (v.is_object() && v.contains("sizes")) lines.push_back(what + " " + v.at("name").dump() + ": " + v.at("sizes").dump());
  };
  for (const auto& input : m.at("inputs")) add("input", input);
  for (const auto& [entry, e] : m.at("entry_points").items())
    if (e.is_object())
      for (const auto& p : e.at("params")) add(entry + " parameter", p);
  return lines;
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

std::variant<SizeProbes, std::string> choose_probes(const Symbols& symbols) {
  SizeProbes probes;
  std::set<int64_t> taken_first;
  size_t index = 0;
  for (const auto& [name, decl] : symbols.all()) {
    const std::optional<int64_t> first = free_size(decl, 2, taken_first);
    const std::optional<int64_t> second = first ? second_size(decl, *first, index++) : std::nullopt;
    if (!first || !second)
      return name + " allows fewer than two sizes from 2 up (" + decl.range_text() + "), too few to check that the code does not depend on it: name its size with --specialize";
    probes.first[name] = *first;
    probes.second[name] = *second;
  }
  return probes;
}

namespace {

// The expressions of `t`'s dims that name a symbol, once each.
std::vector<const SizeExpr*> symbolic_sizes(const Trace& t) {
  std::set<const SizeExpr*> seen;  // (interned: one pointer per expression)
  std::vector<const SizeExpr*> out;
  for (const Value& v : t.values)
    for (const Dim& d : v.shape)
      if (d.symbolic() && seen.insert(d.expr()).second) out.push_back(d.expr());
  return out;
}

// The first of `sizes` the same at both probes, if any.
const SizeExpr* same_at_both(const std::vector<const SizeExpr*>& sizes, const SizeProbes& probes) {
  for (const SizeExpr* e : sizes)
    if (e->evaluate(probes.first) == e->evaluate(probes.second)) return e;
  return nullptr;
}

}  // namespace

void separate_probes(SizeProbes& probes, const Trace& t) {
  const std::vector<const SizeExpr*> sizes = symbolic_sizes(t);
  const SizeExpr* same = same_at_both(sizes, probes);
  if (!same) return;
  // Each symbol moved from the first probe by `times` its own step (as second_size), where its range allows.
  for (int64_t times = 2; times <= 64; ++times) {
    SizeProbes moved = probes;
    for (auto& [name, size] : moved.second) {
      const SymbolDecl& d = t.symbols.at(name);
      const int64_t first = probes.first.at(name), step = (probes.second.at(name) - first) * times;
      if (step > 0 && first <= d.max - step && d.allows(first + step)) size = first + step;
    }
    if (!same_at_both(sizes, moved)) {
      probes = moved;
      return;
    }
  }
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
  const std::vector<std::string> a = manifest_sizes(first), b = manifest_sizes(second);
  if (const auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end()); at_a != a.end() || at_b != b.end())
    return "manifest.json: " + (at_a != a.end() ? *at_a : std::string("nothing")) + " at " + sizes_text(probes.first) + ", " +
           (at_b != b.end() ? *at_b : std::string("nothing")) + " at " + sizes_text(probes.second);
  return std::nullopt;
}

}  // namespace tg
