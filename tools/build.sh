#!/usr/bin/env bash
# Configures and builds thunder-gen with its tests in build/ (or $BUILD_DIR).
#   tools/build.sh [TARGET...]   (default: everything)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if (($#)); then
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "$@"
else
  cmake --build "$build" -j "${JOBS:-$(nproc)}"
fi
