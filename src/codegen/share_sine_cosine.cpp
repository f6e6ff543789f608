#include "codegen/share_sine_cosine.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "ops/op_table.h"
#include "support/generated_text.h"

namespace tg::kir {

namespace {

// Which of the two a float declaration computes, and of which angle (a variable's name).
struct Trig {
  bool sine = false;
  std::string angle;
};

std::optional<Trig> float_sine_or_cosine(const Stmt& s) {
  if (s.kind != Stmt::Kind::decl || s.type != "float" || !s.value || s.value->kind != Expr::Kind::op_code) return std::nullopt;
  const Expr& code = *s.value;
  if (code.operands.size() != 1 || code.operands[0]->kind != Expr::Kind::name) return std::nullopt;
  const bool sine = code.text == op_info(OpKind::sin).code;
  if (!sine && code.text != op_info(OpKind::cos).code) return std::nullopt;
  return Trig{sine, code.operands[0]->text};
}

// The identifiers an angle's text reads: itself, or an array and its subscript (c_x[k]: c_x, k).
std::set<std::string> names_read(const std::string& angle) {
  std::set<std::string> out;
  std::string word;
  for (char c : angle + ' ') {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
    } else if (!word.empty()) {
      out.insert(word);
      word.clear();
    }
  }
  return out;
}

// Whether statement s (or one inside it) may change what `angle` reads: it declares, assigns,
// loads a run into or loops over one of those names (any element of an array, to be safe).
bool writes(const Stmt& s, const std::string& angle) {
  const std::set<std::string> read = names_read(angle);
  std::set<std::string> written;
  if (s.kind == Stmt::Kind::decl || s.kind == Stmt::Kind::loop) written.insert(s.text);
  if ((s.kind == Stmt::Kind::assign || s.kind == Stmt::Kind::load_run) && s.target) collect_names(*s.target, written);
  for (const std::string& name : written)
    if (read.count(name)) return true;
  for (const Block* inner : {&s.body, &s.orelse})
    for (const Stmt& t : *inner)
      if (writes(t, angle)) return true;
  return false;
}

// sc_<angle without its role prefix, an element's subscript as _k>, numbered where `taken` holds
// that name already.
std::string pair_name(const std::string& angle, const std::set<std::string>& taken) {
  const size_t underscore = angle.find('_');
  std::string stem = underscore == std::string::npos ? angle : angle.substr(underscore + 1);
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  while (stem.ends_with('_')) stem.pop_back();
  if (stem.empty()) stem = "angle";
  const std::string base = ident(Role::sine_cosine, stem);
  std::string name = base;
  for (int k = 1; taken.count(name); ++k) name = base + "_" + std::to_string(k);
  return name;
}

// The pairs of `block`, then of the blocks inside it. `taken`: the names the kernel reads and the
// pairs declared around the block, which a pair's name must not repeat; this block's leave it
// after, so sibling blocks (two passes over a row, say) name theirs alike.
void share_in(Block& block, std::set<std::string>& taken) {
  std::vector<std::string> declared;
  std::map<std::string, std::vector<std::pair<size_t, bool>>> open;  // angle -> its declarations (place, sine), unpaired
  std::map<std::string, std::string> paired;                         // angle -> its tg::sincos, declared above
  const auto read_pair = [&](size_t at, bool sine, const std::string& pair) { block[at].value = member(name(pair), sine ? "sin" : "cos"); };
  for (size_t i = 0; i < block.size(); ++i) {
    const std::optional<Trig> trig = float_sine_or_cosine(block[i]);
    if (!trig) {
      std::erase_if(open, [&](const auto& entry) { return writes(block[i], entry.first); });
      std::erase_if(paired, [&](const auto& entry) { return writes(block[i], entry.first); });
      continue;
    }
    if (const auto done = paired.find(trig->angle); done != paired.end()) {  // (another value of the same: a backward's recomputed sine)
      read_pair(i, trig->sine, done->second);
      continue;
    }
    std::vector<std::pair<size_t, bool>>& waiting = open[trig->angle];
    waiting.emplace_back(i, trig->sine);
    if (std::all_of(waiting.begin(), waiting.end(), [&](const auto& w) { return w.second == trig->sine; })) continue;
    const std::string pair = pair_name(trig->angle, taken);
    taken.insert(pair);
    declared.push_back(pair);
    paired.emplace(trig->angle, pair);
    for (const auto& [at, sine] : waiting) read_pair(at, sine, pair);
    const size_t first = waiting.front().first;
    block.insert(block.begin() + std::ptrdiff_t(first), decl("tg::SinCos", pair, call("tg::sincos", {name(trig->angle)})));
    open.erase(trig->angle);
    // (Declarations still open sit before `first` or after it: theirs move one on.)
    for (auto& entry : open)
      for (auto& w : entry.second)
        if (w.first >= first) ++w.first;
    ++i;
  }
  for (Stmt& s : block)
    for (Block* inner : {&s.body, &s.orelse}) share_in(*inner, taken);
  for (const std::string& pair : declared) taken.erase(pair);
}

}  // namespace

void share_sine_cosine(Kernel& k) {
  for (Block* block : {&k.body, k.element ? &k.element->body : nullptr, k.twin ? &k.twin->body : nullptr}) {
    if (!block) continue;
    std::set<std::string> taken = names_in(*block);
    share_in(*block, taken);
  }
}

}  // namespace tg::kir
