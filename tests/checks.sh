# Sourced by the shell tests: `check NAME CONDITION...` counts and prints "ok NAME" or
# "FAIL NAME"; `finish` prints the "N passed, M failed" summary and fails if anything did.
pass=0 fail=0
check() {
  local name=$1; shift
  if "$@"; then pass=$((pass + 1)); echo "ok $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
