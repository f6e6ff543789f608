#!/usr/bin/env python3
"""ptx_compare.py [--known FILE] RUN_TIME SPECIALISED NAME...: what nvcc made of a folder that takes its sizes at
run time against a folder specialised to one size (standard library only). For each NAME (forward,
backward) each folder holds NAME.ptxas.log (nvcc -Xptxas -v) and keep/NAME.ptx. Every kernel of
the specialised folder must be in the run-time one with
  - at least as many vector accesses of each size (ld.global(.nc).vN, st.global.vN: its 8- and
    16-byte runs kept when the count became a parameter), and
  - registers within 10% of the specialised kernel's (at least 4 more allowed: one 64-bit count
    parameter and its arithmetic on a small kernel).
Prints one line per kernel and exits 1 on any failure.

--known FILE: the kernels known to miss those bounds, a line each: "kernel registers", the most
registers it may take at run-time sizes, then "fewer-runs" where it may have fewer vector accesses
and "row-kernel" where a column kernel (NAME_columnreduce_X) is a row kernel at run-time sizes
(NAME_rowreduce_X, compared in its place, by the bounds above or, past them, by the line: its
rows are no multiple of 32 at every size); `#` comments. Such a kernel passes while it stays within that; one that meets the bounds again
fails as "listed but within bounds", so the list only shrinks.
"""
import re
import sys


def registers(log):
    """{kernel: registers} from a ptxas -v report."""
    out, current = {}, None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            current = m.group(1)
        elif (m := re.search(r"Used (\d+) registers", line)) and current:
            out[current] = int(m.group(1))
            current = None
    return out


def vector_accesses(ptx):
    """{kernel: {(op, bytes): count}} of the .entry functions of a PTX file."""
    out = {}
    for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\n}\n", ptx, re.S):
        counts = {}
        for op, lanes, bits in re.findall(r"(ld\.global|st\.global)(?:\.nc)?\.v(2|4)\.[a-z]+(8|16|32|64)\b", m.group(2)):
            key = (op, int(lanes) * int(bits) // 8)
            counts[key] = counts.get(key, 0) + 1
        out[m.group(1)] = counts
    return out


def known_gaps(path):
    """{kernel: (most registers, fewer vector accesses allowed, a row kernel at run time)} from a --known file."""
    out = {}
    for line in open(path):
        words = line.split("#")[0].split()
        if words:
            out[words[0]] = (int(words[1]), "fewer-runs" in words[2:], "row-kernel" in words[2:])
    return out


def main(run_time, specialised, names, known):
    failures = 0
    for name in names:
        read = lambda folder, f: open(f"{folder}/{f}").read()
        regs_rt, regs_sp = registers(read(run_time, f"{name}.ptxas.log")), registers(read(specialised, f"{name}.ptxas.log"))
        vec_rt, vec_sp = vector_accesses(read(run_time, f"keep/{name}.ptx")), vector_accesses(read(specialised, f"keep/{name}.ptx"))
        if not regs_sp:
            print(f"FAIL {name}: no kernels in the specialised folder's ptxas report")
            failures += 1
        for kernel, sp in sorted(regs_sp.items()):
            as_row = kernel in known and known[kernel][2]
            in_run_time = kernel.replace("_columnreduce_", "_rowreduce_", 1) if as_row else kernel
            rt = regs_rt.get(in_run_time)
            if rt is None:
                print(f"FAIL {name} {kernel}: not in the run-time folder")
                failures += 1
                continue
            lost = {k: v for k, v in vec_sp.get(kernel, {}).items() if vec_rt.get(in_run_time, {}).get(k, 0) < v}
            within = rt <= max(sp * 1.1, sp + 4) and not lost
            if kernel in known:
                most, fewer_runs, _ = known[kernel]
                still = rt <= most and (fewer_runs or not lost)
                if within:  # (a row kernel's line stays: it names the kernel compared)
                    verdict = "ok" if as_row else "FAIL (listed but within bounds)"
                else:
                    verdict = "known gap" if still else "FAIL (past what is listed)"
            else:
                verdict = "ok" if within else "FAIL"
            failures += verdict.startswith("FAIL")
            wide = sum(vec_sp.get(kernel, {}).values())
            print(f"{verdict} {name} {kernel}: {rt} registers at run-time sizes, {sp} specialised; "
                  f"{sum(vec_rt.get(in_run_time, {}).values())} vector accesses, {wide} specialised"
                  + (f"; a row kernel at run-time sizes, {in_run_time}" if as_row else "")
                  + (f"; fewer of {sorted(lost)}" if lost else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    known = {}
    if args[:1] == ["--known"] and len(args) > 1:
        known, args = known_gaps(args[1]), args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    sys.exit(main(args[0], args[1], args[2:], known))
