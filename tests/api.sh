#!/usr/bin/env bash
# api.sh WORK: the entry points of a generated folder as a program that links them sees them,
# under emulation with AddressSanitizer and UBSan (tests/tools/api_check.cpp on
# tests/api/api_probe.json): statuses, the workspace, two threads. Tools from the environment:
# THUNDER_GEN, CXX.
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
# (Planned by bytes: the probe needs a temporary in its forward, which the time objective saves instead.)
"${THUNDER_GEN:?}" "$here/api/api_probe.json" -o "$work/out" --remat-objective bytes
flags=(-std=c++20 -O1 -fno-strict-aliasing -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
"${CXX:-g++}" "${flags[@]}" -I"$work/out" -I"$work/out/include" -x c++ "$work/out/forward.cu" "$work/out/backward.cu" \
  -x c++ "$here/tools/api_check.cpp" -lboost_context -lpthread -o "$work/api-check"
"$work/api-check"

# The size binder of a symbolic trace's folder (tests/tools/sizes_check.cpp on tests/api/sizes_probe.json).
"${THUNDER_GEN:?}" "$here/api/sizes_probe.json" --specialize B=3,E=4,T=5,U=2 -o "$work/sizes"
"${CXX:-g++}" "${flags[@]}" -Wall -Wextra -Werror -I"$work/sizes" -I"$work/sizes/include" -x c++ "$work/sizes/forward.cu" "$work/sizes/backward.cu" \
  -x c++ "$here/tools/sizes_check.cpp" -lboost_context -lpthread -o "$work/sizes-check"
"$work/sizes-check"
