#!/usr/bin/env bash
# run_time_sizes.sh WORK: one folder for every size (docs/symbolic-shapes.md, "One folder for every
# size"). symbolic_block.json, the torch.export archives mlp_dynamic.pt2 and attention_dynamic.pt2
# (plain and bf16) and small traces of one feature each are generated without
# --specialize, built once each for host emulation (AddressSanitizer and UBSan) and run at four
# sizes: 1, odd sizes, a size that is no multiple of 16, the range's largest. At each size every
# output, saved value and gradient must be byte for byte what a folder specialised to that size
# writes from the same drawn inputs (specialised folders match eager: check_example.sh, pt2.sh),
# or match LibTorch where the folder holds rows in registers that the specialised ones stream,
# and nvcc makes of its kernels what it makes of the specialised ones (16-byte runs, registers);
# the folder's CMakeLists.txt builds it for sm_90, and inputs named as the entry points' own
# variables could be (sizes, a, size0) change nothing.
# Then what the C API (tests/tools/run_time_entry_check.cpp) and the harness refuse: sizes out of
# range, NULL or overflowing sizes, inputs whose shapes disagree, --sizes on a folder of fixed
# sizes; and a symbolic trace whose code cannot take its sizes at run time is
# refused naming the kernel, writing nothing. Tools from the environment: THUNDER_GEN,
# THUNDER_GEN_CHECK, CXX, NVCC.
set -u
work=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
: "${THUNDER_GEN:?}"
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$here/checks.sh"

# same_outputs A B: the same .npy files, byte for byte.
same_outputs() {
  local a=$1 b=$2 f
  [ "$(ls "$a" | wc -l)" -gt 3 ] && [ "$(ls "$a")" = "$(ls "$b")" ] || return 1
  for f in "$a"/*.npy; do cmp -s "$f" "$b/$(basename "$f")" || { echo "  differs: $(basename "$f")"; return 1; }; done
}

# matches_libtorch NAME FILE DIR@SIZES...: each DIR's outputs against LibTorch running FILE at its
# SIZES (thunder-gen-check's tolerances; one call for all), checked as NAME-SIZES-matches-libtorch.
matches_libtorch() {
  local name=$1 file=$2 at
  shift 2
  "${THUNDER_GEN_CHECK:?}" "$file" "$@" >"$name.check" 2>&1
  for at in "$@"; do
    check "$name-${at##*@}-matches-libtorch" grep -qxF "${at%@*}: ok" "$name.check"
  done
}

# queue_check NAME SIZES DIR STATUS: DIR, where a harness exiting with STATUS wrote its outputs, for
# the next matches_libtorch (the caller's `checked`) when the harness succeeded, else a failed check.
queue_check() {
  if [ "$4" = 0 ]; then checked+=("$3@$2"); else check "$1-$2-matches-libtorch" false; fi
}

# every_size NAME FILE SIZES...: NAME's folder taking its sizes at run time against one
# specialised to each size. With against=libtorch, each size's outputs against LibTorch instead
# (thunder-gen-check's tolerances), the specialised folders generated but not run (the PTX
# comparison below reads them): for a folder holding rows of run-time length in registers where
# the specialised folders stream them, whose softmax sums in another order. With inputs=FUNCTION,
# the harness reads what `FUNCTION SIZES` writes in folder in-NAME-SIZES (class targets) and draws
# the rest. With ranks=N, both folders run as N ranks (--world-size), each rank's outputs compared.
every_size() {
  local name=$1 file=$2 sizes given world=() checked=()
  shift 2
  [ -n "${ranks:-}" ] && world=(--world-size "$ranks")
  "$THUNDER_GEN" "$file" -o "$name" 2>"$name.err" && "$here/build_emu_harness.sh" "$name" 2>>"$name.err"
  check "$name-generated" [ -x "$name/harness" ]
  check "$name-manifest-says-run-time" grep -q '"takes_sizes": true' "$name/manifest.json"
  for sizes in "$@"; do
    "$THUNDER_GEN" "$file" --specialize "$sizes" -o "$name-at-$sizes" 2>>"$name.err"
    given=()
    if [ -n "${inputs:-}" ]; then
      mkdir -p "in-$name-$sizes" && (cd "in-$name-$sizes" && "$inputs" "$sizes") && given=(--inputs "in-$name-$sizes")
    fi
    "$name/harness" --quiet "${world[@]}" --sizes "$sizes" "${given[@]}" --outputs "out-$name-$sizes" 2>>"$name.err"
    if [ "${against:-specialised}" = libtorch ]; then
      queue_check "$name" "$sizes" "out-$name-$sizes" $?
      continue
    fi
    "$here/build_emu_harness.sh" "$name-at-$sizes" fast 2>>"$name.err" && "$name-at-$sizes/harness" --quiet "${world[@]}" --outputs "out-$name-at-$sizes" 2>>"$name.err"
    if [ -n "${ranks:-}" ]; then
      check "$name-$sizes-same-as-specialised" sh -c "[ -d 'out-$name-$sizes/rank$((ranks - 1))' ] && diff -r 'out-$name-at-$sizes' 'out-$name-$sizes'"
    else
      check "$name-$sizes-same-as-specialised" same_outputs "out-$name-at-$sizes" "out-$name-$sizes"
    fi
  done
  [ "${#checked[@]}" -eq 0 ] || matches_libtorch "$name" "$file" "${checked[@]}"
}
every_size block "$root/examples/symbolic/symbolic_block.json" B=1,T=1 B=3,T=7 B=2,T=17 B=8,T=40
# Comments write sizes by their expressions: the folder's code is for every size, not a probe's.
check block-kernel-comment-names-symbols grep -q "row reduction over B x T x 64, reducing dims \[2\]" block/forward.cu
check block-op-comment-names-symbols grep -q "= prims.broadcast_in_dim(bw0, \[B\*T, 64\], \[0\])  # bw1: f32\[B\*T, 64\]" block/backward.cu
check block-header-names-symbols grep -q "x: input x (requires grad), f32\[B, T, 64\]" block/include/symbolic_block.h
# Attention over seq (grouped-query, causal; plain and under bf16 autocast): heads split from and
# merged back into [batch, seq, 16], a causal mask over [seq, seq], a softmax over seq. The index
# arithmetic divides by the size parameter (multiplying by its divider dv_seq) and the row kernels
# take row_length. Against the folder specialised to a seq that is no multiple of 8 (each kernel's
# elementwise twin runs) and to one that is (the runs); pt2.dynamic checks those folders against
# LibTorch, and the archives' plain twins below are checked against LibTorch themselves.
every_size attn_bf16 "$root/tests/pt2/torch-2.9/dynamic/attention_bf16_dynamic.pt2" batch=1,seq=2 batch=4,seq=24
# Token and position embeddings, q, k, v selected from one projection, rotary halves sliced from
# each head: the slices' constant starts and the embeddings' tables keep constant sizes. Against
# LibTorch at each size of the archive's .sizes, on its inputs there: a specialised folder may sum
# the position table's gradient in another order (a column kernel where the rows are a multiple
# of 32, a row held in registers), so byte for byte is not the measure.
against_libtorch() {  # NAME ARCHIVE: NAME's run-time folder at each size the archive's tests use
  local name=$1 archive=$2 sizes checked=()
  "$THUNDER_GEN" "$archive" -o "$name" 2>"$name.err" && "$here/build_emu_harness.sh" "$name" 2>>"$name.err"
  check "$name-generated" [ -x "$name/harness" ]
  while read -r sizes; do
    "$name/harness" --quiet --inputs "${archive%.pt2}.${sizes//[=,]/_}.inputs" --outputs "out-$name-$sizes" 2>>"$name.err"
    queue_check "$name" "$sizes" "out-$name-$sizes" $?
  done <"${archive%.pt2}.sizes"
  matches_libtorch "$name" "$archive" "${checked[@]}"
}
against_libtorch rope "$root/tests/pt2/torch-2.9/dynamic/rope_dynamic.pt2"
# One call, several folders: a folder checked at sizes it was not run at, and one whose last
# gradient value was changed (its float's top byte), each fail alone, and the call with them.
cp -r "out-rope-batch=4,seq=24" out-rope-changed
printf '\x7f' | dd of=out-rope-changed/grad_p_out_weight.npy bs=1 seek=$(($(stat -c %s out-rope-changed/grad_p_out_weight.npy) - 1)) conv=notrunc 2>/dev/null
"$THUNDER_GEN_CHECK" "$root/tests/pt2/torch-2.9/dynamic/rope_dynamic.pt2" "out-rope-batch=1,seq=2@batch=3,seq=3" \
  "out-rope-batch=3,seq=3@batch=3,seq=3" "out-rope-changed@batch=4,seq=24" >rope-wrong.check 2>&1
check check-names-failing-folders sh -c "[ $? = 1 ] && grep -qxF 'out-rope-batch=1,seq=2: FAIL' rope-wrong.check &&
                                         grep -qxF 'out-rope-batch=3,seq=3: ok' rope-wrong.check && grep -qxF 'out-rope-changed: FAIL' rope-wrong.check"
against_libtorch mlp "$root/tests/pt2/torch-2.9/dynamic/mlp_dynamic.pt2"
against_libtorch attn "$root/tests/pt2/torch-2.9/dynamic/attention_dynamic.pt2"
check attn-index-over-seq grep -q "tg::quot32(i / 16, dv_seq)" attn/forward.cu
# Where n is a multiple of the run at every size and the lanes are plain arithmetic, the runs take
# every element (the twin the rest): no loop after them (its comparisons with LibTorch above).
check attn-runs-take-every-element grep -q "every element, n being a multiple of 4 at every size." attn/forward.cu
awk '/void __launch_bounds__.256. attention_dynamic_pointwise_transpose[(]/,/^}/' attn/forward.cu >attn-transpose.cu
check attn-no-loop-after-runs sh -c "grep -q 'const int runs = n / 4;' attn-transpose.cu && ! grep -q 'runs [*] 4 +' attn-transpose.cu"
# A pointwise kernel's runs where the launch finds its pointers aligned and seq a multiple of 8,
# else its elementwise twin (the element loop alone, a kernel of its own).
check attn-bf16-twin-chosen-at-launch grep -q "else  // element by element" attn_bf16/backward.cu
check attn-bf16-twin-kernel grep -q "void __launch_bounds__(256) attention_bf16_dynamic_backward_elementwise_" attn_bf16/backward.cu
check attn-bf16-twin-in-manifest grep -q '"elementwise_twin": "attention_bf16_dynamic_backward_elementwise_' attn_bf16/manifest.json
# A launch condition past 100 columns goes one clause a line (attn_bf16's name up to three long
# pointers), and none of its lines is past 100 columns.
conditions_wrapped() {
  local lines
  lines=$(awk '/^ *if \(tg::aligned16\(/,/\)  \/\/ runs of/' "$@")
  [ -n "$lines" ] && echo "$lines" | grep -q '&&$' && ! echo "$lines" | awk 'length > 100 { found = 1 } END { exit !found }'
}
check attn-bf16-launch-conditions-wrapped conditions_wrapped attn_bf16/forward.cu attn_bf16/backward.cu
# A language model's shifted loss through torch.export (logits[:, :-1], targets[:, 1:]): the
# graph's slices end at -1 and their sizes are seq - 1 (a size parameter of its own).
against_libtorch shifted "$root/tests/pt2/torch-2.9/dynamic/shifted_loss_dynamic.pt2"
# SymInts the graph computes with (x * seq, a sum over the tokens / (batch * seq), positions
# arange(past, past + seq) into a table): sizes the code reads from its size parameters.
against_libtorch sized "$root/tests/pt2/torch-2.9/dynamic/sized_dynamic.pt2"
check sized-scales-by-seq grep -q "static_cast<float>(sz_seq)" sized/forward.cu
check shifted-size-parameter grep -q "sz_[a-z0-9]*_m1" shifted/forward.cu
# A pointwise kernel over [T] alone: planned in 16-byte runs at every size (a plan made at the
# probes' counts, 2 and 7, would differ and refuse it), shorter counts left to the element loop.
cat >short.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "short_rows", "symbols": {"T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["T"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.nn.functional.gelu", "args": ["x"], "out": [{"name": "y", "shape": ["T"], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
every_size short short.json T=1 T=3 T=40
# Sizes a shape rule makes rather than reads (mean's keepdim 1, unsqueeze's 1, split's pieces of a
# constant dim) are the same at every size: RMS norm, a split and a product stay one folder.
cat >gate.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "rms_gate", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T", 64], "dtype": "f32", "requires_grad": true},
            {"name": "w", "shape": [64], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.mul", "args": ["x", "x"], "out": [{"name": "sq", "shape": ["B", "T", 64], "dtype": "f32"}]},
         {"op": "torch.mean", "args": ["sq", -1, true], "out": [{"name": "ms", "shape": ["B", "T", 1], "dtype": "f32"}]},
         {"op": "torch.rsqrt", "args": ["ms"], "out": [{"name": "r", "shape": ["B", "T", 1], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["x", "r"], "out": [{"name": "n", "shape": ["B", "T", 64], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["n", "w"], "out": [{"name": "h", "shape": ["B", "T", 64], "dtype": "f32"}]},
         {"op": "torch.split", "args": ["h", 32, -1], "out": [{"name": "a", "shape": ["B", "T", 32], "dtype": "f32"}, {"name": "b", "shape": ["B", "T", 32], "dtype": "f32"}]},
         {"op": "torch.unsqueeze", "args": ["a", 2], "out": [{"name": "a1", "shape": ["B", "T", 1, 32], "dtype": "f32"}]},
         {"op": "torch.unsqueeze", "args": ["b", 2], "out": [{"name": "b1", "shape": ["B", "T", 1, 32], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["a1", "b1"], "out": [{"name": "y", "shape": ["B", "T", 1, 32], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
every_size gate gate.json B=1,T=1 B=3,T=7 B=8,T=40
# What a size that is no product of symbols takes (docs/symbolic-shapes.md): means over T, over T
# and 64 (keepdim) and over everything, a variance's and a LayerNorm's gradient over a row of T,
# each dividing by its count from the size parameters (static_cast<float>(sz_T)); a slice dropping
# a token (T - 1: the size parameter sz_T_m1), its gradient a pad bounded by it; a cat of z and that
# slice along T (pieces of T and T - 1, 2*T - 1 in all), its gradient slices starting at sz_T.
# Against LibTorch at four sizes, T = 2 among them (a folder specialised to a size whose rows are
# a multiple of 4 sums them in runs, in another order, so not byte for byte).
cat >features.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "features", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 2, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T", 64], "dtype": "f32", "requires_grad": true},
            {"name": "z", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.mean", "args": ["x", 1], "out": [{"name": "pooled", "shape": ["B", 64], "dtype": "f32"}]},
         {"op": "torch.mean", "args": ["x", [1, 2], true], "out": [{"name": "per_batch", "shape": ["B", 1, 1], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["x"], "out": [{"name": "t", "shape": ["B", "T", 64], "dtype": "f32"}]},
         {"op": "torch.mean", "args": ["t"], "out": [{"name": "all", "shape": [], "dtype": "f32"}]},
         {"op": "torch.var", "args": ["z", -1], "out": [{"name": "v", "shape": ["B"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.layer_norm", "args": ["z", [{"size": "T"}]], "out": [{"name": "ln", "shape": ["B", "T"], "dtype": "f32"}]},
         {"op": "prims.slice_prim", "args": ["z", [0, 1], [{"size": "B"}, {"size": "T"}], [1, 1]], "out": [{"name": "s", "shape": ["B", "T - 1"], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["s"], "out": [{"name": "shifted", "shape": ["B", "T - 1"], "dtype": "f32"}]},
         {"op": "prims.cat", "args": [["z", "s"], 1], "out": [{"name": "c", "shape": ["B", "2*T - 1"], "dtype": "f32"}]},
         {"op": "torch.sin", "args": ["c"], "out": [{"name": "joined", "shape": ["B", "2*T - 1"], "dtype": "f32"}]}],
 "outputs": ["pooled", "per_batch", "all", "v", "ln", "shifted", "joined"]}
EOF
"$THUNDER_GEN" features.json -o features 2>features.err && "$here/build_emu_harness.sh" features 2>>features.err
check features-generated [ -x features/harness ]
check features-manifest-says-run-time grep -q '"takes_sizes": true' features/manifest.json
check features-mean-divides-by-sizes grep -q "static_cast<float>(sz_T)" features/forward.cu
check features-size-parameter grep -q "tg::Divider dv_T_m1" features/forward.cu
check features-pad-bound grep -q "< (sz_T_m1)" features/backward.cu
# A row kernel streaming a row of run-time length (the variance over T) launches as many threads as
# the row needs, from a warp up (tg::row_block), as one specialised to the length would.
check features-row-block-by-length grep -q "tg::row_block(tg_size_T, 256)" features/forward.cu
# Runs of 4 over rows of T - 1: lane 0's dims divided once a run, each next lane's stepped on from
# them (a wrong wrap fails the comparisons with LibTorch below).
check features-lanes-step-across-rows grep -q "int outer1 = tg::quot32(run \* 4, dv_T_m1);" features/forward.cu
check features-lanes-wrap-at-row-end grep -q "if (d1 == sz_T_m1) {" features/forward.cu
checked=()
for sizes in B=1,T=2 B=3,T=7 B=2,T=17 B=8,T=40; do
  features/harness --quiet --sizes "$sizes" --outputs "out-features-$sizes" 2>>features.err
  queue_check features "$sizes" "out-features-$sizes" $?
done
matches_libtorch features features.json "${checked[@]}"
# Slices counted from the end of T: the last token (starting at T - 1, which is 0 at T = 1, so no
# size parameter of its own: an offset of sz_T * 16 - 16), its gradient a pad guarded by it; through
# torch.export, h[:, -1] and h[:, -4:] with seq from 5 (sz_seq_m1, sz_seq_m4).
cat >last.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "last_token", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T", 16], "dtype": "f32", "requires_grad": true},
            {"name": "w", "shape": [16, 16], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.tanh", "args": ["x"], "out": [{"name": "h", "shape": ["B", "T", 16], "dtype": "f32"}]},
         {"op": "prims.slice_prim", "args": ["h", [0, {"size": "T - 1"}, 0], [{"size": "B"}, {"size": "T"}, 16], [1, 1, 1]], "out": [{"name": "s", "shape": ["B", 1, 16], "dtype": "f32"}]},
         {"op": "torch.matmul", "args": ["s", "w"], "out": [{"name": "y", "shape": ["B", 1, 16], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
"$THUNDER_GEN" last.json -o last 2>last.err && "$here/build_emu_harness.sh" last 2>>last.err
check last-generated [ -x last/harness ]
check last-start-from-sizes grep -q "load_run(g_x, sz_T \* 16 + .* - 16, r_x)" last/forward.cu
check last-gradient-guard-from-sizes grep -q "(-sz_T + d1 + 1) >= 0" last/backward.cu
checked=()
for sizes in B=1,T=1 B=3,T=7 B=2,T=17 B=8,T=40; do
  last/harness --quiet --sizes "$sizes" --outputs "out-last-$sizes" 2>>last.err
  queue_check last "$sizes" "out-last-$sizes" $?
done
matches_libtorch last last.json "${checked[@]}"
against_libtorch last_pt2 "$root/tests/pt2/torch-2.9/dynamic/last_dynamic.pt2"
check last-pt2-size-parameters grep -q "sz_seq_m4" last_pt2/forward.cu
# Slices of seq from literal starts through torch.export (h[:, 5:], h[:, 3:], h[:, 1::3]): starts
# that are constants at every size, so one folder (refused until 150b643), whose comments give the
# slices' ends as expressions.
against_libtorch sliced "$root/tests/pt2/torch-2.9/dynamic/sliced_dynamic.pt2"
check sliced-end-as-expression grep -q "prims.slice_prim(tanh, \[0, 5, 0\], \[batch, seq, 8\], \[1, 1, 1\])" sliced/forward.cu
# Convolutions and strided slices over symbols: a depthwise causal conv1d over T (padded by 3,
# cut back to T), a strided one halving T ((T - 1)//2 + 1), every other channel and step of T (a
# strided slice, its gradient an interior pad bounded by the size parameter), and a conv2d over H
# and W at stride (2, 1). Their sizes are kept as expressions, so one folder; against LibTorch at
# four sizes, T = 1 among them. Through torch.export too (conv_dynamic.pt2).
cat >convs.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "convs", "symbols": {"B": {"min": 1, "max": 4}, "T": {"min": 1, "max": 48}, "H": {"min": 3, "max": 20}, "W": {"min": 5, "max": 24}},
 "inputs": [{"name": "x", "shape": ["B", 16, "T"], "dtype": "f32", "requires_grad": true},
            {"name": "dw", "shape": [16, 1, 4], "dtype": "f32", "requires_grad": true},
            {"name": "db", "shape": [16], "dtype": "f32", "requires_grad": true},
            {"name": "down", "shape": [8, 16, 3], "dtype": "f32", "requires_grad": true},
            {"name": "img", "shape": ["B", 3, "H", "W"], "dtype": "f32", "requires_grad": true},
            {"name": "k", "shape": [8, 3, 3, 3], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.nn.functional.conv1d", "args": ["x", "dw", "db", 1, 3, 1, 16], "out": [{"name": "y", "shape": ["B", 16, "T + 3"], "dtype": "f32"}]},
         {"op": "prims.slice_prim", "args": ["y", [0, 0, 0], [{"size": "B"}, 16, {"size": "T"}], [1, 1, 1]], "out": [{"name": "causal", "shape": ["B", 16, "T"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.silu", "args": ["causal"], "out": [{"name": "s", "shape": ["B", 16, "T"], "dtype": "f32"}]},
         {"op": "prims.slice_prim", "args": ["s", [0, 0, 0], [{"size": "B"}, 16, {"size": "T"}], [1, 2, 2]], "out": [{"name": "e", "shape": ["B", 8, "(T - 1)//2 + 1"], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["e"], "out": [{"name": "every_other", "shape": ["B", 8, "(T - 1)//2 + 1"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.conv1d", "args": ["s", "down", null, 2, 1], "out": [{"name": "halved", "shape": ["B", 8, "(T - 1)//2 + 1"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.conv2d", "args": ["img", "k", null, [2, 1], [1, 0]], "out": [{"name": "f", "shape": ["B", 8, "(H - 1)//2 + 1", "W - 2"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.gelu", "args": ["f"], "out": [{"name": "g", "shape": ["B", 8, "(H - 1)//2 + 1", "W - 2"], "dtype": "f32"}]},
         {"op": "torch.mean", "args": ["g", [2, 3]], "out": [{"name": "pooled", "shape": ["B", 8], "dtype": "f32"}]}],
 "outputs": ["every_other", "halved", "pooled"]}
EOF
"$THUNDER_GEN" convs.json -o convs 2>convs.err && "$here/build_emu_harness.sh" convs 2>>convs.err
check convs-generated [ -x convs/harness ]
check convs-product-of-sizes grep -q "sz_W_m2 \* sz__lH_p1_r_d_d2" convs/forward.cu  # ((H + 1)//2)*(W - 2), not one size of its own
check convs-strided-pad-bound grep -Eq "< \(sz_[A-Za-z0-9_]+ \* 2 - 1\)\) && .*% 2 == 0" convs/backward.cu
checked=()
for sizes in B=1,T=1,H=3,W=5 B=3,T=7,H=7,W=9 B=2,T=17,H=16,W=13 B=4,T=48,H=20,W=24; do
  convs/harness --quiet --sizes "$sizes" --outputs "out-convs-$sizes" 2>>convs.err
  queue_check convs "$sizes" "out-convs-$sizes" $?
done
matches_libtorch convs convs.json "${checked[@]}"
against_libtorch conv "$root/tests/pt2/torch-2.9/dynamic/conv_dynamic.pt2"
# The im2col columns' runs of 4 step d3 across rows of seq + 3; the dims outside the 4 taps (4 *
# (seq + 3) elements, a multiple of the run) are the same for every lane: divided once a run.
check conv-outer-dims-once-a-run grep -q "const int outer2 = tg::quot32(run, dv_seq_p3);" conv/forward.cu
# torch.export's aten.any over a seq that may be 0 (any_dynamic.pt2, seq from 0): false over no
# tokens, as a sum of the nonzero flags (an amax would be refused there); at seq = 0 and three more.
against_libtorch any "$root/tests/pt2/torch-2.9/dynamic/any_dynamic.pt2"
check any-as-a-sum grep -q "any_1__2 = prims.sum(any_1__1, \[1\])" any/forward.cu
# A dim that is 0 at every size beside a symbolic one (x [B, 0, 8] + y [B, 1, 8]): the mixed
# radix divided by the 0 (an internal error, exit 70); no element at any size now. Against
# LibTorch at B = 1 and 5.
cat >emptyb.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "emptyb", "symbols": {"B": {"min": 1, "max": 8}},
 "inputs": [{"name": "x", "shape": ["B", 0, 8], "dtype": "f32", "requires_grad": true},
            {"name": "y", "shape": ["B", 1, 8], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.add", "args": ["x", "y"], "out": [{"name": "z", "shape": ["B", 0, 8], "dtype": "f32"}]}],
 "outputs": ["z"]}
EOF
"$THUNDER_GEN" emptyb.json -o emptyb 2>emptyb.err && "$here/build_emu_harness.sh" emptyb 2>>emptyb.err
check emptyb-generated [ -x emptyb/harness ]
checked=()
for sizes in B=1 B=5; do
  emptyb/harness --quiet --sizes "$sizes" --outputs "out-emptyb-$sizes" 2>>emptyb.err
  queue_check emptyb "$sizes" "out-emptyb-$sizes" $?
done
matches_libtorch emptyb emptyb.json "${checked[@]}"
# A JSON trace's plain integers are the same at every size (docs/trace-format.md): a chunk's
# decomposition and reshapes written with plain 64, 4 and 16 stay one folder.
cat >chunk.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "chunk_gate", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T", 128], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.chunk", "args": ["x", 2, -1], "out": [{"name": "a", "shape": ["B", "T", 64], "dtype": "f32"}, {"name": "b", "shape": ["B", "T", 64], "dtype": "f32"}],
          "sub": [{"op": "prims.slice_prim", "args": ["x", [0, 0, 0], [{"size": "B"}, {"size": "T"}, 64], [1, 1, 1]], "out": [{"name": "a", "shape": ["B", "T", 64], "dtype": "f32"}]},
                  {"op": "prims.slice_prim", "args": ["x", [0, 0, 64], [{"size": "B"}, {"size": "T"}, 128], [1, 1, 1]], "out": [{"name": "b", "shape": ["B", "T", 64], "dtype": "f32"}]}]},
         {"op": "torch.reshape", "args": ["a", {"size": "B"}, {"size": "T"}, 4, 16], "out": [{"name": "a4", "shape": ["B", "T", 4, 16], "dtype": "f32"}]},
         {"op": "torch.reshape", "args": ["b", {"size": "B"}, {"size": "T"}, 4, 16], "out": [{"name": "b4", "shape": ["B", "T", 4, 16], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["a4"], "out": [{"name": "t", "shape": ["B", "T", 4, 16], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["t", "b4"], "out": [{"name": "y", "shape": ["B", "T", 4, 16], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
every_size chunk chunk.json B=1,T=1 B=5,T=9
# A split of a symbolic dim into pieces of symbolic and fixed sizes (T and 2 of the cat of x and
# w, T + 2; a cat's 2*T halved by T): the pieces keep their expressions, one folder for every
# size, against LibTorch, gradients too.
cat >splits.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "splits", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T", 4], "dtype": "f32", "requires_grad": true},
            {"name": "w", "shape": ["B", 2, 4], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.cat", "args": [["w", "x"], 1], "out": [{"name": "xw", "shape": ["B", "T + 2", 4], "dtype": "f32"}]},
         {"op": "torch.split", "args": ["xw", [{"size": "T"}, 2], 1], "out": [{"name": "a", "shape": ["B", "T", 4], "dtype": "f32"}, {"name": "b", "shape": ["B", 2, 4], "dtype": "f32"}]},
         {"op": "torch.cat", "args": [["a", "x"], 1], "out": [{"name": "c", "shape": ["B", "2*T", 4], "dtype": "f32"}]},
         {"op": "torch.split", "args": ["c", {"size": "T"}, 1], "out": [{"name": "c0", "shape": ["B", "T", 4], "dtype": "f32"}, {"name": "c1", "shape": ["B", "T", 4], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["c1"], "out": [{"name": "t", "shape": ["B", "T", 4], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["c0", "t"], "out": [{"name": "y", "shape": ["B", "T", 4], "dtype": "f32"}]},
         {"op": "torch.sum", "args": ["b", 1], "out": [{"name": "z", "shape": ["B", 4], "dtype": "f32"}]}],
 "outputs": ["y", "z"]}
EOF
against=libtorch every_size splits splits.json B=1,T=1 B=3,T=7 B=8,T=40
# A sum over a row whose length is a symbol (the count of targets cross-entropy averages over,
# B*T): the kernel takes its row_length and streams the row (examples/symbolic/corpus/cross_entropy_head.json,
# tools/symbolic_corpus.py's Thunder capture of the corpus model).
every_size ce "$root/examples/symbolic/corpus/cross_entropy_head.json" B=1,T=1 B=3,T=7 B=8,T=32
check ce-row-length-taken grep -q "j < row_length; j += blockDim.x" ce/backward.cu
# index_input SIZES NAME BOUND DIM...: NAME.npy, int64 indices in [0, BOUND) of shape DIM... (each a
# symbol or a number), at SIZES ("N=3,C=7"): inputs the harness would draw out of range.
index_input() {
  local sizes=$1 name=$2 bound=$3 shape data
  shift 3
  read -r shape data < <(python3 - "$sizes" "$bound" "$@" <<'PY'
import random, struct, sys
sizes = dict(kv.split("=") for kv in sys.argv[1].split(","))
bound, dims = int(sizes[sys.argv[2]]), [int(sizes.get(d, d)) for d in sys.argv[3:]]
count = 1
for d in dims:
    count *= d
random.seed(sys.argv[1])
print("(%s)" % "".join("%d," % d for d in dims), struct.pack("<%dq" % count, *(random.randrange(bound) for _ in range(count))).hex())
PY
  )
  npy "$name.npy" '<i8' "$shape" "$data"
}
# Cross-entropy over C classes, C a symbol: the target's logit is picked where 0 <= t < sz_C.
class_targets() { index_input "$1" t C N; }
cat >cec.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "cec", "symbols": {"N": {"min": 1, "max": 64}, "C": {"min": 1, "max": 5000}},
 "inputs": [{"name": "x", "shape": ["N", "C"], "dtype": "f32", "requires_grad": true}, {"name": "t", "shape": ["N"], "dtype": "i64"}],
 "ops": [{"op": "torch.nn.functional.cross_entropy", "args": ["x", "t"], "out": [{"name": "l", "shape": [], "dtype": "f32"}]}],
 "outputs": ["l"]}
EOF
inputs=class_targets against=libtorch every_size cec cec.json N=1,C=1 N=3,C=7 N=17,C=1001 N=64,C=5000
check cec-target-checked-against-the-class-count grep -q "at_l__[0-9]* < sz_C) {" cec/forward.cu
# ... with label smoothing and class weights: s / C divides by the class count at run time.
cat >cels.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "cels", "symbols": {"N": {"min": 1, "max": 64}, "C": {"min": 1, "max": 1000}},
 "inputs": [{"name": "x", "shape": ["N", "C"], "dtype": "f32", "requires_grad": true}, {"name": "t", "shape": ["N"], "dtype": "i64"},
            {"name": "w", "shape": ["C"], "dtype": "f32", "init": {"uniform": [0.5, 1.5]}}],
 "ops": [{"op": "torch.nn.functional.cross_entropy", "args": ["x", "t"], "kwargs": {"weight": "w", "label_smoothing": 0.1},
          "out": [{"name": "l", "shape": [], "dtype": "f32"}]}],
 "outputs": ["l"]}
EOF
inputs=class_targets against=libtorch every_size cels cels.json N=1,C=1 N=3,C=7 N=17,C=1000
# Lowerings whose iota runs along a symbol (cumsum's, gather's and tril's positions), the
# lengths taken at run time: a cumulative sum over T, a gather of one position along T, and
# causal attention scores over [B, 2, T, T] masked by tril (whose mask the planner weighs at
# --plan-at sizes).
cat >scan.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "scan", "symbols": {"B": {"min": 1, "max": 4}, "T": {"min": 1, "max": 48}},
 "inputs": [{"name": "x", "shape": ["B", 2, "T", 8], "dtype": "f32", "requires_grad": true},
            {"name": "kt", "shape": ["B", 2, 8, "T"], "dtype": "f32", "requires_grad": true},
            {"name": "i", "shape": ["B", 2, 1, 8], "dtype": "i64"}],
 "ops": [{"op": "torch.cumsum", "args": ["x", 2], "out": [{"name": "c", "shape": ["B", 2, "T", 8], "dtype": "f32"}]},
         {"op": "torch.gather", "args": ["c", 2, "i"], "out": [{"name": "g", "shape": ["B", 2, 1, 8], "dtype": "f32"}]},
         {"op": "torch.matmul", "args": ["x", "kt"], "out": [{"name": "s", "shape": ["B", 2, "T", "T"], "dtype": "f32"}]},
         {"op": "torch.tril", "args": ["s"], "kwargs": {"fill_value": {"float": "-inf"}}, "out": [{"name": "m", "shape": ["B", 2, "T", "T"], "dtype": "f32"}]},
         {"op": "torch.softmax", "args": ["m", -1], "out": [{"name": "y", "shape": ["B", 2, "T", "T"], "dtype": "f32"}]}],
 "outputs": ["g", "y"]}
EOF
positions() { index_input "$1" i T B 2 1 8; }
inputs=positions against=libtorch every_size scan scan.json B=1,T=1 B=3,T=7 B=4,T=48
# An iota counting down from T (its start a size parameter), and an embedding whose padding_idx
# -1 is row C - 1 of a table of C rows, C a symbol (its gradient skips that row).
cat >ends.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "ends", "symbols": {"B": {"min": 1, "max": 4}, "T": {"min": 1, "max": 40}, "C": {"min": 1, "max": 300}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true}, {"name": "i", "shape": ["B", "T"], "dtype": "i64"},
            {"name": "w", "shape": ["C", 8], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "prims.iota", "args": [{"size": "T"}], "kwargs": {"start": {"size": "T"}, "step": -1, "device": {"device": "cuda:0"}, "dtype": {"dtype": "i64"}},
          "out": [{"name": "r", "shape": ["T"], "dtype": "i64"}]},
         {"op": "prims.convert_element_type", "args": ["r", {"dtype": "f32"}], "out": [{"name": "f", "shape": ["T"], "dtype": "f32"}]},
         {"op": "torch.mul", "args": ["x", "f"], "out": [{"name": "y", "shape": ["B", "T"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.embedding", "args": ["i", "w"], "kwargs": {"padding_idx": -1}, "out": [{"name": "e", "shape": ["B", "T", 8], "dtype": "f32"}]}],
 "outputs": ["y", "e"]}
EOF
token_ids() { index_input "$1" i C B T; }
inputs=token_ids against=libtorch every_size ends ends.json B=1,T=1,C=1 B=3,T=7,C=5 B=4,T=40,C=300
# torch.nn.MultiheadAttention's function over [T, B, 16] (4 heads, weights returned): its slices of
# in_proj_weight are sized by constants, its heads by the symbols.
cat >mhat.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "mhat", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["T", "B", 16], "dtype": "f32", "requires_grad": true},
            {"name": "ipw", "shape": [48, 16], "dtype": "f32", "requires_grad": true, "init": {"uniform": [-0.25, 0.25]}},
            {"name": "ipb", "shape": [48], "dtype": "f32", "requires_grad": true},
            {"name": "opw", "shape": [16, 16], "dtype": "f32", "requires_grad": true, "init": {"uniform": [-0.25, 0.25]}},
            {"name": "opb", "shape": [16], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.nn.functional.multi_head_attention_forward", "args": ["x", "x", "x", 16, 4, "ipw", "ipb", null, null, false, 0.0, "opw", "opb"],
          "out": [{"name": "y", "shape": ["T", "B", 16], "dtype": "f32"}, {"name": "aw", "shape": ["B", "T", "T"], "dtype": "f32"}]}],
 "outputs": ["y", "aw"]}
EOF
against=libtorch every_size mhat mhat.json B=1,T=1 B=3,T=7 B=8,T=40
# SDPA's attn_mask of a shape that broadcasts to the logits': a key padding mask [B, 1, 1, T]
# (a quarter of the keys masked) and a float bias [T, T], each broadcast by the lowering.
cat >padmask.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "padmask", "symbols": {"B": {"min": 1, "max": 4}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "q", "shape": ["B", 2, "T", 8], "dtype": "f32", "requires_grad": true, "init": {"uniform": [-1, 1]}},
            {"name": "k", "shape": ["B", 2, "T", 8], "dtype": "f32", "requires_grad": true, "init": {"uniform": [-1, 1]}},
            {"name": "v", "shape": ["B", 2, "T", 8], "dtype": "f32", "requires_grad": true},
            {"name": "keep", "shape": ["B", 1, 1, "T"], "dtype": "f32"},
            {"name": "bias", "shape": ["T", "T"], "dtype": "f32", "init": {"uniform": [-1, 1]}}],
 "ops": [{"op": "torch.gt", "args": ["keep", -1.0], "out": [{"name": "m", "shape": ["B", 1, 1, "T"], "dtype": "b8"}]},
         {"op": "torch.nn.functional.scaled_dot_product_attention", "args": ["q", "k", "v"], "kwargs": {"attn_mask": "m"},
          "out": [{"name": "a", "shape": ["B", 2, "T", 8], "dtype": "f32"}]},
         {"op": "torch.nn.functional.scaled_dot_product_attention", "args": ["q", "k", "v"], "kwargs": {"attn_mask": "bias"},
          "out": [{"name": "b", "shape": ["B", 2, "T", 8], "dtype": "f32"}]}],
 "outputs": ["a", "b"]}
EOF
against=libtorch every_size padmask padmask.json B=1,T=1 B=3,T=7 B=4,T=40
# Pads that crop (negative lo or hi) along T: their gradients slice the cotangent from -lo up to
# T - max(0, -hi) and pad it back, both by expressions.
cat >crop.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "crop", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 2, "max": 64}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "prims.pad", "args": ["x", 0.0, [[0, 0, 0], [-1, 2, 0]]], "out": [{"name": "p", "shape": ["B", "T + 1"], "dtype": "f32"}]},
         {"op": "prims.pad", "args": ["x", 0.0, [[0, 0, 0], [0, -1, 0]]], "out": [{"name": "q", "shape": ["B", "T - 1"], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["p"], "out": [{"name": "y", "shape": ["B", "T + 1"], "dtype": "f32"}]},
         {"op": "torch.sin", "args": ["q"], "out": [{"name": "z", "shape": ["B", "T - 1"], "dtype": "f32"}]}],
 "outputs": ["y", "z"]}
EOF
against=libtorch every_size crop crop.json B=1,T=2 B=3,T=7 B=8,T=64
# An all_gather along B and a reduce_scatter, as two ranks: [2*B, T] gathered and [B//2, T]
# scattered, byte for byte the folders specialised to each size. (Both of one input would be
# refused: its gradients, [B, T] and the all_gather's [2*(B//2), T], are one shape at every size
# allowed, which the expressions do not show.)
cat >ranks.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "ranks", "symbols": {"B": {"min": 2, "max": 16, "multiple_of": 2}, "T": {"min": 1, "max": 8}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true},
            {"name": "y", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "thunder.distributed.prims.all_gather", "args": ["x", {"process_group": {"world_size": 2}}, false], "out": [{"name": "g", "shape": ["2*B", "T"], "dtype": "f32"}]},
         {"op": "torch.tanh", "args": ["g"], "out": [{"name": "h", "shape": ["2*B", "T"], "dtype": "f32"}]},
         {"op": "thunder.distributed.prims.reduce_scatter", "args": ["y", {"str": "SUM"}, {"process_group": {"world_size": 2}}, false], "out": [{"name": "s", "shape": ["B//2", "T"], "dtype": "f32"}]}],
 "outputs": ["h", "s"]}
EOF
ranks=2 every_size ranks ranks.json B=2,T=1 B=6,T=7
# A softmax over T with rows before it (row * row_length + j): row_length at run time, each
# row held in registers (up to 1 element a thread of 256, masked past the row), where the
# specialised folders stream their rows of 7, 33 and 40 (no multiple of their blocks) and take
# the max and the sum in one online pass: against LibTorch.
cat >rsoft.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "rsoft", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.softmax", "args": ["x", -1], "out": [{"name": "y", "shape": ["B", "T"], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
against=libtorch every_size rsoft rsoft.json B=1,T=1 B=3,T=7 B=5,T=33 B=8,T=40
check rsoft-rows-held-masked grep -q "if (j < row_length) {" rsoft/backward.cu
# A row kernel reading a transposed operand (x_in's T its rows' stride) declares where each row
# starts in it once a row (base_x_in); a value named `row`, whose pad's guard is ix_x_in_row, may
# not hide that base (named ix_x_in_row too, it once read the guard's bool as the offset).
cat >rbase.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "rbase", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 40}},
 "inputs": [{"name": "x_in", "shape": ["B", 16, "T"], "dtype": "f32", "requires_grad": true},
            {"name": "x", "shape": ["B", "T", 15], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "prims.pad", "args": ["x", 0.0, [[0, 0, 0], [0, 0, 0], [0, 1, 0]]], "out": [{"name": "row", "shape": ["B", "T", 16], "dtype": "f32"}]},
         {"op": "torch.permute", "args": ["x_in", [0, 2, 1]], "out": [{"name": "xt", "shape": ["B", "T", 16], "dtype": "f32"}]},
         {"op": "torch.add", "args": ["row", "xt"], "out": [{"name": "s", "shape": ["B", "T", 16], "dtype": "f32"}]},
         {"op": "torch.softmax", "args": ["s", -1], "out": [{"name": "y", "shape": ["B", "T", 16], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
against=libtorch every_size rbase rbase.json B=1,T=1 B=3,T=7 B=8,T=40
check rbase-row-base grep -q "const int64_t base_x_in = d0 \\* sz_T \\* 16 + d1;" rbase/forward.cu
# Rows up to 4096: the backward's kernel holds y and its gradient, 8 elements a thread of 256
# (16 registers), so rows up to 2048 long; its streamed twin takes the longer ones (2049, 3001).
sed 's/"max": 40/"max": 4096/; s/"rsoft"/"rlong"/' rsoft.json >rlong.json
against=libtorch every_size rlong rlong.json B=2,T=100 B=2,T=2047 B=2,T=2049 B=1,T=3001
check rlong-held-or-streamed-at-the-launch sh -c 'grep -q "if (tg_size_T <= 2048)  // rows held in registers" rlong/backward.cu &&
                                                 grep -q "rlong_backward_rowstream_grad_x," rlong/backward.cu'
check rlong-manifest-names-the-twin grep -q '"streamed_twin": "rlong_backward_rowstream_grad_x"' rlong/manifest.json
# A LayerNorm over D (weight and bias shaped like one row, no gradient): x held 4 a thread for
# rows up to 1024, with the weight and bias loaded once for all the block's rows (hoisted).
cat >lnd.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "lnd", "symbols": {"B": {"min": 1, "max": 8}, "D": {"min": 1, "max": 1024}},
 "inputs": [{"name": "x", "shape": ["B", "D"], "dtype": "f32", "requires_grad": true},
            {"name": "w", "shape": ["D"], "dtype": "f32"}, {"name": "b", "shape": ["D"], "dtype": "f32"}],
 "ops": [{"op": "torch.nn.functional.layer_norm", "args": ["x", [{"size": "D"}], "w", "b", 1e-05], "out": [{"name": "y", "shape": ["B", "D"], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
against=libtorch every_size lnd lnd.json B=1,D=1 B=3,D=33 B=2,D=300 B=2,D=1024
check lnd-rows-held-weights-hoisted sh -c 'grep -q "up to 4 elements per thread (j < row_length)" lnd/forward.cu &&
                                           grep -q "operands shaped like a row, the same for every row" lnd/forward.cu'
# The weight's and bias's gradients, sums over B of rows of run-time length D: each block adds its
# rows into partial sums in shared memory sized for the longest row (D <= 1024: 4 KB each), or in
# its row of the partial sums in global memory past 32 KB of them (D <= 8192).
sed 's/"name": "w", "shape": \["D"\], "dtype": "f32"/&, "requires_grad": true/; s/"name": "b", "shape": \["D"\], "dtype": "f32"/&, "requires_grad": true/; s/"lnd"/"lnwd"/' lnd.json >lnwd.json
against=libtorch every_size lnwd lnwd.json B=1,D=1 B=3,D=33 B=5,D=1024
check lnwd-part-sums-shared sh -c 'grep -q "__shared__ float s_grad_w__parts\[1024\];" lnwd/backward.cu &&
                                   grep -q "g_grad_w__parts\[int64_t(blockIdx.x) \* row_length + j\] = s_grad_w__parts\[j\];" lnwd/backward.cu'
sed 's/"max": 1024/"max": 8192/; s/"lnwd"/"lnwide"/' lnwd.json >lnwide.json
against=libtorch every_size lnwide lnwide.json B=2,D=4097 B=3,D=8192
check lnwide-part-sums-in-global-memory grep -q "g_grad_w__parts\[int64_t(blockIdx.x) \* row_length + j\] += " lnwide/backward.cu
# Dropout, a residual and a LayerNorm over D up to 2048: the forward holds x, the residual and
# its random draws, 5 a thread, for rows up to 1280, the backward 4 for rows up to 1024; their
# streamed twins take the longer rows.
cat >drln.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "drln", "symbols": {"B": {"min": 1, "max": 8}, "D": {"min": 1, "max": 2048}},
 "inputs": [{"name": "x", "shape": ["B", "D"], "dtype": "f32", "requires_grad": true},
            {"name": "r", "shape": ["B", "D"], "dtype": "f32", "requires_grad": true},
            {"name": "w", "shape": ["D"], "dtype": "f32"}, {"name": "b", "shape": ["D"], "dtype": "f32"}],
 "ops": [{"op": "torch.nn.functional.dropout", "args": ["x", 0.1, true, false], "out": [{"name": "d", "shape": ["B", "D"], "dtype": "f32"}]},
         {"op": "torch.add", "args": ["r", "d"], "out": [{"name": "s", "shape": ["B", "D"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.layer_norm", "args": ["s", [{"size": "D"}], "w", "b", 1e-05], "out": [{"name": "y", "shape": ["B", "D"], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
against=libtorch every_size drln drln.json B=2,D=7 B=1,D=1280 B=1,D=1281 B=2,D=2048
check drln-held-or-streamed-at-the-launch sh -c 'grep -q "if (tg_size_D <= 1280)  // rows held in registers" drln/forward.cu &&
                                                grep -q "if (tg_size_D <= 1024)  // rows held in registers" drln/backward.cu'
# A sum over B alone (a column kernel whose row is B long), byte for byte the specialised folders.
cat >col64.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "col64", "symbols": {"B": {"min": 1, "max": 300}},
 "inputs": [{"name": "x", "shape": ["B", 64], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.sum", "args": ["x", 0], "out": [{"name": "y", "shape": [64], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
every_size col64 col64.json B=1 B=7 B=33 B=300

# What nvcc makes of the kernels: every 16- and 8-byte run of the folder specialised to the
# largest sizes kept, registers within 10% (tests/ptx_compare.py), and nothing spills
# (tests/ptx_check.py, as for every example). The archives' folders (mlp, attn) are compared with
# the folders specialised to their largest sizes by ptx_corpus.
# (rsoft, ce, attn: rows whose length is taken at run time; attn: index arithmetic over sz_seq.
# rlong, drln, cec: rows held up to a limit and their twins, no spills and at most 48 registers,
# the counts measured when rows were first held; lnwd: partial sums in shared memory sized for
# the longest row. Those four are not compared with specialised folders, whose kernels at those
# lengths are other kernels: held in 16-byte runs (cec at C = 5000), or fused otherwise.)
for name in block mlp rsoft ce cec attn rlong drln lnwd; do
  device_code "$name"
  if ! [[ " rlong drln cec lnwd " = *" $name "* ]] && largest=$(ls -d "$name"-at-* 2>/dev/null | sort -t= -k3 -n | tail -1) && [ -n "$largest" ]; then
    device_code "$largest"
    check "$name-ptx-as-specialised" python3 "$here/ptx_compare.py" --known "$here/ptx_known_gaps.txt" "$name" "$largest" forward backward
  fi
  check "$name-ptx-runs-no-spills" sh -c "python3 '$here/ptx_check.py' '$name/forward.cu' '$name/keep/forward.ptx' '$name/forward.ptxas.log' &&
                                          python3 '$here/ptx_check.py' '$name/backward.cu' '$name/keep/backward.ptx' '$name/backward.ptxas.log'"
done
most_registers() { grep -ho "Used [0-9]* registers" "$@" | awk '{ if ($2 > most) most = $2 } END { print most + 0 }'; }
check held-rows-at-most-48-registers [ "$(most_registers rlong/*.ptxas.log drln/*.ptxas.log cec/*.ptxas.log)" -le 48 ]

# The folder's own CMakeLists.txt builds it for the GPU (nvcc, sm_90), each file its own
# translation unit as a deployment compiles them (the emulated builds above are one unit).
PATH=$PATH:$(dirname "${NVCC:?}") cmake -S block -B block-nvcc -DTG_MODE=nvcc -DCMAKE_BUILD_TYPE=Release >block-nvcc.log 2>&1 &&
  cmake --build block-nvcc >>block-nvcc.log 2>&1
check builds-for-the-gpu [ -x block-nvcc/harness ]

# Inputs named as the entry points' own variables could be (sizes, a, size0, size_B): the folder
# still builds, and runs as the block does.
sed 's/"ln_w"/"sizes"/g; s/"ln_b"/"a"/g; s/"b1"/"size0"/g; s/"b2"/"size_B"/g' "$root/examples/symbolic/symbolic_block.json" >names.json
mkdir named && from="out-block-B=3,T=7"
for pair in x:x ln_w:sizes ln_b:a w1:w1 b1:size0 w2:w2 b2:size_B cotangent_out:cotangent_out; do cp "$from/${pair%%:*}.npy" "named/${pair#*:}.npy"; done
"$THUNDER_GEN" names.json -o names 2>names.err && "$here/build_emu_harness.sh" names fast 2>>names.err &&
  names/harness --quiet --inputs named --outputs out-names 2>>names.err
check clashing-names-build-and-run [ -s out-names/out.npy ]
check clashing-names-same-output cmp -s "out-block-B=3,T=7/out.npy" out-names/out.npy

# Inputs read from files bind the sizes themselves: the outputs at B=3,T=7 again.
mkdir inputs && cp "out-block-B=3,T=7"/{x,ln_w,ln_b,w1,b1,w2,b2,cotangent_out}.npy inputs/
block/harness --quiet --inputs inputs --outputs out-read 2>err.txt
check read-sizes-bound-from-files same_outputs "out-block-B=3,T=7" out-read

# The C API as a program that links the folder calls it: the binder, NULL and overflowing sizes.
{ echo '#include "forward.cu"'; echo '#include "backward.cu"'; echo "#include \"$here/tools/run_time_entry_check.cpp\""; } >block/entry_check.cpp
"${CXX:-g++}" -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -Iblock block/entry_check.cpp -lboost_context -lpthread \
  -o entry_check 2>entry_check.err
check c-api ./entry_check

# Refusals, each naming what is wrong; never a crash.
run() { "$@" >out.txt 2>err.txt; echo $? >rc.txt; }
rc() { [ "$(cat rc.txt)" = "$1" ]; }
has() { grep -q -- "$2" "$1"; }
no_crash() { ! grep -q "terminate\|Sanitizer\|runtime error" err.txt; }
run block/harness --quiet --sizes B=9,T=2
check out-of-range rc 1; check out-of-range-words has err.txt "B.*1 <= B <= 8"; check out-of-range-no-crash no_crash
cp "out-block-B=2,T=17/cotangent_out.npy" inputs/cotangent_out.npy  # rows for B*T = 34, x says 21
run block/harness --quiet --inputs inputs
check disagreeing-inputs rc 1; check disagreeing-inputs-words has err.txt "cotangent_out"; check disagreeing-no-crash no_crash
run block/harness --sizes C=2
check unknown-symbol rc 2; check unknown-symbol-words has err.txt "'C=2' is not NAME=N for a symbol of this folder"
run block/harness --sizes B=x
check bad-size rc 2; check bad-size-words has err.txt "\-\-sizes needs a non-negative integer"
run block/harness --sizes B=3,B=4
check size-twice rc 2; check size-twice-words has err.txt "B is given twice"
run block/harness --sizes B=3,
check trailing-comma rc 2; check trailing-comma-words has err.txt "a trailing comma"
run block/harness --sizes ""
check sizes-empty rc 2; check sizes-empty-words has err.txt "needs NAME=N"
run "block-at-B=1,T=1/harness" --sizes B=1,T=1
check fixed-sizes-refuse-the-flag rc 2; check fixed-sizes-words has err.txt "this folder runs at the sizes it was generated for only"
# T in 2..3 beside B in 1..8: in the declared order B's first probe took 2 and left T none (it
# was refused as having fewer than two sizes); the narrowest range now chooses first.
sed 's/"min": 1, "max": 40}/"min": 2, "max": 3}/; s/"rsoft"/"rnarrow"/' rsoft.json >rnarrow.json
run "$THUNDER_GEN" rnarrow.json -o rnarrow
check narrow-range-probes rc 0
# T in 4..8, a multiple of 4, beside B in 4..7: B took 4 first and left T only 8, which has no
# second; B now tries its next size: B 5 and 6, T 4 and 8. And three symbols, where the middle
# one's next size leaves the last its first (A 3, B 2 left C only 4: B 4, C 2).
sed 's/"min": 1, "max": 8}/"min": 4, "max": 7}/; s/"min": 1, "max": 40}/"min": 4, "max": 8, "multiple_of": 4}/; s/"rsoft"/"reven"/' rsoft.json >reven.json
run "$THUNDER_GEN" reven.json -o reven
check probes-searched rc 0
cat >rthree.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "rthree", "symbols": {"A": {"min": 3, "max": 5}, "B": {"min": 2, "max": 6, "multiple_of": 2}, "C": {"min": 2, "max": 4}},
 "inputs": [{"name": "x", "shape": ["A", "B", "C"], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "torch.tanh", "args": ["x"], "out": [{"name": "y", "shape": ["A", "B", "C"], "dtype": "f32"}]}],
 "outputs": ["y"]}
EOF
run "$THUNDER_GEN" rthree.json -o rthree
check probes-searched-three rc 0
sed 's/"max": 3}/"max": 2}/' rnarrow.json >rone.json
run "$THUNDER_GEN" rone.json -o rone
check one-size-refused rc 1; check one-size-words has err.txt "T has too few sizes from 2 up (2 <= T <= 2)"
# Sizes in range whose buffers the harness cannot allocate (2^46 elements): said, exit 1, no abort;
# and where the byte count is past size_t (2^62 elements of 4 bytes once wrapped to 0 bytes).
sed 's/"max": 8}/"max": 4294967296}/; s/"max": 40}/"max": 4294967296}/; s/"rsoft"/"rhuge"/' rsoft.json >rhuge.json
"$THUNDER_GEN" rhuge.json -o rhuge 2>rhuge.err && "$here/build_emu_harness.sh" rhuge fast 2>>rhuge.err
run rhuge/harness --quiet --sizes B=8388608,T=8388608
check unallocatable-sizes rc 1; check unallocatable-words has err.txt "^rhuge: cannot allocate 281474976710656 bytes for x at these sizes$"
check unallocatable-no-crash no_crash
run rhuge/harness --quiet --sizes B=2147483648,T=2147483648
check bytes-past-size-t rc 1; check bytes-past-size-t-words has err.txt "^rhuge: cannot allocate 2^64 or more bytes for x at these sizes$"
check bytes-past-size-t-no-crash no_crash
# A drawn input whose shape is past int64 at sizes in range (B^4 at B = 65536): said by input.
cat >rpow.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "rpow", "symbols": {"B": {"min": 1, "max": 1048576}},
 "inputs": [{"name": "x", "shape": ["B"], "dtype": "f32", "requires_grad": false},
            {"name": "y", "shape": ["B*B*B*B"], "dtype": "f32", "requires_grad": false}],
 "ops": [{"op": "torch.sin", "args": ["x"], "out": [{"name": "a", "shape": ["B"], "dtype": "f32"}]},
         {"op": "torch.cos", "args": ["y"], "out": [{"name": "b", "shape": ["B*B*B*B"], "dtype": "f32"}]}],
 "outputs": ["a", "b"]}
EOF
"$THUNDER_GEN" rpow.json -o rpow 2>rpow.err && "$here/build_emu_harness.sh" rpow fast 2>>rpow.err
run rpow/harness --quiet --sizes B=65536
check shape-past-int64 rc 1; check shape-past-int64-words has err.txt "^rpow: input y, drawn at --sizes B=65536: its shape is past int64 there$"
check shape-past-int64-no-crash no_crash

# A slice dropping a token where T may be 1: its size T - 1 may be 0, so it gets no size parameter
# (features.json above declares T >= 2), its code depends on the size, refused naming the kernel.
cp "$here/run_time/shift0.json" .
run "$THUNDER_GEN" shift0.json -o refused
check not-generic-refused rc 1
check not-generic-words has err.txt "depends on the sizes other than through the symbols.*(in [a-z_]*shift0_[a-z_0-9]*).*--specialize"
check not-generic-says-why has err.txt "sizes it takes as numbers: T - 1 (it may be 0: .*raise their min)"
check not-generic-wrote-nothing [ ! -e refused ]
# A kernel wider than the smallest size allowed (T >= 2 and a kernel of 3 unpadded): refused,
# naming the op and the declaration to raise.
sed 's/"min": 1, "max": 48/"min": 2, "max": 48/; s/"down", null, 2, 1/"down", null, 2, 0/' convs.json >narrow.json
run "$THUNDER_GEN" narrow.json -o refused
check narrow-kernel-refused rc 1
check narrow-kernel-words has err.txt "/ops/5/args/0: error: torch.nn.functional.conv1d: spatial dim 0 (T, padded by 0 on each side) may be shorter than the window.s span of 3 (dilation included), as where it is 2: raise"
# --emit of the code or the kernel IR prints what such a folder would hold: checked the same way.
run "$THUNDER_GEN" shift0.json --emit cuda
check emit-cuda-refused rc 1; check emit-cuda-words has err.txt "emitted.cu code line.*(in [a-z_]*shift0_"
run "$THUNDER_GEN" shift0.json --emit kernel-ir
check emit-kernel-ir-refused rc 1; check emit-kernel-ir-words has err.txt "kernel-ir.kir code line.*(in [a-z_]*shift0_"
# The second probe runs beside the first: its -v lines come after the first's, and the stage
# listings of --dump-dir are the first probe's (the folder's).
run "$THUNDER_GEN" "$root/examples/symbolic/symbolic_block.json" -o probes-v -v --dump-dir probe-dumps
check probes-v-generated rc 0
check probes-v-second-run-logged has err.txt "at the second probe's sizes, beside it:"
check probes-v-compared has err.txt "the code is the same at both probes"
"$THUNDER_GEN" "$root/examples/symbolic/symbolic_block.json" --emit autograd 2>/dev/null | grep "specialized at" >first-probe.txt
check probes-dumps-first-probe [ -s first-probe.txt -a "$(grep "specialized at" probe-dumps/05-autograd.txt)" = "$(cat first-probe.txt)" ]
run "$THUNDER_GEN" "$root/examples/symbolic/symbolic_block.json" --emit kernel-ir
check emit-kernel-ir-generic rc 0; check emit-kernel-ir-workspace-expression has out.txt "^workspace: [0-9]*\*B\*T"
# Shapes the same at both probes and not at every size (min(T, 64) and T, both 3 and 10, and the
# first probe cannot move past 64 by T's steps of 7 within 65): kernels share a domain only when
# it is the same at every size, so each softmax has a row kernel of its own (one kernel for both
# was refused, naming them, until 2026-12-06), right at T = 65 as below it (against LibTorch: the
# folders specialised to a size fuse the two, and sum a row in another order).
cat >coincide.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "dedup", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 65}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32"},
            {"name": "z", "shape": ["B", "min(T, 64)"], "dtype": "f32"}],
 "ops": [{"op": "torch.softmax", "args": ["x", -1], "out": [{"name": "y1", "shape": ["B", "T"], "dtype": "f32"}]},
         {"op": "torch.softmax", "args": ["z", -1], "out": [{"name": "y2", "shape": ["B", "min(T, 64)"], "dtype": "f32"}]}],
 "outputs": ["y1", "y2"]}
EOF
against=libtorch every_size coincide coincide.json B=1,T=1 B=3,T=10 B=2,T=64 B=5,T=65
check coinciding-shapes-two-kernels [ "$(grep -c '^extern "C" __global__' coincide/forward.cu)" -ge 2 ]
# A first probe where a size the decomposition makes would coincide with another (a stride-4
# slice's (T + 3)//4 and its convolution's padded (T + 3)//8 + 3, both 1 or both 5 where T moves by
# its steps) is drawn elsewhere in range, so the folder is generated (it matched LibTorch at T = 1,
# 7 and 33 by hand).
cat >drawn.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "drawn", "symbols": {"B": {"min": 1, "max": 3}, "T": {"min": 1, "max": 33}},
 "inputs": [{"name": "x", "shape": ["B", 6, "T"], "dtype": "f32", "requires_grad": true}, {"name": "w", "shape": [6, 6, 2], "dtype": "f32", "requires_grad": true}],
 "ops": [{"op": "prims.slice_prim", "args": ["x", [0, 0, 0], [{"size": "B"}, 6, {"size": "T"}], [1, 1, 4]], "out": [{"name": "y0", "shape": ["B", 6, "(T - 1)//4 + 1"], "dtype": "f32"}]},
         {"op": "torch.sin", "args": ["y0"], "out": [{"name": "z0", "shape": ["B", 6, "(T - 1)//4 + 1"], "dtype": "f32"}]},
         {"op": "torch.nn.functional.conv1d", "args": ["z0", "w", null, 2, 4, 3, 1], "out": [{"name": "y1", "shape": ["B", 6, "((T - 1)//4 + 5)//2 + 1"], "dtype": "f32"}]}],
 "outputs": ["y1"]}
EOF
run "$THUNDER_GEN" drawn.json -o drawn
check drawn-first-probe-generated rc 0
# A size the same at the first two probes (T//16 + 1 at T = 3 and 10) moves the second probe, so
# that a number computed from it would differ; here none is: the mean divides by the size
# parameter sz_T_d_d16_p1, and the folder matches LibTorch where it is 1, 2 and 5.
cat >flat.json <<'EOF'
{"format": "thunder-gen-trace", "version": 1, "name": "meanc", "symbols": {"B": {"min": 1, "max": 8}, "T": {"min": 1, "max": 64}},
 "inputs": [{"name": "x", "shape": ["B", "T"], "dtype": "f32"},
            {"name": "z", "shape": ["B", "T//16 + 1"], "dtype": "f32"}],
 "ops": [{"op": "torch.mean", "args": ["z", -1], "out": [{"name": "y", "shape": ["B"], "dtype": "f32"}]},
         {"op": "torch.exp", "args": ["x"], "out": [{"name": "y2", "shape": ["B", "T"], "dtype": "f32"}]}],
 "outputs": ["y", "y2"]}
EOF
"$THUNDER_GEN" flat.json -o flat 2>flat.err && "$here/build_emu_harness.sh" flat 2>>flat.err
check flat-size-generated grep -q "static_cast<float>(sz_T_d_d16_p1)" flat/forward.cu
checked=()
for sizes in B=2,T=3 B=7,T=17 B=8,T=64; do
  flat/harness --quiet --sizes "$sizes" --outputs "out-flat-$sizes" 2>>flat.err
  queue_check flat "$sizes" "out-flat-$sizes" $?
done
matches_libtorch flat flat.json "${checked[@]}"
# A size the same at the first probe and at every step of T's (T//64 + 1, 1 below T = 64): the
# second probe takes T's largest size, where it is 2 (refused before that; the folder matched
# LibTorch at T = 1, 63 and 64 by hand).
sed 's|"T//16 + 1"|"T//64 + 1"|' flat.json >flatter.json
run "$THUNDER_GEN" flatter.json -o flatter
check flatter-size-generated rc 0; check flatter-size-parameter grep -q "static_cast<float>(sz_T_d_d64_p1)" flatter/forward.cu

# A size that may be 0 in a matrix product: refused, naming it.
sed 's/"B": {"min": 1/"B": {"min": 0/' "$root/examples/symbolic/symbolic_block.json" >min0.json
run "$THUNDER_GEN" min0.json -o refused
check zero-size-refused rc 1; check zero-size-words has err.txt "the matrix product computing h has a size, B\*T, that is 0 at sizes the symbols allow"
finish
