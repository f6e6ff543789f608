// Kernel lowering, a row kernel's reductions: each an accumulation over the row, combined across
// the block; passes over the row until all are done (and the forms that need no pass of their
// own). Column kernels: a row kernel whose rows are neighbours in memory (the reduced dims are
// not the trailing ones: a weight gradient summing over dim 0), a block taking 32 of them.
#include "codegen/lower_kernel.h"
#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg::lower {

namespace {

// "float(1024)": a row's length in compute type `ct`.
kir::ExprPtr count_as(const std::string& ct, kir::ExprPtr count) { return kir::call(ct, {std::move(count)}); }

}  // namespace

std::string KernelLowering::acc_type(DType t) { return is_float(t) ? ctype(t) : "int64_t"; }

// Declares v, a reduction's result, as `expr`.
void KernelLowering::declare_reduced(ValueId v, const ExprPtr& expr) {
  std::string var = fresh_name(v);
  add(kir::decl(ctype(t_.value(v).dtype), var, expr));
  reduced_[v] = var;
}

// A reduction's input at the row's element j.
std::function<kir::ExprPtr()> KernelLowering::row_element(ValueId input) {
  return [this, input] { return value_expr(input, identity_index(layout_.domain.size())); };
}

// The accumulations a step of the plan adds to its pass (none for a pick, computed at once).
std::vector<KernelLowering::Accumulation> KernelLowering::accumulations(const KernelPlan::Step& step) {
  const Op& op = *producer_.at(step.result);
  switch (step.form) {
    case KernelPlan::Form::accumulate: return {accumulate(op)};
    case KernelPlan::Form::online_max_sum: return {online_max_sum(step)};
    case KernelPlan::Form::variance_mean: return {variance_mean(op)};
    case KernelPlan::Form::variance_spread: return variance_spread(op);
    case KernelPlan::Form::pick: pick(step); return {};
  }
  return {};
}

KernelLowering::Accumulation KernelLowering::accumulate(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const DType in_dtype = t_.value(input).dtype;
  const std::string comment = print_op(op, t_, false), ct = ctype(in_dtype);
  const OpKind kind = op.info->kind;
  if (kind == OpKind::argmax || kind == OpKind::argmin) {
    const std::string pair = "tg::ArgPair<" + ct + ">", reducer = "tg::ArgBest<" + ct + ", " + (kind == OpKind::argmax ? "true" : "false") + ">";
    auto element = row_element(input);
    return {comment, reducer, pair, local(Role::accumulator, out),
            [=, this] { return kir::init(pair, {as_stored(element(), in_dtype, Arg::of_value(input)), var("j")}); },
            [=, this](const ExprPtr& total) { declare_reduced(out, kir::member(total, "index")); }};
  }
  const bool extreme = kind == OpKind::amax || kind == OpKind::amin;
  const std::string acc = extreme ? ct : acc_type(in_dtype);
  const char* which = kind == OpKind::sum ? "Sum" : kind == OpKind::prod ? "Prod" : kind == OpKind::amax ? "Max" : "Min";
  TG_CHECK(kind == OpKind::sum || kind == OpKind::prod || extreme, "not a reduction: " + op.symbol);
  return {comment, std::string("tg::") + which + "<" + acc + ">", acc, local(Role::accumulator, out), row_element(input),
          [=, this](const ExprPtr& total) { declare_reduced(out, acc == ct ? total : kir::cast(ct, total)); }};
}

// amax(x) and sum(exp(x - broadcast(amax(x)))) in one accumulation (tg::OnlineSumExp): the max is
// exact as before; the sum rounds differently (rescaled partial sums).
KernelLowering::Accumulation KernelLowering::online_max_sum(const KernelPlan::Step& step) {
  const ValueId x = step.operand, max = step.result, total = step.joined;
  const std::string ct = ctype(t_.value(x).dtype), reducer = "tg::OnlineSumExp<" + ct + ">";
  const std::string comment = print_op(*producer_.at(max), t_, false) + ", and " + print_op(*producer_.at(total), t_, false) + " (online: one pass for both)";
  auto element = row_element(x);
  return {comment, reducer, "tg::MaxSum<" + ct + ">", local(Role::accumulator, max), [=] { return kir::call(reducer + "::of", {element()}); },
          [=, this](const ExprPtr& both) {
            const std::string joint = unique_local(local(Role::max_and_sum, max));
            add(kir::decl("tg::MaxSum<" + ct + ">", joint, both));
            declare_reduced(max, kir::member(var(joint), "max"));
            declare_reduced(total, kir::call(reducer + "::sum_of", {var(joint)}));
          }};
}

// var and var_mean: the corrected two-pass algorithm. Pass 1 sums the row for a first mean; pass 2
// sums the deviations from it and their squares. The deviations' sum is the first mean's rounding
// error times n: adding it back makes the mean exact where PyTorch's Welford mean is (a constant
// row's mean is the constant, so layer_norm gives 0 there, not (x - mean) * rstd of a rounding error).
KernelLowering::Accumulation KernelLowering::variance_mean(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const std::string ct = ctype(t_.value(input).dtype), first_mean = local(Role::mean, out);
  const ExprPtr count = count_as(ct, row_length());
  return {print_op(op, t_, false) + " (pass 1: mean)", "tg::Sum<" + ct + ">", ct, local(Role::sum, out), row_element(input),
          [=, this](const ExprPtr& sum) { add(kir::decl(ct, first_mean, kir::binary(sum, "/", count))); }};
}

std::vector<KernelLowering::Accumulation> KernelLowering::variance_spread(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const ValueId mean_out = op.outs.size() > 1 ? op.outs[1] : kNoValue;
  const std::string comment = print_op(op, t_, false), ct = ctype(t_.value(input).dtype);
  const ExprPtr count = count_as(ct, row_length());
  const std::string first_mean = local(Role::mean, out), deviations = local(Role::deviation, out);
  const Arg correction = op.arg("correction");
  auto element = row_element(input);
  auto deviation = [=] { return kir::paren(kir::binary(element(), "-", var(first_mean))); };
  Accumulation sum_of_deviations{comment + " (pass 2: deviations from the mean)", "tg::Sum<" + ct + ">", ct, deviations, deviation,
                                 [=, this](const ExprPtr& total) {
                                   if (total->kind != kir::Expr::Kind::name || total->text != deviations) add(kir::assign(var(deviations), total));
                                 }};
  Accumulation sum_of_squares{comment + " (pass 2: squared deviations)", "tg::Sum<" + ct + ">", ct, local(Role::m2, out),
                              [=] {
                                const ExprPtr d = deviation();
                                return kir::binary(d, "*", d);
                              },
                              [=, this](const ExprPtr& m2) {
                                const ExprPtr d = var(deviations);
                                const ExprPtr c = operand(correction, layout_.outer_index(), t_.value(input).dtype);
                                const ExprPtr spread = kir::binary(m2, "-", kir::binary(kir::binary(d, "*", d), "/", count));
                                const ExprPtr variance = kir::call("tg::maximum", {spread, kir::call(ct, {kir::integer(0)})});
                                declare_reduced(out, kir::binary(variance, "/", kir::paren(kir::binary(count, "-", c))));
                                if (mean_out != kNoValue) declare_reduced(mean_out, kir::binary(var(first_mean), "+", kir::binary(d, "/", count)));
                              }};
  return {sum_of_deviations, sum_of_squares};
}

// sum(where(iota == t, e, 0)) over the row: e at t when t is in the row, else 0, a load rather
// than a pass. (The sum's +0 start would turn a -0 into +0; this keeps the -0.)
void KernelLowering::pick(const KernelPlan::Step& step) {
  const ValueId out = step.result, target = step.target, picked = step.operand;
  const int64_t dim = layout_.reduced.at(0);
  const Dim& length = layout_.domain[size_t(dim)];  // (a size parameter where taken at run time)
  comment(print_op(*producer_.at(out), t_, false) + " (element " + t_.value(target).name + " of the row: a load, no pass)");
  const std::string at = unique_local(local(Role::target, out)), result = fresh_name(out);
  const ExprPtr target_value = value_expr(target, layout_.outer_index());
  add(kir::decl("int64_t", at, target_value));
  add(kir::decl(ctype(t_.value(out).dtype), result, kir::integer(0), false));
  Index index = identity_index(layout_.domain.size());
  index[size_t(dim)] = IndexComp::of_expr(IndexExpr::named(at, 0, sizes_.largest(length) - 1));
  push();
  const ExprPtr value = value_expr(picked, index);
  add(kir::assign(var(result), value));
  const ExprPtr in_row = kir::binary(kir::binary(kir::integer(0), "<=", var(at)), "&&", kir::binary(var(at), "<", kir::index(sizes_.size(length))));
  add(kir::branch(in_row, pop()));
  reduced_[out] = result;
}

// The totals of a pass's accumulations across the block (two at a time sharing one reduction's
// barriers, tg::block_reduce2), or across a column kernel's 32 parts of each row.
void KernelLowering::combine_across_block(const std::vector<Accumulation>& pass) {
  for (size_t i = 0; i < pass.size(); ++i) {
    const Accumulation& a = pass[i];
    if (column_tile_ > 1) {
      a.finish(column_total(a.reducer, a.acc_name));
    } else if (i + 1 < pass.size()) {
      const Accumulation& b = pass[++i];
      add(kir::eval(kir::reduce("block", {a.reducer, b.reducer}, {var(a.acc_name), var(b.acc_name)})));
      a.finish(var(a.acc_name));
      b.finish(var(b.acc_name));
    } else {
      a.finish(kir::reduce("block", {a.reducer}, {var(a.acc_name)}));
    }
  }
}

// The plan's rounds: each computes its picks, then passes over the row once for its
// accumulations, writing the row outputs it carries (and adding the row to the partial sums).
void KernelLowering::reduction_rounds() {
  for (const KernelPlan::Round& round : plan_.rounds) reduction_round(round);
}

void KernelLowering::reduction_round(const KernelPlan::Round& round) {
  std::vector<Accumulation> pass;
  for (const KernelPlan::Step& step : round.steps)
    for (Accumulation& a : accumulations(step)) pass.push_back(std::move(a));
  if (pass.empty() && round.writes.empty() && !round.part_sums) return;
  for (const Accumulation& a : pass) {
    comment(a.comment);
    add(kir::decl(a.acc_type, a.acc_name, kir::call(a.reducer + "::init", {}), false));
  }
  if (!pass.empty() && !round.writes.empty()) comment("... and write the row's outputs that need no reduction");
  if (pass.empty())
    comment(!round.part_sums ? "write the row" : round.writes.empty() ? "add the row to the block's partial sums" : "write the row, and add it to the block's partial sums");
  pass_writing(round.writes, [&] {
    for (const Accumulation& a : pass) {
      const ExprPtr element = a.element();
      add(kir::assign(var(a.acc_name), kir::call(a.reducer + "::combine", {var(a.acc_name), element})));
    }
    if (round.part_sums) add_to_part_sums();
  });
  combine_across_block(pass);
}

// The loop over a block's rows: 32 neighbours, thread t on row t % 32, every thread of a block
// the same iterations. Where the rows are not a multiple of 32 at every size, the loop is over
// tiles of 32 rows, and in the last one the threads past the rows take the last row again (reading
// only what is there; store_row_results stores none of theirs).
kir::Stmt KernelLowering::column_row_loop(Block body) const {
  const ExprPtr block_start = kir::binary(index_cast(var("blockIdx.x")), "*", kir::integer(32));
  const ExprPtr step = kir::binary(index_cast(var("gridDim.x")), "*", kir::integer(32));
  if (!column_tail())
    return kir::loop(index_type_, "row", kir::binary(block_start, "+", kir::binary(var("threadIdx.x"), "%", kir::integer(32))), var("rows"), step, std::move(body));
  const ExprPtr own_row = column_tile_row();
  Block tile = {kir::decl(index_type_, "row", kir::select(kir::binary(own_row, "<", var("rows")), own_row, kir::binary(var("rows"), "-", kir::integer(1))))};
  tile.insert(tile.end(), body.begin(), body.end());
  return kir::loop(index_type_, "tile", block_start, var("rows"), step, std::move(tile));
}

bool KernelLowering::column_tail() const {
  return column_tile_ > 1 && count_is_parameter() && !provably_divisible(*count().expr(), column_tile_, t_.symbols);
}

kir::ExprPtr KernelLowering::column_tile_row() {
  return kir::binary(var("tile"), "+", kir::binary(var("threadIdx.x"), "%", kir::integer(32)));
}

// The total of a row's accumulator over the threads sharing the row: its 32 parts combined
// in a fixed order through shared memory.
kir::ExprPtr KernelLowering::column_total(const std::string& reducer, const std::string& acc) {
  return kir::reduce("column", {reducer}, {var(acc)});
}

}  // namespace tg::lower
