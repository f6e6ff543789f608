#!/usr/bin/env bash
# generated_cmake.sh THUNDER_GEN THUNDER_GEN_CHECK WORK: the CMakeLists.txt in an output folder
# builds in all three modes: nvcc for sm_90, nvrtc with the kernels compiled ahead to a cubin, and
# emu, as another project add_subdirectory()s the folder (the library and its harness, which runs
# and is checked against LibTorch) and links thunder_gen::layer_norm from C to run the forward.
# Building needs no GPU.
set -euo pipefail
gen=$1 check=$2 work=$3
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$PATH:/usr/local/cuda/bin"
trace=$root/examples/layer_norm.json
rm -rf "$work" && mkdir -p "$work"
"$gen" "$trace" -o "$work/out"
for mode in nvcc nvrtc; do
  echo "== TG_MODE=$mode"
  cmake -S "$work/out" -B "$work/build-$mode" -DTG_MODE=$mode -DTG_CUBIN_AHEAD=ON -DCMAKE_BUILD_TYPE=Release >"$work/$mode.log" 2>&1 ||
    { cat "$work/$mode.log"; exit 1; }
  cmake --build "$work/build-$mode" >>"$work/$mode.log" 2>&1 || { cat "$work/$mode.log"; exit 1; }
  [ -x "$work/build-$mode/harness" ] || { echo "no harness built in $mode mode"; exit 1; }
done
[ -s "$work/out/kernels.cu.cubin" ] || { echo "TG_CUBIN_AHEAD made no kernels.cu.cubin"; exit 1; }

echo "== TG_MODE=emu: add_subdirectory() from another project, linked from C"
mkdir -p "$work/user"
cat >"$work/user/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.24)
project(user C CXX)
add_subdirectory("$work/out" generated)
add_executable(user main.c)
target_link_libraries(user PRIVATE thunder_gen::layer_norm)
EOF
# With w = 1 and b = 0 every row of layer_norm's output has mean 0 and variance 1 (up to eps).
cat >"$work/user/main.c" <<'EOF'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "layer_norm.h"
enum { ROWS = 2048, COLS = 1024 };
int main(void) {
  float* x = malloc(sizeof(float) * ROWS * COLS);
  float* y = malloc(sizeof(float) * ROWS * COLS);
  float* w = malloc(sizeof(float) * COLS);
  float* b = malloc(sizeof(float) * COLS);
  void* workspace = malloc(layer_norm_workspace_bytes() + 1);
  for (int i = 0; i < ROWS * COLS; ++i) x[i] = (float)((i * 7919) % 1000) / 250.0f - 2.0f;
  for (int j = 0; j < COLS; ++j) w[j] = 1.0f, b[j] = 0.0f;
  int status = layer_norm_forward(x, w, b, y, workspace, NULL);
  if (status != THUNDER_GEN_SUCCESS) { printf("forward: %s\n", layer_norm_status_string(status)); return 1; }
  double worst = 0;
  for (int r = 0; r < ROWS; ++r) {
    double mean = 0, var = 0;
    for (int j = 0; j < COLS; ++j) mean += y[r * COLS + j];
    mean /= COLS;
    for (int j = 0; j < COLS; ++j) var += (y[r * COLS + j] - mean) * (y[r * COLS + j] - mean);
    var /= COLS;
    worst = fmax(worst, fmax(fabs(mean), fabs(var - 1.0)));
  }
  printf("rows of mean 0 and variance 1, worst deviation %g\n", worst);
  return worst < 1e-3 ? 0 : 1;
}
EOF
cmake -S "$work/user" -B "$work/user/build" -DTG_MODE=emu -DCMAKE_BUILD_TYPE=Release >"$work/user.log" 2>&1 || { cat "$work/user.log"; exit 1; }
cmake --build "$work/user/build" >>"$work/user.log" 2>&1 || { cat "$work/user.log"; exit 1; }
[ -x "$work/user/build/generated/harness" ] || { echo "no harness built in emu mode"; exit 1; }
mkdir -p "$work/results"
"$work/user/build/generated/harness" --outputs "$work/results" --quiet
"$check" "$trace" "$work/results"
"$work/user/build/user"
