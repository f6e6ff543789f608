#!/usr/bin/env bash
# remat.sh THUNDER_GEN DROPOUT_PROPERTY WORK: the seed report's scenario end to end. dropout(x,
# p=0.9) on f32[1024, 1024], trained:
# - `save` from each of the three sources (--tag, the trace's DONT_RECOMPUTE_IN_BACKWARD tag,
#   --tags FILE): one saved tensor, the b8 mask, stored as bits (131072 bytes; 1048576 with
#   --no-pack-bool); backward.cu draws nothing and reads only the mask and the cotangent;
# - `recompute`: no saved tensor, only the seed and offset; the backward draws the mask again,
#   and the emulated run satisfies dropout's property (gradient g/(1-p) exactly where the
#   forward kept x);
# - explain and the manifest give the same saved set, and bad overrides are diagnosed.
set -u
abs() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
gen=$(abs "$1") property=$(abs "$2") work=$3
root=$(cd "$(dirname "$0")/.." && pwd)
ex=$root/examples/dropout_p09.json
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"
# saved OUT: the saved tensors as "name dtype bytes storage" lines, then "scalars: names".
saved() {
  python3 -c 'import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
for s in m["saved_for_backward"]: print(s["name"], s["dtype"], s["bytes"], s["storage"])
print("scalars:", " ".join(s["name"] for s in m["saved_scalars"]))' "$1"
}
# backward_inputs OUT: the values the backward entry point reads, as the manifest lists its parameters.
backward_inputs() {
  python3 -c 'import json, sys
params = json.load(open(sys.argv[1] + "/manifest.json"))["entry_points"]["backward"]["params"]
print(" ".join(p["value"] for p in params if not p["writes"]))' "$1"
}

# `sub`: the call as Thunder records it, with its decomposition (prims.uniform, lt, convert, mul).
for source in flag trace file sub; do
  case $source in
    flag) "$gen" "$ex" -o "save_$source" --tag torch.nn.functional.dropout=save ;;
    trace) "$gen" "$root/tests/remat/dropout_tagged.json" -o "save_$source" ;;
    file) "$gen" "$ex" -o "save_$source" --tags "$root/tests/remat/dropout_save.tags.json" ;;
    sub) "$gen" "$root/examples/dropout_sub.json" -o "save_$source" --tag torch.nn.functional.dropout=save ;;
  esac
  check "save-$source-generates" [ $? = 0 ]
  mask=$(saved "save_$source" | head -1 | cut -d' ' -f1)
  check "save-$source-one-mask" [ "$(saved "save_$source")" = "$(printf '%s b8 131072 bitmask\nscalars: ' "$mask")" ]
  check "save-$source-no-draw" bash -c "[ -f save_$source/backward.cu ] && ! grep -q philox_uniform save_$source/backward.cu"
  check "save-$source-reads-mask-and-cotangent" bash -c "[[ '$(backward_inputs "save_$source")' =~ ^$mask\ cotangent_t[0-9]+$ ]]"
done

"$gen" "$ex" -o unpacked --tag torch.nn.functional.dropout=save --no-pack-bool
check unpacked-mask [ "$(saved unpacked)" = "$(printf 't0__1 b8 1048576 dense\nscalars: ')" ]
check packed-reads-bits grep -q "const tg::PackedBits\* __restrict__ g_t0__1" save_flag/backward.cu
check unpacked-reads-bytes grep -q "const bool\* __restrict__ g_t0__1" unpacked/backward.cu

"$gen" "$root/examples/dropout_sub.json" -o recompute_sub --tag torch.nn.functional.dropout=recompute
check recompute-sub-nothing-saved [ "$(saved recompute_sub)" = "scalars: philox_seed philox_offset" ]
"$gen" "$ex" -o recompute --tag torch.nn.functional.dropout=recompute
check recompute-generates [ $? = 0 ]
check recompute-nothing-saved [ "$(saved recompute)" = "scalars: philox_seed philox_offset" ]
check recompute-draws-again grep -q philox_uniform recompute/backward.cu
if (cd recompute && "$root/tests/build_emu_harness.sh" . fast && mkdir -p ../recompute_run && ./harness --outputs ../recompute_run --repeat 1 >run.log); then
  check recompute-property "$property" recompute_run t0 0.9
else
  check recompute-runs false
fi

"$gen" explain "$ex" --tag @t0=save >explain.txt
check explain-runs [ $? = 0 ]
check explain-lists-mask grep -q "^  t0__1 b8\[1024, 1024\]  131072 bytes, bitmask, intermediate: tag save on torch.nn.functional.dropout (--tag @t0=save)" explain.txt
check explain-recomputes-convert grep -q "^  t0__2 f32\[1024, 1024\] = prims.convert_element_type" explain.txt

"$gen" "$ex" -o bad --tag @t9=save 2>err.txt
check unknown-value-rc [ $? = 1 ]
check unknown-value-text grep -q '^thunder-gen: --tag @t9=save: error: no op defines a value named "t9"' err.txt
check unknown-value-no-folder [ ! -e bad ]
"$gen" "$ex" -o bad --tag torch.nn.functional.dropout=keep 2>err.txt
check bad-policy-rc [ $? = 1 ]
check bad-policy-text grep -q 'error: unknown policy "keep"' err.txt
echo '{"torch.nn.functional.dropout": 3}' >bad.tags.json
"$gen" "$ex" -o bad --tags bad.tags.json 2>err.txt
check bad-file-rc [ $? = 1 ]
check bad-file-text grep -q '^bad.tags.json: /torch.nn.functional.dropout: error: expected a policy string' err.txt

# A selector twice in one file, two policies for one op from the same kind of selector, and an
# @value selector beating a symbol one in the same source, whatever the order.
printf '{"@t0": "save", "torch.nn.functional.dropout": "recompute", "@t0": "recompute"}' >twice.tags.json
"$gen" "$ex" -o bad --tags twice.tags.json 2>err.txt
check duplicate-selector-rc [ $? = 1 ]
check duplicate-selector-text grep -q '^twice.tags.json: /@t0: error: selector "@t0" is given twice' err.txt
"$gen" "$ex" -o bad --tag @t0=save --tag @t0=recompute 2>err.txt
check contradicting-flags-rc [ $? = 1 ]
check contradicting-flags-text grep -q '^thunder-gen: --tag @t0=recompute: error: policy recompute contradicts save (--tag @t0=save) for the op at /ops/0' err.txt
check contradicting-flags-no-folder [ ! -e bad ]
printf '{"@t0": "save", "torch.nn.functional.dropout": "recompute"}' >specific.tags.json
"$gen" "$ex" -o specific_file --tags specific.tags.json
check value-beats-symbol-in-file [ "$(saved specific_file)" = "$(printf 't0__1 b8 131072 bitmask\nscalars: ')" ]
"$gen" "$ex" -o specific_flags --tag @t0=save --tag torch.nn.functional.dropout=recompute
check value-beats-symbol-in-flags [ "$(saved specific_flags)" = "$(printf 't0__1 b8 131072 bitmask\nscalars: ')" ]
"$gen" "$ex" -o later_source --tags specific.tags.json --tag @t0=recompute
check later-source-wins [ "$(saved later_source)" = "scalars: philox_seed philox_offset" ]

finish
