// The kernel plan: how one fused kernel is to be written, decided once fusion has built it, so
// that the kernel lowering decides nothing of its own (docs/design-notes.md, "Kernel plans"). `--emit
// fused` prints each kernel's plan under its line.
//
// What it holds:
//   - the kind (pointwise; row: one block per row of the reductions' input; column: a row kernel
//     whose block takes 32 neighbouring rows) and the threads per block;
//   - pointwise: the elements a thread takes in one 16-byte run;
//   - row: whether a thread holds its part of the row in registers (and in runs of how many
//     neighbours, and whether operands shaped like one row are loaded once before the rows) or
//     streams the row in runs in each pass;
//   - row and column: the passes over the row, in order, and what each computes and writes.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/trace.h"

namespace tg {

constexpr int kPointwiseBlock = 256;
constexpr int kMaxRowBlock = 256;  // (a row too long to sit in registers at this size gets up to 1024)
constexpr int kMaxRowBlockWide = 1024;
constexpr int kMaxCachedPerThread = 16;  // row elements per thread held in registers
constexpr int kColumnBlock = 1024;       // 32 rows x 32 parts
// 32-bit registers an element of type t takes (2 for 8 bytes).
int64_t register_words(DType t);

struct KernelPlan {
  enum class Kind { pointwise, row, column };
  Kind kind = Kind::pointwise;
  int block = 0;          // threads per block
  int lanes = 1;          // pointwise: neighbouring elements per thread per run (16 bytes)
  int held = 0;           // row: elements of its row a thread holds in registers (0: streamed)
  int held_run = 1;       // ... in runs of this many neighbours
  bool hoisted = false;   // ... and its elements of the operands shaped like one row, loaded once
  int stream_run = 1;     // row, streamed: neighbouring elements a thread reads with one access

  // One step of a reduction, by the value it computes.
  enum class Form {
    accumulate,        // a sum, prod, amax, amin, argmax or argmin over the row
    online_max_sum,    // an amax and a sum(exp(x - amax)) joined: one accumulation for both
    pick,              // sum(where(iota == target, picked, 0)): element `target`, no pass
    variance_mean,     // var / var_mean, pass 1: the row's sum for a first mean
    variance_spread,   // ... pass 2: deviations from that mean and their squares
  };
  struct Step {
    Form form = Form::accumulate;
    ValueId result = kNoValue;   // the reduction's first output
    ValueId joined = kNoValue;   // online_max_sum: the sum computed with the amax `result`
    ValueId operand = kNoValue;  // online_max_sum: x; pick: the value picked from
    ValueId target = kNoValue;   // pick: the index picked, one per row
  };
  // The passes over the row: each computes its steps (picks first, without a loop), and writes
  // `writes` (and adds the row to the block's partial sums when `part_sums`). A round with only
  // picks and nothing to write has no loop.
  struct Round {
    std::vector<Step> steps;
    std::vector<ValueId> writes;
    bool part_sums = false;
  };
  std::vector<Round> rounds;
  std::vector<ValueId> row_results;  // outputs with one element per row, stored after the rounds
  // row, its length taken at run time and held: rows up to held * block elements long are held
  // (a thread's elements past the row masked off); longer ones go to a twin kernel streaming them
  // by this plan (null: every row in range fits).
  std::shared_ptr<const KernelPlan> long_rows;

  int passes_over_row() const;  // the rounds that loop over the row
  int64_t longest_held_row() const { return int64_t(held) * block; }
};

// The fused trace: fusion's kernels (thunder_gen.kernel ops) and library calls, with each kernel's
// plan beside it (the IR holds no plans: they are the scheduler's).
struct FusedTrace {
  Trace trace;
  std::vector<std::optional<KernelPlan>> plans;  // plans[i]: trace.ops[i]'s, when that is a kernel
  // The plan of trace.ops[op_index], a kernel (an internal error for any other op).
  const KernelPlan& plan(size_t op_index) const;
};

// The plan for `kernel`, a thunder_gen.kernel op of `t`. may_hold_row = false: a row kernel
// streams its row in every pass, even where it could hold it in registers.
KernelPlan plan_kernel(const Trace& t, const Op& kernel, bool may_hold_row = true);
// Whether a row kernel writes one value per row and nothing else (a column sum): a column kernel's
// last block of 32 rows may then run past the rows (its threads there re-read the last row and
// store nothing), so its rows need not be a multiple of 32.
bool writes_per_row_only(const Trace& t, const Op& kernel);
// Plans and names every kernel of a fused trace (the end of fusion).
FusedTrace plan_kernels(Trace fused);
// The fused trace's listing (--emit fused): its trace with each kernel's "# plan: " line.
std::string print_fused(const FusedTrace& fused);

// The plan a stage listing's "# plan: " line gives `kernel` (read back by --from-stage): its own
// plan, with only the changes that keep the emitted code correct (lanes=1, held=0, hoisted=0,
// stream_run=1); the passes after " | ", when given, must be the kernel's. Throws a UserError at
// `where` for anything else.
KernelPlan plan_from_listing(const std::string& text, const Trace& t, const Op& kernel, const std::string& where);

// One line, as `--emit fused` prints it after "# plan: ": the kind and its numbers as key=value,
// then each pass over the row after a "|" ("row block=256 held=4 held_run=4 hoisted=1
// stream_run=1 | pass 1: var_mean t13__0 (mean) | pass 2: ..."). `kernel` is the planned op of `t`.
std::string plan_text(const KernelPlan& plan, const Op& kernel, const Trace& t);

}  // namespace tg
