#!/usr/bin/env bash
# ptx_check_mutants.sh WORKDIR: ptx_check.py fails when it should. It compiles one example with
# nvcc as check_example.sh does (a contiguous reshape feeding a pointwise kernel: 16-byte runs)
# and checks that ptx_check.py passes it, then that it fails, naming the kernel, on copies of
# the source, the PTX or the ptxas report broken the way a regression would break them:
#   element an operand whose lanes read 4 neighbours loaded element by element in the element
#           function (its index i * 2 made i: a contiguous run the kernel does not load as one)
#   scalar  the vector accesses made scalar (ld.global.nc.v4.f32 -> ld.global.nc.f32)
#   spill   a kernel reported spilling
# Tools come from the environment: THUNDER_GEN, NVCC.
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
: "${THUNDER_GEN:?}" "${NVCC:=nvcc}"
rm -rf "$work" && mkdir -p "$work/keep" && cd "$work"
"$THUNDER_GEN" "$here/../examples/contiguous_views.json" -o out
"$NVCC" -arch=sm_90 -std=c++17 -c out/forward.cu -Iout -o forward.o -Xptxas -v -keep -keep-dir keep 2>ptxas.log
ptx=keep/forward.ptx

python3 "$here/ptx_check.py" out/forward.cu "$ptx" ptxas.log >pass.txt || { cat pass.txt; echo "FAIL: the unbroken build fails"; exit 1; }
grep -q "v4" "$ptx" || { echo "FAIL: no vector access in the PTX to break"; exit 1; }

failed=0
expect_failure() {  # NAME SOURCE PTX LOG WHAT: ptx_check.py must exit 1 and print WHAT (a regex)
  local name=$1 status=0
  python3 "$here/ptx_check.py" "$2" "$3" "$4" >"$name.txt" 2>&1 || status=$?
  if [[ $status != 1 ]] || ! grep -Eq "$5" "$name.txt"; then
    echo "FAIL: $name: ptx_check.py exited $status, expected 1 with /$5/:"; cat "$name.txt"; failed=1
  else
    echo "ok: $name: $(grep -Em1 "$5" "$name.txt")"
  fi
}

sed 's/tg::load(g_v, i \* 2)/tg::load(g_v, i)/' out/forward.cu >out/element.cu
cmp -s out/forward.cu out/element.cu && { echo "FAIL: forward.cu has no tg::load(g_v, i * 2) to break"; exit 1; }
expect_failure element out/element.cu "$ptx" ptxas.log "g_v is read in runs of 4 neighbours element by element"
sed -E 's/(ld\.global(\.nc)?)\.v[24](\.[a-z]+[0-9]+)/\1\3/g; s/(st\.global)\.v[24](\.[a-z]+[0-9]+)/\1\2/g' "$ptx" >scalar.ptx
expect_failure scalar out/forward.cu scalar.ptx ptxas.log "the 16-byte load run of g_[a-z]+ is not one 16-byte ld.global vector access"
sed -E '0,/0 bytes spill stores, 0 bytes spill loads/s//24 bytes spill stores, 24 bytes spill loads/' ptxas.log >spill.log
grep -q "24 bytes spill stores" spill.log || { echo "FAIL: the ptxas report has no spill line to break"; exit 1; }
expect_failure spill out/forward.cu "$ptx" spill.log "spill"
exit $failed
