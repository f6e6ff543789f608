#!/usr/bin/env bash
# misaligned_runs.sh THUNDER_GEN WORK: the 16-byte run loops' fallbacks, for row kernels holding
# the row (layer_norm, wide_rows forward) or streaming it (wide_rows backward) and a pointwise
# kernel (residual_scale): each generated,
# then tests/tools/misaligned_runs.cpp run under emulation with UBSan, aligned then misaligned.
set -euo pipefail
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
for case in layer_norm residual_scale wide_rows; do
  "$gen" "$root/examples/$case.json" -o "$work/$case"
  "${CXX:-g++}" -std=c++20 -O1 -fno-strict-aliasing -fsanitize=undefined -fno-sanitize-recover=undefined \
    -DCASE_"${case^^}" -I"$work/$case" "$root/tests/tools/misaligned_runs.cpp" -lboost_context -lpthread -o "$work/$case.check"
  "$work/$case.check"
done
