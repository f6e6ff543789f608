#!/usr/bin/env bash
# gen-bench.sh [--build DIR] [BLOCKS ...]: the generator's own speed on stacked transformer
# blocks. Stacks BLOCKS copies of examples/corpus/llama_block.json (tools/stack_blocks.py; default
# 18 182 1818: about 1,000, 10,000 and 100,000 decomposed ops), runs `thunder-gen -v` on each,
# and prints one table row per size: milliseconds per pass (forward / backward for the passes
# that run on each, concurrently), the whole run's wall time and the peak resident memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
if [[ "${1:-}" == --build ]]; then build=$2; shift 2; fi
blocks=("$@")
((${#blocks[@]})) || blocks=(18 182 1818)
gen=$build/thunder-gen
[[ -x "$gen" ]] || { echo "gen-bench: no $gen (build first, or --build DIR)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| blocks | ops | read | decompose | autograd | partition | epilogue | fuse | kernel-ir | emit | harness+manifest | whole | peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for n in "${blocks[@]}"; do
  python3 "$root/tools/stack_blocks.py" "$root/examples/corpus/llama_block.json" "$n" "$work/stack.json" >/dev/null
  start=$(date +%s.%N)
  "$gen" "$work/stack.json" -o "$work/out" -v 2>"$work/log.txt"
  end=$(date +%s.%N)
  # Each -v line: "thunder-gen: <pass>: ... (<ms> ms[, peak RSS <mb> MB])". Passes that run on
  # the forward and the backward (epilogue, fuse, kernel-ir, emit) print twice: forward first.
  python3 - "$work/log.txt" "$n" "$start" "$end" <<'PY'
import re, sys
log, blocks, start, end = open(sys.argv[1]).read().splitlines(), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
times, ops, rss = {}, "?", "?"
for line in log:
    m = re.match(r"thunder-gen: ([a-z -]+): (.*)\(([0-9.]+) ms", line)
    if not m:
        continue
    name, rest, ms = m.group(1), m.group(2), float(m.group(3))
    times.setdefault(name, []).append(ms)
    if name == "decompose":
        ops = re.search(r"-> (\d+) ops", rest).group(1)
    r = re.search(r"peak RSS (\d+) MB", line)
    if r:
        rss = r.group(1)
def cell(name):
    return " / ".join(f"{t:.0f}" for t in times.get(name, [])) or "-"
row = [blocks, f"{int(ops):,}" if ops != "?" else ops] + [cell(p) for p in
       ["read", "decompose", "autograd", "partition", "epilogue", "fuse", "kernel-ir", "emit", "harness and manifest"]]
row += [f"{end - start:.2f} s", f"{rss} MB"]
print("| " + " | ".join(row) + " |")
PY
done
echo "(ms per pass; \"a / b\": forward / backward, which run concurrently; $(nproc) cores, $(date -u +%Y-%m-%d))"
