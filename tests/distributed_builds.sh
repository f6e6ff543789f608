#!/usr/bin/env bash
# distributed_builds.sh THUNDER_GEN WORK [MODE...]: a distributed trace's generated folder builds
# with its own CMakeLists.txt in the GPU modes with its collectives linked to NCCL (no GPU needed):
# examples/distributed/collectives.json (every collective) with nvcc for sm_90 (and in nvrtc mode,
# g++ host code, when asked: `nvcc nvrtc`; the test suite builds nvcc only, for time). Each harness
# must link libnccl, call the NCCL function of each collective and start its ranks with
# ncclGetUniqueId and ncclCommInitRank. (The emulated runs of distributed traces are
# tools/check_distributed.py's, in the python.distributed.* tests.)
set -euo pipefail
gen=$1 work=$2
shift 2
modes=("${@:-nvcc}")
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/cuda/bin"
rm -rf "$work" && mkdir -p "$work"
"$gen" "$root/examples/distributed/collectives.json" -o "$work/out"
for mode in "${modes[@]}"; do
  build=$work/build-$mode
  cmake -S "$work/out" -B "$build" -G Ninja -DTG_MODE=$mode -DCMAKE_BUILD_TYPE=Release >"$work/$mode.log" 2>&1 &&
    cmake --build "$build" >>"$work/$mode.log" 2>&1 || { cat "$work/$mode.log"; exit 1; }
  readelf -d "$build/harness" | grep -q 'NEEDED.*libnccl' || { echo "FAIL: the $mode harness does not link libnccl"; exit 1; }
  undefined=$(nm -D --undefined-only "$build/harness")
  for s in ncclAllReduce ncclAllGather ncclReduceScatter ncclBroadcast ncclCommCount ncclGetUniqueId ncclCommInitRank; do
    grep -qw "$s" <<<"$undefined" || { echo "FAIL: the $mode harness does not call $s"; exit 1; }
  done
  echo "$mode: built and linked to libnccl; calls every collective, ncclCommCount and the rank start-up"
done
