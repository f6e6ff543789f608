#!/usr/bin/env bash
# rounding.sh TRACE WORK: one case of tests/rounding/: a 16-bit value computed inside a kernel meets
# an op whose result jumps when its operand moves by less than a rounding unit (a comparison,
# argmax, floor, a truncating conversion, the gradient mask of amax or maximum). Generated, built
# for emulation and run (on TRACE's .inputs/ folder when it has one), its outputs and gradients
# must match LibTorch twice: rounding op by op as PyTorch's eager ops do (--op-by-op), and in f64
# (the other checks' truth). Tools from the environment: THUNDER_GEN, THUNDER_GEN_CHECK.
set -euo pipefail
trace=$(realpath "$1") work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/results"
"${THUNDER_GEN:?}" "$trace" -o "$work/out"
"$here/build_emu_harness.sh" "$work/out" fast
inputs=${trace%.json}.inputs
"$work/out/harness" --outputs "$work/results" ${inputs:+$([ -d "$inputs" ] && echo --inputs "$inputs")} --quiet
echo "== PyTorch's op-by-op rounding"
"${THUNDER_GEN_CHECK:?}" "$trace" "$work/results" --op-by-op
echo "== f64"
"$THUNDER_GEN_CHECK" "$trace" "$work/results"
