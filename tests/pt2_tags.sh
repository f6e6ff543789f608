#!/usr/bin/env bash
# pt2_tags.sh THUNDER_GEN WORK: rematerialization overrides on a PT2 archive's nodes
# (docs/trace-format.md section 2): by module path glob, by ATen target, by node name (@value) and
# by symbol id, from the command line and from a file; within one source the more specific
# selector wins, two of one kind that disagree are refused, and selectors that select nothing are
# refused naming the flag. The archive is tests/pt2/torch-2.9/mlp.pt2 (norm, fc1, gelu, fc2, drop).
set -u
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
gen=$(abs "$1") work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
archive=$root/tests/pt2/torch-2.9/mlp.pt2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"

# explain NAME ARGS...: the plan with these overrides, in NAME.txt.
explain() { local name=$1; shift; "$gen" explain "$archive" "$@" >"$name.txt" 2>"$name.err"; }
# saved_line NAME VALUE: the plan's line for a saved value.
saved_line() { grep "^  $2 " "$1.txt" | grep -v " = " ; }

explain module --tag fc1=save
check module-saves-fc1 grep -q "^  linear f32\[2, 4, 16\] .*tag save on torch.nn.functional.linear (--tag fc1=save)" module.txt
explain glob --tag 'n?rm=save'
check glob-saves-norm grep -q "^  layer_norm f32\[2, 4, 8\] .*tag save on torch.nn.functional.layer_norm (--tag n?rm=save)" glob.txt
check glob-leaves-fc1 bash -c "! grep -q '^  linear f32.*tag save' glob.txt"

# The seed report's tag on the archive's dropout: saved by target, recomputed by module.
explain target_save --tag aten.dropout=save
check target-saves-mask grep -q "^  dropout__1 b8\[2, 4, 8\]  8 bytes, bitmask, intermediate: tag save on torch.nn.functional.dropout (--tag aten.dropout=save)" target_save.txt
explain module_recompute --tag drop=recompute
check module-recomputes-mask grep -q "^  dropout__1 b8\[2, 4, 8\] = prims.lt" module_recompute.txt
check module-recompute-draws grep -q "philox_seed i64 scalar: read by prims.uniform_philox" module_recompute.txt

# One source: @value over target over module; the same kind disagreeing is an error.
explain value_wins --tag aten.dropout.default=save --tag @dropout=recompute
check value-over-target grep -q "^  dropout__1 b8\[2, 4, 8\] = prims.lt" value_wins.txt
explain target_wins --tag drop=save --tag aten.dropout=recompute
check target-over-module grep -q "^  dropout__1 b8\[2, 4, 8\] = prims.lt" target_wins.txt
explain same_kind --tag fc1=save --tag 'f*=recompute'
check same-kind-refused grep -q "^thunder-gen: --tag f\*=recompute: error: policy recompute contradicts save (--tag fc1=save) for the op at /graph_module/graph/nodes/1" same_kind.err

echo '{"norm": "save", "aten.gelu": "save"}' >tags.json
explain file --tags tags.json
check file-module grep -q "^  layer_norm .*tag save on torch.nn.functional.layer_norm (tags.json: /norm)" file.txt
check file-target grep -q "^  gelu .*tag save on torch.nn.functional.gelu (tags.json: /aten.gelu)" file.txt

"$gen" "$archive" -o out --tag fc1=save
check manifest-records-source python3 -c 'import json, sys
m = json.load(open("out/manifest.json"))
sys.exit(not any(s["name"] == "linear" and "--tag fc1=save" in s["reason"] for s in m["saved_for_backward"]))'

"$gen" "$archive" -o bad --tag aten.relu=save 2>err.txt
check unknown-target-rc [ $? = 1 ]
check unknown-target-text grep -q "^thunder-gen: --tag aten.relu=save: error: no node of the archive calls aten.relu$" err.txt
check unknown-target-no-folder [ ! -e bad ]
"$gen" "$archive" -o bad --tag fc1.weight=save 2>err.txt
check unknown-module-text grep -q "^thunder-gen: --tag fc1.weight=save: error: the trace has no call of fc1.weight, and no module of the archive matches it$" err.txt
"$gen" "$root/examples/softmax.json" -o bad --tag aten.exp=save 2>err.txt
check target-on-json-trace grep -q "error: ATen targets select the nodes of a PT2 archive, and this trace was not read from one" err.txt
finish
