#!/usr/bin/env bash
# determinism.sh THUNDER_GEN WORK: every example generated twice, into differently named folders,
# must give byte-identical output folders.
set -uo pipefail
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work"
pass=0 fail=0
for trace in "$root"/examples/*.json; do
  name=$(basename "$trace" .json)
  "$gen" "$trace" -o "$work/$name.first" && (cd "$work" && "$gen" "$trace" -o "second_$name")
  if diff -r "$work/$name.first" "$work/second_$name" >/dev/null; then
    pass=$((pass + 1))
  else
    echo "FAIL $name: two runs differ"; diff -r "$work/$name.first" "$work/second_$name" | head -20; fail=$((fail + 1))
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
