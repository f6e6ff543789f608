"""`python -m thunder_gen.check model.pt2 [--module pkg.mod:factory]`: a PT2 archive's generated
training code against PyTorch eager, on the CPU (host emulation).

It generates the archive with thunder-gen, loads the folder (`thunder_gen.load(..., "cpu")`), and
runs it and eager on the archive's example inputs (`model.inputs/`, which `thunder_gen.export`
writes beside the archive: every placeholder's value, parameters included), with the same drawn
cotangents and, for dropout, eager replaying the generated code's Philox streams. Every output
and every gradient (parameters by FQN, user inputs by name) is compared at its dtype's tolerance
(`--tolerance bf16` to take bf16's for all; `--autocast` for a module under bf16 autocast: a
result beyond the tolerance passes when it is as accurate as eager's against the module in f64).

Eager is the module `factory()` returns (`--module`), its parameters and buffers set to the
archive's by FQN, or else the archive's own program (`torch.export.load(...).module()`).
Prints one line per tensor and a summary; exits 0 when all match, 1 when any differs, 2 when the
check cannot run (the message says why).
"""
from __future__ import annotations

import argparse
import copy
import importlib
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from .binary import find_thunder_gen
from .compare import compare
from .eager_check import DropoutReplay, accuracy_line
from .manifest import TORCH_DTYPES
from .npy import tensor_of
from .pt2 import inputs_folder


class CheckError(Exception):
    """The check cannot run: a missing inputs folder, a factory that is not one, thunder-gen failing."""


def load_input(path: Path, dtype: str) -> torch.Tensor:
    """A placeholder's .npy (bf16 as its '<u2' bits) as a tensor of the manifest's dtype."""
    if not path.exists():
        raise CheckError(f"{path}: missing; thunder_gen.export writes every placeholder's value beside the archive")
    array = np.load(path, allow_pickle=False)
    if dtype == "bf16" and array.dtype != np.dtype("<u2"):
        raise CheckError(f"{path}: holds {array.dtype.str}, the archive's bf16 input is stored as '<u2' bits")
    tensor = tensor_of(array, bf16=dtype == "bf16")
    if tensor.dtype != TORCH_DTYPES[dtype]:
        raise CheckError(f"{path}: holds {tensor.dtype}, the archive's input is {dtype}")
    return tensor


def reference_module(archive: Path, factory: str | None) -> torch.nn.Module:
    if factory is None:
        return torch.export.load(str(archive)).module()
    module_name, _, attr = factory.partition(":")
    if not attr:
        raise CheckError(f"--module {factory}: expected pkg.mod:factory")
    try:
        made = getattr(importlib.import_module(module_name), attr)()
    except Exception as e:  # the user's code: its failure is the answer, in one line
        raise CheckError(f"--module {factory}: {type(e).__name__}: {e}") from None
    if not isinstance(made, torch.nn.Module):
        raise CheckError(f"--module {factory}: returned {type(made).__name__}, not a torch.nn.Module")
    return made


def set_state(module: torch.nn.Module, inputs: list, values: dict) -> dict:
    """The archive's parameters and buffers copied into `module` by FQN; returns {placeholder:
    the module's tensor} for them."""
    tensors = {}
    with torch.no_grad():
        for decl in inputs:
            if decl.get("role") not in ("parameter", "buffer"):
                continue
            get = module.get_parameter if decl["role"] == "parameter" else module.get_buffer
            try:
                target = get(decl["fqn"])
            except AttributeError as e:
                raise CheckError(f"the module has no {decl['role']} {decl['fqn']!r}, which the archive has: {e}") from None
            if tuple(target.shape) != tuple(values[decl["name"]].shape):
                raise CheckError(f"{decl['role']} {decl['fqn']!r}: the module's shape {list(target.shape)}, "
                                 f"the archive's {list(values[decl['name']].shape)}")
            target.copy_(values[decl["name"]])
            tensors[decl["name"]] = target
    return tensors


def generate(archive: Path, folder: Path) -> dict:
    # (No --force: a folder that is not an earlier output of thunder-gen's is left alone.)
    result = subprocess.run([find_thunder_gen(), str(archive), "-o", str(folder)], capture_output=True, text=True)
    if result.returncode != 0:
        raise CheckError(result.stderr.strip() or f"thunder-gen exited {result.returncode}")
    return json.loads((folder / "manifest.json").read_text())


def backward(outputs: list, cotangents: list) -> None:
    """Backward from the outputs that need a gradient (an integer output, or one that depends on no
    input requiring grad, takes no cotangent)."""
    pairs = [(o, c.to(o.dtype)) for o, c in zip(outputs, cotangents) if isinstance(o, torch.Tensor) and o.requires_grad]
    if pairs:
        torch.autograd.backward([o for o, _ in pairs], [c for _, c in pairs])


def run_generated(folder: Path, manifest: dict, values: dict, cotangents: list, seed: int):
    """Outputs and {input name: gradient} of the generated code."""
    from .loader import load
    block = load(folder, device="cpu")
    args = []
    for decl in manifest["inputs"]:
        if decl.get("role") is None:  # philox_seed, philox_offset: passed by keyword
            continue
        args.append(values[decl["name"]].clone().requires_grad_(bool(decl.get("requires_grad"))))
    outputs = block(*args, philox_seed=seed, philox_offset=0) if block.random_state else block(*args)
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    backward(outputs, cotangents)
    names = [d["name"] for d in manifest["inputs"] if d.get("role") is not None]
    return outputs, {n: a.grad for n, a in zip(names, args) if a.grad is not None}


def run_eager(module, manifest: dict, values: dict, cotangents: list, seed: int):
    params = set_state(module, manifest["inputs"], values)
    user = []
    for decl in manifest["inputs"]:
        if decl.get("role") == "user_input":
            t = values[decl["name"]].clone().requires_grad_(bool(decl.get("requires_grad")))
            params[decl["name"]] = t
            user.append(t)
    for t in params.values():
        t.grad = None
    try:
        with DropoutReplay(seed, 0).active():
            outputs = module(*user)
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        backward(outputs, cotangents)
    except Exception as e:  # the user's module: its failure is the answer, in one line
        raise CheckError(f"the module failed on the archive's inputs: {type(e).__name__}: {e}") from None
    # The buffers the step updates (BatchNorm's running statistics), as the generated code's
    # buffer_update outputs, which follow the user outputs.
    for decl in manifest["outputs"]:
        if decl.get("role") == "buffer_update":
            try:
                outputs.append(module.get_buffer(decl["fqn"]).detach().clone())
            except AttributeError as e:
                raise CheckError(f"the module has no buffer {decl['fqn']!r}, which the archive updates: {e}") from None
    wanted = {d["name"] for d in manifest["inputs"] if d.get("requires_grad")}
    return outputs, {n: t.grad for n, t in params.items() if n in wanted}


def compared(label: str, got, want, tolerance: str | None) -> tuple[str, bool]:
    """One tensor against eager's: a line and whether it matches. A gradient one side does not
    compute is a zero gradient there (PyTorch leaves an unused parameter's .grad None)."""
    if got is None and want is None:
        return f"{label}: neither computes one: MISSING", False
    if got is None or want is None:
        present = want if got is None else got
        if isinstance(present, torch.Tensor) and label.startswith("grad of ") and not bool(present.any()):
            return f"{label}: zero ({'the generated code' if got is None else 'eager'} computes none): ok", True
        return f"{label}: {'the generated code' if got is None else 'eager'} computes none: MISSING", False
    if not isinstance(want, torch.Tensor):
        return f"{label}: eager returns {type(want).__name__}, not a tensor: MISMATCH", False
    dt = next((k for k, v in TORCH_DTYPES.items() if v == want.dtype), str(want.dtype))
    if got.dtype != want.dtype:
        return f"{label}: dtype {got.dtype}, eager's {want.dtype}: MISMATCH", False
    c = compare(got.detach(), want.detach(), tolerance or dt)
    return f"{label} {dt}{list(want.shape)}: {c.summary()}: {'ok' if c.ok else 'MISMATCH'}", c.ok


def report(manifest: dict, got, want, tolerance: str | None, out, exact=None) -> int:
    """One line per output and gradient; returns how many differ or are missing. With `exact`
    (the module's results in f64), a tensor beyond the tolerance passes when it is as accurate as
    eager's against them (eager_check.accuracy_line): bf16 autocast rounds differently, not worse."""
    labels = {d["name"]: d.get("fqn", d["name"]) for d in manifest["inputs"]}
    names = [d["name"] for d in manifest["outputs"]]
    exact_outputs, exact_grads = exact if exact else ([], {})
    outputs = itertools.zip_longest(names, got[0], want[0], exact_outputs)
    rows = [(name or f"eager's output {i}", g, w, e) for i, (name, g, w, e) in enumerate(outputs)]
    rows += [(f"grad of {labels[n]}", got[1].get(n), want[1].get(n), exact_grads.get(n)) for n in sorted(set(got[1]) | set(want[1]))]
    failures = 0
    for label, g, w, e in rows:
        line, ok = compared(label, g, w, tolerance)
        if not ok and isinstance(e, torch.Tensor) and isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and g.shape == w.shape:
            failures += accuracy_line(out, label, g.detach(), w, e)
            continue
        out.write(line + "\n")
        failures += not ok
    return failures


def run_exact(module, manifest: dict, values: dict, cotangents: list, seed: int):
    """The module's outputs and gradients in f64 (autocast leaves f64 alone), as run_eager's."""
    exact = copy.deepcopy(module).double()
    as_f64 = lambda t: t.double() if t.is_floating_point() else t  # noqa: E731
    return run_eager(exact, manifest, {k: as_f64(v) for k, v in values.items()}, [as_f64(c) for c in cotangents], seed)


def check(archive: Path, factory: str | None, work: Path, tolerance: str | None, seed: int, out=None, autocast=False) -> int:
    out = out or sys.stdout
    manifest = generate(archive, work / "out")
    if factory is None and any(d["name"] == "philox_seed" for d in manifest["inputs"]):
        raise CheckError("the program has random ops, whose draws eager can replay only in the module's own "
                         "F.dropout and sdpa calls: give the module with --module pkg.mod:factory")
    folder = inputs_folder(archive)
    values = {d["name"]: load_input(folder / f"{d['name']}.npy", d["dtype"]) for d in manifest["inputs"] if d.get("role") is not None}
    g = torch.Generator().manual_seed(seed)
    cotangents = [torch.randn(d["shape"], generator=g).to(TORCH_DTYPES[d["dtype"]]) for d in manifest["outputs"]]
    got = run_generated(work / "out", manifest, values, cotangents, seed)
    module = reference_module(archive, factory)
    want = run_eager(module, manifest, values, cotangents, seed)
    exact = run_exact(module, manifest, values, cotangents, seed) if autocast else None
    failures = report(manifest, got, want, tolerance, out, exact)
    out.write(f"{archive.name}: {'matches PyTorch eager' if failures == 0 else f'{failures} of the tensors differ'}\n")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m thunder_gen.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", type=Path, help="a PT2 archive written by thunder_gen.export")
    parser.add_argument("--module", metavar="PKG.MOD:FACTORY", help="eager's module: FACTORY() returns it (default: the archive's program)")
    parser.add_argument("--work", type=Path, help="where the generated folder goes (default: a temporary folder)")
    parser.add_argument("--tolerance", choices=("f32", "f16", "bf16", "f64"), help="compare every tensor at this dtype's tolerance")
    parser.add_argument("--seed", type=int, default=1, help="the cotangents' and the dropout streams' seed")
    parser.add_argument("--autocast", action="store_true",
                        help="the module runs under bf16 or f16 autocast: a tensor beyond the tolerance passes when it is as "
                             "accurate as eager's against the module computed in f64")
    args = parser.parse_args(argv)
    try:
        if args.work:
            return 1 if check(args.archive, args.module, args.work, args.tolerance, args.seed, autocast=args.autocast) else 0
        with tempfile.TemporaryDirectory(prefix="thunder-gen-check-") as tmp:
            return 1 if check(args.archive, args.module, Path(tmp), args.tolerance, args.seed, autocast=args.autocast) else 0
    except CheckError as e:
        print(f"thunder_gen.check: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
