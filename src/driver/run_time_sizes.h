// A folder that takes a symbolic trace's sizes at run time (docs/symbolic-shapes.md, "One folder
// for every size"). The pipeline runs at two sizes of the symbols, the probes; the folder is the
// first run's, and it is written only when its code is the second's: a size that reached the code
// as a number rather than through the symbols would make the two differ.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ir/size_expr.h"
#include "ir/trace.h"
#include "output/output_folder.h"

namespace tg {

// Two sizes for each symbol, each at least 2 (a size of 1 is where broadcasting could differ), the
// first apart from the other symbols' (so that B*T and T*T differ), the second the first moved by
// a step of the symbol's own (run_time_sizes.cpp); or why there are none: a symbol that allows
// fewer than two sizes from 2 up.
struct SizeProbes {
  SymbolValues first, second;
  // The trace's sizes that get no size parameter of their own (T - 1 where T may be 1), each with
  // the declaration that would give it one; what a refusal adds ("" for none). separate_probes
  // fills it.
  std::string without_parameters;
};
std::variant<SizeProbes, std::string> choose_probes(const Symbols& symbols);

// The size expressions the probes keep apart: of the dims that name a symbol, once each, of `t`'s
// values and of those its decomposition to prims makes (a convolution's padded input,
// (T + 3)//8 + 3). They are the same whatever sizes `t` was read at.
std::vector<const SizeExpr*> probed_sizes(const Trace& t);

// Moves the first probe (each symbol by steps of its own where its range allows, else to sizes
// drawn from the ranges with a fixed seed) where one of `sizes` would be 1 there and may be more,
// or two of them the same, to sizes that leave a second probe separating every size; the second
// moves with it. True when it moved: then read `t` again at the first. A size of 1 is a dim the
// code may treat as broadcast ((T - 3)//2 + 1 at T = 3), and two shapes of the same sizes one
// shape (lower_sizes.cpp).
bool lift_first_probe(SizeProbes& probes, const Trace& t, const std::vector<const SizeExpr*>& sizes);

// Fills probes.without_parameters, and moves the second probe, where needed, until every size expression of `t`'s values (read at
// the first) differs between the probes: one the same at both (T//16 + 1 at T = 3 and 10) would
// let a number computed from it (a mean's divisor) pass for a constant. Throws UserError naming
// an expression no second probe in range separates.
void separate_probes(SizeProbes& probes, const Trace& t, const std::vector<const SizeExpr*>& sizes);

// The first difference between the code of two folders generated at the probes, comments aside
// (a kernel IR listing, named *.kir, has # comments): "forward.cu line 40: `...` at B=2, T=3,
// `...` at B=3, T=5"; nothing when both are the same.
std::optional<std::string> code_difference(const FileSet& first, const FileSet& second, const SizeProbes& probes);

// The first difference between the shapes the two folders' manifest.json give as expressions
// (ManifestWriter::sizes_lines()): "manifest.json: input x: [...] at B=2, T=3, ...".
std::optional<std::string> manifest_sizes_difference(const std::vector<std::string>& first, const std::vector<std::string>& second,
                                                     const SizeProbes& probes);

}  // namespace tg
