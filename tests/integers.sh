#!/usr/bin/env bash
# integers.sh TRACE WORK: one case of tests/integers/: integer arithmetic at the limits of its
# type, where PyTorch wraps and C++ leaves signed overflow (and shifts past the width) undefined.
# Generated, built for emulation under UBSan (any undefined operation aborts the run), run on
# TRACE's .inputs/ folder, and every output compared exactly with LibTorch's.
# Tools from the environment: THUNDER_GEN, THUNDER_GEN_CHECK.
set -euo pipefail
trace=$(realpath "$1") work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/results"
"${THUNDER_GEN:?}" "$trace" -o "$work/out"
"$here/build_emu_harness.sh" "$work/out"
"$work/out/harness" --inputs "${trace%.json}.inputs" --outputs "$work/results" --quiet
"${THUNDER_GEN_CHECK:?}" "$trace" "$work/results"
