#!/usr/bin/env bash
# generated_cmake.sh THUNDER_GEN THUNDER_GEN_CHECK WORK: the CMakeLists.txt in an output folder
# builds in all three modes: emu (then runs and checks against LibTorch), nvcc for sm_90, and
# nvrtc with the kernels compiled ahead to a cubin. Building needs no GPU.
set -euo pipefail
gen=$1 check=$2 work=$3
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/cuda/bin"
trace=$root/examples/layer_norm.json
rm -rf "$work" && mkdir -p "$work"
"$gen" "$trace" -o "$work/out"
for mode in emu nvcc nvrtc; do
  echo "== TG_MODE=$mode"
  cmake -S "$work/out" -B "$work/build-$mode" -DTG_MODE=$mode -DTG_CUBIN_AHEAD=ON -DCMAKE_BUILD_TYPE=Release >"$work/$mode.log" 2>&1 ||
    { cat "$work/$mode.log"; exit 1; }
  cmake --build "$work/build-$mode" >>"$work/$mode.log" 2>&1 || { cat "$work/$mode.log"; exit 1; }
  [ -x "$work/build-$mode/harness" ] || { echo "no harness built in $mode mode"; exit 1; }
done
[ -s "$work/out/kernels.cu.cubin" ] || { echo "TG_CUBIN_AHEAD made no kernels.cu.cubin"; exit 1; }
mkdir -p "$work/results"
"$work/build-emu/harness" --outputs "$work/results" --quiet
"$check" "$trace" "$work/results"
