#!/usr/bin/env bash
# gpu-session.sh: everything one lent GPU machine should run, in one call that needs neither
# Thunder nor a build of thunder-gen there.
#
#   here:   tools/gpu-session.sh --prepare            # fills .devcarry/ (git-ignored)
#   there:  tools/gpu-session.sh --run                # with .devcarry carried; results in $OUT
#
# --prepare: a stripped thunder-gen with the shared libraries the device lacks, a gpu-bench
# folder made by `gpu-bench.sh --prepare` (traces and generated code; the inputs are written
# there, gigabytes that need not travel), and every example's results under host emulation,
# thinned (.devcarry/expected).
# --run: gpu-bench.sh --from that folder (the table), then gpu-check.sh --expected over examples/
# and examples/corpus/ (every output and gradient against the emulation's, NVRTC against nvcc),
# each under a time limit (BENCH_TIMEOUT, CHECK_TIMEOUT seconds; CHECK_JOBS in parallel, 14 of
# the machine's 16 CPUs by default; CHECK_EXAMPLES: other examples).
# Then gpu-sizes.sh --run (SIZES_TIMEOUT): one folder for every size against folders specialised
# to each size (--prepare built them).
# $OUT gets bench.txt, check.txt, sizes.txt and logs.tar.gz; the tables are printed last.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
carry=$ROOT/.devcarry
case ${1:-} in
  --prepare)
    set -e
    grep -qx '/.devcarry/' "$ROOT/.git/info/exclude" 2>/dev/null || echo /.devcarry/ >>"$ROOT/.git/info/exclude"
    rm -rf "$carry" && mkdir -p "$carry"
    cmake --build "$ROOT/build" --target thunder-gen >/dev/null
    # The device machine lacks some of thunder-gen's Debian libraries (mimalloc, simdjson, libzip):
    # they travel beside it, and a wrapper points the loader at them for thunder-gen alone.
    mkdir -p "$carry/lib"
    strip -o "$carry/lib/thunder-gen" "$ROOT/build/thunder-gen"
    ldd "$ROOT/build/thunder-gen" | awk '$3 ~ /^\// {print $3}' | grep -v -e '/libc\.so' -e '/libm\.so' -e '/ld-linux' |
      xargs -I{} cp -L {} "$carry/lib/"
    printf '#!/bin/sh\nlib=$(dirname "$(readlink -f "$0")")/lib\nLD_LIBRARY_PATH=$lib exec "$lib/thunder-gen" "$@"\n' >"$carry/thunder-gen"
    chmod +x "$carry/thunder-gen"
    "$ROOT/tools/gpu-bench.sh" --prepare --out "$carry/bench"
    "$ROOT/tools/gpu-sizes.sh" --prepare "$carry/sizes"
    # Every example's results under host emulation (inputs, outputs, gradients): what the GPU must
    # reproduce. ctest checks these against LibTorch (example.*.emu, corpus.*.emu).
    expect() {
      local trace=$1 name work inputs=()
      name=$(basename "$trace" .json) work=$(mktemp -d)
      [[ -d ${trace%.json}.inputs ]] && inputs=(--inputs "${trace%.json}.inputs")
      "$carry/thunder-gen" "$trace" -o "$work/out" >/dev/null && (cd "$work/out" && "$ROOT/tests/build_emu_harness.sh" . fast >/dev/null) &&
        mkdir -p "$carry/expected/$name" && "$work/out/harness" "${inputs[@]}" --outputs "$carry/expected/$name" --repeat 0 --quiet &&
        "$ROOT/.venv/bin/python" "$ROOT/tools/torch_reference.py" "$trace" "$carry/expected/$name" --thin ||
        { echo "gpu-session: $name: no emulated results" >&2; rm -rf "$carry/expected/$name"; }
      rm -rf "$work"
    }
    export -f expect
    export ROOT carry
    ls "$ROOT"/examples/*.json "$ROOT"/examples/corpus/*.json | xargs -P "$(nproc)" -I{} bash -c 'expect {}'
    du -sh "$carry" "$carry/expected"
    ;;
  --run)
    out=${OUT:-/tmp/gpu-session}
    mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$out/gpu.txt"
    export THUNDER_GEN=$carry/thunder-gen PYTHON=${PYTHON:-python3} PYTHONUNBUFFERED=1
    timeout "${BENCH_TIMEOUT:-150}" "$ROOT/tools/gpu-bench.sh" --from "$carry/bench" --out /tmp/bench 2>&1 | tee "$out/bench.txt"
    timeout "${CHECK_TIMEOUT:-240}" "$ROOT/tools/gpu-check.sh" --out /tmp/check --jobs "${CHECK_JOBS:-14}" --expected "$carry/expected" \
      ${CHECK_EXAMPLES:-"$ROOT"/examples/*.json "$ROOT"/examples/corpus/*.json} >"$out/check-progress.txt" 2>&1
    cp /tmp/check/summary.txt "$out/check.txt" 2>/dev/null
    timeout "${SIZES_TIMEOUT:-120}" "$ROOT/tools/gpu-sizes.sh" --run "$carry/sizes" >"$out/sizes.txt" 2>&1
    (cd /tmp && tar czf "$out/logs.tar.gz" --exclude='*.npy' --exclude=harness --exclude='harness_*' bench check 2>/dev/null)
    echo "==== gpu-check"; cat "$out/check.txt" 2>/dev/null || tail -20 "$out/check-progress.txt"
    echo "==== gpu-sizes"; tail -8 "$out/sizes.txt"
    echo "==== gpu-bench"; cat /tmp/bench/table.txt 2>/dev/null || tail -20 "$out/bench.txt"
    ;;
  *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
