#!/usr/bin/env bash
# gpu-check.sh: checks thunder-gen's generated CUDA on a real GPU, example by example.
#
#   tools/gpu-check.sh [--dry-run] [--out DIR] [--jobs N] [--expected DIR] [examples...]
#
# Needs nvcc; a real run also needs a GPU (nvidia-smi) and PyTorch with CUDA (plus numpy) for
# the python3 on PATH (or $PYTHON). For each example (default: every examples/*.json; an argument
# is a trace path or an example name) it
#   1. generates the output folder with build/thunder-gen (configuring and building only the
#      thunder-gen target, with -DTHUNDER_GEN_TESTS=OFF, if it is missing: that needs no LibTorch);
#   2. builds the harness (forward.cu, backward.cu where the trace trains, harness.cpp, cuBLASLt)
#      with nvcc for the local GPU's arch (nvidia-smi compute_cap, else sm_90), and the NVRTC-mode
#      harness with g++ (-DTG_GPU -DTG_NVRTC_HOST, cudart + nvrtc + cuda + cublasLt);
#   3. runs the nvcc harness (--outputs DIR --repeat 20; --inputs <trace>.inputs/ beside the trace
#      where that folder exists, as for examples/corpus) and compares its outputs with PyTorch on
#      the GPU (tools/torch_reference.py --device cuda);
#      With --expected DIR (DIR/<example>/ as `harness --outputs` wrote it elsewhere on the same
#      inputs, under host emulation say, maybe thinned by torch_reference.py --thin), every output
#      and input gradient is compared with that run's (torch_reference.py --expected): the backward
#      and dropout too, which the forward-only PyTorch interpreter does not check.
#   4. runs the NVRTC harness once on the same inputs and checks its outputs are bit for bit those
#      of the nvcc harness.
# --dry-run does everything that needs no GPU: generate, nvcc compile and link for sm_90, the
# NVRTC-host link, and an NVRTC compile of the kernels for sm_90; it runs nothing.
#
# Prints one row per example and a closing line "N passed, M failed"; exits 1 when any failed
# (2 on a usage or setup error). Every command and its output is logged under the --out folder
# (default: $OUT if set, else /tmp/gpu-check): DIR/<example>/*.log, DIR/summary.txt.
#
# Environment: THUNDER_GEN (the generator), NVCC, CXX, PYTHON, CUDA_HOME, JOBS (parallel builds).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPEAT=20
RUN_TIMEOUT=120

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
  exit "${1:-2}"
}
die() { echo "gpu-check: $*" >&2; exit 2; }

dry_run=0
expected=""
out_dir=${OUT:-/tmp/gpu-check}
jobs=${JOBS:-}
traces=()
while (($#)); do
  case $1 in
    --dry-run) dry_run=1 ;;
    --out) [[ $# -ge 2 ]] || die "--out needs a folder"; out_dir=$2; shift ;;
    --out=*) out_dir=${1#--out=} ;;
    --jobs) [[ $# -ge 2 ]] || die "--jobs needs a number"; jobs=$2; shift ;;
    --expected) [[ $# -ge 2 ]] || die "--expected needs a folder"; expected=$(cd "$2" && pwd) || die "no folder $2"; shift ;;
    -h|--help) usage 0 ;;
    -*) echo "gpu-check: unknown option $1" >&2; usage 2 ;;
    *)
      if [[ -f $1 ]]; then traces+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
      elif [[ -f $ROOT/examples/$1.json ]]; then traces+=("$ROOT/examples/$1.json")
      else die "no such trace or example: $1"
      fi ;;
  esac
  shift
done
if ((${#traces[@]} == 0)); then
  shopt -s nullglob
  traces=("$ROOT"/examples/*.json)
  shopt -u nullglob
  ((${#traces[@]})) || die "no examples/*.json"
fi

cpus=$(nproc 2>/dev/null || echo 4)
[[ -n $jobs ]] || jobs=$(( cpus > 2 ? cpus / 2 : 1 ))  # each example runs two compilers at once
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive number"
mkdir -p "$out_dir" || die "cannot create $out_dir"
out_dir=$(cd "$out_dir" && pwd)

THUNDER_GEN=${THUNDER_GEN:-$ROOT/build/thunder-gen}
NVCC=${NVCC:-nvcc}
CXX=${CXX:-g++}
PYTHON=${PYTHON:-python3}

# step LOG CMD...: runs CMD, appending the command line and all its output to LOG.
step() {
  local log=$1
  shift
  printf '+ %s\n' "$*" >>"$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  ((rc == 0)) || echo "exit status $rc" >>"$log"
  return "$rc"
}
# mark DIR STAGE VALUE / get DIR STAGE: a stage's result for one example.
mark() { echo "$3" >"$1/status.$2"; }
get() { cat "$1/status.$2" 2>/dev/null || echo "-"; }

# ---- tools ---------------------------------------------------------------------------------------

command -v "$NVCC" >/dev/null || die "nvcc not found (set NVCC or put the CUDA toolkit on PATH)"
CUDA_HOME=${CUDA_HOME:-$(cd "$(dirname "$(readlink -f "$(command -v "$NVCC")")")/.." && pwd)}
CUDA_LIB=$CUDA_HOME/lib64
[[ -d $CUDA_LIB ]] || CUDA_LIB=$CUDA_HOME/lib
[[ -f $CUDA_HOME/include/cuda_runtime.h ]] || die "no cuda_runtime.h under $CUDA_HOME/include (set CUDA_HOME)"
cuda_link=(-L"$CUDA_LIB")
# The driver library of a machine without a GPU driver is the toolkit's stub (same soname).
[[ -d $CUDA_LIB/stubs ]] && cuda_link+=(-L"$CUDA_LIB/stubs")
cuda_link+=("-Wl,-rpath,$CUDA_LIB" -lcudart -lnvrtc -lcuda -lpthread)

arch=sm_90
if ((!dry_run)); then
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no GPU here? (--dry-run checks the builds without one)"
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>>"$out_dir/tools.log" | head -n 1 | tr -d ' .')
  [[ $cap =~ ^[0-9]+$ ]] && arch=sm_$cap
  torch_ok=1
  step "$out_dir/tools.log" "$PYTHON" -c 'import numpy, torch; assert torch.cuda.is_available(), "torch sees no CUDA device"; print("torch", torch.__version__, torch.cuda.get_device_name())' || torch_ok=0
  ((torch_ok)) || echo "gpu-check: PyTorch with CUDA is not usable by $PYTHON (see $out_dir/tools.log): the comparisons will fail" >&2
fi

# thunder-gen: build only its target when missing (no LibTorch needed).
if [[ ! -x $THUNDER_GEN ]]; then
  [[ $THUNDER_GEN == "$ROOT/build/thunder-gen" ]] || die "THUNDER_GEN=$THUNDER_GEN is not executable"
  echo "gpu-check: building thunder-gen (log: $out_dir/build-thunder-gen.log)" >&2
  log=$out_dir/build-thunder-gen.log
  : >"$log"
  generator=()
  [[ ! -f $ROOT/build/CMakeCache.txt ]] && command -v ninja >/dev/null && generator=(-G Ninja)
  # An existing build folder is only built (its options stay); a new one is configured without tests.
  if ! { [[ -f $ROOT/build/CMakeCache.txt ]] && step "$log" cmake --build "$ROOT/build" --target thunder-gen -j "$cpus"; }; then
    if ! { step "$log" cmake -S "$ROOT" -B "$ROOT/build" "${generator[@]}" -DTHUNDER_GEN_TESTS=OFF &&
           step "$log" cmake --build "$ROOT/build" --target thunder-gen -j "$cpus"; }; then
      tail -n 30 "$log" >&2
      die "could not build thunder-gen (log: $log)"
    fi
  fi
fi

# nvrtc-check (dry run): compiles a file's kernels with NVRTC the way the NVRTC harness does.
nvrtc_check=""
if ((dry_run)) && [[ -f $ROOT/tests/tools/nvrtc_check.cpp ]]; then
  nvrtc_check=$out_dir/nvrtc-check
  step "$out_dir/tools.log" "$CXX" -std=c++20 -O1 -I"$CUDA_HOME/include" -I"$ROOT/templates" "$ROOT/tests/tools/nvrtc_check.cpp" \
    -L"$CUDA_LIB" -Wl,-rpath,"$CUDA_LIB" -lnvrtc -o "$nvrtc_check" || nvrtc_check=""
fi

# ---- 1-2: generate and build, in parallel ----------------------------------------------------------

# prepare TRACE: generates and builds both harnesses into $out_dir/<name>.
prepare() {
  local trace=$1 name d gen
  name=$(basename "$trace" .json)
  d=$out_dir/$name
  gen=$d/gen
  rm -rf "$d"
  mkdir -p "$d"
  if ! step "$d/generate.log" "$THUNDER_GEN" "$trace" -o "$gen"; then
    mark "$d" gen FAIL
    return
  fi
  mark "$d" gen ok
  local kernels=("$gen/forward.cu")
  [[ -f $gen/backward.cu ]] && kernels+=("$gen/backward.cu")
  (
    if step "$d/nvcc.log" "$NVCC" -O3 -arch="$arch" -std=c++17 -I"$gen" -DTG_GPU \
         -o "$d/harness_nvcc" "${kernels[@]}" "$gen/harness.cpp" -lcublasLt; then
      mark "$d" nvcc ok
    else
      mark "$d" nvcc FAIL
    fi
  ) &
  (
    if step "$d/nvrtc-build.log" "$CXX" -std=c++20 -O2 -fno-strict-aliasing -I"$gen" -I"$CUDA_HOME/include" \
         -DTG_GPU -DTG_NVRTC_HOST "-DTG_KERNEL_DIR=\"$gen\"" -xc++ "${kernels[@]}" -xnone "$gen/harness.cpp" \
         "${cuda_link[@]}" -lcublasLt -o "$d/harness_nvrtc"; then
      mark "$d" nvrtc_build ok
    else
      mark "$d" nvrtc_build FAIL
    fi
    if [[ -n $nvrtc_check ]]; then
      compiled=ok
      for cu in "${kernels[@]}"; do step "$d/nvrtc-compile.log" "$nvrtc_check" "$cu" sm_90 || compiled=FAIL; done
      mark "$d" nvrtc_compile "$compiled"
    fi
  ) &
  wait
}

mode="GPU run on $arch"
((dry_run)) && mode="dry run (builds for sm_90, runs nothing)"
echo "gpu-check: ${#traces[@]} examples, $mode, $jobs in parallel; logs in $out_dir" >&2
running=0
for trace in "${traces[@]}"; do
  prepare "$trace" &
  if ((++running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

# ---- 3-4: run on the GPU, one at a time (timings), then compare with PyTorch -------------------------

names=()
for trace in "${traces[@]}"; do names+=("$(basename "$trace" .json)"); done
trace_of() { local t; for t in "${traces[@]}"; do [[ $(basename "$t" .json) == "$1" ]] && echo "$t" && return; done; }

if ((!dry_run)); then
  echo "gpu-check: running the harnesses" >&2
  for name in "${names[@]}"; do
    d=$out_dir/$name
    if [[ $(get "$d" nvcc) == ok ]]; then
      mkdir -p "$d/nvcc"
      given=()  # a corpus model's captured inputs, else the harness draws them from its seed
      [[ -d $(dirname "$(trace_of "$name")")/$name.inputs ]] && given=(--inputs "$(dirname "$(trace_of "$name")")/$name.inputs")
      if step "$d/run-nvcc.log" timeout "$RUN_TIMEOUT" "$d/harness_nvcc" "${given[@]}" --outputs "$d/nvcc" --repeat "$REPEAT"; then
        mark "$d" run ok
        ms=$(grep -o 'median [0-9.]* ms' "$d/run-nvcc.log" | tail -n 1 | awk '{print $2}')
        mark "$d" ms "${ms:--}"
      else
        mark "$d" run FAIL
      fi
    fi
    if [[ $(get "$d" nvrtc_build) == ok ]]; then
      mkdir -p "$d/nvrtc"
      inputs=()
      [[ $(get "$d" run) == ok ]] && inputs=(--inputs "$d/nvcc")
      if step "$d/run-nvrtc.log" timeout "$RUN_TIMEOUT" "$d/harness_nvrtc" "${inputs[@]}" --outputs "$d/nvrtc" --repeat 0; then
        if [[ $(get "$d" run) != ok ]]; then
          mark "$d" nvrtc "ran (no nvcc outputs)"
        else
          same=1
          for f in "$d"/nvrtc/*.npy; do
            step "$d/run-nvrtc.log" cmp "$f" "$d/nvcc/$(basename "$f")" || same=0
          done
          if ((same)); then mark "$d" nvrtc ok; else mark "$d" nvrtc DIFFERS; fi
        fi
      else
        mark "$d" nvrtc "run FAIL"
      fi
    fi
  done

  echo "gpu-check: comparing with PyTorch" >&2
  compare_one() {
    local trace=$1 d err
    d=$out_dir/$(basename "$trace" .json)
    [[ $(get "$d" run) == ok ]] || return 0
    local against=(--device cuda)
    [[ -n $expected ]] && against=(--expected "$expected/$(basename "$trace" .json)")
    if step "$d/torch.log" "$PYTHON" "$ROOT/tools/torch_reference.py" "$trace" "$d/nvcc" "${against[@]}"; then
      mark "$d" torch ok
    elif grep -q MISMATCH "$d/torch.log"; then
      mark "$d" torch MISMATCH
    else
      mark "$d" torch error
    fi
    err=$(grep -o 'max abs err [^)]*)$' "$d/torch.log" | tail -n 1 | sed 's/max abs err //; s/)$//')
    mark "$d" err "${err:--}"
  }
  running=0
  for trace in "${traces[@]}"; do
    compare_one "$trace" &
    if ((++running >= 4)); then
      wait -n
      running=$((running - 1))
    fi
  done
  wait
fi

# ---- the table ------------------------------------------------------------------------------------

passed=0
failed=0
summary=$out_dir/summary.txt
row() { printf '%-24s %-9s %-10s %-9s %-22s %9s\n' "$@" | tee -a "$summary"; }
: >"$summary"
row example nvcc "max err" "$([[ -n $expected ]] && echo "vs emu" || echo "vs torch")" nvrtc "median ms"
for name in "${names[@]}"; do
  d=$out_dir/$name
  gen=$(get "$d" gen) nvcc=$(get "$d" nvcc) nvrtc_build=$(get "$d" nvrtc_build)
  ok=1
  if [[ $gen != ok ]]; then
    nvcc="gen FAIL" ok=0
  elif [[ $nvcc != ok ]]; then
    ok=0
  fi
  if ((dry_run)); then
    err=- torch=skipped ms=-
    nvrtc="link $nvrtc_build"
    [[ $nvrtc_build == ok ]] || ok=0
    if [[ -n $nvrtc_check && $gen == ok ]]; then
      nvrtc+=", compile $(get "$d" nvrtc_compile)"
      [[ $(get "$d" nvrtc_compile) == ok ]] || ok=0
    fi
  else
    err=$(get "$d" err) ms=$(get "$d" ms) torch=$(get "$d" torch) nvrtc=$(get "$d" nvrtc)
    [[ $(get "$d" run) == FAIL ]] && torch="run FAIL"
    [[ $nvrtc_build == FAIL ]] && nvrtc="build FAIL"
    [[ $torch == ok && $nvrtc == ok ]] || ok=0
  fi
  row "$name" "$nvcc" "$err" "$torch" "$nvrtc" "$ms"
  if ((ok)); then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "$passed passed, $failed failed" | tee -a "$summary"
((failed == 0))
