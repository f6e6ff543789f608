#!/usr/bin/env bash
# headers.sh THUNDER_GEN WORK: every example's, corpus, distributed and two symbolic traces' public header (include/<trace>.h)
# compiles alone as C11 and as C++17, warnings as errors, with no CUDA or runtime header on the
# include path; and all of them together in one C translation unit (their shared declarations
# are defined once).
set -u
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work/headers" && cd "$work" || exit 2
source "$root/tests/checks.sh"
strict=(-Wall -Wextra -pedantic -Werror -fsyntax-only)
: >all.c
# header TRACE [FLAGS...]: its header, alone, then among all.
header() {
  local trace=$1 name
  name=$(basename "$trace" .json)
  shift
  "$gen" "$trace" "$@" -o "gen/$name" >/dev/null 2>&1 || { check "$name-generates" false; return; }
  header=$(ls gen/"$name"/include/*.h)
  cp "$header" headers/
  check "$name-c11" gcc -std=c11 "${strict[@]}" -x c "$header"
  check "$name-c++17" g++ -std=c++17 "${strict[@]}" -x c++ "$header"
  echo "#include \"$(basename "$header")\"" >>all.c
}
for trace in "$root"/examples/*.json "$root"/examples/corpus/*.json "$root"/examples/distributed/*.json; do
  header "$trace"
done
# Symbolic traces' headers declare their size binder too.
header "$root/examples/symbolic/symbolic_block.json" --specialize B=3,T=7
header "$root/tests/api/sizes_probe.json" --specialize B=3,E=4,T=5,U=2
check all-in-one-c gcc -std=c11 "${strict[@]}" -Iheaders all.c
check all-in-one-c++ g++ -std=c++17 "${strict[@]}" -Iheaders -x c++ all.c
finish
