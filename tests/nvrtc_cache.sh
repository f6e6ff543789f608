#!/usr/bin/env bash
# nvrtc_cache.sh TRACE WORKDIR: kernels.cu (every kernel of the trace, one NVRTC program) builds
# through the content-hash cache the nvrtc-mode harness uses: a cold cache compiles, a warm one
# compiles nothing, and a change to an included file (backward.cu, else forward.cu) compiles again.
# Prints the cold and warm times. Tools from the environment: THUNDER_GEN, NVRTC_CHECK.
set -euo pipefail
trace=$1 work=$2
: "${THUNDER_GEN:?}" "${NVRTC_CHECK:?}"
rm -rf "$work"
mkdir -p "$work"
"$THUNDER_GEN" "$trace" -o "$work/out" >/dev/null
cache=$work/cache
build() { "$NVRTC_CHECK" "$work/out/kernels.cu" sm_90 --cache "$cache" | tee -a "$work/log"; }
expect() {  # expect WHAT OUTPUT
  grep -q "$1" <<<"$2" || { echo "nvrtc_cache: expected \"$1\", got: $2" >&2; exit 1; }
}
cold=$(build)
expect "NVRTC compiled it" "$cold"
[[ $(find "$cache" -name '*.entry' | wc -l) == 1 ]] || { echo "nvrtc_cache: the cold build left no single cache entry" >&2; exit 1; }
warm=$(build)
expect "read from the NVRTC cache" "$warm"
changed=$work/out/forward.cu
[[ -f $work/out/backward.cu ]] && changed=$work/out/backward.cu
echo "// an edit" >>"$changed"
expect "NVRTC compiled it" "$(build)"
[[ $(find "$cache" -name '*.entry' | wc -l) == 2 ]] || { echo "nvrtc_cache: the edited program did not get its own entry" >&2; exit 1; }
echo "cold: ${cold#*in }"
echo "warm: ${warm#*in }"
