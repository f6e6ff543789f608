#!/usr/bin/env bash
# tools/update-golden.sh: rewrites the golden files from the current generator, after an intended
# change of its output (review the diff, and say in the commit message why the output changed):
#   tests/golden/<name>/         four examples' listings and sources whole (tests/golden.sh)
#   tests/golden/outputs.sha256  every example, corpus and distributed trace's files by SHA-256
#                                (tests/golden_hashes.py)
# Builds thunder-gen in ${BUILD_DIR:-build} first. The version (`thunder-gen --version`, the
# project's VERSION in CMakeLists.txt) is in every generated banner, so a version bump changes
# every file and every hash: that update is expected.
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0; fi
cd "$(dirname "$0")/.."
tools/build.sh thunder-gen
tests/golden.sh update "${BUILD_DIR:-build}/thunder-gen"
python3 tests/golden_hashes.py update "${BUILD_DIR:-build}/thunder-gen"
git --no-pager diff --stat -- tests/golden || true
