#!/usr/bin/env bash
# Configures and builds thunder-gen with its tests in build/ (or $BUILD_DIR).
#   tools/build.sh [TARGET...]   (default: everything)
# UNITY_BUILD=ON compiles the core and reference libraries in batches (tools/run-tests.sh's fresh
# build: less CPU in all, more per edited file).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTHUNDER_GEN_UNITY_BUILD="${UNITY_BUILD:-OFF}" >/dev/null
if (($#)); then
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "$@"
else
  cmake --build "$build" -j "${JOBS:-$(nproc)}"
fi
