#!/usr/bin/env bash
# check_example.sh MODE TRACE WORKDIR: one end-to-end check of a trace, as ctest runs it.
#   emu    generate, build the harness for host emulation (g++, AddressSanitizer), run it, and
#          compare every output with LibTorch (thunder-gen-check)
#   nvcc   generate and compile forward.cu with nvcc for sm_90
#   nvrtc  generate and compile forward.cu's kernels with NVRTC for sm_90
# Tools come from the environment: THUNDER_GEN, THUNDER_GEN_CHECK, NVRTC_CHECK, CXX, NVCC.
set -euo pipefail
mode=$1 trace=$(realpath "$2") work=$3
: "${THUNDER_GEN:?}" "${CXX:=g++}" "${NVCC:=nvcc}"
rm -rf "$work"
mkdir -p "$work"
"$THUNDER_GEN" "$trace" -o "$work/out"
cd "$work/out"
case "$mode" in
  emu)
    "$CXX" -std=c++20 -O1 -fno-strict-aliasing -fsanitize=address,undefined -fno-sanitize-recover=undefined \
      -fno-omit-frame-pointer -I. -xc++ forward.cu -xnone harness.cpp -lboost_context -lpthread -o harness
    mkdir -p ../results
    ./harness --outputs ../results --repeat 1
    "${THUNDER_GEN_CHECK:?}" "$trace" ../results
    ;;
  nvcc)
    "$NVCC" -arch=sm_90 -std=c++17 -c forward.cu -I. -o forward.o
    echo "nvcc -arch=sm_90: compiled forward.cu"
    ;;
  nvrtc)
    "${NVRTC_CHECK:?}" forward.cu sm_90
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
