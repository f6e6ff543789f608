#!/usr/bin/env bash
# deep_traces.sh THUNDER_GEN WORK: traces whose depth or width grows without bound get an answer:
# a chain of 10,000 elementwise ops (one kernel; inference and training), and one of exps and
# transposes taking turns, generate, where the recursive walks of the fuser and the emitter
# overflowed the stack; a chain of 1,000 reshapes generates in 2 GB, where the fuser's index code
# doubled with every reshape (23 took 2.2 GB, 1,000 over 23 GB); one output listed 100,000
# times generates, where autograd's, the fuser's and the harness's naming were quadratic (no
# answer in 5 minutes); and a run out of memory (ulimit -v) is exit code 1 with a message, where
# mimalloc aborted. The time limits are generous bounds against hangs, not performance targets.
set -u
gen=$1 work=$2
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 2
source "$root/tests/checks.sh"
python3 - <<'PY'
import json
def chain(n, grad, name):
    ops, prev = [], "x"
    for k in range(n):
        ops.append({"op": "prims.neg" if k % 2 else "prims.sin", "args": [prev], "out": [{"name": f"t{k}", "shape": [4], "dtype": "f32"}]})
        prev = f"t{k}"
    trace = {"format": "thunder-gen-trace", "version": 1, "name": "chain", "ops": ops, "outputs": [prev],
             "inputs": [{"name": "x", "shape": [4], "dtype": "f32", "requires_grad": grad}]}
    json.dump(trace, open(name, "w"))
def mixed_chain(n, name):  # elementwise ops and transposes taking turns: the shape ops map the index
    ops, prev = [], "x"
    for k in range(n):
        op = {"op": "prims.transpose", "args": [prev, [1, 0]]} if k % 2 else {"op": "prims.exp", "args": [prev]}
        ops.append(dict(op, out=[{"name": f"t{k}", "shape": [4, 4], "dtype": "f32"}]))
        prev = f"t{k}"
    trace = {"format": "thunder-gen-trace", "version": 1, "name": "mixed", "ops": ops, "outputs": [prev],
             "inputs": [{"name": "x", "shape": [4, 4], "dtype": "f32", "requires_grad": True}]}
    json.dump(trace, open(name, "w"))
def reshape_chain(n, name):  # [4, 8] and [8, 4] taking turns: each index is the last one's, reshaped
    ops, prev = [], "x"
    for k in range(n):
        shape = [8, 4] if k % 2 == 0 else [4, 8]
        ops.append({"op": "prims.reshape", "args": [prev, shape], "out": [{"name": f"r{k}", "shape": shape, "dtype": "f32"}]})
        prev = f"r{k}"
    ops.append({"op": "prims.sin", "args": [prev], "out": [{"name": "y", "shape": [4, 8], "dtype": "f32"}]})
    trace = {"format": "thunder-gen-trace", "version": 1, "name": "reshapes", "ops": ops, "outputs": ["y"],
             "inputs": [{"name": "x", "shape": [4, 8], "dtype": "f32", "requires_grad": True}]}
    json.dump(trace, open(name, "w"))
chain(10000, False, "chain10k.json")
reshape_chain(1000, "reshapes1k.json")
mixed_chain(10000, "mixed10k.json")
chain(10000, True, "chain10k_train.json")
chain(100000, True, "chain100k_train.json")
many = {"format": "thunder-gen-trace", "version": 1, "name": "many", "outputs": ["y"] * 100000,
        "inputs": [{"name": "x", "shape": [4], "dtype": "f32", "requires_grad": True}],
        "ops": [{"op": "prims.exp", "args": ["x"], "out": [{"name": "y", "shape": [4], "dtype": "f32"}]}]}
json.dump(many, open("many_outputs.json", "w"))
PY
timeout 120 "$gen" chain10k.json -o chain10k 2>err.txt;             check chain-10k [ $? = 0 ]
check chain-10k-one-kernel grep -q '^// 1 kernel; ' chain10k/forward.cu
timeout 120 "$gen" chain10k_train.json -o chain10k_train 2>err.txt; check chain-10k-training [ $? = 0 ]
timeout 120 "$gen" mixed10k.json -o mixed10k 2>err.txt;            check mixed-chain-10k [ $? = 0 ]
(ulimit -v 2000000; timeout 120 "$gen" reshapes1k.json -o reshapes1k 2>err.txt); check reshape-chain-1k [ $? = 0 ]
timeout 120 "$gen" many_outputs.json -o many 2>err.txt;            check output-listed-100k-times [ $? = 0 ]
check cotangents-named-apart [ "$(grep -c '"cotangent_file"' many/manifest.json)" = 100000 ]
(ulimit -v 400000; timeout 120 "$gen" chain100k_train.json -o oom 2>err.txt); rc=$?
check out-of-memory-rc [ $rc = 1 ]
check out-of-memory-text grep -q "^thunder-gen: error: out of memory" err.txt
check out-of-memory-no-folder [ ! -e oom ]
finish
