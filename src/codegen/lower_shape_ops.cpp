// Kernel lowering of the shape ops' elements: a pad's, a cat's (a select of its pieces, or a
// chain of branches each computing one), the pure index maps' (their operand's variable).
#include "codegen/lower_kernel.h"

namespace tg::lower {

// A cat's element of kLazyCatPieces pieces or more: the piece its guards pick, each piece computed
// in its own branch of an if / else-if chain (the last piece in the final else), so that an element
// reads one piece, not every piece (im2col's k window offsets: one load, not k; nine of them held
// at once spilled). In `var`, declared before the chain. Two pieces (rotary embeddings' halves)
// stay a select of both, computed before it: straight-line code, and nvcc took 8 more registers
// for the branches of a rotary kernel taking its sizes at run time (40 against 32).
std::string KernelLowering::cat_piece(const Op& op, const std::vector<OperandRead>& reads) {
  const ValueId v = op.outs[0];
  const std::string var = fresh_name(v);
  add(kir::decl(ctype(t_.value(v).dtype), var, nullptr, false));
  Block chain;
  for (size_t r = reads.size(); r-- > 0;) {
    push();
    add(kir::assign(kir::name(var), kir::name(value_at(reads[r].value, reads[r].index))));
    Block piece = pop();
    chain = r + 1 == reads.size() ? std::move(piece) : Block{kir::branch(kir::condition(reads[r].guard), std::move(piece), std::move(chain))};
  }
  for (kir::Stmt& s : chain) add(std::move(s));
  return var;
}

// A shape op's element: a pad's (its operand's element inside the padded region, the padding
// value outside), a cat's (the piece its guard picks), or, for the pure index maps, nothing: `var`
// is then the operand's variable.
std::optional<kir::ExprPtr> KernelLowering::shape_value(const Op& op, const Index& index, std::string& var) {
  std::vector<OperandRead> reads = shape_op_reads(t_, op, index, this);
  if (op.info->kind == OpKind::pad) {
    const std::string inner = value_at(reads[0].value, reads[0].index);
    if (reads[0].guard.always()) {
      var = inner;
      return std::nullopt;
    }
    return kir::select(kir::paren(kir::condition(reads[0].guard)), kir::name(inner), operand(op.arg("padding_value"), index, t_.value(op.outs[0]).dtype));
  }
  if (op.info->kind == OpKind::cat && reads.size() >= kLazyCatPieces) {
    var = cat_piece(op, reads);
    return std::nullopt;
  }
  if (op.info->kind == OpKind::cat) {
    std::vector<std::string> pieces;  // (in the order the pieces are read)
    for (const OperandRead& r : reads) pieces.push_back(value_at(r.value, r.index));
    ExprPtr expr = kir::name(pieces.back());
    for (size_t r = reads.size() - 1; r-- > 0;) expr = kir::select(kir::condition(reads[r].guard), kir::name(pieces[r]), expr);
    return expr;
  }
  var = value_at(reads[0].value, reads[0].index);
  return std::nullopt;
}

}  // namespace tg::lower
