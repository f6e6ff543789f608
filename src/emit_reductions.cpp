// KernelWriter, a row kernel's reductions: each an accumulation over the row, combined across the
// block; passes over the row until all are done (and the forms that need no pass of their own).
#include <algorithm>

#include "emit_kernel.h"
#include "printer.h"
#include "thunder_gen/diagnostics.h"

namespace tg::emit {

std::string KernelWriter::acc_type(DType t) {
  return is_float(t) ? ctype(t) : "int64_t";
}

// The reductions of this kernel whose results computing v reads (v itself, if one).
std::set<ValueId> KernelWriter::reductions_needed(ValueId v) {
  std::set<ValueId> out;
  std::vector<ValueId> stack = {v};
  std::set<ValueId> seen;
  while (!stack.empty()) {
    ValueId x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second || loaded_.count(x)) continue;
    auto p = producer_.find(x);
    if (p == producer_.end()) continue;
    if (p->second->info->fusion == FusionClass::reduction) {
      out.insert(x);
      continue;
    }
    for_each_value(*p->second, [&](ValueId a) { stack.push_back(a); });
  }
  return out;
}

void KernelWriter::reduction(const Op& op) {
  const Value& in = t_.value(op.arg(0).value);
  const std::string comment = print_op(op, t_, false);
  const std::string ct = ctype(in.dtype);
  const ValueId input = op.arg(0).value;
  auto element = [this, input] { return value_at(input, identity_index(layout_.domain.size())); };
  auto declare = [this](ValueId v, const std::string& expr) {
    std::string var = fresh_name(v);
    line("const " + ctype(t_.value(v).dtype) + " " + var + " = " + expr + ";");
    reduced_[v] = var;
  };
  const std::set<ValueId> needs = reductions_needed(input);
  const std::string rlen = std::to_string(numel(layout_.reduced_shape()));
  const ValueId out = op.outs[0];
  if (op.info->kind == OpKind::sum && (join_online_max(op, declare) || pick_instead_of_sum(op))) return;
  switch (op.info->kind) {
    case OpKind::sum:
    case OpKind::prod:
    case OpKind::amax:
    case OpKind::amin: {
      std::string acc = (op.info->kind == OpKind::amax || op.info->kind == OpKind::amin) ? ct : acc_type(in.dtype);
      const char* which = op.info->kind == OpKind::sum ? "Sum" : op.info->kind == OpKind::prod ? "Prod" : op.info->kind == OpKind::amax ? "Max" : "Min";
      pending_.push_back({comment, std::string("tg::") + which + "<" + acc + ">", acc, local(Role::accumulator, out), element,
                          [=](const std::string& total) { declare(out, acc == ct ? total : "static_cast<" + ct + ">(" + total + ")"); }, needs});
      break;
    }
    case OpKind::argmax:
    case OpKind::argmin: {
      std::string reducer = "tg::ArgBest<" + ct + ", " + (op.info->kind == OpKind::argmax ? "true" : "false") + ">";
      pending_.push_back({comment, reducer, "tg::ArgPair<" + ct + ">", local(Role::accumulator, out),
                          [=, this, in_dtype = in.dtype] {
                            return "tg::ArgPair<" + ct + ">{" + as_stored(element(), in_dtype, Arg::of_value(input)) + ", j}";
                          },
                          [=](const std::string& total) { declare(out, total + ".index"); }, needs});
      break;
    }
    case OpKind::var:
    case OpKind::var_mean:
      variance_passes(op, element, declare, needs);
      break;
    default:
      throw InternalError("not a reduction: " + op.symbol);
  }
}

// var and var_mean: the corrected two-pass algorithm. Pass 1 sums the row for a first mean; pass 2
// sums the deviations from it and their squares. The deviations' sum is the first mean's rounding
// error times n: adding it back makes the mean exact where PyTorch's Welford mean is (a constant
// row's mean is the constant, so layer_norm gives 0 there, not (x - mean) * rstd of a rounding error).
void KernelWriter::variance_passes(const Op& op, const std::function<std::string()>& element,
                                   const std::function<void(ValueId, const std::string&)>& declare,
                                   const std::set<ValueId>& needs) {
  const ValueId input = op.arg(0).value, out = op.outs[0];
  const ValueId mean_out = op.outs.size() > 1 ? op.outs[1] : kNoValue;
  const std::string comment = print_op(op, t_, false), ct = ctype(t_.value(input).dtype);
  const std::string n = ct + "(" + std::to_string(numel(layout_.reduced_shape())) + ")";
  const std::string first_mean = local(Role::mean, out), deviations = local(Role::deviation, out);
  const Arg correction = op.arg(2);
  auto deviation = [=] { return "(" + element() + " - " + first_mean + ")"; };
  auto second_pass = [=, this] {
    pending_.push_back({comment + " (pass 2: deviations from the mean)", "tg::Sum<" + ct + ">", ct, deviations, deviation,
                        [=, this](const std::string& total) {
                          if (total != deviations) line(deviations + " = " + total + ";");
                        },
                        needs});
    pending_.push_back({comment + " (pass 2: squared deviations)", "tg::Sum<" + ct + ">", ct, local(Role::m2, out),
                        [=] {
                          std::string d = deviation();
                          return d + " * " + d;
                        },
                        [=, this](const std::string& m2) {
                          const std::string& d = deviations;
                          std::string c = operand(correction, layout_.outer_index(), t_.value(input).dtype);
                          declare(out, "tg::maximum(" + m2 + " - " + d + " * " + d + " / " + n + ", " + ct + "(0)) / (" + n + " - " + c + ")");
                          if (mean_out != kNoValue) declare(mean_out, first_mean + " + " + d + " / " + n);
                        },
                        needs});
  };
  pending_.push_back({comment + " (pass 1: mean)", "tg::Sum<" + ct + ">", ct, local(Role::sum, out), element,
                      [=, this](const std::string& sum) {
                        line("const " + ct + " " + first_mean + " = " + sum + " / " + n + ";");
                        second_pass();
                      },
                      needs});
}

// The op of this kernel that computes argument a, if it is a `kind` op.
const Op* KernelWriter::made_by(const Arg& a, OpKind kind) const {
  if (!a.is_value()) return nullptr;
  auto p = producer_.find(a.value);
  return p != producer_.end() && p->second->info->kind == kind ? p->second : nullptr;
}

// sum(exp(x - broadcast(amax(x)))) after amax(x) in the same row kernel (softmax, log_softmax,
// cross-entropy): instead of a pass for the max and then one for the sum, one pass computes both
// (tg::OnlineSumExp), so the row is read and block-reduced once for them. The max is exact as
// before; the sum rounds differently (rescaled partial sums). `declare` names a result.
template <class Declare>
bool KernelWriter::join_online_max(const Op& sum, const Declare& declare) {
  if (column_tile_ > 1) return false;
  const Op* exp = made_by(sum.arg(0), OpKind::exp);
  const Op* sub = exp ? made_by(exp->arg(0), OpKind::sub) : nullptr;
  if (!sub || !sub->arg(0).is_value()) return false;
  const Op* bcast = made_by(sub->arg(1), OpKind::broadcast_in_dim);
  const Op* amax = bcast ? made_by(bcast->arg(0), OpKind::amax) : nullptr;
  if (!amax || !amax->arg(0).is_value() || amax->arg(0).value != sub->arg(0).value || !is_float(t_.value(amax->outs[0]).dtype)) return false;
  const ValueId x = sub->arg(0).value, max = amax->outs[0], total = sum.outs[0];
  const std::string max_acc = local(Role::accumulator, max);
  auto pending = std::find_if(pending_.begin(), pending_.end(), [&](const Accumulation& a) { return a.acc_name == max_acc; });
  if (pending == pending_.end()) return false;  // (another sum took it)
  const std::string ct = ctype(t_.value(x).dtype), reducer = "tg::OnlineSumExp<" + ct + ">";
  pending->comment += ", and " + print_op(sum, t_, false) + " (online: one pass for both)";
  pending->reducer = reducer;
  pending->acc_type = "tg::MaxSum<" + ct + ">";
  pending->element = [this, x, reducer] { return reducer + "::of(" + value_at(x, identity_index(layout_.domain.size())) + ")"; };
  pending->finish = [this, declare, max, total, ct, reducer](const std::string& both) {
    const std::string var = unique_local(local(Role::max_and_sum, max));
    line("const tg::MaxSum<" + ct + "> " + var + " = " + both + ";");
    declare(max, var + ".max");
    declare(total, reducer + "::sum_of(" + var + ")");
  };
  return true;
}

// sum(where(iota == t, e, 0)) over the row, t one index per row (cross-entropy's log-probability
// of the target, as Thunder decomposes it): only element t is not 0, so the sum is e at t, when t
// is in the row, else 0. Computed directly, a load rather than a pass over the row and a block
// reduction. (The sum's +0 start would turn a -0 into +0; this keeps the -0.)
bool KernelWriter::pick_instead_of_sum(const Op& sum) {
  if (column_tile_ > 1 || layout_.reduced.size() != 1) return false;
  const int64_t dim = layout_.reduced[0], length = layout_.domain[size_t(dim)];
  const Op* where = made_by(sum.arg(0), OpKind::where);
  if (!where || where->arg(2).is_value() || where->arg(2).as_double() != 0 || !is_float(t_.value(sum.outs[0]).dtype)) return false;
  const Op* eq = made_by(where->arg(0), OpKind::eq);
  if (!eq) return false;
  // One side of eq is iota(length, start=0, step=1) along the reduced dim, the other a per-row
  // value broadcast along it.
  auto is_position = [&](const Arg& a) {
    const Op* b = made_by(a, OpKind::broadcast_in_dim);
    const Op* iota = b ? made_by(b->arg(0), OpKind::iota) : nullptr;
    return iota && b->arg(2).int_list() == std::vector<int64_t>{dim} && iota->arg(0).integer == length && !iota->arg(1).is_value() &&
           iota->arg(1).integer == 0 && !iota->arg(2).is_value() && iota->arg(2).integer == 1;
  };
  auto per_row = [&](const Arg& a) -> ValueId {
    const Op* b = made_by(a, OpKind::broadcast_in_dim);
    if (!b || !b->arg(0).is_value() || b->arg(2).int_list() != layout_.outer) return kNoValue;
    return t_.value(b->arg(0).value).shape == layout_.outer_shape() ? b->arg(0).value : kNoValue;
  };
  ValueId target = kNoValue;
  if (is_position(eq->arg(0))) target = per_row(eq->arg(1));
  else if (is_position(eq->arg(1))) target = per_row(eq->arg(0));
  if (target == kNoValue || !is_integer(t_.value(target).dtype) || !where->arg(1).is_value()) return false;
  const ValueId picked = where->arg(1).value, out = sum.outs[0];
  std::set<ValueId> needs = reductions_needed(picked);
  for (ValueId v : reductions_needed(target)) needs.insert(v);
  Accumulation pick{print_op(sum, t_, false) + " (element " + t_.value(target).name + " of the row: a load, no pass)",
                    /*reducer=*/"", /*acc_type=*/"", /*acc_name=*/"", /*element=*/{}, /*finish=*/{}, needs};
  pick.direct = [=, this] {
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
  };
  pending_.push_back(std::move(pick));
  return true;
}

// Passes over the row until every reduction is done: each takes every pending accumulation
// whose inputs are ready, and `stores` (row outputs that need no reduction) ride on the first.
void KernelWriter::reduction_passes(std::vector<ValueId> stores) {
  while (!pending_.empty()) {
    std::vector<Accumulation> pass;
    for (size_t i = 0; i < pending_.size();) {
      bool ready = true;
      for (ValueId v : pending_[i].needs) ready = ready && reduced_.count(v);
      if (ready) {
        pass.push_back(std::move(pending_[i]));
        pending_.erase(pending_.begin() + long(i));
      } else {
        ++i;
      }
    }
    TG_CHECK(!pass.empty(), "kernel " + k_.label + ": reductions wait on each other");
    for (const Accumulation& a : pass)
      if (a.direct) {
        comment(a.comment);
        a.direct();
      }
    std::erase_if(pass, [](const Accumulation& a) { return bool(a.direct); });
    if (pass.empty()) continue;
    for (const Accumulation& a : pass) {
      comment(a.comment);
      line(a.acc_type + " " + a.acc_name + " = " + a.reducer + "::init();");
    }
    if (!stores.empty()) comment("... and write the row's outputs that need no reduction");
    pass_writing(stores, [&] {
      for (const Accumulation& a : pass) {
        std::string e = a.element();
        line(a.acc_name + " = " + a.reducer + "::combine(" + a.acc_name + ", " + e + ");");
      }
    });
    stores.clear();
    // Block-wide: two accumulators at a time share one reduction's barriers (tg::block_reduce2).
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
  if (!stores.empty()) pass_writing(stores, [] {});  // (no reduction at all)
}

}  // namespace tg::emit
