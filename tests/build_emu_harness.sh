#!/usr/bin/env bash
# build_emu_harness.sh OUT [fast]: builds a generated folder's harness for host emulation as
# OUT/harness, as one translation unit (the kernels first: harness.cpp asks for the host-only
# runtime), so the heavy runtime headers are compiled once; the generated CMakeLists builds them
# separately. By default with AddressSanitizer and UBSan at -O1; `fast`: -O2, no sanitizers.
set -euo pipefail
out=$1 speed=${2:-checked}
cd "$out"
sources=(forward.cu)
[[ -f backward.cu ]] && sources+=(backward.cu)
{ for f in "${sources[@]}" harness.cpp; do echo "#include \"$f\""; done; } >unity.cpp
flags=(-O1 -fno-strict-aliasing -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
[[ "$speed" = fast ]] && flags=(-O2 -fno-strict-aliasing)
"${CXX:-g++}" -std=c++20 "${flags[@]}" -I. unity.cpp -lboost_context -lpthread -o harness
