#!/usr/bin/env python3
"""remat_oracle.py THUNDER_GEN TRACE...: the time model's frontier against an exact solver.

For each trace of at most 300 ops, `thunder-gen explain --frontier --json --remat-objective time`
gives the frontier and the cut problem behind it (each value's activation bytes and saving time,
each forward op's recomputing time, in femtoseconds). HiGHS then solves the plan as an MILP
(Checkmate's formulation for one backward: a value is available when saved, or when its op is
recomputed from available values; the values the backward reads must be available) for the
fastest plan within each frontier plan's bytes, and within budgets halfway between two of them.
Checks, per trace:
- every frontier plan, and the plan --activation-budget gives at each halfway budget, is at most
  5% slower (the whole step, as predicted) than the optimum, and the budget holds;
- with --exact (CBC in thunder-gen), the plan at each halfway budget is HiGHS's optimum;
- without --frontier (the sweep then skips corners the choice cannot take), the same plans;
- no plan is faster than the optimum (the solver and the planner price plans alike);
- the frontier is monotone: bytes falling, predicted time rising;
- the chosen plan is on it: the fewest bytes within 1% of the fastest step, and predicted no
  slower than the plan by bytes alone.
All of that with --price-plans cut, the cut's own choice. Then the default, each candidate plan's
kernels priced (--price-plans kernels): the priced frontier monotone in the kernels' step, the
chosen plan on it by the same rule, never slower than the plan by bytes nor saving more than saving
everything the backward reads, priced as the kernels
explain lists add up, and at each halfway budget no slower than a listed plan that fits.
Prints one line per trace and the worst gap. Exits 1 on a failed check.
"""
import json
import re
import subprocess
import sys

import highspy
import numpy as np

MAX_OPS = 300
TOLERANCE = 1.05


def frontier_of(gen, trace, *flags, pricing=("--price-plans", "cut")):
    out = subprocess.run([gen, "explain", trace, "--frontier", "--json", "--remat-objective", "time", *pricing, *flags],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def predicted_without_listing(gen, trace, *flags):
    """The chosen plan's predicted step as plain explain prints it: the sweep then looks only
    where the choice can fall (FrontierFocus), so this must be the listing's plan."""
    out = subprocess.run([gen, "explain", trace, "--remat-objective", "time", "--price-plans", "cut", *flags], capture_output=True, text=True, check=True).stdout
    return float(re.search(r"the planner.s estimate of the step \(forward \+ backward\): ([0-9.e+-]+) us", out).group(1))


def kernels_step(plan):
    return plan["kernels_us"]["step"]


def check_priced(gen, trace):
    """The default pricing (--price-plans kernels): the frontier of the priced plans, the rules on
    their kernels' predicted steps, and the prices those of the kernels explain lists."""
    doc, failures = frontier_of(gen, trace, pricing=()), []
    frontier, chosen, by_bytes = doc["frontier"], doc["chosen"], doc["bytes_first"]
    if any(p["kernels_us"] is None for p in frontier + [by_bytes, doc["plan"]]):
        return [f"{trace}: priced: a plan without its kernels' price ({doc.get('kernels_note')})"]
    for a, b in zip(frontier, frontier[1:]):
        if not (b["activation_bytes"] < a["activation_bytes"] and kernels_step(b) > kernels_step(a)):
            failures.append(f"{trace}: priced: not monotone: {a['activation_bytes']} B {kernels_step(a)} us, then {b['activation_bytes']} B {kernels_step(b)} us")
    if not 0 <= chosen < len(frontier):
        return failures + [f"{trace}: priced: the chosen plan ({chosen}) is not on the frontier"]
    save_all = sum(v["bytes"] for v in doc["problem"]["values"] if v["needed"] and not v["input"])
    if doc["plan"]["activation_bytes"] > save_all:
        failures.append(f"{trace}: priced: the plan saves {doc['plan']['activation_bytes']} bytes, more than saving all the backward reads ({save_all})")
    fastest = min(kernels_step(p) for p in frontier)
    limit = min(fastest * 1.01, kernels_step(by_bytes)) * (1 + 1e-12)
    rule = max(i for i, p in enumerate(frontier) if kernels_step(p) <= limit)
    if chosen != rule:
        failures.append(f"{trace}: priced: chose plan {chosen}, the rule says {rule}")
    if kernels_step(frontier[chosen]) > kernels_step(by_bytes) * (1 + 1e-12):
        failures.append(f"{trace}: priced: the chosen plan's kernels are predicted slower than the plan by bytes'")
    listing = subprocess.run([gen, "explain", trace, "--remat-objective", "time"], capture_output=True, text=True, check=True).stdout
    step = float(re.search(r"^predicted step: .* = ([0-9.]+) us$", listing, re.M).group(1))
    if abs(step - kernels_step(doc["plan"])) > 0.0015:
        failures.append(f"{trace}: priced: the plan's price {kernels_step(doc['plan'])} us, its kernels listed at {step} us")
    for a, b in zip(frontier, frontier[1:]):  # a budget: the fastest priced plan that fits
        budget = (a["activation_bytes"] + b["activation_bytes"]) // 2
        plan = frontier_of(gen, trace, "--activation-budget", str(budget), pricing=())["plan"]
        fits = min(kernels_step(p) for p in frontier + [by_bytes] if p["activation_bytes"] <= budget)
        if plan["activation_bytes"] > budget or kernels_step(plan) > fits * (1 + 1e-12):
            failures.append(f"{trace}: priced: --activation-budget {budget}: {plan}, a plan that fits is priced {fits} us")
    return failures


def fastest_within(problem, budget):
    """The least plan time (femtoseconds, without the fixed part) saving at most `budget` bytes."""
    values, ops = problem["values"], problem["ops"]
    nv, nx = len(values), len(ops)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 1e-9)
    inf = highspy.kHighsInf
    # Columns: saved[v], available[v], recomputed[x]. Times in microseconds keep HiGHS's numbers tame.
    for v in values:
        cost = 0.0 if v["save_fs"] is None else v["save_fs"] / 1e9
        h.addVar(0, 0 if v["save_fs"] is None else 1)
        h.changeColCost(h.getNumCol() - 1, cost)
    for v in values:
        h.addVar(1 if v["needed"] else 0, 1)
    for x in ops:
        h.addVar(0, 0 if x["recompute_fs"] is None else 1)
        h.changeColCost(h.getNumCol() - 1, 0.0 if x["recompute_fs"] is None else x["recompute_fs"] / 1e9)
    h.changeColsIntegrality(2 * nv + nx, np.arange(2 * nv + nx, dtype=np.int32), np.full(2 * nv + nx, highspy.HighsVarType.kInteger))
    defined_by = {}
    for i, x in enumerate(ops):
        for v in x["outputs"]:
            defined_by[v] = i
    for v in range(nv):  # available <= saved + recomputed(def)
        idx, val = [nv + v, v], [1.0, -1.0]
        if v in defined_by:
            idx.append(2 * nv + defined_by[v])
            val.append(-1.0)
        h.addRow(-inf, 0, len(idx), np.array(idx, dtype=np.int32), np.array(val))
    for i, x in enumerate(ops):  # recomputed <= available(each input)
        for u in set(x["inputs"]):
            h.addRow(-inf, 0, 2, np.array([2 * nv + i, nv + u], dtype=np.int32), np.array([1.0, -1.0]))
    h.addRow(-inf, budget, nv, np.arange(nv, dtype=np.int32), np.array([float(v["bytes"]) for v in values]))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal, h.modelStatusToString(h.getModelStatus())
    return h.getInfo().objective_function_value * 1e9


def check(gen, trace):
    doc = frontier_of(gen, trace)
    if not doc["frontier"]:
        return None, [f"{trace}: not checked: {doc['note']}"]
    problem, frontier, chosen = doc["problem"], doc["frontier"], doc["chosen"]
    if len(problem["ops"]) > MAX_OPS:
        return None, [f"{trace}: not checked: {len(problem['ops'])} forward ops, past {MAX_OPS}"]
    failures, worst = [], 1.0
    fixed_us = problem["fixed_fs"] / 1e9
    for a, b in zip(frontier, frontier[1:]):
        if not (b["activation_bytes"] < a["activation_bytes"] and b["predicted_us"] > a["predicted_us"]):
            failures.append(f"{trace}: not monotone: {a['activation_bytes']} B {a['predicted_us']} us, then {b['activation_bytes']} B {b['predicted_us']} us")
    for plan in frontier:
        optimum_us = fixed_us + fastest_within(problem, plan["activation_bytes"]) / 1e9
        gap = plan["predicted_us"] / optimum_us
        worst = max(worst, gap)
        if gap > TOLERANCE:
            failures.append(f"{trace}: at {plan['activation_bytes']} bytes the plan takes {plan['predicted_us']:.3f} us, the optimum {optimum_us:.3f}")
        if plan["predicted_us"] < optimum_us * (1 - 1e-6):
            failures.append(f"{trace}: a plan faster than the optimum ({plan['predicted_us']} < {optimum_us}): the two price plans differently")
    # Budgets between two frontier plans: --activation-budget takes the fastest plan that fits.
    for a, b in zip(frontier, frontier[1:]):
        budget = (a["activation_bytes"] + b["activation_bytes"]) // 2
        plan = frontier_of(gen, trace, "--activation-budget", str(budget))["plan"]
        optimum_us = fixed_us + fastest_within(problem, budget) / 1e9
        gap = plan["predicted_us"] / optimum_us
        worst = max(worst, gap)
        if plan["activation_bytes"] > budget:
            failures.append(f"{trace}: --activation-budget {budget}: the plan saves {plan['activation_bytes']} bytes")
        if gap > TOLERANCE:
            failures.append(f"{trace}: --activation-budget {budget}: {plan['predicted_us']:.3f} us, the optimum {optimum_us:.3f}")
        if abs(predicted_without_listing(gen, trace, "--activation-budget", str(budget)) - plan["predicted_us"]) > 1e-5 * plan["predicted_us"]:
            failures.append(f"{trace}: --activation-budget {budget}: another plan when the frontier is not listed")
        exact = frontier_of(gen, trace, "--activation-budget", str(budget), "--exact")["plan"]
        if abs(exact["predicted_us"] - optimum_us) > 1e-6 * optimum_us or exact["activation_bytes"] > budget:
            failures.append(f"{trace}: --exact --activation-budget {budget}: {exact}, HiGHS's optimum {optimum_us:.6f} us")
    if abs(predicted_without_listing(gen, trace) - doc["plan"]["predicted_us"]) > 1e-5 * doc["plan"]["predicted_us"]:
        failures.append(f"{trace}: another plan when the frontier is not listed")
    if not 0 <= chosen < len(frontier):
        failures.append(f"{trace}: the chosen plan ({chosen}) is not on the frontier")
    else:
        pick = frontier[chosen]
        # The default rule: the fewest bytes within 1% of the fastest step, none slower than by bytes.
        within = [i for i, p in enumerate(frontier)
                  if p["predicted_us"] <= frontier[0]["predicted_us"] * 1.01 * (1 + 1e-12) and p["predicted_us"] <= doc["bytes_first"]["predicted_us"] * (1 + 1e-12)]
        if chosen != within[-1]:
            failures.append(f"{trace}: chose plan {chosen}, the rule says {within[-1]}")
        if pick["predicted_us"] > doc["bytes_first"]["predicted_us"] * (1 + 1e-9):
            failures.append(f"{trace}: the chosen plan is predicted slower than the plan by bytes alone")
    failures += check_priced(gen, trace)
    return worst, failures + [f"{trace}: {len(problem['ops'])} forward ops, {len(frontier)} plans, worst {100 * (worst - 1):.2f}% from the optimum"]


def main():
    gen, traces = sys.argv[1], sys.argv[2:]
    failed, worst_all, checked = False, 1.0, 0
    for trace in traces:
        worst, lines = check(gen, trace)
        for line in lines:
            print(("FAIL " if "worst" not in line and "not checked" not in line else "ok ") + line)
        failed |= any("worst" not in l and "not checked" not in l for l in lines)
        if worst is not None:
            worst_all, checked = max(worst_all, worst), checked + 1
    print(f"{checked} traces checked against HiGHS; the worst frontier plan {100 * (worst_all - 1):.2f}% slower than the optimum at its bytes")
    sys.exit(1 if failed or checked == 0 else 0)


if __name__ == "__main__":
    main()
