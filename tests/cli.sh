#!/usr/bin/env bash
# cli.sh THUNDER_GEN WORK: the command line's contract: exit codes (0 ok, 1 bad input, 2 usage),
# --version, list-ops, validate, --emit, -v, --dump-dir, and an output folder that is replaced
# whole or not at all.
set -u
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ex=$root/examples/softmax.json
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"
run() { "$gen" "$@" >out.txt 2>err.txt; echo $? >rc.txt; }
rc() { [ "$(cat rc.txt)" = "$1" ]; }
has() { grep -q -- "$2" "$1"; }

run --version;                       check version rc 0; check version-text has out.txt "thunder-gen 0.1.0"
run;                                 check no-args rc 2
run "$ex" --no-such-flag;            check unknown-flag rc 2
run "$ex" --emit nonsense;           check bad-stage rc 2
run "$ex";                           check missing-output rc 2; check missing-output-text has err.txt "-o OUT is required"
run --tag torch.exp=save "$ex" -o gen; check tag-took-trace rc 2; check tag-took-trace-text has err.txt "after --tag was read as a tag"
run list-ops;                        check list-ops rc 0; check list-ops-lists has out.txt "prims.var_mean(a, dims, \*, correction)"
declared=$(sed -n 's/^thunder-gen [0-9.]*: \([0-9]*\) ops$/\1/p' out.txt)
check list-ops-count [ "$(grep -c '^\(prims\|torch\|thunder\.distributed\.prims\)\.' out.txt)" = "$declared" ]
run validate "$ex";                  check validate-ok rc 0
run validate "$root/tests/bad/unknown_op.json"; check validate-bad rc 1
# Symbolic sizes (docs/symbolic-shapes.md): without --specialize, a folder that takes them at run
# time; a size for some symbols only is refused naming the one missing and the flag; the flag's
# text and sizes checked; a size recorded where the folder and the plan say it.
sym=$root/examples/symbolic/symbolic_block.json
run "$sym" -o gen;                   check symbolic-run-time-sizes rc 0; check symbolic-run-time-entry has gen/include/symbolic_block.h "const int64_t\* tg_sizes,"
check symbolic-run-time-workspace has gen/include/symbolic_block.h "size_t symbolic_block_workspace_bytes(const int64_t\* tg_sizes);"
rm -rf gen
run "$sym" -o gen --specialize B=3;  check symbolic-needs-every-size rc 1; check symbolic-needs-every-size-text has err.txt "/symbols/T: error: the trace's sizes depend on T (1 <= T <= 40); .* --specialize T=<size>"
check symbolic-refused-wrote-nothing [ ! -e gen ]
run "$sym" -o gen --specialize B=3,T=x; check specialize-text rc 2; check specialize-text-words has err.txt "expected <symbol>=<size>"
run "$sym" -o gen --specialize ""; check specialize-empty rc 2; check specialize-empty-words has err.txt "no sizes given"; check specialize-empty-writes-nothing test ! -e gen
run explain "$sym" --plan-at ""; check plan-at-empty rc 2; check plan-at-empty-words has err.txt "no sizes given"
run "$sym" --specialize B=2,T=3 --tags "" -o gen; check tags-empty rc 2; check tags-empty-words has err.txt "no file given"
run "$sym" --specialize B=2,T=3 --dump-dir "" -o gen; check dump-dir-empty rc 2; check dump-dir-empty-words has err.txt "no folder given"; check dump-dir-empty-writes-nothing test ! -e gen
run "$sym" -o gen --specialize B=3,B=4,T=1; check specialize-twice rc 2; check specialize-twice-words has err.txt "B is given twice"
run "$sym" -o gen --specialize B=9,T=1; check specialize-range rc 1; check specialize-range-words has err.txt "B=9 is not a size the trace allows: 1 <= B <= 8"
run validate "$sym" --specialize B=2,T=5; check validate-symbolic rc 0
run explain "$sym" --specialize B=2,T=5 --remat-objective bytes; check explain-symbolic rc 0; check explain-symbolic-sizes has out.txt "^at the sizes B=2, T=5 (1 <= B <= 8; 1 <= T <= 40); planned at B=8, T=40 (--plan-at)$"
check explain-symbolic-total has out.txt "^saved for the backward: 9 tensors, 76368 bytes = 1032\*B\*T + 66048 (396288 at the plan's sizes)"
check explain-symbolic-bytes has out.txt "^  h f32\[2, 5, 128\]  5120 bytes = 512\*B\*T (163840 at the plan's sizes), dense, intermediate"
# --plan-at: the plan weighs bytes at the sizes given (the others at their largest); refused unless each is a symbol's, in range.
run explain "$sym" --specialize B=2,T=5 --plan-at B=4; check plan-at rc 0; check plan-at-sizes has out.txt "planned at B=4, T=40 (--plan-at)$"
check plan-at-bytes has out.txt "^  h f32\[2, 5, 128\]  5120 bytes = 512\*B\*T (81920 at the plan's sizes)"
run explain "$sym" --specialize B=2,T=5 --plan-at Q=3; check plan-at-unknown rc 1; check plan-at-unknown-text has err.txt "--plan-at: error: the trace has no symbol Q"
run explain "$sym" --specialize B=2,T=5 --plan-at B=9; check plan-at-range rc 1; check plan-at-range-text has err.txt "--plan-at: error: B=9 is outside its range: 1 <= B <= 8"
run explain "$sym" --specialize B=2,T=5 --plan-at B=x; check plan-at-text rc 2; check plan-at-text-words has err.txt "^thunder-gen: error: --plan-at: "
run explain "$root/examples/layer_norm.json" --plan-at B=2; check plan-at-static rc 1; check plan-at-static-text has err.txt "this trace's sizes are static"
run "$sym" -o gen --specialize B=2,T=5; check specialize-ok rc 0
check specialize-header has gen/include/symbolic_block.h "Specialised at B=2, T=5"
check specialize-manifest has gen/manifest.json '"specialized_at"'
# The listings say which sizes they are for, and keep saying so when read back (--from-stage).
run "$sym" --specialize B=2,T=5 --emit decomposed; check listing-sizes has out.txt "^  # specialized at T = 5 (1 <= T <= 40)$"
cp out.txt decomposed.txt
run "$sym" --specialize B=2,T=5 --emit fused; cp out.txt fused.txt
run --from-stage decompose decomposed.txt --emit fused; check resume-symbolic rc 0
check resume-keeps-sizes cmp -s out.txt fused.txt
sed 's/^  # specialized at T = 5 /  # specialized at T = 41 /' decomposed.txt >bad-size.txt
run --from-stage decompose decomposed.txt --emit fused --specialize B=3,T=5; check resume-specialize rc 2
check resume-specialize-words has err.txt "a listing (--from-stage) is at the sizes"
run --from-stage decompose bad-size.txt --emit fused; check resume-bad-size rc 1
check resume-bad-size-words has err.txt "bad-size.txt:[0-9]*:.*T = 41 is outside 1 <= T <= 40"
rm -rf gen
run "$root/examples" -o gen;           check trace-is-a-folder rc 1; check trace-is-a-folder-text has err.txt "examples: error: is a folder, not a trace file"
run "$ex" -o gen --tags "$root/examples"; check tags-is-a-folder rc 1; check tags-is-a-folder-text has err.txt "is a folder, not an overrides file"
check refused-folders-wrote-nothing [ ! -e gen ]
run "$ex" --emit decomposed;         check emit-decomposed has out.txt "= prims.amax(x, \[1\])"
run "$ex" --emit cuda;               check emit-cuda has out.txt "__global__"
for stage in read rng overrides decompose dead-code autograd partition epilogue fuse kernel-ir emit; do
  run "$ex" --emit $stage;           check "emit-$stage" rc 0; check "emit-$stage-printed" [ -s out.txt ]
done
run "$ex" --emit dead-code;          check emit-dead-code-listing has out.txt "= prims.amax(x, \[1\])"
run "$ex" -o gen -v --dump-dir dump; check generate rc 0
check verbose-lines [ "$(grep -c '^thunder-gen: \(decompose\|fuse\|emit\)' err.txt)" = 3 ]
check dump-files [ "$(ls dump | tr '\n' ' ')" = "00-read.txt 01-rng.txt 02-overrides.txt 03-decompose.txt 04-dead-code.txt 05-epilogue.txt 06-fuse.txt 07-kernel-ir.txt " ]
check verbose-every-pass [ "$(grep -c '^thunder-gen: \(rng\|overrides\|decompose\|dead-code\|epilogue\|fuse\|kernel-ir\|emit\): ' err.txt)" = 8 ]
check output-files [ -f gen/forward.cu ] && [ -f gen/harness.cpp ] && [ -f gen/manifest.json ] && [ -f gen/CMakeLists.txt ] && [ -f gen/tg_runtime.cuh ]
touch gen/stale.txt
run "$ex" -o gen;                    check replaced-whole [ ! -e gen/stale.txt ]
touch gen/keep.txt
run "$root/tests/bad/shape_mismatch.json" -o gen; check failure-rc rc 1
check failure-keeps-old [ -e gen/keep.txt ]
check no-temporaries [ -z "$(ls -A . | grep '^\.gen\.')" ]
touch afile
run "$ex" -o afile;                  check output-is-a-file rc 1
run "$ex" -o deeper/new/out;         check creates-parents [ -f deeper/new/out/forward.cu ]
finish
