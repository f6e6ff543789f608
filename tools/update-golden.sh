#!/usr/bin/env bash
# Rewrites the golden files in tests/golden/ from the current generator (review the diff!).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh thunder-gen
tests/golden.sh update "${BUILD_DIR:-build}/thunder-gen"
git --no-pager diff --stat -- tests/golden || true
