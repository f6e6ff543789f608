#!/usr/bin/env bash
# Installs what is missing (Debian packages, then the pinned Python side into .venv), builds
# everything and runs every test (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/setup-python.sh
UNITY_BUILD=${UNITY_BUILD:-ON} tools/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "${JOBS:-$(nproc)}"
