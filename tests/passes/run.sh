#!/usr/bin/env bash
# run.sh TEST WORK: runs the RUN: lines of a per-pass test (tests/passes/*.test) as LLVM's lit
# would, each with bash -o pipefail, and fails when one fails. Substitutions: %s the test file,
# %S its folder, %t a scratch path under WORK (a fresh folder for split-file), %thunder-gen the
# generator ($THUNDER_GEN), %runner this script. FileCheck, split-file and not are LLVM's
# (Debian's llvm-<N>-tools: $TG_LLVM_BIN, put first on PATH). A line ending in "\" goes on.
set -uo pipefail
test_file=$(realpath "$1") work=$2
: "${THUNDER_GEN:?THUNDER_GEN must name the thunder-gen binary}" "${TG_LLVM_BIN:?TG_LLVM_BIN must name the folder holding FileCheck}"
export PATH="$TG_LLVM_BIN:$PATH"
name=$(basename "$test_file")
scratch=$work/$name.tmp
rm -rf "$scratch" && mkdir -p "$work" || exit 1

commands=() pending=""
while IFS= read -r line; do
  [[ $line =~ (#|//)\ ?RUN:\ ?(.*)$ ]] || continue
  text=${BASH_REMATCH[2]}
  if [[ $text == *\\ ]]; then pending+="${text%\\} "; continue; fi
  commands+=("$pending$text") pending=""
done <"$test_file"
[ -n "$pending" ] && { echo "$name: a RUN: line ends in \\ with no line after it" >&2; exit 1; }
((${#commands[@]})) || { echo "$name: no RUN: line" >&2; exit 1; }

for command in "${commands[@]}"; do
  command=${command//%thunder-gen/$THUNDER_GEN}
  command=${command//%runner/$(realpath "$0")}
  command=${command//%s/$test_file}
  command=${command//%S/$(dirname "$test_file")}
  command=${command//%t/$scratch}
  echo "RUN: $command"
  bash -o pipefail -c "$command" || { echo "$name: FAILED: $command" >&2; exit 1; }
done
echo "$name: ${#commands[@]} RUN line(s) passed"
