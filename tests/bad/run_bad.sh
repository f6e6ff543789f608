#!/usr/bin/env bash
# Runs every malformed trace through thunder-gen and checks that it is refused properly.
#
#   run_bad.sh THUNDER_GEN BAD_DIR WORK_DIR
#
# For each BAD_DIR/X.json (and each trace generated below into WORK_DIR/gen, for inputs too large
# to commit) with its BAD_DIR/X.expect:
#   line 1: where the diagnostic must point: a JSON pointer (/ops/0/args/1) or LINE:COL
#   line 2: a substring the message must contain
# both `THUNDER_GEN X.json -o WORK_DIR/X.out` and `THUNDER_GEN validate X.json` must, within 10 s,
#   - exit with status 1 (bad input),
#   - print on stderr exactly one line starting with "X.json", namely
#     "X.json: <pointer>: error: <message>" or "X.json:<line:col>: error: <message>",
#     with the message containing line 2 of X.expect,
# and the generate run must leave neither WORK_DIR/X.out nor a WORK_DIR/.X.out* temporary.
#
# Prints "ok X" or "FAIL X: why" per case, then "N passed, M failed"; exits 1 if any failed.
set -u

if [ $# -ne 3 ]; then
  echo "usage: $0 THUNDER_GEN BAD_DIR WORK_DIR" >&2
  exit 2
fi

abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
TG=$(abs "$1")
BAD=$(abs "$2")
WORK=$(abs "$3")
TIMEOUT=10

if [ ! -x "$TG" ]; then echo "run_bad.sh: $TG is not an executable" >&2; exit 2; fi
if [ ! -d "$BAD" ]; then echo "run_bad.sh: $BAD is not a folder" >&2; exit 2; fi
mkdir -p "$WORK" || exit 2
GEN="$WORK/gen"
rm -rf "$GEN"
mkdir -p "$GEN" || exit 2

# ---- inputs generated at run time (too large to commit) ------------------------------------
# repeat STRING N: N copies of STRING, no newline
repeat() { yes "$1" | head -n "$2" | tr -d '\n'; }
# Each is made only where BAD_DIR has its .expect.
# 100000 nested lists: must be refused quickly, never by overflowing the stack.
[ -f "$BAD/deep_nesting.expect" ] &&
  { repeat '[' 100000; repeat ']' 100000; printf '\n'; } > "$GEN/deep_nesting.json"
# 100000 nested objects.
[ -f "$BAD/deep_nesting_objects.expect" ] &&
  { repeat '{"a":' 100000; printf '1'; repeat '}' 100000; printf '\n'; } > "$GEN/deep_nesting_objects.json"

# ---- the checks ---------------------------------------------------------------------------
passed=0
failed=0
shopt -s nullglob

# check_diag NAME STDERR_FILE WHERE SUBSTRING -> prints why it is wrong, nothing if right
check_diag() {
  local name=$1 err=$2 where=$3 sub=$4 prefix line count=0 found=""
  if [ "${where:0:1}" = "/" ]; then prefix="$name.json: $where: error: "; else prefix="$name.json:$where: error: "; fi
  while IFS= read -r line || [ -n "$line" ]; do
    if [ "${line:0:$((${#name} + 5))}" = "$name.json" ]; then
      count=$((count + 1))
      found=$line
    fi
  done < "$err"
  if [ "$count" -ne 1 ]; then
    printf '%s line(s) on stderr start with %s.json, expected 1' "$count" "$name"
    return
  fi
  if [ "${found:0:${#prefix}}" != "$prefix" ]; then
    printf 'diagnostic does not start with "%s"' "$prefix"
    return
  fi
  local message=${found:${#prefix}}
  if [[ "$message" != *"$sub"* ]]; then
    printf 'message does not contain "%s"' "$sub"
  fi
}

# one_line FILE: the file's text on one line, lines joined by " | ", cut at 400 characters
one_line() {
  local text
  text=$(tr -d '\r' < "$1" | awk 'NR > 1 { printf " | " } { printf "%s", $0 }')
  if [ ${#text} -gt 400 ]; then text="${text:0:400}..."; fi
  printf '%s' "$text"
}

# status RC: the exit status, with the signal's name when a signal ended the process
status() {
  if [ "$1" -gt 128 ] && [ "$1" -lt 160 ]; then printf '%s (SIG%s)' "$1" "$(kill -l $(($1 - 128)) 2> /dev/null)"; else printf '%s' "$1"; fi
}

run_case() {
  local json=$1 dir name expect where sub why=() rc problem
  dir=$(dirname "$json")
  name=$(basename "$json" .json)
  expect="$BAD/$name.expect"
  if [ ! -f "$expect" ]; then
    echo "FAIL $name: no $name.expect"
    failed=$((failed + 1))
    return
  fi
  where=$(sed -n 1p "$expect")
  sub=$(sed -n 2p "$expect")
  if [ -z "$where" ] || [ -z "$sub" ]; then
    echo "FAIL $name: $name.expect needs two non-empty lines (location, message substring)"
    failed=$((failed + 1))
    return
  fi

  local out="$WORK/$name.out" err="$WORK/$name.stderr" verr="$WORK/$name.validate.stderr"
  rm -rf "$out" "$WORK/.$name.out"*

  # generate
  # (the outer 2>/dev/null drops only the shell's own "Segmentation fault" notice)
  (cd "$dir" && timeout -k 2 "$TIMEOUT" "$TG" "$name.json" -o "$out" > "$WORK/$name.stdout" 2> "$err") 2> /dev/null
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    why+=("generate timed out after ${TIMEOUT}s")
  elif [ "$rc" -ne 1 ]; then
    why+=("generate exited $(status "$rc"), expected 1; stderr: $(one_line "$err")")
  else
    problem=$(check_diag "$name" "$err" "$where" "$sub")
    [ -n "$problem" ] && why+=("generate: $problem; stderr: $(one_line "$err")")
  fi
  [ -e "$out" ] && why+=("generate left $name.out behind")
  local leftovers=("$WORK/.$name.out"*)
  [ ${#leftovers[@]} -gt 0 ] && why+=("generate left temporaries behind: $(cd "$WORK" && echo ".$name.out"*)")

  # validate
  (cd "$dir" && timeout -k 2 "$TIMEOUT" "$TG" validate "$name.json" > "$WORK/$name.validate.stdout" 2> "$verr") 2> /dev/null
  rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    why+=("validate timed out after ${TIMEOUT}s")
  elif [ "$rc" -ne 1 ]; then
    why+=("validate exited $(status "$rc"), expected 1; stdout: $(one_line "$WORK/$name.validate.stdout"); stderr: $(one_line "$verr")")
  else
    problem=$(check_diag "$name" "$verr" "$where" "$sub")
    [ -n "$problem" ] && why+=("validate: $problem; stderr: $(one_line "$verr")")
  fi

  if [ ${#why[@]} -eq 0 ]; then
    echo "ok $name"
    passed=$((passed + 1))
  else
    local joined="" w
    for w in "${why[@]}"; do joined="${joined:+$joined; }$w"; done
    echo "FAIL $name: $joined"
    failed=$((failed + 1))
  fi
}

cases=("$BAD"/*.json "$GEN"/*.json)
if [ ${#cases[@]} -eq 0 ]; then echo "run_bad.sh: no cases in $BAD" >&2; exit 2; fi
for json in "${cases[@]}"; do run_case "$json"; done

# An .expect without its trace is a mistake in the test itself.
for expect in "$BAD"/*.expect; do
  name=$(basename "$expect" .expect)
  if [ ! -f "$BAD/$name.json" ] && [ ! -f "$GEN/$name.json" ]; then
    echo "FAIL $name: $name.expect has no $name.json"
    failed=$((failed + 1))
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
