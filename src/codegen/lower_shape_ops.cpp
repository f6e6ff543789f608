// Kernel lowering of the shape ops' elements: a pad's, a cat's (a select of its pieces, or a
// chain of branches each computing one), the pure index maps' (their operand's variable); and a
// result that only moves a 16-bit operand's elements through them, in its storage type.
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

// Where every element of result v is an element of a loaded 16-bit float operand, moved unchanged
// through pure index maps (a transpose, a reshape, a broadcast, a slice, a cat of one piece) and
// conversions to its own type: that operand and the index its element at `index` is read at
// (shape_op_reads naming index code through `namer`; none to only ask). Nothing for any other
// result.
std::optional<std::pair<ValueId, Index>> KernelLowering::moved_source(ValueId v, Index index, IndexNamer* namer) {
  const DType type = t_.value(v).dtype;
  if ((type != DType::bf16 && type != DType::f16) || t_.value(v).bit_packed) return std::nullopt;
  while (!loaded_.count(v)) {
    const auto p = producer_.find(v);
    if (p == producer_.end()) return std::nullopt;
    const Op& op = *p->second;
    if (op.info->kind == OpKind::convert_element_type && t_.value(op.arg("a").value).dtype == type) {
      v = op.arg("a").value;
      continue;
    }
    if (op.info->fusion != FusionClass::shape) return std::nullopt;
    std::vector<OperandRead> reads = shape_op_reads(t_, op, index, namer);
    if (reads.size() != 1 || !reads[0].guard.always()) return std::nullopt;
    v = reads[0].value;
    index = std::move(reads[0].index);
  }
  const Value& source = t_.value(v);
  if (source.dtype != type || source.is_scalar || source.bit_packed) return std::nullopt;
  return std::pair{v, std::move(index)};
}

// ... that element in its storage type, gathered (tg::load_as_stored) or this lane's of a run
// loaded in that type. Such a result is moved as its bits (as PyTorch copies them), not widened
// to float and rounded back, which quiets a signalling NaN, and took nvcc a NaN test and six
// instructions an element, and registers for them (a bf16 transpose: 32 against 26).
std::optional<kir::ExprPtr> KernelLowering::moved_element(ValueId v, const Index& index) {
  std::optional<std::pair<ValueId, Index>> moved = moved_source(v, index, this);
  if (!moved) return std::nullopt;
  const auto& [source, at] = *moved;
  if (const std::optional<IndexExpr> start = in_run_ ? run_start(t_.value(source), at) : std::nullopt) return var(run_load(source, *start, at, true));
  return kir::call("tg::load_as_stored", {global(source), offset(t_.value(source), at)});
}

// The type result v is handed back and held in: its compute type, or its storage type where the
// kernel moves its elements unchanged (moved_).
std::string KernelLowering::result_type(ValueId v) const {
  return moved_.count(v) ? storage_type(t_.value(v)) : ctype(t_.value(v).dtype);
}

}  // namespace tg::lower
