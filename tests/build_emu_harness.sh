#!/usr/bin/env bash
# build_emu_harness.sh OUT [fast|unoptimized]: builds a generated folder's harness for host
# emulation as OUT/harness, as one translation unit (the kernels first: harness.cpp asks for the
# host-only runtime). By default with AddressSanitizer and UBSan at -O1; `fast`: -O2, no
# sanitizers; `unoptimized`: -O0, no sanitizers, for a large trace on small tensors, whose compile
# time is all of it (op_grads: 32 s instead of 70 to compile, 0.4 s instead of 0.15 to run).
#
# TG_EMU_RUNTIME_CACHE, when set (the test suite sets it), is a folder of the runtime's larger
# parts (the emulator's scheduler, the harness) compiled once per compiler, flags and runtime
# headers; the build then defines TG_RUNTIME_PREBUILT (tg_runtime.cuh) and compiles only the
# trace's own code: about 3 s instead of 12 for layer_norm.json on the 2-core test machine. A
# folder whose sources another build in the cache compiled with the same flags copies its harness.
# Unset, the runtime is compiled in, header-only, as the generated CMakeLists.txt does.
set -euo pipefail
out=$1 speed=${2:-checked}
cd "$out"
cxx=${CXX:-g++}
sources=(forward.cu)
[[ -f backward.cu ]] && sources+=(backward.cu)
{ for f in "${sources[@]}" harness.cpp; do echo "#include \"$f\""; done; } >unity.cpp
flags=(-std=c++20 -O1 -fno-strict-aliasing -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
[[ "$speed" = fast ]] && flags=(-std=c++20 -O2 -fno-strict-aliasing)
[[ "$speed" = unoptimized ]] && flags=(-std=c++20 -O0 -fno-strict-aliasing)
libs=(-lboost_context -lpthread)
if [[ -z "${TG_EMU_RUNTIME_CACHE:-}" ]]; then
  "$cxx" "${flags[@]}" -I. unity.cpp "${libs[@]}" -o harness
  exit
fi
key=$({ "$cxx" --version; echo "${flags[*]}"; cat tg_*.h tg_runtime.cuh; } | sha256sum | cut -c1-16)
runtime=$TG_EMU_RUNTIME_CACHE/runtime-$key.o
mkdir -p "$TG_EMU_RUNTIME_CACHE"
# One build of a key's runtime and headers at a time: the suite starts several harness builds at
# once, which would each compile them (10 s of CPU) before the first finished.
exec {lock}>"$TG_EMU_RUNTIME_CACHE/lock-$key"
flock "$lock"
if [[ ! -f "$runtime" ]]; then
  printf '#include "tg_runtime.cuh"\n#include "tg_host.h"\n#include "tg_harness.h"\n' >runtime.cpp
  partial=$(mktemp "$runtime.XXXXXX")
  "$cxx" "${flags[@]}" -DTG_RUNTIME_LIBRARY -I. -c runtime.cpp -o "$partial"
  mv -f "$partial" "$runtime"  # a rename: a build running beside this one sees all of it or none
fi
# The runtime's headers precompiled (a .gch) beside it: parsing them was two thirds of a small
# trace's compile. gcc takes the .gch for the first include of the translation unit when it was
# built with the same flags (else it reads the header: slower, the same result); the folder's own
# copies of the headers are then skipped as already included (#pragma once, the same contents).
prelude=$TG_EMU_RUNTIME_CACHE/prelude-$key
if [[ ! -f "$prelude/tg_emu_prelude.h.gch" ]]; then
  partial=$(mktemp -d "$prelude.XXXXXX")
  printf '#include "tg_runtime.cuh"\n#include "tg_host.h"\n#include "tg_harness.h"\n' >"$partial/tg_emu_prelude.h"
  "$cxx" "${flags[@]}" -DTG_RUNTIME_PREBUILT -I. -x c++-header "$partial/tg_emu_prelude.h" -o "$partial/tg_emu_prelude.h.gch"
  mv -T "$partial" "$prelude" 2>/dev/null || rm -rf "$partial"  # a folder's rename: if another build won, its copy serves
fi
flock -u "$lock"
# A folder whose sources, byte for byte, another build compiled with the same flags takes that
# harness (the suite generates some folders twice: an archive written by two torch versions, a
# size that two tests specialise to); one build of a key at a time. Entries are copies (a link
# would let the next copy into a folder write into the entry), renamed into place; those unused
# for a day are removed.
sources_key=$({ echo "$key"; find . -type f \( -name '*.cu' -o -name '*.cuh' -o -name '*.h' -o -name '*.cpp' \) \
                ! -name 'unity*.cpp' ! -name runtime.cpp -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; } | sha256sum | cut -c1-32)
built=$TG_EMU_RUNTIME_CACHE/harness-$sources_key
exec {harness_lock}>"$built.lock"
flock "$harness_lock"
rm -f harness
if [[ -f "$built" ]]; then
  touch "$built"
  cp "$built" harness
  exit
fi
{ echo '#include "tg_emu_prelude.h"'; cat unity.cpp; } >unity_prelude.cpp
"$cxx" "${flags[@]}" -DTG_RUNTIME_PREBUILT -I"$prelude" -I. unity_prelude.cpp "$runtime" "${libs[@]}" -o harness
partial=$(mktemp "$built.XXXXXX")  # (mode 600: made executable before it is renamed into place)
{ cp harness "$partial" && chmod 755 "$partial" && mv -f "$partial" "$built"; } || rm -f "$partial"
find "$TG_EMU_RUNTIME_CACHE" -maxdepth 1 -name 'harness-*' -mtime +0 -delete 2>/dev/null || true
