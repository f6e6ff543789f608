#!/usr/bin/env bash
# The main job on an example: generate CUDA from a trace, build the harness for host emulation
# (no GPU) with the generated CMakeLists.txt, run it (forward and backward), and check its outputs
# and gradients against LibTorch.
#   tools/demo.sh [examples/layer_norm.json]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
trace=${1:-examples/layer_norm.json}
name=$(basename "$trace" .json)
build=${BUILD_DIR:-build}
tools/build.sh thunder-gen thunder-gen-check
out=out/$name
echo "== thunder-gen $trace -o $out"
"$build/thunder-gen" "$trace" -o "$out" -v
sources=("$out/forward.cu")
[[ -f $out/backward.cu ]] && sources+=("$out/backward.cu")  # when the trace trains
echo "== kernels:"; grep -E '^// [a-z0-9_]+: (pointwise|row reduction)' "${sources[@]}"
echo "== building the harness for host emulation (TG_MODE=emu)"
cmake -S "$out" -B "$out/build" -DTG_MODE=emu -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out/build" >/dev/null
mkdir -p "$out/results"
"$out/build/harness" --outputs "$out/results" --repeat 3
echo "== check against LibTorch"
"$build/reference/thunder-gen-check" "$trace" "$out/results"
