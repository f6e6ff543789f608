#!/usr/bin/env bash
# distributed_builds.sh THUNDER_GEN WORK [MODE...]: distributed traces' generated folders build with
# their own CMakeLists.txt in the GPU modes with their collectives linked to NCCL (no GPU needed):
# examples/distributed/collectives.json (every collective), and the FSDP llama block and the DDP
# cross-entropy head (the corpus models in both modes), with nvcc for sm_90 (and in nvrtc mode, g++
# host code, when asked: `nvcc nvrtc`; the test suite builds nvcc only, for time). Each harness must
# link libnccl and start its ranks with ncclGetUniqueId and ncclCommInitRank; collectives.json's
# must call the NCCL function of each collective. (The emulated runs of distributed traces are
# tools/check_distributed.py's, in the python.distributed.* tests.)
set -euo pipefail
gen=$1 work=$2
shift 2
modes=("${@:-nvcc}")
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/cuda/bin"
rm -rf "$work" && mkdir -p "$work"

# build_and_check NAME MODE SYMBOL...: examples/distributed/NAME.json generated, built in MODE,
# its harness linked to libnccl and calling each SYMBOL.
build_and_check() {
  local name=$1 mode=$2
  shift 2
  local out=$work/$name build=$work/$name/build-$mode
  [[ -d $out/out ]] || "$gen" "$root/examples/distributed/$name.json" -o "$out/out"
  cmake -S "$out/out" -B "$build" -G Ninja -DTG_MODE=$mode -DCMAKE_BUILD_TYPE=Release >"$out/$mode.log" 2>&1 &&
    cmake --build "$build" >>"$out/$mode.log" 2>&1 || { cat "$out/$mode.log"; exit 1; }
  readelf -d "$build/harness" | grep -q 'NEEDED.*libnccl' || { echo "FAIL: $name's $mode harness does not link libnccl"; exit 1; }
  local undefined
  undefined=$(nm -D --undefined-only "$build/harness")
  for s in ncclGetUniqueId ncclCommInitRank "$@"; do
    grep -qw "$s" <<<"$undefined" || { echo "FAIL: $name's $mode harness does not call $s"; exit 1; }
  done
  echo "$name, $mode: built and linked to libnccl; calls the rank start-up${*:+ and $*}"
}

for mode in "${modes[@]}"; do
  build_and_check collectives "$mode" ncclAllReduce ncclAllGather ncclReduceScatter ncclBroadcast ncclCommCount
  build_and_check llama_block_fsdp "$mode" ncclAllGather ncclReduceScatter
  build_and_check cross_entropy_head_ddp "$mode" ncclAllReduce
done
