#include "codegen/share_sine_cosine.h"

#include <cctype>
#include <map>
#include <optional>

#include "codegen/print_cuda.h"
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

// Whether statement s (or one inside it) assigns or declares `var` (a variable, or an element of
// an array a row kernel holds: c_x[k]).
bool writes(const Stmt& s, const std::string& var) {
  if ((s.kind == Stmt::Kind::decl && s.text == var) || (s.kind == Stmt::Kind::assign && s.target && print_expr(*s.target) == var))
    return true;
  for (const Block* inner : {&s.body, &s.orelse})
    for (const Stmt& t : *inner)
      if (writes(t, var)) return true;
  return false;
}

// sc_<angle without its role prefix, an element's subscript as _k>, numbered where the block
// reads that name already.
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

void share_in(Block& block, std::set<std::string>& taken) {
  for (Stmt& s : block)
    for (Block* inner : {&s.body, &s.orelse}) share_in(*inner, taken);
  std::map<std::pair<std::string, bool>, size_t> open;  // (angle, sine) -> its declaration, unpaired
  for (size_t i = 0; i < block.size(); ++i) {
    const std::optional<Trig> trig = float_sine_or_cosine(block[i]);
    if (!trig) {
      std::erase_if(open, [&](const auto& entry) { return writes(block[i], entry.first.first); });
      continue;
    }
    const auto other = open.find({trig->angle, !trig->sine});
    if (other == open.end()) {
      open.emplace(std::pair{trig->angle, trig->sine}, i);
      continue;
    }
    const size_t first = other->second;
    open.erase(other);
    const std::string pair = pair_name(trig->angle, taken);
    taken.insert(pair);
    block[first].value = member(name(pair), trig->sine ? "cos" : "sin");
    block[i].value = member(name(pair), trig->sine ? "sin" : "cos");
    block.insert(block.begin() + std::ptrdiff_t(first), decl("tg::SinCos", pair, call("tg::sincos", {name(trig->angle)})));
    // (Declarations still open sit before `first` or after it: theirs move one on.)
    for (auto& entry : open)
      if (entry.second >= first) ++entry.second;
    ++i;
  }
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
