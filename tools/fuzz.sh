#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, under AddressSanitizer and UBSan) of the trace reader and every
# pass of a generation after it, of the PT2 reader's program (models/model.json) and the same
# passes, and of the runtime's .npy reader (tests/fuzz/).
#   tools/fuzz.sh build                      configure and build the fuzz targets (clang) in $FUZZ_BUILD_DIR
#   tools/fuzz.sh run TARGET [SECONDS] [-- LIBFUZZER_FLAGS...]
#                                            fuzz TARGET (reader, pt2, npy, sizes) for SECONDS (default 60) from a
#                                            scratch copy of tests/fuzz/corpus/TARGET; fails on a crash,
#                                            leak, timeout, out-of-memory or sanitizer report, printing
#                                            the input and the command that reproduces it
#   tools/fuzz.sh merge TARGET [DIR...]      add to tests/fuzz/corpus/TARGET the inputs of DIRs (up to
#                                            2 KB; a run's scratch corpus) and the target's seeds that
#                                            reach code its inputs do not
# Environment: FUZZ_BUILD_DIR (default build-fuzz), FUZZ_WORK_DIR (a run's scratch folder is
# FUZZ_WORK_DIR/TARGET, emptied first; default a new one in $TMPDIR or /tmp), FUZZ_CXX (default
# clang++-16), JOBS (build jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${FUZZ_BUILD_DIR:-build-fuzz}")

usage() { sed -n '4,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

targets_in_tree() {
  local t
  for t in reader pt2 npy sizes; do [ -f "tests/fuzz/${t}_fuzzer.cpp" ] && echo "$t"; done
}

build() {
  # -O1 and line tables only: reports name file:line without the compile time of full debug
  # information. Only the core library and the fuzz targets are configured (no LibTorch, no CUDA).
  # A unity build (sources compiled in batches, so the headers' inline code is parsed, instrumented
  # and optimized once per batch, not once per file; reports still name the source's file and
  # line) takes about 40% less CPU time here. AddressSanitizer's checks as calls rather than inline
  # code: the same checks, 17% less CPU to build (261 -> 216 s), 24% fewer runs a second.
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-16}" -DTHUNDER_GEN_UNITY_BUILD=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -fsanitize-address-outline-instrumentation" \
    -DTHUNDER_GEN_TESTS=OFF -DTHUNDER_GEN_FUZZ=ON >/dev/null
  local targets=()
  mapfile -t targets < <(targets_in_tree | sed 's/$/_fuzzer/')
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target "${targets[@]}"
}

fuzzer_of() {
  local bin="$build/tests/fuzz/$1_fuzzer"
  [ -f "tests/fuzz/$1_fuzzer.cpp" ] || { echo "fuzz: no target '$1' (tests/fuzz/$1_fuzzer.cpp)" >&2; exit 2; }
  [ -x "$bin" ] || { echo "fuzz: $bin is not built (tools/fuzz.sh build)" >&2; exit 2; }
  echo "$bin"
}

# Sanitizer settings for every run: stop at the first report, symbolize stacks with what is there.
sanitizer_env() {
  local symbolizer
  for symbolizer in llvm-symbolizer-16 llvm-symbolizer addr2line; do
    command -v "$symbolizer" >/dev/null && { export ASAN_SYMBOLIZER_PATH; ASAN_SYMBOLIZER_PATH=$(command -v "$symbolizer"); break; }
  done
  export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
}

# libFuzzer flags shared by runs and merges: a dictionary when the build made one for the target.
common_flags() {
  local dict="$build/tests/fuzz/$1.dict"
  [ -f "$dict" ] && echo "-dict=$dict"
  # A trace takes milliseconds; 10 s is a hang. 2 GB is far above any seed's peak (about 300 MB).
  echo "-timeout=10" "-rss_limit_mb=2048"
}

# Inputs `merge` offers a target beside its committed corpus, copied into folder $2. The traces
# also go in without whitespace: a third of the bytes, the same paths through the reader.
copy_seeds() {
  case $1 in
    reader)
      cp examples/*.json examples/corpus/*.json tests/bad/*.json "$2"/
      python3 -c '
import json, pathlib, sys
for f in pathlib.Path(sys.argv[1]).glob("*.json"):
    try: trace = json.loads(f.read_text())
    except ValueError: continue
    f.with_name("compact_" + f.name).write_text(json.dumps(trace, separators=(",", ":"), ensure_ascii=False))
' "$2" ;;
  esac
}

report_finding() {
  local bin=$1 work=$2 input found=0
  for input in "$work"/{crash,leak,timeout,oom,slow-unit}-*; do
    [ -f "$input" ] || continue
    found=1
    echo "fuzz: FINDING: $input ($(stat -c %s "$input") bytes)"
    echo "fuzz: reproduce: $bin $input"
    echo "fuzz: minimise:  $bin -minimize_crash=1 -runs=100000 -exact_artifact_path=$input.min $input"
    if (($(stat -c %s "$input") <= 4096)); then echo "fuzz: the input, base64: $(base64 -w0 "$input")"; fi
  done
  ((found)) || echo "fuzz: no input was saved; the log above says what failed"
}

run() {
  local target=$1 seconds=60
  shift
  if (($#)) && [ "$1" != "--" ]; then seconds=$1; shift; fi
  if [ "${1:-}" = "--" ]; then shift; fi
  local bin work
  bin=$(fuzzer_of "$target")
  if [ -n "${FUZZ_WORK_DIR:-}" ]; then
    work=$FUZZ_WORK_DIR/$target
    rm -rf "$work" && mkdir -p "$work"
  else
    work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-$target.XXXXXX")
  fi
  # The run adds inputs to its corpus: a scratch copy, so the checkout is never written to.
  cp -r "tests/fuzz/corpus/$target" "$work/corpus"
  sanitizer_env
  local status=0 flags
  mapfile -t flags < <(common_flags "$target")
  echo "fuzz: $bin for $seconds s from $(find "$work/corpus" -type f | wc -l) inputs (scratch folder $work)"
  "$bin" "$work/corpus" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/" "$@" || status=$?
  if ((status)); then
    echo "fuzz: $target: libFuzzer exited with $status"
    report_finding "$bin" "$work"
    return 1
  fi
  echo "fuzz: $target: nothing found in $seconds s; new inputs in $work/corpus (keep them with tools/fuzz.sh merge $target $work/corpus)"
}

merge() {
  local target=$1
  shift
  local bin scratch corpus="tests/fuzz/corpus/$target" flags dir before
  bin=$(fuzzer_of "$target")
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/merge-$target.XXXXXX")
  mkdir -p "$scratch/seeds" "$scratch/found"
  copy_seeds "$target" "$scratch/seeds"
  # Found inputs up to 2 KB only: a fuzzed copy of a large trace that reaches one more branch
  # would cost the corpus 60 KB; a run from the corpus soon finds a small input that does.
  for dir in "$@"; do find "$dir" -type f -size -2049c -exec cp -t "$scratch/found" {} +; done
  sanitizer_env
  mapfile -t flags < <(common_flags "$target")
  before=$(find "$corpus" -type f | wc -l)
  # The corpus keeps every input it has (the npy seeds have names tests use); of the others,
  # smallest first, each is added when it reaches an edge none before it did (hit counts
  # ignored: counting them kept four times the bytes, 6.3 MB).
  "$bin" -merge=1 -use_counters=0 "${flags[@]}" "$corpus" "$scratch/seeds" "$scratch/found"
  rm -r "$scratch"
  echo "fuzz: $corpus: $(($(find "$corpus" -type f | wc -l) - before)) inputs added;" \
       "$(find "$corpus" -type f | wc -l) inputs, $(find "$corpus" -type f -printf '%s\n' | awk '{s += $1} END {print s}') bytes"
}

case ${1:-} in
  build) build ;;
  run) (($# >= 2)) || usage; shift; run "$@" ;;
  merge) (($# >= 2)) || usage; shift; merge "$@" ;;
  *) usage ;;
esac
