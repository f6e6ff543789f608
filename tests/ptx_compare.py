#!/usr/bin/env python3
"""ptx_compare.py RUN_TIME SPECIALISED NAME...: what nvcc made of a folder that takes its sizes at
run time against a folder specialised to one size (standard library only). For each NAME (forward,
backward) each folder holds NAME.ptxas.log (nvcc -Xptxas -v) and keep/NAME.ptx. Every kernel of
the specialised folder must be in the run-time one with
  - at least as many vector accesses of each size (ld.global(.nc).vN, st.global.vN: its 8- and
    16-byte runs kept when the count became a parameter), and
  - registers within 10% of the specialised kernel's (at least 4 more allowed: one 64-bit count
    parameter and its arithmetic on a small kernel).
Prints one line per kernel and exits 1 on any failure.
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


def main(run_time, specialised, names):
    failures = 0
    for name in names:
        read = lambda folder, f: open(f"{folder}/{f}").read()
        regs_rt, regs_sp = registers(read(run_time, f"{name}.ptxas.log")), registers(read(specialised, f"{name}.ptxas.log"))
        vec_rt, vec_sp = vector_accesses(read(run_time, f"keep/{name}.ptx")), vector_accesses(read(specialised, f"keep/{name}.ptx"))
        if not regs_sp:
            print(f"FAIL {name}: no kernels in the specialised folder's ptxas report")
            failures += 1
        for kernel, sp in sorted(regs_sp.items()):
            rt = regs_rt.get(kernel)
            if rt is None:
                print(f"FAIL {name} {kernel}: not in the run-time folder")
                failures += 1
                continue
            lost = {k: v for k, v in vec_sp.get(kernel, {}).items() if vec_rt.get(kernel, {}).get(k, 0) < v}
            regs_ok = rt <= max(sp * 1.1, sp + 4)
            ok = regs_ok and not lost
            failures += not ok
            wide = sum(vec_sp.get(kernel, {}).values())
            print(f"{'ok' if ok else 'FAIL'} {name} {kernel}: {rt} registers at run-time sizes, {sp} specialised; "
                  f"{sum(vec_rt.get(kernel, {}).values())} vector accesses, {wide} specialised"
                  + (f"; fewer of {sorted(lost)}" if lost else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
