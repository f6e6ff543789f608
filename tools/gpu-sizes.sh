#!/usr/bin/env bash
# gpu-sizes.sh: one folder for every size against a folder specialised to each size, timed on one
# GPU in the same run (docs/symbolic-shapes.md, "One folder for every size").
#
#   here:   tools/gpu-sizes.sh --prepare DIR     # generates and builds (nvcc -O3, no GPU needed)
#   there:  tools/gpu-sizes.sh --run DIR         # times each; the table last, in DIR/table.txt
#
# The trace: tools/bench/symbolic_mlp_1024.json (layer norm, 1024 -> 4096 -> 1024 with GELU, a
# residual add, log-softmax over the rows; 1 <= B <= 32, 1 <= T <= 2048). --prepare generates it
# once without --specialize and once per size of SIZES (1, odd, not a multiple of 16, the largest)
# with it, and builds every harness for ARCH (sm_90). --run runs each harness at its size with
# --repeat 30 (the run-time folder with --sizes), its median forward and backward milliseconds,
# and, where B*T <= 8192, whether the run-time folder's outputs are the specialised one's byte
# for byte (at B=1, T=1 they are not: a folder specialised to one row plans its size-1 dims
# otherwise, and its results differ in the last bits; under emulation at most 2.3e-6 on values up
# to 12, 2026-12-04).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZES=${SIZES:-"B=1,T=1 B=3,T=127 B=8,T=1000 B=32,T=2048"}
trace=$ROOT/tools/bench/symbolic_mlp_1024.json
[[ $# -eq 2 ]] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
dir=$2
build() {  # FOLDER: its harness for the GPU, unless one built elsewhere starts here
  # (its usage error ends the pipe's first command with 2: not what pipefail should see)
  [[ -x $1/harness ]] && { "$1/harness" --bad-argument 2>&1 || true; } | grep -q "unknown argument" && return 0
  (cd "$1" && "${NVCC:-nvcc}" -O3 -arch="${ARCH:-sm_90}" -std=c++17 -I. -DTG_GPU -o harness forward.cu backward.cu harness.cpp -lcublasLt) \
    >"$1/build.log" 2>&1 || { echo "gpu-sizes: $1: build failed (see build.log)"; return 1; }
}
median() { sed -n "s/.*: $2: median \([0-9.]*\) ms.*/\1/p" "$1"; }
case $1 in
  --prepare)
    rm -rf "$dir" && mkdir -p "$dir" || exit 1
    "${THUNDER_GEN:-$ROOT/build/thunder-gen}" "$trace" -o "$dir/run-time" || exit 1
    for s in $SIZES; do "${THUNDER_GEN:-$ROOT/build/thunder-gen}" "$trace" --specialize "$s" -o "$dir/at-$s" || exit 1; done
    export -f build
    export NVCC ARCH 2>/dev/null
    ls -d "$dir"/run-time "$dir"/at-* | xargs -P "$(nproc)" -I{} bash -c 'build {}'
    ;;
  --run)
    for f in "$dir"/run-time "$dir"/at-*; do build "$f" || exit 1; done
    printf '%-14s %12s %12s %12s %12s %8s %s\n' sizes "fwd ms" "fwd ms spec" "bwd ms" "bwd ms spec" "ratio" "same bytes" >"$dir/table.txt"
    for s in $SIZES; do
      # Outputs compared where they are small (every input, output and gradient is written).
      rows=$(echo "$s" | sed 's/B=\([0-9]*\),T=\([0-9]*\)/\1 * \2/') same=-
      out_rt=() out_sp=()
      if (( rows <= 8192 )); then out_rt=(--outputs "$dir/out-run-time-$s") out_sp=(--outputs "$dir/out-at-$s") same=yes; fi
      "$dir/run-time/harness" --sizes "$s" --repeat 30 "${out_rt[@]}" >"$dir/run-time-$s.log" 2>&1
      "$dir/at-$s/harness" --repeat 30 "${out_sp[@]}" >"$dir/at-$s.log" 2>&1
      if [[ $same = yes ]]; then
        for f in "$dir/out-at-$s"/*.npy; do cmp -s "$f" "$dir/out-run-time-$s/$(basename "$f")" || same=no; done
        rm -rf "$dir/out-at-$s" "$dir/out-run-time-$s"
      fi
      fr=$(median "$dir/run-time-$s.log" forward) fs=$(median "$dir/at-$s.log" forward)
      br=$(median "$dir/run-time-$s.log" backward) bs=$(median "$dir/at-$s.log" backward)
      ratio=$(awk -v a="$fr" -v b="$br" -v c="$fs" -v d="$bs" 'BEGIN { if (c + d > 0) printf "%.3f", (a + b) / (c + d); else print "-" }')
      printf '%-14s %12s %12s %12s %12s %8s %s\n' "$s" "${fr:--}" "${fs:--}" "${br:--}" "${bs:--}" "$ratio" "$same" >>"$dir/table.txt"
    done
    echo "==== gpu-sizes: run-time sizes against specialised (ratio: forward+backward, run-time / specialised)"
    cat "$dir/table.txt"
    ;;
  *) exit 2 ;;
esac
