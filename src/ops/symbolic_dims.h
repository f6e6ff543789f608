// The sizes of a symbolic trace's values as expressions (tg::Dim, docs/symbolic-shapes.md). The
// reader gives each dim the trace declares as an expression that expression; infer_dims then
// gives each op output's dims the expression its shape rule computes from the operands', where the
// trace wrote a size alone (a PT2 archive's translation writes its graph's sizes as integers), and
// refuses an output whose declared expression the rule's differs from at a size the symbols allow.
// Every pass after it keeps the expressions through its shape rules and the vocabulary's shapes.
#pragma once
#include <optional>

#include "ir/trace.h"

namespace tg {

// Throws UserError at the op's output (`<op>/out/<i>`) naming both expressions and a size where
// they differ. Ops whose rule refuses them are left to the verifier, which says why.
void infer_dims(Trace& t);

// Sizes the symbols allow at which `a` and `b` differ, when the corners of their ranges (and a
// point inside) show one; nullopt when none does (they may still differ elsewhere).
std::optional<SymbolValues> sizes_where_different(const SizeExpr& a, const SizeExpr& b, const Symbols& symbols);

}  // namespace tg
