#!/usr/bin/env python3
"""Tests of thunder_gen (python/): generated folders loaded into PyTorch with thunder_gen.load,
run from the virtual environment tools/setup-python.sh installs it into.

    python_module.py corpus MODEL... --work DIR   # corpus models against PyTorch eager, in one process
    python_module.py api --work DIR            # arguments, autograd, statuses, the build cache
    python_module.py cuda --work DIR           # the nvcc build (no GPU needed; run on one if any)

corpus: examples/corpus/MODEL.json generated, loaded with device="cpu" (host emulation), and
checked against the tools/corpus.py module in eager mode on the inputs it was captured with:
every output, every input gradient, then three SGD steps of training (losses and parameters).
Dropout draws the generated code's Philox streams; eager replays them
(tools/check_against_torch.py, DropoutReplay). Tolerances: the table of reference/compare.cpp
(tools/torch_reference.py). Plain SGD, not AdamW: Adam divides each gradient by its own running
magnitude, so a parameter whose gradient is 1e-9 in eager and -1e-9 here (both within the table)
would move by +lr and -lr, and the comparison would test Adam, not the gradients.

Prints one line per check and 'N passed, N failed'; exits 1 on any failure. The generator is
find_thunder_gen()'s: $THUNDER_GEN (ctest sets it), else build/thunder-gen, else PATH's.
"""
import argparse
import ctypes
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import corpus  # noqa: E402
import thunder_export  # noqa: E402
import torch_reference  # noqa: E402
import check_against_torch  # noqa: E402
from check_against_torch import DropoutReplay  # noqa: E402
from thunder_gen_binary import find_thunder_gen  # noqa: E402

import thunder_gen  # noqa: E402  (this checkout's python/: tools/thunder_gen_binary.py puts it first)

SGD_STEPS, SGD_LR, SGD_MOMENTUM = 3, 0.05, 0.9


def first_lines(text: str, count: int = 3) -> str:
    """An error message for the log: a build error carries pages of compiler output."""
    lines = text.splitlines()
    return "\n".join(lines[:count]) + (f"\n[{len(lines) - count} more lines]" if len(lines) > count else "")


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def expect(self, ok: bool, what: str) -> bool:
        print(f"{'ok' if ok else 'FAIL'}: {what}", flush=True)
        self.passed += bool(ok)
        self.failed += not ok
        return ok

    def close(self, what: str, actual, expected, dt: str = "f32") -> bool:
        if actual is None or expected is None:
            return self.expect(False, f"{what}: {'no result' if actual is None else 'no expected value'}")
        c = torch_reference.compare(actual.detach(), expected.detach(), dt)
        return self.expect(c.ok, f"{what} {dt}{list(expected.shape)}: {c.summary()}")

    def raises(self, what: str, exc_type, needles: list[str], fn) -> bool:
        try:
            fn()
        except exc_type as e:
            missing = [n for n in needles if n not in str(e)]
            return self.expect(not missing, f"{what}: {type(e).__name__}: {first_lines(str(e))}"
                               + (f" (lacks {missing})" if missing else ""))
        except Exception as e:  # the wrong kind of error fails the check, it does not end the run
            return self.expect(False, f"{what}: expected {exc_type.__name__}, got {type(e).__name__}: {e}")
        return self.expect(False, f"{what}: nothing was raised")

    def summary(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def generate(trace: Path, out: Path, *flags: str) -> Path:
    r = subprocess.run([find_thunder_gen(), str(trace), "-o", str(out), *flags], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"thunder-gen {trace} exited {r.returncode}: {r.stderr}")
    return out


def timed_load(checks: Checks, out: Path, build_root: Path, **kw):
    start = time.time()
    module = thunder_gen.load(out, build_root=build_root, **kw)
    print(f"loaded {module.manifest.trace} in {time.time() - start:.1f} s", flush=True)
    return module


def run_eager(module, args, seed):
    replay = DropoutReplay(seed, 0)
    with replay.active():
        out = module(*args)
    return out, replay.notes


def run_generated(gen, inputs, seed):
    return gen(*inputs, philox_seed=seed, philox_offset=0) if gen.random_state else gen(*inputs)


def loss_of(out, target):
    return out if out.dim() == 0 else ((out - target) ** 2).mean()


# ---- corpus models against eager ------------------------------------------------------------


def tolerance_dtype(model) -> str:
    """bf16 autocast runs its GEMMs in bf16, so even the f32 results hold to bf16's tolerance only."""
    return "bf16" if model.autocast else "f32"


def corpus_inputs(doc: dict, model, module, args) -> dict:
    """The tensors behind a corpus trace's inputs, by the names Thunder gives (t_<parameter>, the
    arguments' names). An input Thunder named after a helper function's argument instead (a
    Conv2d's `weight` and `bias`, passed on to F.conv2d) is the one parameter or buffer named
    nothing else whose value is the captured one (examples/corpus/MODEL.inputs/NAME.npy)."""
    known = thunder_export.tensors_by_thunder_names(module, args, {})
    claimed = {id(known[d["name"]]) for d in doc["inputs"] if d["name"] in known}
    candidates = [t for t in list(module.parameters()) + list(module.buffers()) if id(t) not in claimed]
    for decl in doc["inputs"]:
        if decl["name"] in known:
            continue
        path = ROOT / "examples" / "corpus" / f"{model.name}.inputs" / f"{decl['name']}.npy"
        if path.exists():
            saved = torch_reference.load_npy(path, decl["dtype"])
            same = [t for t in candidates if t.shape == saved.shape and t.dtype == saved.dtype and torch.equal(t.detach(), saved)]
        else:  # (a model with no static capture committed: the one candidate of the declared shape and dtype)
            same = [t for t in candidates if list(t.shape) == decl["shape"] and thunder_export.dtype_name(t.dtype) == decl["dtype"]]
        if len(same) != 1:
            raise thunder_export.ExportError(f"{model.name}: trace input {decl['name']!r} equals {len(same)} of the parameters and "
                                             "buffers no other input names, not one")
        known[decl["name"]] = same[0]
    return thunder_export.input_tensors(doc, module, args, {}, unpacked=known)


def zero_gradient_in_eager(parameter: torch.Tensor) -> bool:
    """Is the gradient eager just gave `parameter` 0, within the f32 tolerance?"""
    return parameter.grad is None or torch_reference.compare(parameter.grad, torch.zeros_like(parameter.grad), "f32").ok


def outputs_against_eager(checks: Checks, label: str, model, module, args, doc: dict, gen, eager_inputs: dict, seed: int):
    """Runs the model in eager mode and the generated module on copies of `eager_inputs` (dropout
    replayed from `seed`) and checks the outputs. Returns the copies, both outputs and a
    cotangent for each output, for the caller's backward."""
    decls = {d["name"]: d for d in doc["inputs"]}
    ours = {n: t.detach().clone().requires_grad_(bool(decls[n].get("requires_grad"))) for n, t in eager_inputs.items()}
    out, notes = run_eager(module, args, seed)
    got = run_generated(gen, [ours[n] for n in gen.input_names], seed)
    for note, ok in notes:
        checks.expect(ok, f"{label}: {note}")
    outs, gots = (list(out), list(got)) if isinstance(out, tuple) else ([out], [got])
    g = torch.Generator().manual_seed(2)
    cotangents = [torch.randn(o.shape, generator=g) for o in outs]
    for name, o, r in zip(doc["outputs"], gots, outs):
        checks.close(f"{label}: output {name}", o, r, tolerance_dtype(model))
    return ours, outs, gots, cotangents


def check_forward_and_gradients(checks: Checks, model, doc: dict, gen) -> None:
    module, args = model.fn(), model.inputs()
    eager_inputs = corpus_inputs(doc, model, module, args)
    decls = {d["name"]: d for d in doc["inputs"]}
    for name, t in eager_inputs.items():  # the corpus inputs are the tensors the model was captured with
        saved = torch_reference.load_npy(ROOT / "examples" / "corpus" / f"{model.name}.inputs" / f"{name}.npy", decls[name]["dtype"])
        if not torch.equal(saved, t.detach()):
            checks.expect(False, f"{model.name}: input {name} differs from examples/corpus/{model.name}.inputs/{name}.npy")
    ours, outs, gots, cotangents = outputs_against_eager(checks, model.name, model, module, args, doc, gen, eager_inputs, 20261202)
    saved = gots[0].grad_fn.saved_tensors
    checks.expect(len(saved) == len(gen.manifest.saved),
                  f"{model.name}: the autograd node saves {len(saved)} tensors, the manifest lists {len(gen.manifest.saved)}")
    torch.autograd.backward(outs, cotangents)
    torch.autograd.backward(gots, cotangents)
    leaves = {n: t for n, t in eager_inputs.items() if decls[n].get("requires_grad")}
    exact = check_against_torch.f64_reference(module, args, leaves, cotangents, doc["outputs"]) if model.autocast else {}
    for name, t in eager_inputs.items():
        if decls[name].get("requires_grad"):
            what = f"{model.name}: gradient of {name}"
            if f"grad_{name}" in exact and not torch_reference.compare(ours[name].grad, t.grad, "bf16").ok:
                # Under autocast: as accurate as eager against the f64 block (docs/torch-ops.md).
                line = io.StringIO()
                failed = check_against_torch.accuracy_line(line, what, ours[name].grad, t.grad, exact[f"grad_{name}"])
                checks.expect(not failed, line.getvalue().strip())
            else:
                checks.close(what, ours[name].grad, t.grad, tolerance_dtype(model))
        else:
            checks.expect(ours[name].grad is None, f"{model.name}: {name} requires no grad and gets none")


def check_training(checks: Checks, model, doc: dict, gen) -> None:
    """SGD_STEPS steps on the model's parameters (the model's data inputs get no gradient)."""
    module, args = model.fn(), tuple(a.detach() if isinstance(a, torch.Tensor) else a for a in model.inputs())
    eager_inputs = corpus_inputs(doc, model, module, args)
    params = {n for n, t in eager_inputs.items() if isinstance(t, torch.nn.Parameter)}
    ours = {n: t.detach().clone().requires_grad_(n in params) for n, t in eager_inputs.items()}
    initial = {n: ours[n].detach().clone() for n in params}
    eager_opt = torch.optim.SGD(module.parameters(), lr=SGD_LR, momentum=SGD_MOMENTUM)
    our_opt = torch.optim.SGD([ours[n] for n in sorted(params)], lr=SGD_LR, momentum=SGD_MOMENTUM)
    target, zero_gradient = None, set(params)
    for step in range(SGD_STEPS):
        seed = 1000 + step
        out, _ = run_eager(module, args, seed)
        got = run_generated(gen, [ours[n] for n in gen.input_names], seed)
        if target is None:
            target = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
        eager_loss, our_loss = loss_of(out, target), loss_of(got, target)
        checks.close(f"{model.name}: SGD step {step + 1} loss", our_loss, eager_loss, tolerance_dtype(model))
        for opt, loss in ((eager_opt, eager_loss), (our_opt, our_loss)):
            opt.zero_grad()
            loss.backward()
            opt.step()
        zero_gradient = {n for n in zero_gradient if zero_gradient_in_eager(eager_inputs[n])}
    for n in sorted(params):
        checks.close(f"{model.name}: {n} after {SGD_STEPS} SGD steps", ours[n], eager_inputs[n], tolerance_dtype(model))
    # Each parameter moved beyond the tolerance, so one the loaded module failed to train would
    # show; except one whose eager gradient is 0 in every step (BERT's key bias: softmax over the
    # keys ignores q . b_k, the same for every key), which stays, in both, where it started.
    unmoved = [n for n in sorted(params - zero_gradient) if torch_reference.compare(initial[n], eager_inputs[n].detach(), "f32").ok]
    checks.expect(not unmoved, f"{model.name}: every parameter with a gradient moved beyond the tolerance in training {unmoved}"
                               + (f" (gradient 0 in eager, not expected to move: {sorted(zero_gradient)})" if zero_gradient else ""))
    none = [n for n in eager_inputs if n not in params and ours[n].grad is not None]
    checks.expect(not none, f"{model.name}: data inputs without requires_grad got no gradient {none}")


def check_corpus_model(checks: Checks, model, work: Path) -> None:
    trace = ROOT / "examples" / "corpus" / f"{model.name}.json"
    doc = json.loads(trace.read_text())
    gen = timed_load(checks, generate(trace, work / "out"), work / "extensions", device="cpu")
    start = time.time()
    check_forward_and_gradients(checks, model, doc, gen)
    check_training(checks, model, doc, gen)
    print(f"{model.name}: checks ran in {time.time() - start:.1f} s")


def corpus_main(names: list, work: Path) -> int:
    """The models in one process (Python, torch and transformers imported once); one model's
    exception counts as a failure and the others still run."""
    checks = Checks()
    models = {m.name: m for m in corpus.MODELS}
    unknown = [n for n in names if n not in models]
    if unknown:
        sys.exit(f"unknown corpus models {unknown}; the corpus has {list(models)}")
    for name in names:
        try:
            check_corpus_model(checks, models[name], work / name if len(names) > 1 else work)
        except Exception as e:
            checks.expect(False, f"{name}: {type(e).__name__}: {first_lines(str(e))}")
    return checks.summary()


# ---- corpus models in one folder for every size ---------------------------------------------

RUN_TIME_SIZES = ({"B": 1, "T": 1}, {"B": 3, "T": 7}, {"B": 5, "T": 17}, {"B": 8, "T": 32})  # 1, odd, no multiple of 16, the maximum


def check_run_time_corpus_model(checks: Checks, model, work: Path, random_seed: str = "", random_count: int = 0) -> None:
    """The model's symbolic Thunder capture (examples/symbolic/corpus/, tools/symbolic_corpus.py)
    generated once, without --specialize, and called at each of RUN_TIME_SIZES (or at
    `random_count` points drawn from the symbols' ranges): its outputs and every gradient against
    eager on the same inputs at that size."""
    from symbolic_corpus import dynamic_dims, random_points
    from thunder_gen.symbolic_capture import arguments_at
    trace = ROOT / "examples" / "symbolic" / "corpus" / f"{model.name}.json"
    doc = json.loads(trace.read_text())
    gen = timed_load(checks, generate(trace, work / "out"), work / "extensions", device="cpu")
    checks.expect(gen.manifest.takes_sizes, f"{model.name}: one folder for every size (the entry points take their sizes)")
    module, args = model.fn(), model.inputs()
    dynamic = dynamic_dims(model, args)
    symbols = {s for dims in dynamic.values() for s in dims.values()}
    for point in random_points(f"{random_seed}/{model.name}", random_count, symbols) if random_count else RUN_TIME_SIZES:
        at = {s: point[s] for s in symbols}
        where = f"{model.name} at {','.join(f'{s}={v}' for s, v in sorted(at.items()))}"
        args_at = arguments_at(module, args, dynamic, at)
        doc_at = {**doc, "inputs": [{**d, "shape": [thunder_gen.sizes.evaluate(e, at) if isinstance(e, str) else e for e in d["shape"]]}
                                    if "shape" in d else d for d in doc["inputs"]]}
        eager_inputs = corpus_inputs(doc_at, model, module, args_at)
        decls = {d["name"]: d for d in doc["inputs"]}
        for t in eager_inputs.values():
            t.grad = None
        ours, outs, gots, cotangents = outputs_against_eager(checks, where, model, module, args_at, doc, gen, eager_inputs, 20261204)
        torch.autograd.backward(outs, cotangents)
        torch.autograd.backward(gots, cotangents)
        leaves = {n: t for n, t in eager_inputs.items() if decls[n].get("requires_grad")}
        exact = None
        for name, t in leaves.items():
            what = f"{where}: gradient of {name}"
            if torch_reference.compare(ours[name].grad, t.grad, tolerance_dtype(model)).ok:
                checks.close(what, ours[name].grad, t.grad, tolerance_dtype(model))
                continue
            # Sums over many rows in another order (a block per size): as accurate as eager against
            # the model in f64, the corpus check's measure under autocast.
            if exact is None:
                exact = check_against_torch.f64_reference(module, args_at, leaves, cotangents, doc["outputs"])
            line = io.StringIO()
            failed = check_against_torch.accuracy_line(line, what, ours[name].grad, t.grad, exact[f"grad_{name}"])
            checks.expect(not failed, line.getvalue().strip())


def run_time_corpus_main(names: list, work: Path, random_seed: str, random_count: int) -> int:
    checks = Checks()
    models = {m.name: m for m in corpus.MODELS + corpus.EXPORT_ONLY}
    for name in names:
        try:
            check_run_time_corpus_model(checks, models[name], work / name, random_seed, random_count)
        except Exception as e:
            checks.expect(False, f"{name}: {type(e).__name__}: {first_lines(str(e))}")
    return checks.summary()


# ---- the loader's own behaviour, on small traces --------------------------------------------

def api_trace(name: str, scale: float = 1.0) -> dict:
    """t4 = x * w * s * scale + float(n) + c, t5 = n + n (i64), t6 = t4 @ m; outputs t4, t5, t6,
    t4 again and the input x (an output listed twice, and an input passed through)."""
    def v(n, shape, dtype="f32", **kw):
        return {"name": n, "shape": shape, "dtype": dtype, **kw}

    def op(symbol, args, out):
        return {"op": symbol, "args": args, "out": [out]}
    return {
        "format": "thunder-gen-trace", "version": 1, "name": name, "source": "tests/python_module.py",
        "inputs": [v("x", [4, 8], requires_grad=True), v("w", [4, 8], requires_grad=True), v("c", [4, 8]),
                   v("n", [4, 8], "i64"), v("m", [8, 2], requires_grad=True), {"name": "s", "scalar": "f64"}],
        "ops": [op("prims.mul", ["x", "w"], v("t0", [4, 8])),
                op("prims.mul", ["t0", "s"], v("t1a", [4, 8])),
                op("prims.mul", ["t1a", scale], v("t1", [4, 8])),
                op("prims.convert_element_type", ["n", {"dtype": "f32"}], v("t2", [4, 8])),
                op("prims.add", ["t1", "t2"], v("t3", [4, 8])),
                op("prims.add", ["t3", "c"], v("t4", [4, 8])),
                op("prims.add", ["n", "n"], v("t5", [4, 8], "i64")),
                op("prims.matmul", ["t4", "m"], v("t6", [4, 2]))],
        "outputs": ["t4", "t5", "t6", "t4", "x"],
    }


def write_trace(doc: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def api_inputs(requires_grad=True):
    g = torch.Generator().manual_seed(5)
    x, w, c = (torch.randn(4, 8, generator=g).requires_grad_(requires_grad) for _ in range(3))
    n = torch.randint(-3, 4, (4, 8), generator=g)
    m = torch.randn(8, 2, generator=g).requires_grad_(requires_grad)
    return x, w, c, n, m, 0.5


def api_eager(x, w, c, n, m, s, scale=1.0):
    t4 = x * w * s * scale + n.float() + c
    return t4, n + n, t4 @ m, t4, x


def api_loss(outputs):
    """sum's cotangent is an expanded, non-contiguous tensor; each listing of t4 gets a cotangent of
    its own."""
    t4, _, t6, t4_again, x = outputs
    return t4.sum() + (t6 * 3).sum() + (t4_again * t4_again).sum() + (x * 5).sum()


def check_results_and_autograd(checks: Checks, gen) -> None:
    x, w, c, n, m, s = api_inputs()
    got = gen(x, w, c, n, m, s)
    checks.expect(isinstance(got, tuple) and len(got) == 5, "five outputs come back as a tuple")
    ex, ew, ec, en, em, _ = (t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                             for t in api_inputs())
    want = api_eager(ex, ew, ec, en, em, s)
    checks.close("output t4", got[0], want[0])
    checks.expect(torch.equal(got[1], want[1]) and got[1].dtype == torch.int64 and not got[1].requires_grad,
                  "i64 output t5 is exact and not differentiable")
    checks.close("output t6", got[2], want[2])
    checks.expect(torch.equal(got[3], got[0]) and got[3] is not got[0], "t4 listed twice: the same values, two tensors")
    checks.expect(torch.equal(got[4], x) and got[4].data_ptr() != x.data_ptr(), "output x: a copy of the input x")
    saved = got[0].grad_fn.saved_tensors
    listed = [s.name for s in gen.manifest.saved]
    by_input = {"x": x, "w": w, "c": c, "n": n, "m": m}
    same = all(t.data_ptr() == by_input[name].data_ptr() for name, t in zip(listed, saved) if name in by_input)
    checks.expect(len(saved) == len(listed) and same,
                  f"the node saves exactly the manifest's saved_for_backward {listed} (inputs as the caller's tensors)")
    api_loss(got).backward()
    api_loss(want).backward()
    for name, ours, theirs in (("x", x, ex), ("w", w, ew), ("m", m, em)):
        checks.close(f"gradient of {name}", ours.grad, theirs.grad)
    checks.expect(c.grad is None, "c: requires grad here, not in the trace: no gradient (None)")
    x2, w2, c2, n2, m2, _ = api_inputs(requires_grad=False)
    w2.requires_grad_(True)
    gen(x2, w2, c2, n2, m2, s)[0].sum().backward()
    checks.expect(x2.grad is None and m2.grad is None and w2.grad is not None,
                  "inputs that do not require grad get None, the one that does gets its gradient")
    with torch.no_grad():
        plain = gen(*api_inputs())
    checks.expect(plain[0].grad_fn is None and torch.equal(plain[0], got[0].detach()),
                  "under no_grad: the same values, no autograd node")


def check_refusals(checks: Checks, gen) -> None:
    x, w, c, n, m, s = api_inputs()
    cases = [
        ("an f64 tensor for f32 x", TypeError, ["'x'", "torch.float32", "torch.float64"], (x.double(), w, c, n, m, s)),
        ("an i32 tensor for i64 n", TypeError, ["'n'", "torch.int64", "torch.int32"], (x, w, c, n.int(), m, s)),
        ("x of shape [4, 9]", ValueError, ["'x'", "[4, 8]", "[4, 9]"], (torch.randn(4, 9), w, c, n, m, s)),
        ("m of shape [2, 8]", ValueError, ["'m'", "[8, 2]", "[2, 8]"], (x, w, c, n, m.detach().t().contiguous(), s)),
        ("w on the meta device", ValueError, ["'w'", "on cpu", "meta"], (x, torch.empty(4, 8, device="meta"), c, n, m, s)),
        ("a transposed (non-contiguous) c", ValueError, ["'c'", "contiguous", "[1, 4]"], (x, w, torch.randn(8, 4).t(), n, m, s)),
        ("a sparse w", ValueError, ["'w'", "strided", "sparse"], (x, w.detach().to_sparse(), c, n, m, s)),
        ("a lazily negated x", ValueError, ["'x'", "negation"], (x, w, c, n, m, s)),
        ("a list for x", TypeError, ["'x'", "tensor", "list"], ([[0.0] * 8] * 4, w, c, n, m, s)),
        ("a tensor for the f64 scalar s", TypeError, ["'s'", "float"], (x, w, c, n, m, torch.tensor(0.5))),
        ("five inputs of six", TypeError, ["expected 6 inputs", "x, w, c, n, m, s"], (x, w, c, n, m)),
    ]
    for what, exc, needles, args in cases:
        if what == "a lazily negated x":
            args = (x.detach()._neg_view(),) + args[1:]
        checks.raises(f"refused: {what}", exc, needles, lambda a=args: gen(*a))
    checks.raises("refused: philox_seed on a trace without random ops", TypeError, ["philox_seed", "random"],
                  lambda: gen(x, w, c, n, m, s, philox_seed=1))


def header_statuses(gen) -> dict[str, int]:
    """The status codes the folder's public header defines: MISALIGNED -> 2, ..."""
    text = (gen.manifest.folder / gen.manifest.header).read_text()
    return {name: int(code) for name, code in re.findall(r"\bTHUNDER_GEN_([A-Z_]+) = (\d+)", text)}


def check_statuses(checks: Checks, gen) -> None:
    x, w, c, n, m, s = api_inputs(requires_grad=False)
    raw = bytearray(4 * 32 + 1)
    misaligned = torch.frombuffer(raw, dtype=torch.float32, count=32, offset=1).view(4, 8)
    codes = header_statuses(gen)
    checks.expect(len(codes) == len(set(codes.values())) and codes.get("SUCCESS") == 0,
                  f"the header's statuses, distinct: {codes}")
    words = gen.library.status_string(codes["MISALIGNED"])
    checks.expect(bool(words) and words != gen.library.status_string(0), f"MISALIGNED has words of its own: {words!r}")
    checks.raises("a float pointer off by a byte: MISALIGNED", thunder_gen.StatusError,
                  [gen.manifest.forward.name, f"status {codes['MISALIGNED']}", words], lambda: gen(x, misaligned, c, n, m, s))
    os.environ["TG_EMU_FAIL"] = "gemm"
    try:
        gemm_failed = codes["GEMM_FAILED"]
        checks.raises("TG_EMU_FAIL=gemm: GEMM_FAILED", thunder_gen.StatusError,
                      [f"status {gemm_failed}", gen.library.status_string(gemm_failed)], lambda: gen(x, w, c, n, m, s))
        checks.expect(thunder_gen.StatusError.__mro__[1:].count(RuntimeError) == 1, "StatusError is a RuntimeError")
    finally:
        del os.environ["TG_EMU_FAIL"]
    os.environ["TG_EMU_FAIL"] = "alloc"
    try:  # the loader passes a workspace, so the entry points allocate nothing that could fail
        ws = gen.library.workspace_bytes(None)
        x, w, c, n, m, s = api_inputs()
        out = gen(x, w, c, n, m, s)
        out[2].sum().backward()
        checks.expect(ws > 0 and m.grad is not None,
                      f"TG_EMU_FAIL=alloc: forward and backward run in a {ws}-byte workspace of torch's")
    except thunder_gen.StatusError as e:
        checks.expect(False, f"TG_EMU_FAIL=alloc: {e}")
    finally:
        del os.environ["TG_EMU_FAIL"]


def check_rebuilds(checks: Checks, gen, work: Path) -> None:
    """gen: py_api's module, loaded from work/api with the default build root."""
    root, out = thunder_gen.default_build_root(), gen.manifest.folder
    library = gen.library.path
    built = library.stat().st_mtime_ns
    again = timed_load(checks, out, None)
    checks.expect(again.library.path == library and library.stat().st_mtime_ns == built,
                  "an unchanged folder loads the library built before")
    generate(write_trace(api_trace("py_api", 3.0), work / "py_api.json"), out)
    changed = timed_load(checks, out, None)
    checks.expect(changed.library.path != library, f"a changed folder builds a new library: {changed.library.path.name}")
    args = api_inputs(requires_grad=False)
    old, new = gen(*args)[0], changed(*args)[0]
    checks.close("the old module still computes the old trace", old, api_eager(*args)[0])
    checks.close("the new module computes the changed trace", new, api_eager(*args, scale=3.0)[0])
    builds = sorted(p.name for p in root.iterdir() if p.is_dir())
    checks.expect(len(builds) == 2, f"two builds in the cache: {builds}")


def check_default_root(checks: Checks, gen, root: Path) -> None:
    checks.expect(gen.library.path.is_relative_to(root / "thunder_gen"),
                  f"without build_root the cache is $TORCH_EXTENSIONS_DIR/thunder_gen: {gen.library.path}")


def check_random_state(checks: Checks, work: Path) -> None:
    gen = timed_load(checks, generate(ROOT / "examples" / "dropout_p09.json", work / "dropout"), work / "extensions")
    x = torch.randn(1024, 1024)
    torch.manual_seed(7)
    a = gen(x)
    torch.manual_seed(7)
    b, c = gen(x), gen(x)
    checks.expect(torch.equal(a, b) and not torch.equal(b, c),
                  "dropout: the default seed comes from torch's generator (torch.manual_seed repeats a run; the next call draws anew)")
    d, e = gen(x, philox_seed=11, philox_offset=3), gen(x, philox_seed=11, philox_offset=3)
    checks.expect(torch.equal(d, e) and not torch.equal(d, gen(x, philox_seed=11, philox_offset=4)),
                  "dropout: an explicit philox_seed and philox_offset fix the mask")
    checks.raises("refused: a float philox_seed", TypeError, ["'philox_seed'", "int"], lambda: gen(x, philox_seed=1.5))


def symbolic_block_eager(x, ln_w, ln_b, w1, b1, w2, b2):
    """examples/symbolic/symbolic_block.json in PyTorch."""
    n = torch.nn.functional.layer_norm(x, [64], ln_w, ln_b, 1e-5)
    g = torch.nn.functional.gelu(torch.nn.functional.linear(n, w1, b1))
    r = x + torch.nn.functional.linear(g, w2, b2)
    return torch.log_softmax(r.reshape(-1, 64), -1)


def check_run_time_sizes(checks: Checks, work: Path, specialized) -> None:
    """One folder for every size: the module binds each call's sizes, and its outputs and
    gradients match eager at 1, odd sizes and B's maximum, and the folder specialised to B=2, T=3
    byte for byte there; sizes out of range are refused by symbol."""
    out = generate(ROOT / "examples" / "symbolic" / "symbolic_block.json", work / "symbolic-run-time")
    gen = timed_load(checks, out, work / "extensions")
    checks.expect(gen.manifest.takes_sizes, "the manifest says the entry points take their sizes")
    torch.manual_seed(3)
    params = [torch.randn(64), torch.randn(64), torch.randn(128, 64) * 0.1, torch.randn(128), torch.randn(64, 128) * 0.1, torch.randn(64)]
    # (At B=8, T=40 the weight gradients sum 320 rows, and a few cancelling elements of both eager's
    # and the folder's miss f64 by more than f32's elementwise tolerance: tests/run_time_sizes.sh
    # checks that size against the specialised folder, byte for byte, which check_example.sh
    # compares with LibTorch.)
    for b, t in ((1, 1), (3, 7), (2, 17), (8, 8)):
        x = torch.randn(b, t, 64)
        args = [a.clone().requires_grad_() for a in (x, *params)]
        y = gen(*args)
        cot = torch.randn_like(y)
        y.backward(cot)
        eager = [a.clone().requires_grad_() for a in (x, *params)]
        expected = symbolic_block_eager(*eager)
        expected.backward(cot)
        checks.close(f"symbolic_block at B={b}, T={t}: out", y, expected)
        for name, a, e in zip(("x", "ln_w", "ln_b", "w1", "b1", "w2", "b2"), args, eager):
            checks.close(f"symbolic_block at B={b}, T={t}: grad_{name}", a.grad, e.grad)
    x = torch.randn(2, 3, 64)
    checks.expect(torch.equal(gen(x, *params), specialized(x, *params)), "at B=2, T=3: byte for byte the specialised folder's output")
    checks.raises("refused: B=9, outside its range", ValueError, ["input 'x' dim 0 is 9", "B must be 1 <= B <= 8"],
                  lambda: gen(torch.randn(9, 3, 64), *params))
    checks.raises("refused: ln_w of 63", ValueError, ["input 'ln_w'", "expected shape [64]"], lambda: gen(torch.randn(2, 3, 64), torch.randn(63), *params[1:]))


def check_specialized(checks: Checks, work: Path):
    """A folder generated from a symbolic trace at one size runs at it, and says so when called at
    another. Returns the module."""
    out = generate(ROOT / "examples" / "symbolic" / "symbolic_block.json", work / "symbolic", "--specialize", "B=2,T=3")
    gen = timed_load(checks, out, work / "extensions")
    checks.expect(gen.manifest.specialized_at == {"B": 2, "T": 3}, f"the manifest's sizes: {gen.manifest.specialized_at}")
    params = [torch.randn(64), torch.randn(64), torch.randn(128, 64) * 0.1, torch.randn(128), torch.randn(64, 128) * 0.1, torch.randn(64)]
    checks.expect(list(gen(torch.randn(2, 3, 64), *params).shape) == [6, 64], "symbolic_block at B=2, T=3: out is [B*T, 64]")
    checks.expect(gen.manifest.symbols["T"] == {"min": 1, "max": 40, "multiple_of": 1} and gen.manifest.inputs[0].sizes == ("B", "T", 64),
                  f"the manifest's symbols and x's sizes: {gen.manifest.symbols}, {gen.manifest.inputs[0].sizes}")
    checks.raises("refused: symbolic_block called at B=4, a size in range", ValueError,
                  ["the inputs are at B=4,T=3", "runs at B=2,T=3 only", "--specialize B=4,T=3"], lambda: gen(torch.randn(4, 3, 64), *params))
    checks.raises("refused: T=41, outside its range", ValueError, ["input 'x' dim 1 is 41", "T must be 1 <= T <= 40"],
                  lambda: gen(torch.randn(2, 41, 64), *params))
    checks.raises("refused: x's features not 64", ValueError, ["input 'x' dim 2 is 63, but the trace's size there is 64"],
                  lambda: gen(torch.randn(2, 3, 63), *params))
    checks.raises("refused: x of two dims", ValueError, ["input 'x'", "expected 3 dimensions"], lambda: gen(torch.randn(6, 64), *params))
    checks.expect([thunder_gen.sizes.evaluate(e, {"B": 7, "T": 10}) for e in ("B*T - B", "(B*T)//4", "T//2 + 1", "max(B, 9)", "min(-B + 3, T)")] ==
                  [63, 17, 6, 9, -4], "size expressions evaluate as thunder-gen writes them")
    checks.expect(thunder_gen.sizes.evaluate("class*None + max(True, 2)", {"class": 2, "None": 3, "True": 5}) == 11,
                  "symbols spelled like Python keywords evaluate (they are names in the trace's grammar)")
    checks.raises("refused: a call in a size expression", ValueError, ["not a size expression"],
                  lambda: thunder_gen.sizes.evaluate("__import__('os').getcwd()", {}))
    checks.raises("refused: a size expression nested 2,000 deep", ValueError, ["not a size expression"],
                  lambda: thunder_gen.sizes.evaluate("(" * 2000 + "B" + ")" * 2000, {"B": 1}))
    # A hand-edited manifest: its symbols and sizes are checked when it is read.
    edited = work / "symbolic-edited"
    shutil.copytree(out, edited, dirs_exist_ok=True)
    original = json.loads((out / "manifest.json").read_text())
    for label, change, words in [
            ("multiple_of 0", lambda m: m["symbols"]["B"].update(multiple_of=0), ["/symbols/B", "not a symbol's range"]),
            ("min > max", lambda m: m["symbols"]["T"].update(min=50), ["/symbols/T", "not a symbol's range"]),
            ("a size per dim", lambda m: m["inputs"][0]["sizes"].pop(), ["/inputs/0/sizes", "one size per dim"]),
            ("sizes not the shape", lambda m: m["inputs"][0].update(sizes=["B", "B*T", 64]), ["/inputs/0/sizes/1", "'B*T' is 6", "says 3"]),
            ("a symbol not specialised", lambda m: m["inputs"][0].update(sizes=["B", "Q", 64]), ["/inputs/0/sizes/1", "no size at specialized_at"]),
            ("a size out of its range", lambda m: m["specialized_at"].update(T=41), ["/specialized_at/T", "outside the symbol's range"]),
            ("a symbol without its size", lambda m: m["specialized_at"].pop("T"), ["/specialized_at", "a size for each symbol"]),
            ("a symbol named max", lambda m: m["symbols"].update(max=m["symbols"].pop("T")), ["/symbols/max", "not a symbol's name"]),
            ("another size binder", lambda m: m.update(bind_sizes_function="symbolic_block_forward"), ["/bind_sizes_function", "symbolic_block_bind_sizes"]),
            ("a size binder without sizes", lambda m: [v.pop("sizes", None) for v in m["inputs"]], ["/bind_sizes_function", "whose inputs have sizes"])]:
        doc = json.loads(json.dumps(original))
        change(doc)
        (edited / "manifest.json").write_text(json.dumps(doc))
        checks.raises(f"a manifest with {label}", thunder_gen.ManifestError, words, lambda: thunder_gen.manifest.read_manifest(edited))
    # A folder from before the size binder: no bind_sizes_function; other sizes are refused by shape.
    doc = json.loads(json.dumps(original))
    doc.pop("bind_sizes_function")
    (edited / "manifest.json").write_text(json.dumps(doc))
    old = timed_load(checks, edited, work / "extensions")
    checks.raises("refused without a binder: B=4, by x's shape", ValueError, ["input 'x' (argument 0): expected shape [2, 3, 64], got [4, 3, 64]"],
                  lambda: old(torch.randn(4, 3, 64), *params))
    return gen


def check_bad_folders(checks: Checks, work: Path) -> None:
    empty = work / "not-generated"
    empty.mkdir(parents=True, exist_ok=True)
    checks.raises("a folder without manifest.json", thunder_gen.ManifestError, [str(empty), "manifest.json"],
                  lambda: thunder_gen.load(empty, build_root=work / "extensions"))
    broken = work / "broken"
    generate(write_trace(api_trace("py_broken"), work / "py_broken.json"), broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    del manifest["entry_points"]["forward"]["params"][1]["kind"]
    (broken / "manifest.json").write_text(json.dumps(manifest))
    checks.raises("a manifest param without its kind", thunder_gen.ManifestError,
                  ["/entry_points/forward/params/1/kind", "missing"], lambda: thunder_gen.load(broken, build_root=work / "extensions"))
    (broken / "manifest.json").write_text(json.dumps({**manifest, "entry_points": {}}))
    checks.raises("a manifest without the forward entry point", thunder_gen.ManifestError,
                  ["/entry_points/forward", "missing"], lambda: thunder_gen.load(broken, build_root=work / "extensions"))
    generate(write_trace(api_trace("py_broken"), work / "py_broken.json"), broken)
    (broken / "forward.cu").write_text("this is not C++\n")
    checks.raises("a forward.cu that does not compile", thunder_gen.BuildError, ["forward.cu", "error"],
                  lambda: thunder_gen.load(broken, build_root=work / "extensions"))
    checks.raises("device='cuda' without a GPU" if not torch.cuda.is_available() else "device='meta'",
                  (RuntimeError, ValueError), ["no CUDA device"] if not torch.cuda.is_available() else ["'meta'"],
                  lambda: thunder_gen.load(broken, device="cuda" if not torch.cuda.is_available() else "meta"))


def api_main(work: Path) -> int:
    checks = Checks()
    installed = Path(thunder_gen.__file__).resolve()
    checks.expect(installed.is_relative_to(ROOT / "python"),
                  f"thunder_gen is imported from this checkout's python/ ({installed}; tools/setup-python.sh installs it)")
    # py_api is built where a load without build_root builds: $TORCH_EXTENSIONS_DIR/thunder_gen (made
    # empty here: check_rebuilds counts the builds in it). The other traces build in work/extensions.
    default_root = work / "default-root"
    shutil.rmtree(default_root, ignore_errors=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(default_root)
    gen = timed_load(checks, generate(write_trace(api_trace("py_api"), work / "py_api.json"), work / "api"), None)
    check_default_root(checks, gen, default_root)
    check_results_and_autograd(checks, gen)
    check_refusals(checks, gen)
    check_statuses(checks, gen)
    check_rebuilds(checks, gen, work)
    check_random_state(checks, work)
    specialized = check_specialized(checks, work)
    check_run_time_sizes(checks, work, specialized)
    check_bad_folders(checks, work)
    return checks.summary()


# ---- the CUDA build --------------------------------------------------------------------------

def cuda_main(work: Path) -> int:
    checks = Checks()
    out = generate(write_trace(api_trace("py_cuda"), work / "py_cuda.json"), work / "cuda")
    from torch.utils import cpp_extension
    cuda_home = cpp_extension.CUDA_HOME
    cpp_extension.CUDA_HOME = None
    try:
        checks.raises("device='cuda' without a CUDA toolkit", thunder_gen.BuildError, ["CUDA toolkit", "nvcc"],
                      lambda: thunder_gen.build(out, device="cuda", build_root=work / "extensions"))
    finally:
        cpp_extension.CUDA_HOME = cuda_home
    if cuda_home is None:
        checks.expect(True, "no CUDA toolkit here: the nvcc build is not tried")
        return checks.summary()
    start = time.time()
    path = thunder_gen.build(out, device="cuda", arch="sm_90", build_root=work / "extensions")
    lib = ctypes.CDLL(str(path))
    checks.expect(all(hasattr(lib, f"py_cuda_{f}") for f in ("forward", "backward", "workspace_bytes", "status_string")),
                  f"nvcc build for sm_90 in {time.time() - start:.1f} s: {path.name} defines the four entry points")
    if torch.cuda.is_available():
        on_gpu = thunder_gen.load(out, device="cuda", build_root=work / "extensions")
        on_cpu = thunder_gen.load(out, device="cpu", build_root=work / "extensions")
        args = api_inputs()
        gpu_args = [a.detach().cuda().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
        cpu_out, gpu_out = on_cpu(*args), on_gpu(*gpu_args)
        for name, a, b in zip(("t4", "t5", "t6", "t4 again", "x"), gpu_out, cpu_out):
            checks.close(f"GPU output {name} against the emulation", a.cpu(), b, "i64" if a.dtype == torch.int64 else "f32")
        api_loss(cpu_out).backward()
        api_loss(gpu_out).backward()
        for name, a, b in zip("xwm", (gpu_args[0], gpu_args[1], gpu_args[4]), (args[0], args[1], args[4])):
            checks.close(f"GPU gradient of {name} against the emulation", a.grad.cpu(), b.grad)
    return checks.summary()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["corpus", "run_time_corpus", "api", "cuda"])
    p.add_argument("models", nargs="*", help="corpus: the models (tools/corpus.py), checked in one process")
    p.add_argument("--work", required=True, help="scratch folder (generated folders, the build cache)")
    p.add_argument("--random-sizes", nargs=2, metavar=("SEED", "COUNT"),
                   help="run_time_corpus: at COUNT points drawn from the symbols' ranges, not the four fixed ones (a sweep by hand)")
    a = p.parse_args(argv)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    if a.what == "corpus":
        if not a.models:
            p.error("corpus needs a model")
        return corpus_main(a.models, work)
    if a.what == "run_time_corpus":
        seed, count = a.random_sizes or ("", "0")
        return run_time_corpus_main(a.models, work, seed, int(count))
    return api_main(work) if a.what == "api" else cuda_main(work)


if __name__ == "__main__":
    sys.exit(main())
