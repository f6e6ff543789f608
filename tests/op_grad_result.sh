#!/usr/bin/env bash
# op_grad_result.sh WORKDIR OP: one op's verdict from an op_grads.sh run: every output and
# gradient line of its case must say ok, and there must be some. An op the table gives no
# gradient passes by being listed as such in ops.txt (the op must still be in the table's list).
set -euo pipefail
work=$1 op=$2
prefix=$(awk -v op="$op" '$1 == op { print $2 }' "$work/ops.txt")
[ -n "$prefix" ] || { echo "$op: not in $work/ops.txt (did op_grads.sh run?)"; exit 1; }
if [ "$prefix" = - ]; then
  echo "$op: no gradient (no rule in the op table, no gradient case)"
  exit 0
fi
lines=$(grep -E ": (grad_)?${prefix}[a-z]+ " "$work/run/check.log" || true)
[ -n "$lines" ] || { echo "$op: no results in $work/run/check.log"; exit 1; }
echo "$lines"
! grep -q MISMATCH <<<"$lines"
