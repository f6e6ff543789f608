#!/usr/bin/env bash
# moved_bits.sh WORK: 16-bit elements a kernel only moves keep their bits (docs/design-notes.md,
# "Rounding"). tests/moved/moved_bits.json transposes bf16 inputs (gathered, and in runs of eight),
# converts one to its own type and cats its one piece, broadcasts one and flips an f16 one, beside
# results computed in the same kernels; moved_bits_sizes.json splits heads, transposes, flips and
# slices at run-time sizes; moved_bits_rows.json and moved_bits_columns.json move a reduction's
# input beside it, in a row kernel and a column kernel.
# Their inputs hold signalling NaNs (which a round trip through float would
# quiet), NaN payloads, infinities, -0 and denormals. Built for host emulation and run, each moved
# output must be its input's bytes, moved. Tools from the environment: THUNDER_GEN.
set -u
work=$1
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/in" "$work/out" && cd "$work" || exit 2
source "$here/checks.sh"

"${THUNDER_GEN:?}" "$here/moved/moved_bits.json" -o gen 2>gen.err && "$here/build_emu_harness.sh" gen fast || { cat gen.err; echo "FAIL build"; exit 1; }

# words W...: 16-bit words as little-endian hex, npy's DATA_HEX.
words() { python3 -c 'import sys; print("".join(int(w, 0).to_bytes(2, "little").hex() for w in sys.argv[1:]))' "$@"; }
# bf16: signalling NaN, negative signalling NaN, a quiet NaN's payload, +inf, -0, the least
# denormal, 1, -2. f16: the same kinds.
npy in/x.npy '<u2' '(2, 4)' "$(words 0x7f81 0xff81 0x7fc5 0x7f80 0x8000 0x0001 0x3f80 0xc000)"
npy in/h.npy '<f2' '(2, 4)' "$(words 0x7c01 0xfc01 0x7e05 0x7c00 0x8000 0x0001 0x3c00 0xc000)"
npy in/b.npy '<u2' '(4,)' "$(words 0x7f81 0xffc3 0x0001 0x8000)"
npy in/q.npy '<u2' '(2, 2, 8)' "$(words $(seq 0x7f81 0x7f90) $(seq 0xff81 0xff90))"
gen/harness --inputs in --outputs out --quiet >run.txt 2>&1
check runs [ $? = 0 ]

# moved OUTPUT INPUT PERMUTATION: OUTPUT's elements, as 16-bit words, are INPUT's at PERMUTATION.
moved() {
  python3 - "$@" <<'EOF'
import sys
def words(path):
    raw = open(path, "rb").read()
    start = 10 + int.from_bytes(raw[8:10], "little")
    return [int.from_bytes(raw[i:i + 2], "little") for i in range(start, len(raw), 2)]
out, src, order = words(sys.argv[1]), words(sys.argv[2]), [int(k) for k in sys.argv[3].split(",")]
want = [src[k] for k in order]
print(" ".join("%04x" % w for w in out), "against", " ".join("%04x" % w for w in want))
sys.exit(0 if out == want else 1)
EOF
}
moved out/xt.npy in/x.npy 0,4,1,5,2,6,3,7 >xt.txt; check transposed-bf16-bits [ $? = 0 ]
moved out/hf.npy in/h.npy 3,2,1,0,7,6,5,4 >hf.txt; check flipped-f16-bits [ $? = 0 ]
moved out/bb.npy in/b.npy 0,1,2,3,0,1,2,3,0,1,2,3 >bb.txt; check broadcast-bf16-bits [ $? = 0 ]
moved out/qt.npy in/q.npy "$(python3 -c 'print(",".join(str(b * 16 + a * 8 + c) for a in range(2) for b in range(2) for c in range(8)))')" >qt.txt
check transposed-runs-bf16-bits [ $? = 0 ]
moved out/xkt.npy in/x.npy 0,4,1,5,2,6,3,7 >xkt.txt; check converted-cat-transposed-bf16-bits [ $? = 0 ]
# ... and they were moved in their storage type: gathered, or in a run of eight.
for out in xt hf bb xkt; do
  check "$out-moved-as-stored" grep -q "out_$out = tg::load_as_stored(" gen/forward.cu
done
check qt-moved-in-runs grep -q 'tg::bfloat16 r_q\[8\];' gen/forward.cu

# At run-time sizes: one folder, run at sizes where the head split's runs of 8 are taken and where
# the elementwise twin is (T not a multiple of 8), with an operand both moved and computed with.
"$THUNDER_GEN" "$here/moved/moved_bits_sizes.json" -o sizes 2>sizes.err && "$here/build_emu_harness.sh" sizes fast || { cat sizes.err; echo "FAIL build sizes"; exit 1; }
for bt in 1,3 2,8 3,5; do
  B=${bt%,*} T=${bt#*,}
  rm -rf "in$bt" "out$bt" && mkdir "in$bt" "out$bt"
  # The same kinds, those with every exponent bit set (NaNs, +inf) varied from element to element.
  kinds=(0x7f81 0xff81 0x7fc5 0x7f80 0x8000 0x0001 0x3f80 0xc000)
  x=()
  for ((k = 0; k < B * T * 16; ++k)); do
    w=${kinds[k % 8]}
    (( (w & 0x7f80) == 0x7f80 )) && w=$((w + k / 8 % 4))
    x+=("$w")
  done
  npy "in$bt/x.npy" '<u2' "($B, $T, 16)" "$(words "${x[@]}")"
  sizes/harness --inputs "in$bt" --outputs "out$bt" --quiet >"run$bt.txt" 2>&1
  check "sizes-$bt-runs" [ $? = 0 ]
  heads=$(python3 -c "print(','.join(str((b * $T + t) * 16 + h * 8 + c) for b in range($B) for h in range(2) for t in range($T) for c in range(8)))")
  moved "out$bt/heads.npy" "in$bt/x.npy" "$heads" >"heads$bt.txt"; check "sizes-$bt-head-split-bits" [ $? = 0 ]
  xt=$(python3 -c "print(','.join(str((b * $T + t) * 16 + c) for b in range($B) for c in range(16) for t in range($T)))")
  moved "out$bt/xt.npy" "in$bt/x.npy" "$xt" >"xt$bt.txt"; check "sizes-$bt-transposed-bits" [ $? = 0 ]
  xf=$(python3 -c "print(','.join(str((b * $T + t) * 16 + 15 - c) for b in range($B) for t in range($T) for c in range(16)))")
  moved "out$bt/xf.npy" "in$bt/x.npy" "$xf" >"xf$bt.txt"; check "sizes-$bt-flipped-bits" [ $? = 0 ]
  moved "out$bt/xs.npy" "in$bt/x.npy" "$(python3 -c "print(','.join(map(str, range($B * $T * 16))))")" >"xs$bt.txt"
  check "sizes-$bt-sliced-bits" [ $? = 0 ]
done
check sizes-moved-in-runs grep -q 'tg::bfloat16 r_x\[8\];' sizes/forward.cu
check sizes-moved-as-stored grep -q 'out_xt = tg::load_as_stored(' sizes/forward.cu
# ... and where one kernel computes with x and moves it: a float run, a bf16 run and a gather.
check sizes-both-types grep -q 'tg::bfloat16 r_x_2\[8\];' sizes/forward.cu
check sizes-flip-as-stored grep -q 'out_xf = tg::load_as_stored(' sizes/forward.cu

# A row kernel (a softmax) writing x's elements, moved, beside the rows it reduces, and each
# row's first element: moved_bits_rows.json at run-time row lengths (C=5, held in registers;
# C=4100, its streamed twin) and specialised (C=2048, held in runs of 8; C=4104, streamed in runs
# of 8); and a column kernel (a sum over C rows) writing x moved and its first row:
# moved_bits_columns.json at C=5 and 300. Each writes the moved elements as stored, gathered,
# however it holds the row widened to float.
reduces() {  # reduces TRACE FOLDER ROWS COLUMNS [FLAGS...]: the folder (built once) run on x [ROWS, COLUMNS] of the kinds above
  local trace=$1 folder=$2 r=$3 c=$4 at="$2-$3x$4"
  shift 4
  [ -x "$folder/harness" ] || { "$THUNDER_GEN" "$here/moved/$trace.json" -o "$folder" "$@" 2>"$folder.err" && "$here/build_emu_harness.sh" "$folder" fast; } ||
    { cat "$folder.err"; echo "FAIL build $folder"; return 1; }
  local kinds=(0x7f81 0xff81 0x7fc5 0x7f80 0x8000 0x0001 0x3f80 0xc000) x=() k
  for ((k = 0; k < r * c; ++k)); do x+=("${kinds[k % 8]}"); done
  rm -rf "in-$at" "out-$at" && mkdir "in-$at" "out-$at"
  npy "in-$at/x.npy" '<u2' "($r, $c)" "$(words "${x[@]}")"
  local first  # each row's first element, or the first row
  if [ "$trace" = moved_bits_rows ]; then first=$(python3 -c "print(','.join(str(k * $c) for k in range($r)))"); else first=$(seq -s, 0 $((c - 1))); fi
  "$folder/harness" --inputs "in-$at" --outputs "out-$at" --quiet >"run-$at.txt" 2>&1 &&
    moved "out-$at/z.npy" "in-$at/x.npy" "$(seq -s, 0 $((r * c - 1)))" >"z-$at.txt" && moved "out-$at/first.npy" "in-$at/x.npy" "$first" >"first-$at.txt"
}
reduces moved_bits_rows rows 3 5; check rows-held-bits [ $? = 0 ]
reduces moved_bits_rows rows 3 4100; check rows-streamed-twin-bits [ $? = 0 ]
check rows-as-stored [ "$(grep -c 'tg::store(g_z, row \* row_length + j, tg::load_as_stored(g_x' rows/forward.cu)" = 2 ]
check rows-first-as-stored grep -q 'tg::store(g_first, row, tg::load_as_stored(g_x' rows/forward.cu
reduces moved_bits_rows rows-2048 3 2048 --specialize C=2048; check rows-held-in-runs-bits [ $? = 0 ]
check rows-held-in-runs-as-stored grep -q 'tg::bfloat16 w_z\[8\];' rows-2048/forward.cu
reduces moved_bits_rows rows-4104 3 4104 --specialize C=4104; check rows-streamed-in-runs-bits [ $? = 0 ]
check rows-streamed-in-runs-as-stored grep -q 'w_z\[lane\] = tg::load_as_stored(g_x' rows-4104/forward.cu
for c in 5 300; do
  reduces moved_bits_columns columns "$c" 64; check "columns-$c-bits" [ $? = 0 ]
done
check columns-as-stored grep -q 'tg::store(g_first, row, tg::load_as_stored(g_x' columns/forward.cu
finish
