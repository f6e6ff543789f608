#!/usr/bin/env bash
# golden.sh check|update THUNDER_GEN: compares (or rewrites) the golden files of the examples
# listed in tests/golden/LIST: the decomposed and fused listings, the joint listing (autograd's,
# for traces that train) and the emitted forward.cu, backward.cu (for traces that train) and
# manifest.json. Regenerate after an intended change with: tools/update-golden.sh
# Each check also reads the listings back (--from-stage): the decomposed and joint listings give
# the fused listing again, and a fused listing that does not train gives forward.cu's kernels.
set -uo pipefail
mode=$1 gen=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
pass=0 fail=0

# read_back NAME DIR: the listings in DIR read back with --from-stage give what the trace gave.
read_back() {
  local name=$1 dir=$2 ok=0
  "$gen" --from-stage decompose "$dir/decomposed.txt" --emit fused | cmp -s - "$dir/fused.txt" || { echo "FAIL $name: decomposed.txt read back does not give fused.txt"; ok=1; }
  if [ -e "$dir/joint.txt" ]; then
    "$gen" --from-stage autograd "$dir/joint.txt" --emit fused | cmp -s - "$dir/fused.txt" || { echo "FAIL $name: joint.txt read back does not give fused.txt"; ok=1; }
  else  # (under the trace's name, which the source's first line gives)
    mkdir -p "$tmp/read_back" && cp "$dir/fused.txt" "$tmp/read_back/$name.json"
    "$gen" --from-stage fuse "$tmp/read_back/$name.json" --emit cuda >"$tmp/read_back/$name.cu" &&
      cmp -s -n "$(stat -c %s "$tmp/read_back/$name.cu")" "$tmp/read_back/$name.cu" "$dir/forward.cu" || { echo "FAIL $name: fused.txt read back does not give forward.cu's kernels"; ok=1; }
  fi
  return $ok
}
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
    cp "$tmp/$name.out/forward.cu" "$tmp/$name.out/manifest.json" $(ls "$tmp/$name.out/backward.cu" 2>/dev/null) "$got/" &&
    { [ ! -e "$got/backward.cu" ] || "$gen" "$trace" --emit joint >"$got/joint.txt"; } || { echo "FAIL $name: generation failed"; fail=$((fail + 1)); continue; }
  if [ "$mode" = update ]; then
    mkdir -p "$want" && cp "$got"/* "$want/" && echo "updated $want"
    continue
  fi
  if diff -ru "$want" "$got" && read_back "$name" "$got"; then
    echo "ok $name"; pass=$((pass + 1))
  else
    echo "FAIL $name: differs from $want (intended? run tools/update-golden.sh)"; fail=$((fail + 1))
  fi
done <tests/golden/LIST
[ "$mode" = update ] && exit 0
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
