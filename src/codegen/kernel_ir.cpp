#include "codegen/kernel_ir.h"

namespace tg::kir {

namespace {

ExprPtr make(Expr e) { return std::make_shared<const Expr>(std::move(e)); }

Expr of_kind(Expr::Kind kind, std::vector<ExprPtr> operands = {}, std::string text = "") {
  Expr e;
  e.kind = kind;
  e.operands = std::move(operands);
  e.text = std::move(text);
  return e;
}

}  // namespace

ExprPtr name(std::string text) { return make(of_kind(Expr::Kind::name, {}, std::move(text))); }

ExprPtr integer(int64_t value, std::string suffix) {
  Expr e = of_kind(Expr::Kind::integer, {}, std::move(suffix));
  e.integer = value;
  return make(std::move(e));
}

ExprPtr real(double value, DType as) {
  Expr e = of_kind(Expr::Kind::number);
  e.number = value;
  e.dtype = as;
  return make(std::move(e));
}

ExprPtr whole(int64_t value, DType as) {
  Expr e = of_kind(Expr::Kind::number);
  e.number = double(value);
  e.integer = value;
  e.number_is_integer = true;
  e.dtype = as;
  return make(std::move(e));
}

ExprPtr index(IndexExpr i) {
  Expr e = of_kind(Expr::Kind::index);
  e.index = std::move(i);
  return make(std::move(e));
}

ExprPtr component(IndexExpr i) {
  Expr e = of_kind(Expr::Kind::index);
  e.index = std::move(i);
  e.component = true;
  return make(std::move(e));
}

ExprPtr condition(IndexCond c) {
  Expr e = of_kind(Expr::Kind::condition);
  e.condition = std::move(c);
  return make(std::move(e));
}

ExprPtr load(ExprPtr pointer, ExprPtr offset) { return make(of_kind(Expr::Kind::load, {std::move(pointer), std::move(offset)})); }

ExprPtr call(std::string callee, std::vector<ExprPtr> args, std::vector<std::string> template_args) {
  Expr e = of_kind(Expr::Kind::call, std::move(args), std::move(callee));
  e.template_args = std::move(template_args);
  return make(std::move(e));
}

ExprPtr cast(const std::string& type, ExprPtr e) { return call("static_cast", {std::move(e)}, {type}); }

ExprPtr init(std::string type, std::vector<ExprPtr> members) { return make(of_kind(Expr::Kind::init, std::move(members), std::move(type))); }

ExprPtr op_code(std::string code, std::vector<ExprPtr> operands) { return make(of_kind(Expr::Kind::op_code, std::move(operands), std::move(code))); }

ExprPtr binary(ExprPtr a, std::string op, ExprPtr b) { return make(of_kind(Expr::Kind::binary, {std::move(a), std::move(b)}, std::move(op))); }

ExprPtr select(ExprPtr c, ExprPtr a, ExprPtr b) { return make(of_kind(Expr::Kind::select, {std::move(c), std::move(a), std::move(b)})); }

ExprPtr paren(ExprPtr e) { return make(of_kind(Expr::Kind::paren, {std::move(e)})); }

ExprPtr member(ExprPtr e, std::string field) { return make(of_kind(Expr::Kind::member, {std::move(e)}, std::move(field))); }

ExprPtr subscript(ExprPtr e, ExprPtr at) { return make(of_kind(Expr::Kind::subscript, {std::move(e), std::move(at)})); }

ExprPtr aligned(const std::vector<std::string>& pointers) {
  std::vector<ExprPtr> names;
  for (const std::string& p : pointers) names.push_back(name(p));
  return make(of_kind(Expr::Kind::aligned, std::move(names)));
}

ExprPtr reduce(std::string across, std::vector<std::string> reducers, std::vector<ExprPtr> accumulators) {
  Expr e = of_kind(Expr::Kind::reduce, std::move(accumulators), std::move(across));
  e.template_args = std::move(reducers);
  return make(std::move(e));
}

Stmt comment(std::string text) {
  Stmt s;
  s.kind = Stmt::Kind::comment;
  s.text = std::move(text);
  return s;
}

Stmt decl(std::string type, std::string var, ExprPtr value, bool is_const) {
  Stmt s;
  s.kind = Stmt::Kind::decl;
  s.type = std::move(type);
  s.text = std::move(var);
  s.value = std::move(value);
  s.is_const = is_const;
  return s;
}

Stmt array(std::string type, std::string var, int64_t extent) {
  Stmt s = decl(std::move(type), std::move(var), nullptr, false);
  s.extent = extent;
  return s;
}

Stmt assign(ExprPtr target, ExprPtr value, std::string op) {
  Stmt s;
  s.kind = Stmt::Kind::assign;
  s.target = std::move(target);
  s.value = std::move(value);
  s.op = std::move(op);
  return s;
}

Stmt store(ExprPtr pointer, ExprPtr offset, ExprPtr value) {
  Stmt s;
  s.kind = Stmt::Kind::store;
  s.pointer = std::move(pointer);
  s.offset = std::move(offset);
  s.value = std::move(value);
  return s;
}

Stmt load_run(ExprPtr pointer, ExprPtr offset, ExprPtr array, int width, Stmt::RunForm form) {
  Stmt s = store(std::move(pointer), std::move(offset), nullptr);
  s.kind = Stmt::Kind::load_run;
  s.target = std::move(array);
  s.width = width;
  s.run_form = form;
  return s;
}

Stmt store_run(ExprPtr pointer, ExprPtr offset, ExprPtr array, int width, Stmt::RunForm form) {
  Stmt s = store(std::move(pointer), std::move(offset), std::move(array));
  s.kind = Stmt::Kind::store_run;
  s.width = width;
  s.run_form = form;
  return s;
}

Stmt store_run_bits(ExprPtr pointer, ExprPtr offset, ExprPtr bits, int width) {
  Stmt s = store_run(std::move(pointer), std::move(offset), std::move(bits), width);
  s.kind = Stmt::Kind::store_run_bits;
  return s;
}

Stmt eval(ExprPtr value) {
  Stmt s;
  s.kind = Stmt::Kind::eval;
  s.value = std::move(value);
  return s;
}

Stmt loop(std::string type, std::string var, ExprPtr start, ExprPtr bound, ExprPtr step, Block body, bool unrolled) {
  Stmt s;
  s.kind = Stmt::Kind::loop;
  s.type = std::move(type);
  s.text = std::move(var);
  s.start = std::move(start);
  s.bound = std::move(bound);
  s.step = std::move(step);
  s.body = std::move(body);
  s.unrolled = unrolled;
  return s;
}

Stmt branch(ExprPtr cond, Block body, Block orelse) {
  Stmt s;
  s.kind = Stmt::Kind::branch;
  s.value = std::move(cond);
  s.body = std::move(body);
  s.orelse = std::move(orelse);
  return s;
}

Stmt barrier() {
  Stmt s;
  s.kind = Stmt::Kind::barrier;
  return s;
}

namespace {
void visit_tree(const Expr& e, const std::function<void(const Expr&)>& visit) {
  visit(e);
  for (const ExprPtr& o : e.operands) visit_tree(*o, visit);
}

// The names one expression node reads itself (its operands' are theirs).
void node_names(const Expr& e, std::set<std::string>& out) {
  switch (e.kind) {
    case Expr::Kind::name: out.insert(e.text); break;
    case Expr::Kind::index:
      for (std::string& n : e.index.names()) out.insert(std::move(n));
      break;
    case Expr::Kind::condition:
      for (std::string& n : e.condition.names()) out.insert(std::move(n));
      break;
    default: break;
  }
}
}  // namespace

void for_each_expr(const Block& block, const std::function<void(const Expr&)>& visit) {
  for (const Stmt& s : block) {
    for (const ExprPtr* e : {&s.target, &s.pointer, &s.offset, &s.value, &s.start, &s.bound, &s.step})
      if (*e) visit_tree(**e, visit);
    for_each_expr(s.body, visit);
    for_each_expr(s.orelse, visit);
  }
}

void collect_names(const Expr& e, std::set<std::string>& out) {
  visit_tree(e, [&out](const Expr& node) { node_names(node, out); });
}

void collect_names(const Block& block, std::set<std::string>& out) {
  for_each_expr(block, [&out](const Expr& node) { node_names(node, out); });
}

std::set<std::string> names_in(const Block& block) {
  std::set<std::string> out;
  collect_names(block, out);
  return out;
}

}  // namespace tg::kir
