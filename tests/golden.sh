#!/usr/bin/env bash
# golden.sh check|update THUNDER_GEN: compares (or rewrites) the golden files of the examples
# listed in tests/golden/LIST: the decomposed and fused listings and the emitted forward.cu,
# backward.cu (for traces that train) and manifest.json. Regenerate after an intended change with: tools/update-golden.sh
set -uo pipefail
mode=$1 gen=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
while read -r name; do
  [ -z "$name" ] && continue
  trace=examples/$name.json
  want=tests/golden/$name
  got=$tmp/$name
  mkdir -p "$got"
  "$gen" "$trace" --emit decomposed >"$got/decomposed.txt" &&
    "$gen" "$trace" --emit fused >"$got/fused.txt" &&
    "$gen" "$trace" -o "$tmp/$name.out" &&
    cp "$tmp/$name.out/forward.cu" "$tmp/$name.out/manifest.json" $(ls "$tmp/$name.out/backward.cu" 2>/dev/null) "$got/" || { echo "FAIL $name: generation failed"; fail=$((fail + 1)); continue; }
  if [ "$mode" = update ]; then
    mkdir -p "$want" && cp "$got"/* "$want/" && echo "updated $want"
    continue
  fi
  if diff -ru "$want" "$got"; then
    echo "ok $name"; pass=$((pass + 1))
  else
    echo "FAIL $name: differs from $want (intended? run tools/update-golden.sh)"; fail=$((fail + 1))
  fi
done <tests/golden/LIST
[ "$mode" = update ] && exit 0
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
