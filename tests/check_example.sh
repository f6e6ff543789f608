#!/usr/bin/env bash
# check_example.sh MODE TRACE WORKDIR: one end-to-end check of a trace, as ctest runs it.
#   emu    generate, build the harness for host emulation (g++, AddressSanitizer), run it, and
#          compare every output (and gradient, when the trace trains) with LibTorch
#          (thunder-gen-check)
#   nvcc   generate and compile forward.cu (and backward.cu) with nvcc for sm_90
#   nvrtc  generate and compile their kernels with NVRTC for sm_90
# Tools come from the environment: THUNDER_GEN, THUNDER_GEN_CHECK, NVRTC_CHECK, CXX, NVCC.
# TG_INPUTS, when set, is a folder of input .npy files for the harness (else it draws them).
# TG_FLAGS, when set, are extra generator flags (rematerialization policies, say); TG_FAST=1
# builds the emulated harness with -O2 and no sanitizers.
set -euo pipefail
mode=$1 trace=$(realpath "$2") work=$3
here=$(cd "$(dirname "$0")" && pwd)
: "${THUNDER_GEN:?}" "${CXX:=g++}" "${NVCC:=nvcc}"
rm -rf "$work"
mkdir -p "$work"
"$THUNDER_GEN" "$trace" -o "$work/out" ${TG_FLAGS:-}
cd "$work/out"
sources=(forward.cu)
[[ -f backward.cu ]] && sources+=(backward.cu)
case "$mode" in
  emu)
    "$here/build_emu_harness.sh" . "$([[ "${TG_FAST:-0}" = 1 ]] && echo fast || echo checked)"
    mkdir -p ../results
    ./harness --outputs ../results --repeat 1 ${TG_INPUTS:+--inputs "$TG_INPUTS"}
    "${THUNDER_GEN_CHECK:?}" "$trace" ../results | tee ../check.log
    ;;
  nvcc)
    for cu in "${sources[@]}"; do
      "$NVCC" -arch=sm_90 -std=c++17 -c "$cu" -I. -o "${cu%.cu}.o"
      echo "nvcc -arch=sm_90: compiled $cu"
    done
    ;;
  nvrtc)
    for cu in "${sources[@]}"; do "${NVRTC_CHECK:?}" "$cu" sm_90; done
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
