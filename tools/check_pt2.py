#!/usr/bin/env python3
"""The torch.export front end end to end against PyTorch eager: export a corpus module with
torch.export (the default training IR, or Core ATen after run_decompositions() with --core), save
the PT2 archive, generate it with thunder-gen, run the generated forward and backward under host
emulation, and compare every output and every gradient (parameters by FQN, user inputs) with the
same module run by PyTorch eager on the same inputs. For a model the Thunder path also takes, the
default export's plan must save no more bytes and launch no more kernels than the Thunder trace's.

    python3 tools/check_pt2.py                          # every model of tools/corpus.py (MODELS and
                                                        # EXPORT_ONLY, which Thunder cannot capture), both forms
    python3 tools/check_pt2.py --only llama_block --form core --work /tmp/pt2check

Inputs are the module's own parameters and the model's example inputs, written as .npy files named
by the archive's placeholders (the generated manifest names each one's role and FQN); cotangents
are drawn here. Dropout draws from the generated code's Philox streams, which eager replays as
tools/check_against_torch.py does. Tolerances and the bf16-autocast accuracy rule are that tool's.
Prints one line per compared tensor and a summary line per model; exits 1 on any mismatch.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

import thunder_gen

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import corpus  # noqa: E402
import torch_reference  # noqa: E402
from check_against_torch import DropoutReplay, f64_reference, run  # noqa: E402
from check_report import compare_results, run_each  # noqa: E402
from thunder_export import dtype_name  # noqa: E402
from thunder_gen_binary import find_thunder_gen  # noqa: E402

FORMS = ("training", "core")


def export(model, form, path):
    """Saves the model's torch.export program (after run_decompositions() for "core") with
    thunder_gen.export, which refuses custom autograd.Functions (torch.export drops their backward)."""
    module, args = model.fn(), model.inputs()
    thunder_gen.export(module, args, path=path, decompose=form == "core")
    return module, args


def write_inputs(manifest, module, args, folder):
    """The harness's inputs by placeholder: parameters and buffers from the module by FQN, user
    inputs in order. Returns {placeholder: tensor} (the very tensors eager runs on)."""
    folder.mkdir(parents=True, exist_ok=True)
    user = iter(args)
    tensors = {}
    for decl in manifest["inputs"]:
        role = decl.get("role")
        if role is None:  # the generator's own inputs (Philox seed and offset): the harness draws them
            continue
        if role == "user_input":
            t = next(user)
        elif role == "parameter":
            t = module.get_parameter(decl["fqn"])
        else:
            t = module.get_buffer(decl["fqn"])
        tensors[decl["name"]] = t
        torch_reference.save_npy(folder / f"{decl['name']}.npy", t.detach(), decl["dtype"])
    return tensors


def against_thunder_path(model, form, manifest, binary, work, log, out):
    """The plan of the model's Thunder trace (examples/corpus/<model>.json, when it has one) against
    the archive's: the default export must save no more bytes and launch no more kernels (returns
    1 if it does); Core ATen's numbers are printed (its decomposed attention launches
    more kernels today: docs/pt2.md)."""
    trace = ROOT / "examples" / "corpus" / f"{model.name}.json"
    if not trace.exists():
        return 0
    folder = work / "thunder"
    run([binary, trace, "-o", folder, "--force"], log)
    thunder = json.loads((folder / "manifest.json").read_text())
    ours = (manifest["saved_bytes"], len(manifest["kernels"]))
    theirs = (thunder["saved_bytes"], len(thunder["kernels"]))
    worse = ours[0] > theirs[0] or ours[1] > theirs[1]
    verdict = "ok" if not worse else ("MORE THAN THE THUNDER PATH" if form == "training" else "more (not yet held to it)")
    out.write(f"{model.name} ({form}): saves {ours[0]} bytes in {ours[1]} kernels; the Thunder trace {theirs[0]} in {theirs[1]}: {verdict}\n")
    return 1 if worse and form == "training" else 0


def check_model(model, form, work, binary, out):
    work.mkdir(parents=True, exist_ok=True)
    archive = work / f"{model.name}.pt2"
    start = time.time()
    module, args = export(model, form, archive)
    log = open(work / "log.txt", "w")
    folder = work / "out"
    run([binary, archive, "-o", folder, "--force"], log)
    run([ROOT / "tests" / "build_emu_harness.sh", folder, "unoptimized"], log)
    manifest = json.loads((folder / "manifest.json").read_text())
    failures = against_thunder_path(model, form, manifest, binary, work, log, out)
    inputs = work / "inputs"
    tensors = write_inputs(manifest, module, args, inputs)
    g = torch.Generator().manual_seed(2)
    cotangents = []
    for decl in manifest["outputs"]:
        c = torch.randn(decl["shape"], generator=g).to(torch_reference.storage_dtype(decl["dtype"]))
        torch_reference.save_npy(inputs / f"cotangent_{decl['name']}.npy", c, decl["dtype"])
        cotangents.append(c)
    results = work / "results"
    results.mkdir(exist_ok=True)
    run([folder / "harness", "--inputs", inputs, "--outputs", results, "--repeat", "1", "--quiet"], log)
    out.write(f"{model.name} ({form}): export and generate and build {time.time() - start:.1f} s\n")

    leaves = {name: t for name, t in tensors.items() if next(d for d in manifest["inputs"] if d["name"] == name)["requires_grad"]}
    for t in leaves.values():
        t.requires_grad_(True)
        t.grad = None
    seed = int(np.load(results / "philox_seed.npy")) if (results / "philox_seed.npy").exists() else 0
    offset = int(np.load(results / "philox_offset.npy")) if (results / "philox_offset.npy").exists() else 0
    replay = DropoutReplay(seed, offset)
    with replay.active():
        outputs = module(*args)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    torch.autograd.backward(outputs, cotangents[:len(outputs)])
    # The buffers the step updated (BatchNorm's running statistics): the buffer_update outputs,
    # after the user outputs.
    outputs += [module.get_buffer(d["fqn"]).detach() for d in manifest["outputs"] if d.get("role") == "buffer_update"]

    for note, ok in replay.notes:
        out.write(f"{model.name}: {note}: {'ok' if ok else 'NOT WITHIN 5 SD OF 1 - p'}\n")
        failures += not ok
    names = [d["name"] for d in manifest["outputs"]]
    expected = dict(zip(names, outputs))
    expected.update({f"grad_{n}": t.grad for n, t in leaves.items()})
    exact = f64_reference(module, args, leaves, cotangents, names) if model.autocast else {}
    failures += compare_results(out, model, expected, results, exact, dtype_name)
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="a model of tools/corpus.py (repeatable)")
    parser.add_argument("--form", choices=FORMS, action="append", help="training (the default export) or core (run_decompositions())")
    parser.add_argument("--refused", action="append", default=[], metavar="MODEL:FORM=TEXT",
                        help="a case that must fail with TEXT in its error (a known refusal; repeatable)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/thunder-gen-check-pt2"))
    args = parser.parse_args(argv)
    models = [m for m in corpus.MODELS + corpus.EXPORT_ONLY if not args.only or m.name in args.only]
    binary = find_thunder_gen()
    refused = dict(r.split("=", 1) for r in args.refused)
    by_name = {f"{m.name} ({f})": (m, f) for m in models for f in (args.form or FORMS)}

    def check(name):
        model, form = by_name[name]
        work = args.work / f"{model.name}_{form}"
        expected = refused.get(f"{model.name}:{form}")
        if expected is None:
            return check_model(model, form, work, binary, sys.stdout)
        try:
            check_model(model, form, work, binary, sys.stdout)
        except Exception as e:  # noqa: BLE001 (the refusal's own message is the check)
            ok = expected in str(e)
            print(f"{name}: refused{'' if ok else ', but not with ' + repr(expected)}: {str(e).strip().splitlines()[-1][:300]}")
            return 0 if ok else 1
        print(f"{name}: expected a refusal containing {expected!r}, but it ran")
        return 1

    expected_refusals = [name for name, (m, f) in by_name.items() if f"{m.name}:{f}" in refused]
    failed = run_each([name for name in by_name if name not in expected_refusals], check)
    failed += sum(check(name) for name in expected_refusals)
    print(f"{len(by_name) - len(expected_refusals)} cases against eager, {len(expected_refusals)} expected refusals: "
          f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
