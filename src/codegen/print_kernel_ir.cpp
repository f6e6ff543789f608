#include "codegen/print_kernel_ir.h"

#include "codegen/print_cuda.h"
#include "support/generated_text.h"

namespace tg {

namespace {

using kir::Stmt;

std::string expr(const kir::ExprPtr& e) { return kir::print_expr(*e); }

void list_block(const kir::Block& block, const std::string& indent, std::string& out);

std::string decl_text(const Stmt& s) {
  std::string text = std::string(s.is_shared ? "shared " : "") + (s.is_const ? "let " : "var ") + s.text + ": " + s.type;
  if (s.extent > 0) text += "[" + std::to_string(s.extent) + "]";
  if (s.value) text += " = " + expr(s.value);
  return text;
}

std::string run_text(const Stmt& s) {
  const std::string width = std::to_string(s.width);
  switch (s.kind) {
    case Stmt::Kind::load_run: return "load run of " + width + ": " + expr(s.target) + " <- " + expr(s.pointer) + "[" + expr(s.offset) + " ...]";
    case Stmt::Kind::store_run: return "store run of " + width + ": " + expr(s.pointer) + "[" + expr(s.offset) + " ...] <- " + expr(s.value);
    default: return "store bits of " + width + " lanes: " + expr(s.pointer) + "[" + expr(s.offset) + " ...] <- " + expr(s.value);
  }
}

// The statement's own line (a loop's or a branch's head), without indent.
std::string head(const Stmt& s) {
  switch (s.kind) {
    case Stmt::Kind::comment: return "# " + comment_text(s.text);
    case Stmt::Kind::decl: return decl_text(s);
    case Stmt::Kind::assign: return expr(s.target) + " " + s.op + " " + expr(s.value);
    case Stmt::Kind::store: return "store " + expr(s.pointer) + "[" + expr(s.offset) + "] <- " + expr(s.value);
    case Stmt::Kind::load_run:
    case Stmt::Kind::store_run:
    case Stmt::Kind::store_run_bits: return run_text(s);
    case Stmt::Kind::eval: return (s.value->kind == kir::Expr::Kind::reduce ? "across the " + s.value->text + ": " : "call ") + expr(s.value);
    case Stmt::Kind::loop:
      return std::string(s.unrolled ? "unrolled " : "") + "for " + s.text + ": " + s.type + " from " + expr(s.start) + " below " + expr(s.bound) +
             " step " + (s.step ? expr(s.step) : "1") + ":";
    case Stmt::Kind::branch: return "if " + expr(s.value) + ":";
    case Stmt::Kind::scope: return "scope:";
    case Stmt::Kind::barrier: return "barrier (the block's threads wait for each other)";
  }
  return "?";
}

void list_block(const kir::Block& block, const std::string& indent, std::string& out) {
  for (const Stmt& s : block) {
    out += indent + head(s) + (s.note.empty() ? "" : "  # " + comment_text(s.note)) + "\n";
    list_block(s.body, indent + "  ", out);
    if (!s.orelse.empty()) {
      out += indent + "else:" + (s.else_note.empty() ? "" : "  # " + comment_text(s.else_note)) + "\n";
      list_block(s.orelse, indent + "  ", out);
    }
  }
}

std::string params_text(const std::vector<kir::Param>& params) {
  std::string out;
  for (size_t i = 0; i < params.size(); ++i) out += (i ? ", " : "") + params[i].name + ": " + params[i].type;
  return out;
}

void list_kernel(const kir::Kernel& k, std::string& out) {
  const kir::Launch& l = k.launch;
  out += "kernel " + k.name + "  # block " + std::to_string(l.block) + ", " +
         (l.fixed_grid > 0 ? std::to_string(l.fixed_grid) + " blocks (fixed)"
                           : std::to_string(l.items) + " items, " + std::to_string(l.items_per_block) + " a block") + "\n";
  for (const std::string& line : k.header) out += "  # " + comment_text(line) + "\n";
  out += "  params(" + params_text(k.params) + ")\n";
  if (k.element) {
    out += "  element function " + k.element->name + "(" + params_text(k.element->params) + "):\n";
    list_block(k.element->body, "    ", out);
  }
  out += "  body:\n";
  list_block(k.body, "    ", out);
  if (!k.twin) return;
  const bool elementwise = k.twin->kind == kir::Twin::Kind::elementwise;
  out += "  twin " + k.twin->name + "  # " +
         (elementwise ? "element by element, launched where the runs cannot be"
                      : "rows streamed, launched for rows longer than " + std::to_string(k.twin->condition.longest_row)) + "\n";
  out += "  twin body:\n";
  list_block(k.twin->body, "    ", out);
}

}  // namespace

std::string print_kernel_program(const KernelProgram& program) {
  std::string out;
  for (const kir::Kernel& k : program.kernels) {
    list_kernel(k, out);
    out += "\n";
  }
  out += "ops:\n";
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const EmittedKernel& op = program.ops[i];
    std::string what = !op.view_of.empty() ? "view of " + op.view_of
                       : !op.library.empty() ? op.library
                       : program.kernels[size_t(program.kernel_of[i])].name == op.name ? "launch" : "launch " + op.same_code_as;
    const EntryStep& step = program.steps[i];
    for (int c : step.joins) out += "  wait for collective " + std::to_string(c) + "\n";
    if (step.collective >= 0) what += ", collective " + std::to_string(step.collective) + " on the second stream";
    out += "  " + op.name + ": " + what + "\n";
  }
  for (int c : program.last_joins) out += "  wait for collective " + std::to_string(c) + "\n";
  for (const EntryValues::StorageView& view : program.values.storage_views)
    out += "argument " + view.argument + " seen as " + view.type + "\n";
  // (Taken at run time, a size is its expression: the listing is the same at every size.)
  auto size = [](const Dim& d) { return d.symbolic() ? d.expr()->text() : std::to_string(d); };
  out += "workspace: " + size(program.workspace.bytes) + " bytes of temporaries\n";
  for (const Temporary& t : program.workspace.temporaries) out += "  " + t.name + " at " + size(t.offset) + "\n";
  return out;
}

}  // namespace tg
