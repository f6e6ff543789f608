#!/usr/bin/env bash
# op_grads.sh DTYPE WORKDIR: every differentiable op's gradient through generated code, in one
# trace (tests/tools/op_grad_trace.cpp): generated, built for host emulation, run on inputs from
# each op's domain and compared with LibTorch autograd. Leaves WORKDIR/run/check.log (one line per
# output and gradient) and WORKDIR/ops.txt for tests/op_grad_result.sh. Tools come from the
# environment as for check_example.sh, plus OP_GRAD_TRACE. Built at -O0 without sanitizers (the
# compile is the time: 32 s against 70 at -O2, and 0.4 s to run): the examples, which the unit
# tests make cover every op, run under ASan.
set -euo pipefail
dtype=$1 work=$2
rm -rf "$work"
mkdir -p "$work/inputs"
"${OP_GRAD_TRACE:?}" "$dtype" "$work"
TG_EMU_BUILD=unoptimized TG_INPUTS=$work/inputs "$(dirname "$0")/check_example.sh" emu "$work/op_grads_$dtype.json" "$work/run"
