#!/usr/bin/env bash
# harness_cli.sh WORK: the generated harness's command line and .npy reading, on one tiny trace
# built once for host emulation (AddressSanitizer and UBSan): every bad argument is a usage error
# (exit 2, the usage line, never std::terminate); --inputs must name a folder, and the inputs not
# found there are drawn and named on stderr (a link that leads nowhere is an error, not a draw);
# --outputs is made or found writable before the run; input files that lie about dtype, shape or size, with
# bool bytes other than 0 and 1, or an unknown format version, are refused naming the file (exit
# 1); thunder-gen-check refuses the same; a symbolic trace's folder says by symbol which input
# sizes it does not run at. Tools come from the environment: THUNDER_GEN,
# THUNDER_GEN_CHECK, CXX (TG_EMU_RUNTIME_CACHE as build_emu_harness.sh uses it).
set -u
work=$1
here=$(cd "$(dirname "$0")" && pwd)
: "${THUNDER_GEN:?}" "${THUNDER_GEN_CHECK:?}"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$here/checks.sh"

# x f32[2, 3] (requires grad), m b8[2, 3], a scalar f64: t2 = dropout(where(m, x * a, x), 0.5), which
# adds the i64 inputs philox_seed and philox_offset.
cat >probe.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "probe", "source": "tests/harness_cli.sh",
 "inputs": [{"name": "x", "shape": [2, 3], "dtype": "f32", "requires_grad": true},
            {"name": "m", "shape": [2, 3], "dtype": "b8"}, {"name": "a", "scalar": "f64"}],
 "ops": [{"op": "prims.mul", "args": ["x", "a"], "out": [{"name": "t0", "shape": [2, 3], "dtype": "f32"}]},
         {"op": "prims.where", "args": ["m", "t0", "x"], "out": [{"name": "t1", "shape": [2, 3], "dtype": "f32"}]},
         {"op": "torch.nn.functional.dropout", "args": ["t1"], "kwargs": {"p": 0.5, "training": true, "inplace": false},
          "out": [{"name": "t2", "shape": [2, 3], "dtype": "f32"}]}],
 "outputs": ["t2"]}
EOF
"$THUNDER_GEN" probe.json -o out && "$here/build_emu_harness.sh" out || { echo "FAIL build"; exit 1; }

run() { out/harness "$@" >out.txt 2>err.txt; echo $? >rc.txt; }
rc() { [ "$(cat rc.txt)" = "$1" ]; }
has() { grep -q -- "$2" "$1"; }
lines() { [ "$(wc -l <"$1")" = "$2" ]; }
no_crash() { ! grep -q "terminate\|Sanitizer\|runtime error" err.txt; }
usage_error() { rc 2 && has err.txt "^usage: harness \[--inputs DIR\]" && no_crash; }

# Good runs: no message about drawn inputs without --inputs; with it, the same bytes back.
mkdir good again
run --outputs good --quiet;                    check draws-quietly rc 0; check no-draw-message lines err.txt 0
check writes-all [ -f good/x.npy ] && [ -f good/m.npy ] && [ -f good/a.npy ] && [ -f good/cotangent_t2.npy ] && [ -f good/philox_seed.npy ] && [ -f good/grad_x.npy ]
run --inputs good --outputs again --quiet;     check reads-own-files rc 0; check nothing-drawn lines err.txt 0
check same-bytes cmp -s good/t2.npy again/t2.npy
check same-grad cmp -s good/grad_x.npy again/grad_x.npy
run --seed 18446744073709551615 --repeat 0 --philox-seed -5 --philox-offset 9223372036854775807 --quiet
check largest-numbers rc 0

# --inputs: a folder that exists; what it lacks is drawn and named, even with --quiet.
run --inputs /no/such/dir;                     check inputs-missing-folder usage_error
check inputs-missing-folder-text has err.txt "--inputs /no/such/dir: no such folder"
run --inputs good/x.npy;                       check inputs-is-a-file usage_error
mkdir partial && cp good/x.npy partial/
run --inputs partial --quiet;                  check partial-runs rc 0
check drawn-named has err.txt "^probe: not in partial, drawn from seed 0 instead: m, a, philox_seed, philox_offset, cotangent_t2$"
check drawn-one-line lines err.txt 1
run --inputs partial --philox-seed 7 --philox-offset 0 --outputs again
check flags-not-drawn has err.txt "^probe: not in partial, drawn from seed 0 instead: m, a, cotangent_t2$"
check flags-set cmp -s <(tail -c 8 again/philox_seed.npy) <(printf '\7\0\0\0\0\0\0\0')
mkdir dangling && ln -s /no/such/x.npy dangling/x.npy
run --inputs dangling --quiet;                 check dangling-link-refused rc 1
check dangling-link-named has err.txt "dangling/x.npy: cannot open"

# --outputs: a folder made (parents too) or found writable before anything runs.
run --outputs "";                              check outputs-empty usage_error
check outputs-empty-text has err.txt "--outputs needs a folder"
run --outputs good/x.npy --repeat 0;           check outputs-is-a-file rc 1
check outputs-is-a-file-text has err.txt "^probe: --outputs good/x.npy: cannot create the folder$"
check outputs-is-a-file-before-running lines err.txt 1
run --outputs deep/er/results --quiet;         check outputs-parents-made [ -f deep/er/results/t2.npy ]

# Bad arguments: each one the usage line and exit 2.
bad_args=("--repeat abc" "--repeat -1" "--repeat 3x" "--repeat 99999999999" "--seed 99999999999999999999999" "--seed -1"
          "--seed +1" "--philox-seed x" "--philox-offset 1e3" "--philox-seed 9223372036854775808" "--repeat" "--inputs"
          "--bogus" "extra")
for args in "${bad_args[@]}"; do
  run $args;                                   check "usage:${args// /_}" usage_error
done
run --repeat "";                               check usage:empty-repeat usage_error
run --seed " 1";                               check usage:space-seed usage_error

# Input files that lie, each refused naming the file and what is wrong (exit 1).
floats=$(python3 -c "print('0000803f' * 6)")  # six 1.0f
refused() {  # NAME MESSAGE: with bad/ as --inputs, exit 1 and MESSAGE on stderr
  run --inputs bad --quiet
  check "$1" rc 1
  check "$1-text" has err.txt "$2"
  check "$1-no-crash" no_crash
}
fresh() { rm -rf bad && cp -r good bad; }
fresh; npy bad/x.npy '<f4' '(2, 3)' "$floats";                 run --inputs bad --quiet; check well-formed-accepted rc 0
fresh; npy bad/x.npy '<f4' '(6,)' "$floats";                   refused shape-6 "bad/x.npy: header says shape (6,), expected (2, 3)"
fresh; npy bad/x.npy '<f4' "(2, 3), 'shape': (3, 2)" "$floats"; refused duplicate-shape "bad/x.npy: header, character 59: key 'shape' appears twice"
fresh; npy bad/x.npy '<f4' '(2, 3)' "${floats}00000000";       refused trailing-bytes "bad/x.npy: 4 bytes after the data"
fresh; npy bad/x.npy '<f4' '(2, 3)' "${floats:8}";             refused truncated "bad/x.npy: truncated: 20 bytes of data"
fresh; npy bad/x.npy '>f4' '(2, 3)' "$floats";                 refused big-endian "bad/x.npy: header says dtype '>f4', expected '<f4'"
fresh; npy bad/x.npy '<f4' '(2, 3)' "$floats" 4;               refused version-4 "bad/x.npy: format version 4.0 is not supported"
fresh; npy bad/m.npy '|b1' '(2, 3)' 000102000100;              refused bool-byte-2 "bad/m.npy: bool element 2 (file offset 130) is 0x02"
fresh; printf '\x93NUMPY\x02\x00\xff\xff\xff\xff{}' >bad/x.npy; refused header-length-4g "bad/x.npy: header length field says 4294967295 bytes"
fresh; npy bad/a.npy '<f8' '(1,)' 0000000000000040;            refused scalar-shape "bad/a.npy: header says shape (1,), expected ()"
fresh; rm bad/x.npy && mkdir bad/x.npy;                          refused directory "bad/x.npy: not a regular file"

# thunder-gen-check reads through the same parser.
"$THUNDER_GEN_CHECK" probe.json good >check.txt 2>&1; echo $? >rc.txt
check reference-reads rc 0
fresh; printf '\0\0' >>bad/t2.npy  # the right values, two bytes too many
"$THUNDER_GEN_CHECK" probe.json bad >check.txt 2>&1; echo $? >rc.txt
check reference-refuses rc 1
check reference-refuses-text has check.txt "bad/t2.npy: 2 bytes after the data"

# A symbolic trace's folder: the inputs' shapes are bound by symbol (sizes_probe_bind_sizes) before
# any is read, and a size it does not run at is said by input, dim, symbol and range (exit 1).
"$THUNDER_GEN" "$here/api/sizes_probe.json" --specialize B=3,E=4,T=5,U=2 -o sized && "$here/build_emu_harness.sh" sized || { echo "FAIL build sized"; exit 1; }
sized() { sized/harness "$@" >out.txt 2>err.txt; echo $? >rc.txt; }
mkdir sgood
sized --outputs sgood --quiet;                 check sized-draws rc 0
sized --inputs sgood --quiet;                  check sized-reads-own rc 0
sized_refused() {  # NAME MESSAGE: with sbad/ as --inputs
  sized --inputs sbad --quiet
  check "$1" rc 1
  check "$1-text" has err.txt "$2"
  check "$1-no-crash" no_crash
}
sfresh() { rm -rf sbad && cp -r sgood sbad; }
ones() { python3 -c "print('0000803f' * $1)"; }
sfresh; npy sbad/x.npy '<f4' '(3, 41, 4)' "$(ones 492)"; npy sbad/y.npy '<f4' '(41, 4)' "$(ones 164)"
sized_refused sized-out-of-range "^sizes_probe: the inputs' sizes: input 'x' dim 1 is 41, but T must be 1 <= T <= 40 (the inputs' sizes do not fit this folder's symbols)$"
sfresh; npy sbad/y.npy '<f4' '(6, 4)' "$(ones 24)"
sized_refused sized-disagree "input 'y' dim 0 is 6, but T is 5 (input 'x' dim 1): the inputs disagree on T"
sfresh; npy sbad/x.npy '<f4' '(3, 6, 4)' "$(ones 72)"; npy sbad/y.npy '<f4' '(6, 4)' "$(ones 24)"
sized_refused sized-not-the-folders "generate one for these sizes with --specialize B=3,E=4,T=6,U=2"
sfresh; rm sbad/x.npy; npy sbad/y.npy '<f4' '(6, 4)' "$(ones 24)"
sized_refused sized-drawn-named "the inputs disagree on T (.*); not in sbad, so drawn at the folder's sizes: x$"
sfresh; npy sbad/m.npy '<f4' '(6, 2)' "$(ones 12)"
sized_refused sized-rank "input 'm': expected 3 dimensions (\[B\*U, E//2, 2\]), got 2"
sfresh; printf '\x93NUMPY\x02\x00\xff\xff\xff\xff{}' >sbad/x.npy
sized_refused sized-bad-header "sbad/x.npy: header length field says 4294967295 bytes"
finish
