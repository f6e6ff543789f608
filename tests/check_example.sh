#!/usr/bin/env bash
# check_example.sh MODE TRACE WORKDIR: one end-to-end check of a trace, as ctest runs it.
#   emu    generate, build the harness for host emulation (g++, AddressSanitizer), run it, and
#          compare every output (and gradient, when the trace trains) with LibTorch
#          (thunder-gen-check)
#   nvcc   generate and compile forward.cu (and backward.cu) with nvcc for sm_90; check in the PTX
#          and the ptxas report that runs became 16-byte accesses and nothing spills (ptx_check.py)
#   nvcc-device  the same checks on the device code alone (nvcc -cubin): the host code's nvcc
#          compile is about 60% of nvcc's time, and the corpus, hostile-name and generated-CMake
#          tests compile it
#   nvrtc  generate and compile their kernels with NVRTC for sm_90
# Tools come from the environment: THUNDER_GEN, THUNDER_GEN_CHECK, NVRTC_CHECK, CXX, NVCC.
# TG_INPUTS, when set, is a folder of input .npy files for the harness (else it draws them).
# TG_FLAGS, when set, are extra generator flags (rematerialization policies, say); TG_CHECK_FLAGS
# thunder-gen-check's (--mixed-precision for a model under bf16 autocast); TG_EMU_BUILD picks
# build_emu_harness.sh's build (checked, fast, unoptimized); TG_FAST=1
# builds the emulated harness with -O2 and no sanitizers; TG_PTX_CHECK=0 skips ptx_check.py (for
# traces built to test something else, whose kernels need not be fast).
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
    "$here/build_emu_harness.sh" . "${TG_EMU_BUILD:-$([[ "${TG_FAST:-0}" = 1 ]] && echo fast || echo checked)}"
    mkdir -p ../results
    ./harness --outputs ../results --repeat 1 ${TG_INPUTS:+--inputs "$TG_INPUTS"}
    "${THUNDER_GEN_CHECK:?}" "$trace" ../results ${TG_CHECK_FLAGS:-} | tee ../check.log
    ;;
  nvcc | nvcc-device)
    # -keep leaves the PTX and -Xptxas -v reports registers and spills: ptx_check.py reads both.
    for cu in "${sources[@]}"; do
      base=${cu%.cu}
      output=(-c -o "$base.o")
      [[ "$mode" = nvcc-device ]] && output=(-cubin -o "$base.cubin")
      mkdir -p "keep.$base"
      "$NVCC" -arch=sm_90 -std=c++17 "${output[@]}" "$cu" -I. -Xptxas -v -keep -keep-dir "keep.$base" 2>"$base.ptxas.log" ||
        { cat "$base.ptxas.log"; exit 1; }
      echo "nvcc -arch=sm_90: compiled $cu"
      [[ "${TG_PTX_CHECK:-1}" = 0 ]] || python3 "$here/ptx_check.py" "$cu" "keep.$base/$base.ptx" "$base.ptxas.log"
    done
    ;;
  nvrtc)
    for cu in "${sources[@]}"; do "${NVRTC_CHECK:?}" "$cu" sm_90; done
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
