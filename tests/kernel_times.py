#!/usr/bin/env python3
"""kernel_times.py THUNDER_GEN WORK_DIR TRACE...: the kernels `explain` predicts, against what
generating the same trace emits and against the roofline worked by hand.

For each trace:
- explain's kernel tables name, in order, every launch manifest.json lists for forward.cu and
  backward.cu (kernels and library calls; views launch nothing), so the prediction is of the code
  a folder holds, and `--emit plan` prints the same text as explain;
- each row is its roofline (a collective's row says it is not priced) under devices/h200.json: memory = (read + written bytes) / copy
  bandwidth, predicted = launch + max(memory, arithmetic); each pass's total is the sum of its
  rows, and the step the sum of both.
Then, on traces written here, the numbers themselves: a memory-bound exp over f32[4096, 4096]
(64 MiB read and 64 MiB written), and f32 and bf16 GEMMs of 4096^3, compute-bound at their
dtype's peak (2*M*N*K flops).
Prints a line per trace; exits 1 on a failed check.
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEVICE = json.load(open(os.path.join(HERE, "..", "devices", "h200.json")))
ROW = re.compile(r"^\s+([0-9.]+|not priced)\s+(\S+)\s+(\d+)\s+(\d+)\s+([0-9.]+|-)\s+([0-9.]+|-)\s+(\S+)$")
PASS = re.compile(r"^(forward|backward): (\d+) launch(?:es)?, predicted ([0-9.]+) us$")
STEP = re.compile(r"^predicted step: forward ([0-9.]+) us \+ backward ([0-9.]+) us = ([0-9.]+) us$")
failures = []


def check(name, ok, what):
    if not ok:
        failures.append(f"{name}: {what}")
        print(f"FAIL {name}: {what}")


def tables(text):
    """{pass: {"total": us, "rows": [(us, kind, read, written, memory, arith, name)]}}, and the step line's numbers."""
    passes, current, step = {}, None, None
    for line in text.splitlines():
        if m := PASS.match(line):
            current = passes.setdefault(m.group(1), {"count": int(m.group(2)), "total": float(m.group(3)), "rows": []})
        elif (m := ROW.match(line)) and current is not None:
            us, kind, read, written, memory, arith, name = m.groups()
            if us == "not priced":  # communication: NCCL's calls, which the model leaves out
                check("listing", kind == "NCCL" and memory == arith == "-", line)
                us, memory, arith = 0, 0, 0
            current["rows"].append((float(us), kind, int(read), int(written), float(memory), float(arith), name))
        elif m := STEP.match(line):
            step = tuple(float(x) for x in m.groups())
    return passes, step


def close(a, b, tolerance=0.0015):  # the listing's three decimals, summed over at most a few dozen rows
    return abs(a - b) <= tolerance * max(1, len(str(int(b))))


def check_rows(name, passes, step):
    launch_us = DEVICE["launch_seconds"] * 1e6
    for pass_name, table in passes.items():
        check(name, table["count"] == len(table["rows"]), f"{pass_name}: {table['count']} launches counted, {len(table['rows'])} listed")
        for us, kind, read, written, memory, arith, kernel in table["rows"]:
            if kind == "NCCL":
                continue
            want_memory = (read + written) / DEVICE["copy_bytes_per_second"] * 1e6
            check(name, abs(memory - want_memory) <= 0.0011, f"{kernel}: memory {memory} us, the bytes give {want_memory:.4f}")
            check(name, abs(us - (launch_us + max(memory, arith))) <= 0.0021, f"{kernel}: {us} us is not launch + max({memory}, {arith})")
        if step and pass_name in ("forward", "backward"):
            stated = step[0] if pass_name == "forward" else step[1]
            check(name, abs(stated - table["total"]) <= 0.0011, f"{pass_name}: the step line says {stated}, the table {table['total']}")
        total = sum(row[0] for row in table["rows"])
        check(name, abs(total - table["total"]) <= 0.001 * len(table["rows"]) + 0.001, f"{pass_name}: total {table['total']}, rows sum to {total:.3f}")
    if "backward" in passes:
        check(name, step is not None, "no step line")
        if step:
            check(name, abs(step[0] + step[1] - step[2]) <= 0.002, f"step {step}")


def manifest_launches(folder):
    manifest = json.load(open(os.path.join(folder, "manifest.json")))
    launches = {"forward": [], "backward": []}
    for k in manifest["kernels"]:
        if "view_of" not in k:
            launches["forward" if k["file"] == "forward.cu" else "backward"].append(k["name"])
    return launches


def check_trace(gen, work, trace):
    name = os.path.basename(trace)
    explain = subprocess.run([gen, "explain", trace], capture_output=True, text=True)
    if explain.returncode != 0:
        return check(name, False, f"explain exits {explain.returncode}: {explain.stderr.strip()[:200]}")
    passes, step = tables(explain.stdout)
    check(name, "forward" in passes, "no forward table")
    check_rows(name, passes, step)
    emit_plan = subprocess.run([gen, trace, "--emit", "plan"], capture_output=True, text=True)
    check(name, emit_plan.stdout == explain.stdout, "--emit plan prints another text than explain")
    folder = os.path.join(work, name.removesuffix(".json"))
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([gen, trace, "-o", folder], check=True, capture_output=True)
    launches = manifest_launches(folder)
    for pass_name, table in passes.items():
        listed = [row[6] for row in table["rows"]]
        check(name, listed == launches[pass_name], f"{pass_name}: explain lists {listed}, the folder launches {launches[pass_name]}")
    print(f"ok {name}: {sum(len(t['rows']) for t in passes.values())} launches")


def write_trace(path, name, dtype, ops, inputs, outputs):
    doc = {"format": "thunder-gen-trace", "version": 1, "name": name, "source": "tests/kernel_times.py", "inputs": inputs, "ops": ops, "outputs": outputs}
    json.dump(doc, open(path, "w"))
    return path


def check_by_hand(gen, work):
    n = 4096
    big = write_trace(os.path.join(work, "big_exp.json"), "big_exp", "f32",
                      [{"op": "prims.exp", "args": ["x"], "out": [{"name": "y", "shape": [n, n], "dtype": "f32"}]}],
                      [{"name": "x", "shape": [n, n], "dtype": "f32"}], ["y"])
    rows = tables(subprocess.run([gen, "explain", big], capture_output=True, text=True, check=True).stdout)[0]["forward"]["rows"]
    us, kind, read, written, memory, arith, _ = rows[0]
    bytes_moved = 2 * 4 * n * n
    check("big_exp", (kind, read, written) == ("pointwise", 4 * n * n, 4 * n * n), f"row {rows[0]}")
    check("big_exp", abs(us - (DEVICE["launch_seconds"] + bytes_moved / DEVICE["copy_bytes_per_second"]) * 1e6) < 0.002, f"{us} us for {bytes_moved} bytes")
    for dtype, peak in (("f32", "f32"), ("bf16", "bf16")):
        gemm = write_trace(os.path.join(work, f"gemm_{dtype}.json"), f"gemm_{dtype}", dtype,
                           [{"op": "prims.matmul", "args": ["a", "b"], "out": [{"name": "c", "shape": [n, n], "dtype": dtype}]}],
                           [{"name": "a", "shape": [n, n], "dtype": dtype}, {"name": "b", "shape": [n, n], "dtype": dtype}], ["c"])
        rows = tables(subprocess.run([gen, "explain", gemm], capture_output=True, text=True, check=True).stdout)[0]["forward"]["rows"]
        us, kind, _, _, memory, arith, _ = rows[0]
        want = 2 * n ** 3 / DEVICE["flops_per_second"][peak] * 1e6
        check(f"gemm_{dtype}", kind == "cuBLASLt" and abs(arith - want) < 0.002 and arith > memory, f"arithmetic {arith} us, 2MNK at the {peak} peak is {want:.3f}")
        check(f"gemm_{dtype}", abs(us - (DEVICE["launch_seconds"] * 1e6 + arith)) < 0.002, f"{us} us")
    print("by hand: a memory-bound exp, compute-bound f32 and bf16 GEMMs checked")


def main():
    gen, work, *traces = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    for trace in traces:
        check_trace(gen, work, trace)
    check_by_hand(gen, work)
    print(f"{len(traces)} traces; {len(failures)} failed checks")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
