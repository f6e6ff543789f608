#!/usr/bin/env bash
# remat_time.sh THUNDER_GEN WORK: planning in predicted time (--remat-objective time,
# docs/rematerialization.md) from the command line.
# - explain --frontier lists the Pareto plans, bytes falling and predicted time rising, one marked;
#   --json gives the same with the problem; without --frontier, --json is a usage error.
# - The time objective's plan is the one marked, on the frontier, predicted no slower than the
#   plan by bytes; a generated folder saves what explain says.
# - A larger --time-slack never saves more. --activation-budget in time: the plan fits; one below the fewest bytes names the smallest.
# - Every distributed example plans in time.
# - --exact takes CBC's optimum, and past 600 forward ops the frontier's plan with a note.
# - The choice is made on the candidates' priced kernels (--price-plans kernels, the default)
#   and says so, or on the cut's estimate (--price-plans cut, --exact, or past 4000 joint ops,
#   with a note); --price-plans without the time objective, or kernels with --exact, is refused.
# - The seed report's tags hold in time too: `save` keeps the dropout mask, `recompute` keeps only
#   the seed and offset.
# - --device-model: a name not known, and description files with bad fields (a name that is not
#   a word among them), are refused naming the field; h100 predicts other times than h200.
set -u
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
gen=$(abs "$1") work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"
run() { "$@" >out.txt 2>err.txt; echo $? >rc.txt; }
rc() { [ "$(cat rc.txt)" = "$1" ]; }
has() { grep -q -- "$2" "$1"; }
block=$root/examples/corpus/nanogpt_block.json

run "$gen" explain "$block" --frontier --remat-objective time
check frontier-lists rc 0
check frontier-marks-one [ "$(grep -c '^\*  *[0-9]' out.txt)" = 1 ]
check frontier-monotone python3 -c '
import re
rows = [(int(m[1]), float(m[3])) for m in re.finditer(r"^[* ] +([0-9]+) +([0-9.]+) +([0-9.]+) ", open("out.txt").read(), re.M)]
assert len(rows) >= 3 and all(b[0] < a[0] and b[1] >= a[1] for a, b in zip(rows, rows[1:])), rows  # (the kernels us column; times shown to 1 ns)'
run "$gen" explain "$block" --frontier --remat-objective time --price-plans cut
check frontier-monotone-cut python3 -c '
import re
rows = [(int(m[1]), float(m[2]), m[3]) for m in re.finditer(r"^[* ] +([0-9]+) +([0-9.]+) +(\S+) ", open("out.txt").read(), re.M)]
assert len(rows) >= 3 and all(b[0] < a[0] and b[1] >= a[1] for a, b in zip(rows, rows[1:])), rows
assert all(r[2] == "-" for r in rows), rows  # (not priced)'
check frontier-compares-bytes-first has out.txt "by bytes alone (without the time model) the plan would save 84224 bytes"
run "$gen" explain "$block" --json
check json-needs-frontier rc 2; check json-needs-frontier-words has err.txt "--json goes with --frontier"

run "$gen" explain "$block" --frontier --json --remat-objective time
check json-parses python3 -c '
import json, sys
d = json.load(open("out.txt"))
f, c = d["frontier"], d["chosen"]
assert 0 <= c < len(f) and len(f) >= 3, (c, len(f))
step = lambda p: p["kernels_us"]["step"]
assert all(b["activation_bytes"] < a["activation_bytes"] and step(b) > step(a) for a, b in zip(f, f[1:]))
assert step(f[c]) <= step(d["bytes_first"]) and d["plan"]["activation_bytes"] == f[c]["activation_bytes"]
assert len(d["problem"]["ops"]) > 50 and all(set(v) == {"bytes", "save_fs", "input", "needed"} for v in d["problem"]["values"])'
chosen_bytes=$(python3 -c 'import json; d = json.load(open("out.txt")); print(d["plan"]["activation_bytes"])')
"$gen" "$block" -o time_folder --remat-objective time 2>err.txt
check time-generates [ -f time_folder/manifest.json ]
check time-folder-saves-what-explain-says [ "$(python3 -c 'import json; print(json.load(open("time_folder/manifest.json"))["saved_activation_bytes"])')" = "$chosen_bytes" ]
run "$gen" explain "$block" --remat-objective time
check explain-says-why has out.txt "min-cut: the fewest bytes within 1% of the fastest step, as the kernels of [0-9]* plans are predicted (--device-model h200)"
run "$gen" explain "$block" --remat-objective time --price-plans cut
check explain-says-why-cut has out.txt "min-cut: the fewest bytes within 1% of the fastest step under the time model (--device-model h200)"
run "$gen" explain "$block" --remat-objective bytes --price-plans cut
check price-plans-needs-time rc 2; check price-plans-needs-time-words has err.txt "--price-plans goes with --remat-objective time"
run "$gen" explain "$block" --remat-objective time --exact --price-plans kernels
check exact-prices-cut rc 2; check exact-prices-cut-words has err.txt "--exact solves the cut's problem"

# A larger slack never saves more: 0%, 1%, 5%, 50%.
for slack in 0 1 5 50; do
  "$gen" explain "$block" --remat-objective time --time-slack $slack --frontier --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["plan"]["activation_bytes"])'
done >slack.txt
check slack-orders-bytes [ "$(sort -n -r slack.txt | tr '\n' ' ')" = "$(tr '\n' ' ' <slack.txt)" -a "$(head -1 slack.txt)" != "$(tail -1 slack.txt)" ]
run "$gen" explain "$block" --remat-objective time --activation-budget 30000 --frontier --json
check budget-fits python3 -c 'import json; d = json.load(open("out.txt")); assert d["plan"]["activation_bytes"] <= 30000, d["plan"]'
run "$gen" explain "$root/examples/dropout_p09.json" --remat-objective time --tag torch.nn.functional.dropout=save --activation-budget 1000
check budget-too-small rc 1; check budget-too-small-names-least has err.txt "the smallest achievable is 131072 bytes"
run "$gen" explain "$root/examples/corpus/gpt2_block.json" --remat-objective time --activation-budget 0
check budget-zero rc 0; check budget-zero-saves-nothing has out.txt "(0 of them activations"

# --exact: CBC's optimum, or the frontier's plan with a note where the graph is past 600 ops.
run "$gen" explain "$block" --remat-objective bytes --exact
check exact-needs-time rc 2; check exact-needs-time-words has err.txt "--exact goes with --remat-objective time"
run "$gen" explain "$block" --remat-objective time --exact --activation-budget 42112 --frontier --json
check exact-solves python3 -c 'import json; d = json.load(open("out.txt")); assert "note" not in d and d["plan"]["activation_bytes"] <= 42112, d["plan"]'
run "$gen" explain "$block" --remat-objective time --exact
check exact-says-so has out.txt "solved exactly (CBC)"
python3 "$root/tools/stack_blocks.py" "$root/tools/bench/symbolic_residual_block.json" 120 stacked.json --at B=2,T=3 >/dev/null
run "$gen" explain stacked.json --remat-objective time --exact
check exact-falls-back rc 0; check exact-falls-back-note has out.txt "note: --exact: [0-9]* forward ops, past the 600 --exact solves; the frontier's plan instead"
run "$gen" explain stacked.json --remat-objective time
check kernels-not-priced rc 0; check kernels-not-priced-note has out.txt "note: the plans' kernels were not priced: [0-9]* joint ops, past the 4000 that pricing takes"

planned=yes
for f in "$root"/examples/distributed/*.json; do
  "$gen" explain "$f" --remat-objective time >/dev/null 2>err.txt || { echo "  $f: $(head -1 err.txt)"; planned=no; }
done
check distributed-in-time [ $planned = yes ]

ex=$root/examples/dropout_p09.json
run "$gen" explain "$ex" --remat-objective time --tag torch.nn.functional.dropout=save
check tag-save-in-time has out.txt "b8\[1024, 1024\]  131072 bytes, bitmask, intermediate: tag save"
# A GEMM's product is not saved for its bias add in time, unless policies name the ops: then they
# decide (a product tagged not to be recomputed, its add not to be saved: the product is saved).
run "$gen" explain "$root/tests/remat/fold_tags.json"
check tags-over-fold-rule rc 0; check tags-over-fold-rule-saves has out.txt "^  t0 f32\[64, 48\]  12288 bytes, dense, intermediate"
run "$gen" explain "$ex" --remat-objective time --tag torch.nn.functional.dropout=recompute
check tag-recompute-in-time has out.txt "saved for the backward: 0 tensors"

run "$gen" explain "$block" --frontier --device-model h300
check unknown-device rc 1; check unknown-device-words has err.txt "no such device; known: h100, h200"
printf '{"name": "x", "copy_bytes_per_second": -1}' >bad.json
run "$gen" explain "$block" --frontier --device-model ./bad.json
check bad-device-field rc 1; check bad-device-field-words has err.txt "/copy_bytes_per_second.*must be a number from"
printf '{"name": "x", "copy_bytes_per_second": 4.2}' >units.json  # (TB/s written for B/s)
run "$gen" explain "$block" --frontier --device-model ./units.json
check device-units-slip rc 1; check device-units-slip-words has err.txt "/copy_bytes_per_second.*from 1e+09 to 1e+15"
printf '{"name": "x", "copy_bytes_per_second": 1e999}' >huge.json
run "$gen" explain "$block" --frontier --device-model ./huge.json
check device-huge-number rc 1; check device-huge-number-words has err.txt "huge.json.*not a device description"
run "$gen" explain "$block" --remat-objective time --time-slack nan
check slack-nan rc 2
printf '{"name": "x", "copy_bytes_per_second": 1e12, "launch_seconds": 1e-6, "flops_per_second": {"f32": 1e13}}' >partial.json
run "$gen" explain "$block" --frontier --device-model ./partial.json
check missing-device-field rc 1; check missing-device-field-words has err.txt "/flops_per_second/tf32.*missing"
printf '{"name": "x\\n*/ y", "copy_bytes_per_second": 1e12}' >name.json
run "$gen" explain "$block" --frontier --device-model ./name.json
check device-name-a-word rc 1; check device-name-a-word-words has err.txt "/name.*letters, digits"
"$gen" explain "$block" --remat-objective time --device-model h100 >h100.txt
"$gen" explain "$block" --remat-objective time --device-model h200 >h200.txt
check devices-differ [ "$(grep 'estimate of the step' h100.txt)" != "$(grep 'estimate of the step' h200.txt)" ]
check kernels-differ [ "$(grep '^predicted step' h100.txt)" != "$(grep '^predicted step' h200.txt)" ]
finish
