#!/usr/bin/env python3
"""End to end against PyTorch eager: export a module with Thunder, generate it with thunder-gen,
run the generated forward and backward under host emulation, and compare every output and every
input gradient with the same module run by PyTorch eager on the same inputs.

    python3 tools/check_against_torch.py                      # every model of tools/corpus.py
    python3 tools/check_against_torch.py --only llama_block --work /tmp/check
    python3 tools/check_against_torch.py --committed examples/corpus --harnesses build/tests/corpus   # as ctest

Per model: tools/thunder_export.py writes the trace and its inputs (the module's parameters as
initialised, its example inputs) and the cotangents drawn here as .npy; thunder-gen generates
the folder; tests/build_emu_harness.sh builds the harness (g++, host emulation); the harness reads
the .npy files and writes the outputs and gradients it computed. PyTorch eager then runs the
module forward and backward on the same tensors and cotangents. With --committed DIR, the fresh
export must also equal DIR/<model>.json and DIR/<model>.inputs/ byte for byte (one export serves
both checks: Thunder's interpreter takes most of the time); with --harnesses DIR, the harness
already built in DIR/<model>.emu/out (the suite's corpus.<model>.emu, AddressSanitizer) runs when
that folder holds every file thunder-gen generates here, instead of a new build.

Dropout: the generated code draws from its own counter-based Philox generator, not PyTorch's, so
eager cannot draw the same masks. The eager run replays them instead: F.dropout and the dropout of
F.scaled_dot_product_attention are replaced, for the run, by versions that take their keep-mask
from the same Philox stream the generated code gives that call (streams are numbered in trace
order, which is call order). Each replayed mask is also checked for dropout's defining property:
its kept fraction is within 5 standard deviations of 1 - p. (The replay and the f64 measure below
are the package's, python/thunder_gen/eager_check.py.)

Tolerances are the table of reference/compare.cpp (tools/torch_reference.py); a model under bf16
autocast is compared at bf16's, and a tensor that differs beyond it must be as accurate as eager's:
both are measured against the module computed in f64 without autocast (accuracy_line). Prints one
line per compared tensor and a summary line; exits 1 on any mismatch or failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import corpus  # noqa: E402
import thunder_export  # noqa: E402
import torch_reference  # noqa: E402
from check_report import compare_results, run_each  # noqa: E402
from thunder_gen_binary import find_thunder_gen  # noqa: E402
from thunder_gen import eager_check  # noqa: E402  (this checkout's python/, which thunder_gen_binary puts first)
from thunder_gen.eager_check import ACCURACY_MARGIN, DropoutReplay, accuracy_line, philox_uniform  # noqa: E402,F401

def run(cmd, log):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write(f"$ {' '.join(map(str, cmd))}\n{r.stdout}")
    if r.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} exited {r.returncode}:\n{r.stdout[-3000:]}")
    return r.stdout


def generated_files(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())


def generate_and_build(trace, thunder_gen, log, prebuilt):
    """Generates `trace` into out/ beside it and returns its emulated harness: the one already
    built in `prebuilt` (the suite's corpus.<model>.emu folder, an AddressSanitizer build) when
    that folder holds every generated file byte for byte, else one built here (-O2)."""
    out = trace.parent / "out"
    if out.exists():
        shutil.rmtree(out)
    run([thunder_gen, trace, "-o", out], log)
    if prebuilt is not None and (prebuilt / "harness").is_file() and all(
            (prebuilt / f).is_file() and (prebuilt / f).read_bytes() == (out / f).read_bytes() for f in generated_files(out)):
        log.write(f"the generated folder equals {prebuilt}: its harness runs\n")
        return prebuilt / "harness"
    run([ROOT / "tests" / "build_emu_harness.sh", out, "fast"], log)
    return out / "harness"


def check_model(model, work, thunder_gen, out, committed=None, prebuilt=None):
    """Returns the number of failed comparisons (outputs, gradients, mask properties, and with
    `committed`, a folder of exported traces, the fresh export against the one there)."""
    work.mkdir(parents=True, exist_ok=True)
    module, args = model.fn(), model.inputs()
    start = time.time()
    doc, tensors = thunder_export.export_with_inputs(module, *args, name=model.name)
    exported = time.time()
    trace = work / f"{model.name}.json"  # generated files name their trace: as corpus.<model>.emu generates it
    trace.write_text(thunder_export.dumps(doc))
    inputs = work / "inputs"
    if inputs.exists():
        shutil.rmtree(inputs)
    thunder_export.save_inputs(tensors, inputs)
    stale = 0
    if committed is not None:
        differs = thunder_export.committed_differences(trace, inputs, Path(committed), model.name)
        out.write(f"{model.name}: the fresh export {'DIFFERS from' if differs else 'equals'} {committed}/{model.name}.json and "
                  f"its inputs{': ' + ', '.join(differs) if differs else ''}\n")
        stale = len(differs)
    g = torch.Generator().manual_seed(2)
    cotangents = {}
    decls = {d["name"]: d for d in doc["inputs"]}
    for name in doc["outputs"]:
        out_decl = next(o for op in doc["ops"] for o in op["out"] if o["name"] == name)
        # Rounded to the output's dtype (bf16 under autocast), as the harness reads it.
        cotangents[name] = torch.randn(out_decl["shape"], generator=g).to(torch_reference.storage_dtype(out_decl["dtype"]))
        torch_reference.save_npy(inputs / f"cotangent_{name}.npy", cotangents[name], out_decl["dtype"])

    log = open(work / "log.txt", "w")
    harness = generate_and_build(trace, thunder_gen, log, Path(prebuilt) / f"{model.name}.emu" / "out" if prebuilt else None)
    built = time.time()
    results = work / "results"
    results.mkdir(exist_ok=True)
    run([harness, "--inputs", inputs, "--outputs", results, "--repeat", "1", "--quiet"], log)
    out.write(f"{model.name}: export {exported - start:.1f} s, generate and build {built - exported:.1f} s"
              f"{' (the harness of ' + str(harness.parent) + ')' if harness.parent != trace.parent / 'out' else ''}\n")

    # Eager on the very tensors the trace was bound to (the module's own parameters).
    leaves = {}
    for name, t in tensors.items():
        if decls[name].get("requires_grad"):
            leaves[name] = t
            t.requires_grad_(True)
            t.grad = None
    seed_file, offset_file = results / "philox_seed.npy", results / "philox_offset.npy"
    seed = int(np.load(seed_file)) if seed_file.exists() else 0
    offset = int(np.load(offset_file)) if offset_file.exists() else 0
    replay = DropoutReplay(seed, offset)
    with replay.active():
        outputs = module(*args)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    torch.autograd.backward(outputs, [cotangents[n] for n in doc["outputs"]])

    failures = stale
    for note, ok in replay.notes:
        out.write(f"{model.name}: {note}: {'ok' if ok else 'NOT WITHIN 5 SD OF 1 - p'}\n")
        failures += not ok
    expected = dict(zip(doc["outputs"], outputs))
    expected.update({f"grad_{n}": t.grad for n, t in leaves.items()})
    exact = f64_reference(module, args, leaves, [cotangents[n] for n in doc["outputs"]], doc["outputs"]) if model.autocast else {}
    failures += compare_results(out, model, expected, results, exact, thunder_export.dtype_name)
    return failures


def f64_reference(module, args, leaves, cotangents, output_names):
    """eager_check.f64_reference of the module inside a corpus model's autocast wrapper (or the
    module itself): its outputs and input gradients in f64, keyed as check_model's `expected`."""
    inner = module.inner if isinstance(module, corpus.BF16Autocast) else module
    return eager_check.f64_reference(inner, args, leaves, cotangents, output_names)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="check only these corpus models")
    parser.add_argument("--work", default=str(ROOT / "build" / "check_against_torch"), help="scratch folder")
    parser.add_argument("--thunder-gen", help="the generator (default: $THUNDER_GEN, else build/thunder-gen, else PATH's)")
    parser.add_argument("--committed", metavar="DIR", help="also check that each fresh export equals DIR/<model>.json and "
                                                           "DIR/<model>.inputs/ byte for byte (examples/corpus: the suite)")
    parser.add_argument("--harnesses", metavar="DIR", help="run DIR/<model>.emu/out/harness where that folder holds what "
                                                           "thunder-gen generates here (the suite's corpus.<model>.emu), "
                                                           "instead of building one")
    a = parser.parse_args(argv)
    a.thunder_gen = a.thunder_gen or find_thunder_gen()
    models = {m.name: m for m in corpus.MODELS if not a.only or m.name in a.only}
    if a.only and len(models) != len(a.only):
        parser.error(f"unknown model among {a.only}; the corpus has {[m.name for m in corpus.MODELS]}")
    os.environ.setdefault("THUNDER_GEN", a.thunder_gen)  # the exporter's refusals: this generator's rules
    failed_models = run_each(models, lambda name: check_model(models[name], Path(a.work) / name, a.thunder_gen, sys.stdout,
                                                               a.committed, a.harnesses))
    print(f"{len(models) - failed_models} passed, {failed_models} failed")
    return 1 if failed_models else 0


if __name__ == "__main__":
    sys.exit(main())
