#!/usr/bin/env bash
# gpu-bench.sh: the generated forward+backward against PyTorch eager and torch.compile, on the
# same inputs, in one run on one GPU. Prints a table last; logs everything under --out.
#
#   tools/gpu-bench.sh [--dry-run] [--out DIR]
#
# 1. tools/gpu_bench.py export: every case's trace, inputs and cotangents (Thunder, on the CPU);
# 2. thunder-gen, then nvcc -O3 for the GPU's arch (nvidia-smi compute_cap, else sm_90) of
#    forward.cu + backward.cu + harness.cpp with cuBLASLt, the builds in parallel;
# 3. each harness: --inputs (the exported .npy files) --repeat 50, its median forward and backward
#    milliseconds (DIR/<case>/run.log);
# 4. tools/gpu_bench.py torch: eager and torch.compile forward+backward medians (CUDA events,
#    warm-up) and the device-to-device copy bandwidth, in the same session;
# 5. tools/gpu_bench.py report: ms, effective GB/s, fraction of copy bandwidth, speedups.
# --dry-run: tiny sizes; steps 1 and 2 for sm_90 (no GPU needed), step 4 on the CPU without
# torch.compile, no harness runs. Python: $PYTHON, else .venv/bin/python (tools/setup-python.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry_run=0
out=${OUT:-/tmp/gpu-bench}
while (($#)); do
  case $1 in
    --dry-run) dry_run=1 ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
python=${PYTHON:-$ROOT/.venv/bin/python}
thunder_gen=${THUNDER_GEN:-$ROOT/build/thunder-gen}
nvcc=${NVCC:-nvcc}
[[ -x $thunder_gen ]] || { cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DTHUNDER_GEN_TESTS=OFF >/dev/null && cmake --build "$ROOT/build" --target thunder-gen >/dev/null; }
arch=sm_90
if ((!dry_run)); then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  arch=sm_${cap:-90}
fi
rm -rf "$out"
mkdir -p "$out"
start=$SECONDS
small=()
((dry_run)) && small=(--small)
"$python" -W ignore "$ROOT/tools/gpu_bench.py" export --out "$out" "${small[@]}" >"$out/export.log" 2>&1 ||
  { tail -20 "$out/export.log"; exit 1; }
echo "gpu-bench: exported the cases in $((SECONDS - start)) s"

build() {  # build CASE_DIR: generate and compile one case's harness
  local d=$1
  "$thunder_gen" "$d/trace.json" -o "$d/out" >"$d/build.log" 2>&1 &&
    (cd "$d/out" && "$nvcc" -O3 -arch="$arch" -std=c++17 -I. -DTG_GPU -o harness forward.cu backward.cu harness.cpp -lcublasLt -lcublas) \
      >>"$d/build.log" 2>&1 || { echo "gpu-bench: $(basename "$d"): build failed (see $d/build.log)"; return 1; }
}
export -f build
export thunder_gen nvcc arch
cases=$(find "$out" -mindepth 1 -maxdepth 1 -type d | sort)
echo "$cases" | xargs -P "$(nproc)" -I{} bash -c "build {}" || true  # a failed case says so and has no run.log
echo "gpu-bench: built $(echo "$cases" | wc -l) harnesses for $arch in $((SECONDS - start)) s"

if ((dry_run)); then
  "$python" -W ignore "$ROOT/tools/gpu_bench.py" torch "$out" --device cpu --repeat 2 --no-compile | tee "$out/torch.log"
  "$python" "$ROOT/tools/gpu_bench.py" report "$out"
  echo "gpu-bench: dry run done in $((SECONDS - start)) s (nothing ran on a GPU)"
  exit 0
fi
for d in $cases; do
  (cd "$d/out" && ./harness --inputs ../inputs --repeat 50) >"$d/run.log" 2>&1 || echo "gpu-bench: $(basename "$d"): harness failed"
done
echo "gpu-bench: generated code timed in $((SECONDS - start)) s"
"$python" -W ignore "$ROOT/tools/gpu_bench.py" torch "$out" --device cuda --repeat 50 >"$out/torch.log" 2>&1 ||
  { tail -20 "$out/torch.log"; exit 1; }
echo "gpu-bench: PyTorch timed in $((SECONDS - start)) s"
"$python" "$ROOT/tools/gpu_bench.py" report "$out" | tee "$out/table.txt"
