#!/usr/bin/env bash
# gpu-bench.sh: the generated forward+backward against PyTorch eager and torch.compile, on the
# same inputs, in one run on one GPU. Prints a table last; logs everything under --out.
#
#   tools/gpu-bench.sh [--dry-run] [--out DIR]      # everything, here
#   tools/gpu-bench.sh --prepare --out DIR          # steps 1-2 only: a folder to take elsewhere
#   tools/gpu-bench.sh --from DIR [--out DIR2]      # steps 3-7 on a folder --prepare made
#
# 1. tools/gpu_bench.py export --no-inputs: every case's trace (Thunder, on the CPU);
# 2. thunder-gen: each case's forward.cu, backward.cu, harness.cpp;
# 3. tools/gpu_bench.py inputs: each case's inputs and cotangents as .npy (PyTorch, no Thunder);
# 4. nvcc -O3 for the GPU's arch (nvidia-smi compute_cap, else sm_90) with cuBLASLt, in parallel;
#    a harness already built (by a --prepare elsewhere) is kept if it starts here;
# 5. each harness: --inputs (the .npy files) --repeat 50 --outputs results, its median forward and
#    backward milliseconds (DIR/<case>/run.log); cases with GEMMs again with TG_GEMM_TUNE=1
#    (DIR/<case>/run_tuned.log, a "(GEMMs tuned)" row);
# 6. tools/gpu_bench.py torch: eager and torch.compile forward+backward medians (CUDA events,
#    warm-up), the device-to-device copy bandwidth, and the generated results against eager's;
# 7. tools/gpu_bench.py report: ms, effective GB/s, fraction of copy bandwidth, speedups, errors,
#    and the NVRTC compile time of the GPT-2 MLP's kernels (one program), cold and warm cache.
# --dry-run: tiny sizes; steps 1-4 for sm_90 (no GPU needed), step 6 on the CPU without
# torch.compile, no harness runs. Python: $PYTHON, else .venv/bin/python (tools/setup-python.sh),
# else python3 (enough for steps 3-7). thunder-gen: $THUNDER_GEN, else build/thunder-gen.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry_run=0 prepare=0 from=""
out=${OUT:-/tmp/gpu-bench}
while (($#)); do
  case $1 in
    --dry-run) dry_run=1 ;;
    --prepare) prepare=1 ;;
    --from) from=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-bench: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
python=${PYTHON:-$ROOT/.venv/bin/python}
[[ -x $python ]] || python=python3
thunder_gen=${THUNDER_GEN:-$ROOT/build/thunder-gen}
nvcc=${NVCC:-nvcc}
gpu_bench=("$python" -W ignore "$ROOT/tools/gpu_bench.py")
start=$SECONDS
say() { echo "gpu-bench: $* ($((SECONDS - start)) s)"; }

if [[ -n $from ]]; then
  [[ -f $from/cases.json ]] || { echo "gpu-bench: $from has no cases.json (make it with --prepare)" >&2; exit 2; }
  if [[ $(cd "$from" && pwd) != $(mkdir -p "$out" && cd "$out" && pwd) ]]; then
    rm -rf "$out" && mkdir -p "$out" && cp -r "$from"/. "$out"/
  fi
else
  [[ -x $thunder_gen ]] || { cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DTHUNDER_GEN_TESTS=OFF >/dev/null &&
                              cmake --build "$ROOT/build" --target thunder-gen >/dev/null; }
  rm -rf "$out"
  mkdir -p "$out"
  small=()
  ((dry_run)) && small=(--small)
  "${gpu_bench[@]}" export --out "$out" --no-inputs "${small[@]}" >"$out/export.log" 2>&1 ||
    { tail -20 "$out/export.log"; exit 1; }
  say "exported the cases"
  for d in "$out"/*/; do
    "$thunder_gen" "$d/trace.json" -o "$d/out" >"$d/generate.log" 2>&1 ||
      { echo "gpu-bench: $(basename "$d"): thunder-gen failed (see $d/generate.log)"; exit 1; }
  done
  say "generated the code"
  ((prepare)) && exit 0
fi
cases=$(find "$out" -mindepth 1 -maxdepth 1 -type d | sort)

"${gpu_bench[@]}" inputs "$out" >"$out/inputs.log" 2>&1 || { tail -20 "$out/inputs.log"; exit 1; }
say "wrote the inputs"

arch=sm_90
if ((!dry_run)); then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  arch=sm_${cap:-90}
fi
build() {  # build CASE_DIR: compile one case's harness, unless one built elsewhere starts here
  local d=$1
  # (its usage error ends the pipe's first command with 2: not what pipefail should see)
  [[ -x $d/out/harness ]] && { "$d/out/harness" --bad-argument 2>&1 || true; } | grep -q "unknown argument" && return 0
  (cd "$d/out" && "$nvcc" -O3 -arch="$arch" -std=c++17 -I. -DTG_GPU -o harness forward.cu backward.cu harness.cpp \
      -lcublasLt) >"$d/build.log" 2>&1 || { echo "gpu-bench: $(basename "$d"): build failed (see $d/build.log)"; return 1; }
}
export -f build
export nvcc arch
echo "$cases" | xargs -P "$(nproc)" -I{} bash -c "build {}" || true  # a failed case says so and has no run.log
say "built $(echo "$cases" | wc -l) harnesses for $arch"

# NVRTC: the GPT-2 MLP's kernels as one program (kernels.cu), cold and then warm through a fresh
# cache (no GPU needed): $out/nvrtc.txt, which the report prints.
nvrtc_time() {
  local cuda_home check=$out/nvrtc-check gpt2=$out/gpt2_mlp/out
  cuda_home=$(cd "$(dirname "$(readlink -f "$(command -v "$nvcc")")")/.." && pwd)
  g++ -std=c++20 -O1 -I"$cuda_home/include" -I"$ROOT/templates" "$ROOT/tests/tools/nvrtc_check.cpp" \
    -L"$cuda_home/lib64" -Wl,-rpath,"$cuda_home/lib64" -lnvrtc -o "$check" &&
    rm -rf "$out/nvrtc-cache" &&
    { echo "NVRTC, gpt2_mlp kernels.cu ($(nproc) CPUs): cold: $("$check" "$gpt2/kernels.cu" "$arch" --cache "$out/nvrtc-cache" | sed 's/.* in //; s/, cache entry.*)/)/')"
      echo "NVRTC, gpt2_mlp kernels.cu: warm: $("$check" "$gpt2/kernels.cu" "$arch" --cache "$out/nvrtc-cache" | sed 's/.* in //; s/, cache entry.*)/)/')"; } >"$out/nvrtc.txt"
}
nvrtc_time || echo "gpu-bench: the NVRTC timing failed" >&2
say "timed NVRTC"

if ((dry_run)); then
  "${gpu_bench[@]}" torch "$out" --device cpu --repeat 2 --no-compile | tee "$out/torch.log"
  "${gpu_bench[@]}" report "$out"
  say "dry run done (nothing ran on a GPU)"
  exit 0
fi
for d in $cases; do
  mkdir -p "$d/results"
  (cd "$d/out" && timeout 120 ./harness --inputs ../inputs --outputs ../results --repeat 50) >"$d/run.log" 2>&1 ||
    { echo "gpu-bench: $(basename "$d"): harness failed:"; tail -5 "$d/run.log"; }
done
# Cases with GEMMs once more with cuBLASLt's candidates timed on first use (TG_GEMM_TUNE=1, tg_gemm.h).
for d in $cases; do
  grep -q '"library": "cuBLASLt"' "$d/out/manifest.json" || continue
  mkdir -p "$d/results_tuned"
  (cd "$d/out" && TG_GEMM_TUNE=1 timeout 120 ./harness --inputs ../inputs --outputs ../results_tuned --repeat 50) >"$d/run_tuned.log" 2>&1 ||
    { echo "gpu-bench: $(basename "$d"): harness with TG_GEMM_TUNE=1 failed:"; tail -5 "$d/run_tuned.log"; }
done
say "generated code timed"
"${gpu_bench[@]}" torch "$out" --device cuda --repeat 50 >"$out/torch.log" 2>&1 || { tail -20 "$out/torch.log"; exit 1; }
say "PyTorch timed"
"${gpu_bench[@]}" report "$out" | tee "$out/table.txt"
