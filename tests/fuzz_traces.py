#!/usr/bin/env python3
"""fuzz_traces.py THUNDER_GEN [--seed N] [--runs N] TRACE...: mutation tests of bad input.

Each run takes one of the traces, changes one node of its JSON at random (deletes an object key,
repeats a list element, or puts another value in its place: null, 0, -1, a huge or fractional
number, NaN, a name, a dtype, an empty or short list, an object, a neighbouring integer, a list
one shorter or one longer...) and runs `thunder-gen TRACE -o OUT`. A run fails the test when
thunder-gen dies of a signal, runs past 30 s, exits with a code other than 0 or 1, reports an
internal error, exits 1 without an "error:" diagnostic that starts with the file's name, or
leaves OUT behind after exiting 1.
The seed makes the mutations the same on every run; failing inputs are kept in the work folder
(printed) to be turned into tests/bad cases.
"""
import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile


def nodes(j, path=()):
    yield path, j
    if isinstance(j, dict):
        for k, v in j.items():
            yield from nodes(v, path + (k,))
    elif isinstance(j, list):
        for i, v in enumerate(j):
            yield from nodes(v, path + (i,))


def other_value(rng, old):
    choices = [None, 0, -1, 1, 2**62, -2**63, 1.5, float("nan"), "", "x", "t0", "f32", "bf16", [], [0], [-1], [1, 2], {},
               {"name": "q"}, True]
    if isinstance(old, int) and not isinstance(old, bool):
        choices += [old + 1, old - 1, -old, old * 1000003]
    if isinstance(old, list) and old:
        choices += [old[:-1], old + [old[-1]], list(reversed(old))]
    if isinstance(old, str):
        choices += [old + "_", old.upper(), old[:-1]]
    return rng.choice(choices)


def mutate(rng, trace):
    """Changes one node of `trace` in place; returns what it did, for the report."""
    path = rng.choice([p for p, _ in nodes(trace) if p])
    parent = trace
    for key in path[:-1]:
        parent = parent[key]
    last, where = path[-1], "/" + "/".join(map(str, path))
    draw = rng.random()
    if draw < 0.2 and isinstance(parent, dict):
        del parent[last]
        return f"{where}: deleted"
    if draw < 0.3 and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
        return f"{where}: repeated"
    parent[last] = other_value(rng, parent[last])
    return f"{where}: = {json.dumps(parent[last])[:40]}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("thunder_gen")
    p.add_argument("traces", nargs="+")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--runs", type=int, default=400)
    a = p.parse_args()
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="tg_fuzz_")
    failures, exits = 0, {0: 0, 1: 0}
    for run in range(a.runs):
        source = rng.choice(sorted(a.traces))
        with open(source) as f:
            trace = json.load(f)
        what = mutate(rng, trace)
        case = os.path.join(work, "case.json")
        with open(case, "w") as f:
            json.dump(trace, f)  # (NaN is written as NaN: the reader must refuse it)
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        try:
            r = subprocess.run([a.thunder_gen, case, "-o", out], capture_output=True, text=True, timeout=30)
            code, stderr = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            code, stderr = "timeout", ""
        if code in exits:
            exits[code] += 1
        problem = None
        if code not in (0, 1):
            problem = f"exit {code}"
        elif "internal error" in stderr.lower():
            problem = "internal error"
        elif code == 1 and not (stderr.startswith(case + ":") and "error:" in stderr):
            problem = "no diagnostic naming the file"
        elif code == 1 and os.path.exists(out):
            problem = "output folder left after a failure"
        if problem:
            failures += 1
            kept = os.path.join(work, f"failure_{run}.json")
            shutil.copy(case, kept)
            print(f"FAIL run {run}: {problem}: {os.path.basename(source)} {what} (kept as {kept})\n    {stderr.strip()[-300:]}")
    print(f"fuzz_traces: seed {a.seed}: {a.runs} mutated traces, {exits[0]} generated, {exits[1]} refused with a diagnostic")
    print(f"{a.runs - failures} passed, {failures} failed")
    if not failures:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
