// KernelWriter, a row kernel's reductions: each an accumulation over the row, combined across the
// block; passes over the row until all are done (and the forms that need no pass of their own).
#include <algorithm>

#include "codegen/emit_kernel.h"
#include "ops/printer.h"
#include "support/diagnostics.h"

namespace tg::emit {

std::string KernelWriter::acc_type(DType t) {
  return is_float(t) ? ctype(t) : "int64_t";
}

// Declares v, a reduction's result, as `expr`.
void KernelWriter::declare_reduced(ValueId v, const std::string& expr) {
  std::string var = fresh_name(v);
  line("const " + ctype(t_.value(v).dtype) + " " + var + " = " + expr + ";");
  reduced_[v] = var;
}

// A reduction's input at the row's element j.
std::function<std::string()> KernelWriter::row_element(ValueId input) {
  return [this, input] { return value_at(input, identity_index(layout_.domain.size())); };
}

// The accumulations a step of the plan adds to its pass (none for a pick, computed at once).
std::vector<KernelWriter::Accumulation> KernelWriter::accumulations(const KernelPlan::Step& step) {
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

KernelWriter::Accumulation KernelWriter::accumulate(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const DType in_dtype = t_.value(input).dtype;
  const std::string comment = print_op(op, t_, false), ct = ctype(in_dtype);
  const OpKind kind = op.info->kind;
  if (kind == OpKind::argmax || kind == OpKind::argmin) {
    const std::string pair = "tg::ArgPair<" + ct + ">", reducer = "tg::ArgBest<" + ct + ", " + (kind == OpKind::argmax ? "true" : "false") + ">";
    auto element = row_element(input);
    return {comment, reducer, pair, local(Role::accumulator, out),
            [=, this] { return pair + "{" + as_stored(element(), in_dtype, Arg::of_value(input)) + ", j}"; },
            [=, this](const std::string& total) { declare_reduced(out, total + ".index"); }};
  }
  const bool extreme = kind == OpKind::amax || kind == OpKind::amin;
  const std::string acc = extreme ? ct : acc_type(in_dtype);
  const char* which = kind == OpKind::sum ? "Sum" : kind == OpKind::prod ? "Prod" : kind == OpKind::amax ? "Max" : "Min";
  TG_CHECK(kind == OpKind::sum || kind == OpKind::prod || extreme, "not a reduction: " + op.symbol);
  return {comment, std::string("tg::") + which + "<" + acc + ">", acc, local(Role::accumulator, out), row_element(input),
          [=, this](const std::string& total) { declare_reduced(out, acc == ct ? total : "static_cast<" + ct + ">(" + total + ")"); }};
}

// amax(x) and sum(exp(x - broadcast(amax(x)))) in one accumulation (tg::OnlineSumExp): the max is
// exact as before; the sum rounds differently (rescaled partial sums).
KernelWriter::Accumulation KernelWriter::online_max_sum(const KernelPlan::Step& step) {
  const ValueId x = step.operand, max = step.result, total = step.joined;
  const std::string ct = ctype(t_.value(x).dtype), reducer = "tg::OnlineSumExp<" + ct + ">";
  const std::string comment = print_op(*producer_.at(max), t_, false) + ", and " + print_op(*producer_.at(total), t_, false) + " (online: one pass for both)";
  auto element = row_element(x);
  return {comment, reducer, "tg::MaxSum<" + ct + ">", local(Role::accumulator, max), [=] { return reducer + "::of(" + element() + ")"; },
          [=, this](const std::string& both) {
            const std::string var = unique_local(local(Role::max_and_sum, max));
            line("const tg::MaxSum<" + ct + "> " + var + " = " + both + ";");
            declare_reduced(max, var + ".max");
            declare_reduced(total, reducer + "::sum_of(" + var + ")");
          }};
}

// var and var_mean: the corrected two-pass algorithm. Pass 1 sums the row for a first mean; pass 2
// sums the deviations from it and their squares. The deviations' sum is the first mean's rounding
// error times n: adding it back makes the mean exact where PyTorch's Welford mean is (a constant
// row's mean is the constant, so layer_norm gives 0 there, not (x - mean) * rstd of a rounding error).
KernelWriter::Accumulation KernelWriter::variance_mean(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const std::string ct = ctype(t_.value(input).dtype), n = ct + "(" + std::to_string(numel(layout_.reduced_shape())) + ")";
  const std::string first_mean = local(Role::mean, out);
  return {print_op(op, t_, false) + " (pass 1: mean)", "tg::Sum<" + ct + ">", ct, local(Role::sum, out), row_element(input),
          [=, this](const std::string& sum) { line("const " + ct + " " + first_mean + " = " + sum + " / " + n + ";"); }};
}

std::vector<KernelWriter::Accumulation> KernelWriter::variance_spread(const Op& op) {
  const ValueId input = op.arg("a").value, out = op.outs[0];
  const ValueId mean_out = op.outs.size() > 1 ? op.outs[1] : kNoValue;
  const std::string comment = print_op(op, t_, false), ct = ctype(t_.value(input).dtype);
  const std::string n = ct + "(" + std::to_string(numel(layout_.reduced_shape())) + ")";
  const std::string first_mean = local(Role::mean, out), deviations = local(Role::deviation, out);
  const Arg correction = op.arg("correction");
  auto element = row_element(input);
  auto deviation = [=] { return "(" + element() + " - " + first_mean + ")"; };
  Accumulation sum_of_deviations{comment + " (pass 2: deviations from the mean)", "tg::Sum<" + ct + ">", ct, deviations, deviation,
                                 [=, this](const std::string& total) {
                                   if (total != deviations) line(deviations + " = " + total + ";");
                                 }};
  Accumulation sum_of_squares{comment + " (pass 2: squared deviations)", "tg::Sum<" + ct + ">", ct, local(Role::m2, out),
                              [=] {
                                std::string d = deviation();
                                return d + " * " + d;
                              },
                              [=, this](const std::string& m2) {
                                const std::string& d = deviations;
                                std::string c = operand(correction, layout_.outer_index(), t_.value(input).dtype);
                                declare_reduced(out, "tg::maximum(" + m2 + " - " + d + " * " + d + " / " + n + ", " + ct + "(0)) / (" + n + " - " + c + ")");
                                if (mean_out != kNoValue) declare_reduced(mean_out, first_mean + " + " + d + " / " + n);
                              }};
  return {sum_of_deviations, sum_of_squares};
}

// sum(where(iota == t, e, 0)) over the row: e at t when t is in the row, else 0, a load rather
// than a pass. (The sum's +0 start would turn a -0 into +0; this keeps the -0.)
void KernelWriter::pick(const KernelPlan::Step& step) {
  const ValueId out = step.result, target = step.target, picked = step.operand;
  const int64_t dim = layout_.reduced.at(0), length = layout_.domain[size_t(dim)];
  comment(print_op(*producer_.at(out), t_, false) + " (element " + t_.value(target).name + " of the row: a load, no pass)");
  const std::string at = unique_local(local(Role::target, out)), var = fresh_name(out);
  line("const int64_t " + at + " = " + value_at(target, layout_.outer_index()) + ";");
  line(ctype(t_.value(out).dtype) + " " + var + " = 0;");
  line("if (0 <= " + at + " && " + at + " < " + std::to_string(length) + ") {");
  Index index = identity_index(layout_.domain.size());
  index[size_t(dim)] = IndexComp::of_expr(IndexExpr::named(at, 0, length - 1));
  push(scopes_.back().indent + "  ");
  line(var + " = " + value_at(picked, index) + ";");
  const std::string assign = pop();
  scopes_.back().code += assign;
  line("}");
  reduced_[out] = var;
}

// The totals of a pass's accumulations across the block (two at a time sharing one reduction's
// barriers, tg::block_reduce2), or across a column kernel's 32 parts of each row.
void KernelWriter::combine_across_block(const std::vector<Accumulation>& pass) {
  for (size_t i = 0; i < pass.size(); ++i) {
    const Accumulation& a = pass[i];
    if (column_tile_ > 1) {
      a.finish(column_total(a.reducer, a.acc_name));
    } else if (i + 1 < pass.size()) {
      const Accumulation& b = pass[++i];
      line("tg::block_reduce2<" + a.reducer + ", " + b.reducer + ">(" + a.acc_name + ", " + b.acc_name + ");");
      a.finish(a.acc_name);
      b.finish(b.acc_name);
    } else {
      a.finish("tg::block_reduce<" + a.reducer + ">(" + a.acc_name + ")");
    }
  }
}

// The plan's rounds: each computes its picks, then passes over the row once for its
// accumulations, writing the row outputs it carries (and adding the row to the partial sums).
void KernelWriter::reduction_rounds() {
  for (const KernelPlan::Round& round : plan_.rounds) {
    std::vector<Accumulation> pass;
    for (const KernelPlan::Step& step : round.steps)
      for (Accumulation& a : accumulations(step)) pass.push_back(std::move(a));
    if (pass.empty() && round.writes.empty() && !round.part_sums) continue;
    for (const Accumulation& a : pass) {
      comment(a.comment);
      line(a.acc_type + " " + a.acc_name + " = " + a.reducer + "::init();");
    }
    if (!pass.empty() && !round.writes.empty()) comment("... and write the row's outputs that need no reduction");
    if (pass.empty()) comment(!round.part_sums ? "write the row" : round.writes.empty() ? "add the row to the block's partial sums" : "write the row, and add it to the block's partial sums");
    pass_writing(round.writes, [&] {
      for (const Accumulation& a : pass) line(a.acc_name + " = " + a.reducer + "::combine(" + a.acc_name + ", " + a.element() + ");");
      if (round.part_sums) add_to_part_sums();
    });
    combine_across_block(pass);
  }
}

}  // namespace tg::emit
