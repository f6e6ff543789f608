#!/usr/bin/env bash
# pt2_hostile.sh THUNDER_GEN WORKDIR: the broken and hostile archives of tests/pt2/make_hostile.py,
# written into WORKDIR, each refused by thunder-gen with exit 1, its reason in the message, and no
# output folder; the control archive (the real one, rewritten) generates, and so does one that
# updates a buffer (its new value an output of role buffer_update).
set -euo pipefail
thunder_gen=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
python3 "$here/pt2/make_hostile.py" --out "$work/archives" >/dev/null
failures=0
expect() {  # expect ARCHIVE TEXT: refused, TEXT in the one-line message, nothing written
  local archive=$1 text=$2 out="$work/out-$1" status=0 message
  message=$(timeout 60 "$thunder_gen" "$work/archives/$archive.pt2" -o "$out" 2>&1) || status=$?
  if [[ $status -ne 1 || "$message" != *"$text"* || -e "$out" || $(wc -l <<<"$message") -ne 1 ]]; then
    echo "FAIL $archive (exit $status$([[ -e "$out" ]] && echo ', wrote a folder')): $message"
    echo "     expected exit 1 and: $text"
    failures=$((failures + 1))
  else
    echo "ok   $archive: $message"
  fi
}
expect not_a_zip "not a zip archive"
expect truncated "not a zip archive"
expect zip_bomb "models/model.json: error: a compressed entry"
expect compressed_model_json "a compressed entry"
expect path_traversal "../../evil: error: an entry name that is not a plain relative path"
expect absolute_path "/etc/evil: error: an entry name that is not a plain relative path"
expect huge_declared_size "weight_0: error: declares 1099511627776 bytes, more than the archive holds"
expect duplicate_entry "names an entry twice"
expect crc_mismatch_model_json "models/model.json: error: cannot be read: CRC error"
expect missing_archive_format "not a PT2 archive: no mlp/archive_format entry"
expect archive_version_1 "archive version \"1\""
expect big_endian "\"big\"-endian"
expect schema_major_9 "schema major version 8"
expect unknown_argument_kind "/graph_module/graph/nodes/0/inputs/0/arg: error: unknown Argument member \"as_mystery\""
expect unknown_dtype "/graph_module/graph/tensor_values/x/dtype: error: ScalarType 99"
expect pickled_weights "/config/norm.weight/use_pickle: error: \"norm.weight\" is stored as a pickle"
expect legacy_2_7_layout "a pre-2.8 archive"
expect parameter_mutation "the program mutates fc1.bias (parameter_mutation)"
expect higher_order_op "\"torch.ops.higher_order.cond\" is a higher-order op"
expect extension_op "\"#mylib:myop\" is a registered extension op"
expect negative_size "tensor_values/p_norm_weight/sizes/0: error: negative size -3"
expect range_wider_than_guards "tensor_values/slice_1/sizes/1: error: the size seq - 5 may be negative for sizes the symbols allow (2 <= seq <= 64)"
expect deep_nesting "JSON nests deeper than 64 levels"
# A corrupted weight is never read (code generation needs only the graph): it generates. A buffer
# the program updates is an output after the user's, named as the buffer it updates.
for archive in control crc_mismatch buffer_mutation; do
  if "$thunder_gen" "$work/archives/$archive.pt2" -o "$work/out-$archive" >"$work/$archive.log" 2>&1; then
    echo "ok   $archive: generated"
  else
    echo "FAIL $archive: $(cat "$work/$archive.log")"
    failures=$((failures + 1))
  fi
done
if ! python3 -c 'import json, sys; outputs = json.load(open(sys.argv[1]))["outputs"]
sys.exit(outputs[-1].get("role") != "buffer_update" or outputs[-1].get("fqn") != "fc1.bias" or outputs[0].get("role") != "user_output")' \
    "$work/out-buffer_mutation/manifest.json"; then
  echo "FAIL buffer_mutation: the manifest's outputs are not the user output, then fc1.bias's update"
  failures=$((failures + 1))
fi
echo "$failures failures"
[[ $failures -eq 0 ]]
