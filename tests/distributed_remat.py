#!/usr/bin/env python3
"""distributed_remat.py THUNDER_GEN WORK: FSDP's gathered parameters and the save / recompute
policies on the gather (examples/distributed/cross_entropy_head_fsdp.json, world size 2).

- Default plan: no gathered parameter is saved (nothing the synchronizes define is in
  saved_for_backward); the backward gathers each again, so the manifest's communication has an
  all-gather per parameter in the backward too.
- --tag @t70=save (the lm_head weight's synchronize): the gathered weight is saved (its bytes in
  saved_bytes and saved_activation_bytes), and the backward's communication loses that gather's
  bytes; the step's total falls by exactly them.
- --tag thunder.distributed.prims.synchronize=save: every gathered parameter saved, no gather in
  the backward.
- explain says the same; the backward's collectives run on a second stream, each started when its
  gradient is ready, kernels running meanwhile.
Exits 1 on the first failed check.
"""
import json
import subprocess
import sys
from pathlib import Path

from ptx_check import joined  # (tests/: a call the generator wrapped one argument a line, joined back)

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "examples" / "distributed" / "cross_entropy_head_fsdp.json"
GATHERED = {"t70": 96 * 64 * 4, "t71": 64 * 4, "t72": 64 * 4}  # the synchronizes' results: bytes as gathered


def generate(gen, work, name, *flags):
    out = work / name
    subprocess.run([gen, TRACE, "-o", out, "--force", *flags], check=True)
    return json.loads((out / "manifest.json").read_text())


def gathers(manifest, pass_):
    return {c["value"]: c["bytes"] for c in manifest["communication"]["collectives"] if c["pass"] == pass_ and c["op"] == "all_gather"}


def entry_names(manifest):
    return {s["name"] for s in manifest["saved_for_backward"]}


def check(ok, what):
    print(f"{'ok' if ok else 'FAIL'}: {what}")
    if not ok:
        sys.exit(1)


def check_overlap(cuda):
    """The backward's collectives run on the second stream, each started as soon as its gradient
    is computed (the gradients after it are computed meanwhile) and joined before returning."""
    body = cuda[cuda.index('extern "C" int '):]
    lines = [line.strip() for line in joined(body.splitlines())]  # (a wrapped call as one line)
    calls = [i for i, line in enumerate(lines) if line.startswith(("TG_TRY(tg::reduce_scatter(", "TG_TRY(tg::all_gather(", "TG_TRY(tg::all_reduce("))]
    check(calls and all(lines[i].endswith("overlap.side()));") for i in calls), "every collective runs on the side stream")
    first_scatter = next(i for i in calls if "reduce_scatter" in lines[i])
    # (not counting pointwise kernels: without the scheduling, those dividing the later gradients
    # by the world size follow it; with it, the LayerNorm's backward row kernels do)
    work_after = [line for line in lines[first_scatter + 1:]
                  if line.startswith("TG_TRY(tg::matmul(") or (line.startswith("TG_TRY(TG_LAUNCH(") and "_pointwise_" not in line)]
    check(len(work_after) > 0, f"gradient kernels run while the first gradient is reduce-scattered ({len(work_after)} after it)")
    starts = {line for line in lines if line.startswith("TG_TRY(overlap.start(")}
    joins = {line.replace("join", "start") for line in lines if line.startswith("TG_TRY(overlap.join(")}
    check(starts == joins and len(starts) == len(calls), f"each of the {len(calls)} collectives is joined")


def main(gen, work):
    work.mkdir(parents=True, exist_ok=True)
    # The time objective (the default) holds no gathered parameter either; what it gathers again
    # depends on what else it saves (saving the LayerNorm's output, it needs no LayerNorm weight).
    timed = generate(gen, work, "time")
    check(not {s["name"] for s in timed["saved_for_backward"]} & set(GATHERED), "in time, the plan saves no gathered parameter")
    check(gathers(timed, "forward") == GATHERED and set(gathers(timed, "backward")) <= set(GATHERED), "in time, each gather is a parameter's")
    # The rest: the plan by bytes, which needs every parameter again.
    default = generate(gen, work, "default", "--remat-objective", "bytes")
    saved = {s["name"] for s in default["saved_for_backward"]}
    check(not saved & set(GATHERED), f"the default plan saves no gathered parameter (saved: {sorted(saved)})")
    check(gathers(default, "forward") == GATHERED, "the forward gathers each parameter once")
    check(gathers(default, "backward") == GATHERED, "the backward gathers each parameter again")
    comm = default["communication"]
    check(comm["world_size"] == 2 and comm["bytes_per_step"] == comm["forward_bytes"] + comm["backward_bytes"], "communication totals add up")
    reduce_scatters = [c for c in comm["collectives"] if c["op"] == "reduce_scatter"]
    check(len(reduce_scatters) == 3 and all(c["pass"] == "backward" for c in reduce_scatters), "a reduce-scatter per gradient, in the backward")

    one = generate(gen, work, "save_t70", "--remat-objective", "bytes", "--tag", "@t70=save")
    entry = {s["name"]: s for s in one["saved_for_backward"]}.get("t70")
    check(entry is not None and entry["bytes"] == GATHERED["t70"] and entry["kind"] == "intermediate", "--tag @t70=save saves the gathered weight")
    check(one["saved_activation_bytes"] - default["saved_activation_bytes"] == GATHERED["t70"],
          "saved_activation_bytes grow by the gathered weight's bytes")
    # (the shard, an input passed again, is no longer needed: the backward reads the gathered copy)
    check("t_lm_head_weight" not in entry_names(one) and one["saved_bytes"] - default["saved_bytes"] == GATHERED["t70"] - GATHERED["t70"] // 2,
          "saved_bytes grow by the gathered weight less its shard, which the backward no longer reads")
    check(gathers(one, "backward") == {k: v for k, v in GATHERED.items() if k != "t70"}, "the backward no longer gathers it")
    check(comm["bytes_per_step"] - one["communication"]["bytes_per_step"] == GATHERED["t70"], "a step communicates its bytes less")

    every = generate(gen, work, "save_all", "--remat-objective", "bytes", "--tag", "thunder.distributed.prims.synchronize=save")
    check(set(GATHERED) <= {s["name"] for s in every["saved_for_backward"]}, "a policy on the symbol saves every gathered parameter")
    check(gathers(every, "backward") == {}, "and the backward gathers nothing")

    check_overlap((work / "default" / "backward.cu").read_text())

    text = subprocess.run([gen, "explain", TRACE, "--remat-objective", "bytes", "--tag", "@t70=save"], check=True, capture_output=True, text=True).stdout
    check("tag save on thunder.distributed.prims.synchronize (--tag @t70=save)" in text, "explain gives the tag as the reason")
    check(f"communicated per step (per rank, NCCL's count of each call's size): {one['communication']['bytes_per_step']} bytes" in text,
          "explain's communication total is the manifest's")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
