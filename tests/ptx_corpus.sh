#!/usr/bin/env bash
# ptx_corpus.sh WORK: what nvcc makes of one folder for every size, against a folder specialised
# to one size, for the corpus (docs/symbolic-shapes.md, "What nvcc makes of them"): every symbolic
# Thunder capture in examples/symbolic/corpus at each symbol's largest size (where each was also
# captured), and every torch.export archive in tests/pt2/torch-2.9/dynamic at the largest sizes its
# tests run. Each kernel of the specialised folder keeps its 8- and 16-byte runs and its registers
# within 10% at run-time sizes (tests/ptx_compare.py), but for the kernels listed in
# tests/ptx_known_gaps.txt, each held to its listed count. Tools from the environment:
# THUNDER_GEN, NVCC.
set -u
work=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
: "${THUNDER_GEN:?}" "${NVCC:?}"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$here/checks.sh"

# largest_sizes TRACE: "B=8,T=32" (a JSON trace's symbols at their max) or the last line of an
# archive's .sizes.
largest_sizes() {
  case $1 in
    *.pt2) tail -n 1 "${1%.pt2}.sizes" ;;
    *) python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["symbols"]; print(",".join(k + "=" + str(v["max"]) for k, v in s.items()))' "$1" ;;
  esac
}

# compare TRACE: both folders generated and compiled, their kernels compared.
compare() {
  local trace=$1 name sizes
  name=$(basename "${trace%.*}")
  sizes=$(largest_sizes "$trace")
  "$THUNDER_GEN" "$trace" -o "$name" 2>"$name.err" && "$THUNDER_GEN" "$trace" --specialize "$sizes" -o "$name-at-$sizes" 2>>"$name.err" &&
    device_code "$name" && device_code "$name-at-$sizes" &&
    python3 "$here/ptx_compare.py" --known "$here/ptx_known_gaps.txt" "$name" "$name-at-$sizes" forward backward >"$name.compare" 2>&1
  local status=$?
  sed 's/^/  /' "$name.compare" 2>/dev/null | grep -v '^  ok '
  return $status
}

traces=("$root"/examples/symbolic/corpus/*.json "$root"/tests/pt2/torch-2.9/dynamic/*.pt2)
for trace in "${traces[@]}"; do  # two at a time (the CI machine's cores)
  (compare "$trace" >"$(basename "${trace%.*}").lines"; echo $? >"$(basename "${trace%.*}").status") &
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
done
wait
for trace in "${traces[@]}"; do
  name=$(basename "${trace%.*}")
  cat "$name.lines"
  check "$name-ptx-as-specialised" [ "$(cat "$name.status")" = 0 ]
done
finish
