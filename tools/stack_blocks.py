#!/usr/bin/env python3
"""Stacks copies of a one-block trace into a deep model, for the generator's speed benchmark.

    python3 tools/stack_blocks.py examples/corpus/llama_block.json 64 out.json
    python3 tools/stack_blocks.py tools/bench/symbolic_residual_block.json 400 out.json [--at B=8,T=40]

A symbolic block's stack keeps its symbols; with --at, every size is evaluated there instead and
the stack is the static trace of the same ops (what the symbolic one, specialised there, is
compared with).

Block k reads block k-1's output where the original reads its first input; every other tensor
input that requires grad (the block's parameters) gets its own copy per block, renamed with a
_b<k> suffix; inputs that do not (rotary tables, targets) are shared by all blocks. Values inside
custom-function bodies (`fwd`, `bwd`) keep their names: those bodies have scopes of their own.
Standard library only.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "thunder_gen"))
from sizes import evaluate  # noqa: E402 (thunder_gen/sizes.py: the standard library only, no torch)


def rename_arg(a, names):
    if isinstance(a, str):
        return names.get(a, a)
    if isinstance(a, list):
        return [rename_arg(x, names) for x in a]
    return a  # typed literals and numbers


def rename_op(op, names, suffix):
    op = dict(op)
    for decl in op["out"]:
        names.setdefault(decl["name"], decl["name"] + suffix)
    if "args" in op:
        op["args"] = rename_arg(op["args"], names)
    if "kwargs" in op:
        op["kwargs"] = {k: rename_arg(v, names) for k, v in op["kwargs"].items()}
    if "sub" in op:
        op["sub"] = [rename_op(s, names, suffix) for s in op["sub"]]
    op["out"] = [dict(d, name=names[d["name"]]) for d in op["out"]]
    return op


def count_ops(ops):
    return sum(1 + count_ops(op.get("sub", [])) for op in ops)


def stack(block, copies):
    first = block["inputs"][0]["name"]
    (out_name,) = block["outputs"]
    shared = [d for d in block["inputs"][1:] if not d.get("requires_grad")]
    doc = {k: block[k] for k in ("format", "version", "device", "symbols") if k in block}
    doc["name"] = f"{block['name']}_x{copies}"
    doc["source"] = f"tools/stack_blocks.py: {copies} copies of {block['name']}"
    doc["inputs"] = [block["inputs"][0]] + shared
    doc["ops"] = []
    carried = first
    for k in range(copies):
        suffix = f"_b{k}"
        names = {first: carried}
        names.update({d["name"]: d["name"] for d in shared})
        for d in block["inputs"][1:]:
            if d.get("requires_grad"):
                names[d["name"]] = d["name"] + suffix
                doc["inputs"].append(dict(d, name=d["name"] + suffix))
        doc["ops"] += [rename_op(op, names, suffix) for op in block["ops"]]
        carried = names[out_name]
    doc["outputs"] = [carried]
    return doc


def at_sizes(value, sizes):
    """`value` (a trace or part of one) with every size expression evaluated at `sizes`: shape
    entries that are strings and {"size": "..."} arguments."""
    if isinstance(value, dict):
        if set(value) == {"size"} and isinstance(value["size"], str):
            return evaluate(value["size"], sizes)
        out = {k: at_sizes(v, sizes) for k, v in value.items() if k != "symbols"}
        if isinstance(value.get("shape"), list):
            out["shape"] = [evaluate(d, sizes) if isinstance(d, str) else d for d in value["shape"]]
        return out
    if isinstance(value, list):
        return [at_sizes(v, sizes) for v in value]
    return value


def main(argv):
    sizes = None
    if len(argv) == 6 and argv[4] == "--at":
        sizes = {k: int(v) for k, v in (item.split("=") for item in argv[5].split(","))}
        argv = argv[:4]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    block = json.load(open(argv[1]))
    doc = stack(block, int(argv[2]))
    if sizes is not None:
        doc = at_sizes(doc, sizes)
    with open(argv[3], "w") as f:
        json.dump(doc, f)
    print(f"{argv[3]}: {len(doc['ops'])} top-level ops, {count_ops(doc['ops'])} with their decompositions, "
          f"{len(doc['inputs'])} inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
