#!/usr/bin/env python3
"""pt2_run_time_corpus.py MODEL... --work DIR: the corpus models (tools/corpus.py) through the
torch.export front end with symbolic batch and sequence sizes, each generated once without
--specialize and run at four sizes.

For each model: torch.export with a Dim for each symbolic dim (tools/symbolic_corpus.py's
dynamic_dims and ranges, B in 1..8, T in 1..32), thunder-gen on the archive (one folder: the entry
points take their sizes), the harness built for host emulation (tests/build_emu_harness.sh, fast),
then at B,T = 1,1 / 3,7 / 5,17 / 8,32 (1, odd sizes, no multiple of 16, the range's largest) the
harness run on the model's own inputs and parameters at that size (the example inputs cut or
repeated to it, one .npy per placeholder), and every output, saved value and gradient compared
with LibTorch running the dynamic archive's graph at the same size on the same inputs (one
thunder-gen-check for the four sizes, each folder at its own; the tolerances of
reference/compare.cpp; a model under bf16 autocast with --mixed-precision).

With --ptx NVCC, instead of running it: what nvcc (sm_90) makes of the folder against a folder
specialised to B=4, T=24, compared by tests/ptx_compare.py (every vector access kept, registers
within 10%). Not at the captured size: there T=16 is also the heads' width, and a folder
specialised to it fuses kernels the run-time folder cannot (shapes [B, T, 4, 16] and [B, 16, 4, T]
are one), so kernels of the same name would differ. Too slow for the suite (four nvcc builds a
model); docs/performance.md §2 records a run.

Prints one line per check and 'N passed, N failed'; exits 1 on any failure. Tools from the
environment: THUNDER_GEN, THUNDER_GEN_CHECK (ctest sets them).
"""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import corpus  # noqa: E402
import symbolic_corpus  # noqa: E402
from thunder_gen import symbolic_capture as sc  # noqa: E402
from thunder_gen.pt2 import export as pt2_export, placeholder_arrays, recorded_symbol_names  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

SIZES = ({"B": 1, "T": 1}, {"B": 3, "T": 7}, {"B": 5, "T": 17}, {"B": 8, "T": 32})
PTX_SIZES = {"B": 4, "T": 24}


def dynamic_archive(model, path: Path):
    """The model exported with its batch and sequence dims symbolic; the archive's symbol for each
    of B and T (the Dim's name where export recorded it, else torch's s<k>)."""
    fn, args = model.fn(), model.inputs()
    dynamic = symbolic_corpus.dynamic_dims(model, args)
    archive = pt2_export(fn, args, path=path, dynamic_shapes=symbolic_corpus.export_dynamic_shapes(fn, args, dynamic))
    names = symbolic_corpus.torch_symbols(archive, dynamic)
    given = recorded_symbol_names(archive)
    return archive, {s: given.get(names[s], names[s]) for s in names}


def run(what: list, log: Path) -> bool:
    with open(log, "a") as f:
        return subprocess.run(what, stdout=f, stderr=subprocess.STDOUT).returncode == 0


def matching_folders(reference: str, archive: Path, at_sizes: dict, flags: list, log: Path) -> set:
    """The folders of `at_sizes` ({folder: sizes}) whose outputs and gradients match LibTorch
    running the archive at their sizes: one thunder-gen-check for all (LibTorch loads once)."""
    r = subprocess.run([reference, str(archive), *(f"{folder}@{sizes}" for folder, sizes in at_sizes.items()), *flags],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write(r.stdout)
    verdicts = dict(line.rsplit(": ", 1) for line in r.stdout.splitlines() if line.endswith((": ok", ": FAIL")))
    return {folder for folder in at_sizes if verdicts.get(str(folder)) == "ok"}


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def expect(self, ok: bool, what: str) -> bool:
        print(f"{'ok' if ok else 'FAIL'} {what}", flush=True)
        self.passed += ok
        self.failed += not ok
        return ok


def device_code(nvcc: str, folder: Path, log: Path) -> bool:
    """forward.cu and backward.cu compiled for sm_90, with their PTX (keep/) and ptxas reports."""
    (folder / "keep").mkdir(exist_ok=True)
    for cu in ("forward", "backward"):
        with open(folder / f"{cu}.ptxas.log", "w") as report:
            if subprocess.run([nvcc, "-arch=sm_90", "-std=c++17", "-cubin", "-o", f"{cu}.cubin", f"{cu}.cu", "-I.", "-Xptxas", "-v",
                               "-keep", "-keep-dir", "keep"], cwd=folder, stderr=report, stdout=report).returncode != 0:
                return False
    return True


def compare_ptx(checks: Checks, nvcc: str, archive: Path, symbols: dict, folder: Path, work: Path, log: Path) -> None:
    sizes = ",".join(f"{symbols[s]}={PTX_SIZES[s]}" for s in sorted(symbols))
    specialised = work / "specialised"
    ok = run([os.environ["THUNDER_GEN"], str(archive), f"--specialize={sizes}", "-o", str(specialised)], log)
    ok = ok and device_code(nvcc, folder, log) and device_code(nvcc, specialised, log)
    ok = ok and run([sys.executable, str(ROOT / "tests" / "ptx_compare.py"), str(folder), str(specialised), "forward", "backward"], log)
    checks.expect(ok, f"{folder.parent.name}: PTX as the folder specialised to {sizes} (log: {log})")


def check_model(checks: Checks, model, work: Path, nvcc=None, sizes=SIZES) -> None:
    thunder_gen, reference = os.environ["THUNDER_GEN"], os.environ["THUNDER_GEN_CHECK"]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = work / "log.txt"
    archive, symbols = dynamic_archive(model, work / f"{model.name}.pt2")
    folder = work / "out"
    generated = run([thunder_gen, str(archive), "-o", str(folder)], log)
    if not checks.expect(generated and '"takes_sizes": true' in (folder / "manifest.json").read_text(),
                         f"{model.name}: one folder for every size (log: {log})"):
        return
    if nvcc:
        compare_ptx(checks, nvcc, archive, symbols, folder, work, log)
        return
    if not checks.expect(run([str(ROOT / "tests" / "build_emu_harness.sh"), str(folder), "fast"], log), f"{model.name}: the harness builds"):
        return
    fn, args = model.fn(), model.inputs()
    dynamic = symbolic_corpus.dynamic_dims(model, args)
    program = torch.export.load(str(archive))
    ran, at_sizes, names = set(), {}, {}
    for point in sizes:
        sizes_text = ",".join(f"{symbols[s]}={point[s]}" for s in sorted(symbols))
        at = work / f"at-{sizes_text.replace('=', '_').replace(',', '_')}"
        # The model's own inputs and parameters at the size, one .npy per placeholder of the
        # archive, as thunder_gen.export writes them: drawn ones make activations and gradients in
        # the hundreds, where float32 sums in another order than LibTorch's differ past the
        # table's 1e-5.
        inputs = at / "inputs"
        inputs.mkdir(parents=True)
        for name, array in placeholder_arrays(program, tuple(sc.arguments_at(fn, args, dynamic, {s: point[s] for s in symbols})), {}).items():
            np.save(inputs / f"{name}.npy", array, allow_pickle=False)
        outputs = at / "outputs"
        if run([str(folder / "harness"), "--quiet", "--inputs", str(inputs), "--outputs", str(outputs)], log):
            ran.add(outputs)
        at_sizes[outputs] = sizes_text
        names[outputs] = ",".join(f"{s}={point[s]}" for s in sorted(symbols))
        names[outputs] += "" if names[outputs] == sizes_text else f" ({sizes_text})"
    mixed = ["--mixed-precision"] if model.autocast else []  # (bf16 GEMMs: bf16's tolerances)
    matching = matching_folders(reference, archive, {o: s for o, s in at_sizes.items() if o in ran}, mixed, log)
    for outputs in at_sizes:
        checks.expect(outputs in matching, f"{model.name} at {names[outputs]}: outputs and gradients match LibTorch (log: {log})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--work", required=True)
    parser.add_argument("--ptx", metavar="NVCC", help="compare nvcc's code with a specialised folder's instead of running")
    parser.add_argument("--random-sizes", nargs=2, metavar=("SEED", "COUNT"),
                        help="at COUNT points drawn from B's and T's ranges, not the four fixed ones (a sweep by hand)")
    a = parser.parse_args(argv)
    models = {m.name: m for m in corpus.MODELS + corpus.EXPORT_ONLY}
    checks = Checks()
    for name in a.models:
        try:
            sizes = SIZES
            if a.random_sizes:
                model = models[name]
                symbols = {s for dims in symbolic_corpus.dynamic_dims(model, model.inputs()).values() for s in dims.values()}
                sizes = symbolic_corpus.random_points(f"{a.random_sizes[0]}/{name}", int(a.random_sizes[1]), symbols)
            check_model(checks, models[name], Path(a.work) / name, a.ptx, sizes)
        except Exception as e:  # (one model's export failing is its failure, not the others')
            checks.expect(False, f"{name}: {type(e).__name__}: {str(e)[:300]}")
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
