#!/usr/bin/env python3
"""The GPU benchmark's Python half (tools/gpu-bench.sh drives it): the cases, their traces, and
PyTorch eager and torch.compile timed on the same inputs.

    gpu_bench.py export --out DIR [--small] [--no-inputs]
                                                # traces (+ inputs, cotangents) of every case (CPU)
    gpu_bench.py inputs DIR                     # inputs + cotangents for exported traces (no Thunder)
    gpu_bench.py torch DIR [--device cuda] [--repeat N] [--no-compile]
                                                # eager / torch.compile forward+backward medians,
                                                # and the generated code's results checked
    gpu_bench.py report DIR                     # the table, from DIR/torch.json and the harness logs

Cases: memory-bound ops at two sizes (2^24 and 2^26 f32 elements: 64 MB and 256 MB per tensor,
larger than the H200's L2), and the composite GPT-2 MLP block (8192 tokens x 768). Each case is a
function of tensors; `export` captures it with Thunder on the CPU (tools/thunder_export.py) and
writes DIR/<case>/trace.json, DIR/<case>/inputs/*.npy (the cotangent of each output included).
`inputs` writes the same .npy files from the cases' own input factories and the exported traces,
without Thunder: a GPU machine that cannot run Thunder (or receive gigabytes of inputs) makes
them there.
`torch` loads the same .npy files onto the device and times, with CUDA events after warm-up, the
median of forward+backward for eager and for torch.compile; it also measures the device-to-device
copy bandwidth (a 1 GiB copy_) in the same process. `report` reads the generated harness's
medians (DIR/<case>/run.log), computes effective GB/s from the bytes the generated code must move
(manifest.json: inputs and outputs, saved tensors written and read, cotangents, gradients) and
prints one row per case: ms for generated / eager / compile, GB/s, the fraction of copy bandwidth,
and the speedups.
"""
import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))


def dropout(x):
    return F.dropout(x, 0.1, True)


def dropout_residual_layernorm(x, residual, w, b):
    return F.layer_norm(residual + F.dropout(x, 0.1, True), (x.shape[-1],), w, b)


def softmax(x):
    return torch.softmax(x, dim=-1)


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def gelu(x):
    return F.gelu(x, approximate="tanh")


class GptMlp(torch.nn.Module):
    def __init__(self, n_embd=768):
        super().__init__()
        self.c_fc = torch.nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = torch.nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


def rows(elements, width):
    return elements // width, width


def cases(small):
    """(name, function or module factory, inputs factory) for every case and size."""
    # The composite block first, then the large size: a run cut short still has the cases that matter most.
    sizes = [1 << 14, 1 << 12] if small else [1 << 26, 1 << 24]
    width = 256 if small else 4096
    tokens, embd = (64, 64) if small else (8192, 768)
    out = [("gpt2_mlp", lambda: GptMlp(embd),
            lambda: (torch.randn(tokens, embd, generator=torch.Generator().manual_seed(0)).requires_grad_(),))]
    for n in sizes:
        r, c = rows(n, width)
        tag = f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}K"
        g = lambda: torch.Generator().manual_seed(0)  # noqa: E731
        out += [
            (f"dropout_{tag}", lambda: dropout, lambda r=r, c=c: (torch.randn(r, c, generator=g()).requires_grad_(),)),
            (f"dropout_residual_layernorm_{tag}", lambda: dropout_residual_layernorm,
             lambda r=r, c=c: (torch.randn(r, c, generator=g()).requires_grad_(), torch.randn(r, c, generator=g()).requires_grad_(),
                               torch.ones(c).requires_grad_(), torch.zeros(c).requires_grad_())),
            (f"softmax_{tag}", lambda: softmax, lambda r=r, c=c: (torch.randn(r, c, generator=g()).requires_grad_(),)),
            (f"cross_entropy_{tag}", lambda: cross_entropy,
             lambda r=r, c=c: (torch.randn(r, c, generator=g()).requires_grad_(), torch.randint(0, c, (r,), generator=g()))),
            (f"gelu_{tag}", lambda: gelu, lambda r=r, c=c: (torch.randn(r, c, generator=g()).requires_grad_(),)),
        ]
    return out


def export(folder, small, with_inputs=True):
    import thunder_export
    folder.mkdir(parents=True, exist_ok=True)
    listing = []
    for name, make_fn, make_inputs in cases(small):
        fn, args = make_fn(), make_inputs()
        doc, tensors = thunder_export.export_with_inputs(fn, *args, name=name)
        d = folder / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "trace.json").write_text(thunder_export.dumps(doc))
        if with_inputs:
            save_case_inputs(doc, tensors, d)
        listing.append({"name": name, "small": small, "inputs": [i["name"] for i in doc["inputs"]],
                        "outputs": doc["outputs"], "module": isinstance(fn, torch.nn.Module)})
        print(f"exported {name}")
    (folder / "cases.json").write_text(json.dumps(listing, indent=1))


def save_case_inputs(doc, tensors, d):
    """DIR/<case>/inputs: every trace input, and a cotangent (seed 1) for every output."""
    import thunder_export
    (d / "inputs").mkdir(parents=True, exist_ok=True)
    thunder_export.save_inputs(tensors, d / "inputs")
    outs = {o["name"]: o for op in doc["ops"] for o in op["out"]}
    g = torch.Generator().manual_seed(1)
    for o in doc["outputs"]:
        np.save(d / "inputs" / f"cotangent_{o}.npy", torch.randn(outs[o]["shape"], generator=g).numpy())


def factories(case):
    """The function (or module) factory and the inputs factory of an exported case."""
    return next((f, i) for name, f, i in cases(case["small"]) if name == case["name"])


def write_inputs(folder):
    import thunder_export  # input_tensors and save_inputs need no Thunder
    for case in json.loads((folder / "cases.json").read_text()):
        d = folder / case["name"]
        make_fn, make_inputs = factories(case)
        doc = json.loads((d / "trace.json").read_text())
        save_case_inputs(doc, thunder_export.input_tensors(doc, make_fn(), make_inputs(), {}), d)
        print(f"inputs of {case['name']}", flush=True)


def time_ms(step, device, repeat, warmup=3):
    for _ in range(warmup):
        step()
    if device.type != "cuda":
        import time
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            step()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(device, repeat):
    n = (1 << 30) // 4 if device.type == "cuda" else 1 << 22
    src, dst = torch.empty(n, device=device), torch.empty(n, device=device)
    ms = time_ms(lambda: dst.copy_(src), device, repeat)
    return 2 * n * 4 / (ms * 1e-3) / 1e9  # read + write, GB/s


def time_torch(folder, device_name, repeat, compile_too):
    device = torch.device(device_name)
    results = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
               "torch": torch.__version__, "copy_gb_s": copy_bandwidth(device, repeat), "cases": {}}
    for case in json.loads((folder / "cases.json").read_text()):
        d = folder / case["name"]
        make_fn, _ = factories(case)
        fn = make_fn()
        tensors, leaves = [], {}  # the call's arguments; every floating input by its trace name
        params = dict(fn.named_parameters()) if case["module"] else {}
        for name in case["inputs"]:
            t = torch.from_numpy(np.load(d / "inputs" / f"{name}.npy")).to(device)
            if case["module"] and name.startswith("t_"):
                qualified = next(k for k in params if "t_" + k.replace(".", "_") == name)
                params[qualified].data = t
                leaves[name] = params[qualified]
                continue
            if t.is_floating_point():
                t.requires_grad_()
                leaves[name] = t
            tensors.append(t)
        if case["module"]:
            fn = fn.to(device)
        cot = [torch.from_numpy(np.load(d / "inputs" / f"cotangent_{o}.npy")).to(device) for o in case["outputs"]]

        def step(f):
            for t in leaves.values():
                t.grad = None  # the generated backward writes its gradients; eager must not accumulate
            out = f(*tensors)
            out = out if isinstance(out, tuple) else (out,)
            torch.autograd.backward(out, cot)
            return out
        row = {"eager_ms": time_ms(lambda: step(fn), device, repeat)}
        if (d / "results").is_dir() and "dropout" not in case["name"]:
            row["max_rel_err"] = max_relative_error(d / "results", case, step(fn), leaves)
        if (d / "results_tuned").is_dir() and "dropout" not in case["name"]:  # TG_GEMM_TUNE=1's run
            row["max_rel_err_tuned"] = max_relative_error(d / "results_tuned", case, step(fn), leaves)
        if compile_too:
            torch._dynamo.reset()
            compiled = torch.compile(fn, dynamic=False)
            row["compile_ms"] = time_ms(lambda: step(compiled), device, repeat)
        results["cases"][case["name"]] = row
        print(f"{case['name']}: " + ", ".join(f"{k} {v:.3g}" for k, v in row.items()), flush=True)
        (folder / "torch.json").write_text(json.dumps(results, indent=1))  # after each case: a run cut short still reports


def max_relative_error(results, case, outputs, leaves):
    """The largest ||generated - eager|| / ||eager|| over the outputs and the input gradients, in
    float64; the harness wrote its results as <output>.npy and grad_<input>.npy."""
    pairs = [(results / f"{o}.npy", t) for o, t in zip(case["outputs"], outputs)]
    pairs += [(results / f"grad_{name}.npy", t.grad) for name, t in leaves.items()]
    worst = 0.0
    for path, expected in pairs:
        if not path.exists():
            return float("inf")  # a result the harness should have written
        got = torch.from_numpy(np.load(path)).double()
        expected = expected.detach().double().cpu()
        worst = max(worst, float((got - expected).norm() / expected.norm().clamp_min(1e-30)))
    return worst


def moved_bytes(manifest):
    """Bytes the generated forward+backward must move at least: inputs read and outputs written
    (forward), saved tensors written (unless the forward's inputs) and read, cotangents read and
    input gradients written."""
    def size(v):
        sizes = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "b8": 1, "u8": 1}
        return int(np.prod(v["shape"])) * sizes[v["dtype"]] if "shape" in v else 8
    total = sum(size(v) for v in manifest["inputs"]) + 2 * sum(size(v) for v in manifest["outputs"])
    total += sum((1 if s.get("kind") == "input" else 2) * s["bytes"] for s in manifest.get("saved_for_backward", []))
    total += sum(size(v) for v in manifest["inputs"] if v.get("requires_grad"))
    return total


def report_row(folder, name, label, log_name, row, copy):
    """One line of the table: the harness's medians in folder/name/log_name against row's PyTorch times."""
    log = folder / name / log_name
    text = log.read_text() if log.exists() else ""
    phases = {m.group(1): float(m.group(2)) for m in re.finditer(r": (forward|backward): median ([\d.]+) ms", text)}
    if len(phases) < 2:
        print(f"{label:34} {'(no run)':>7}")
        return
    gen = phases["forward"] + phases["backward"]
    manifest = json.loads((folder / name / "out" / "manifest.json").read_text())
    gbs = moved_bytes(manifest) / (gen * 1e-3) / 1e9
    comp, eager = row.get("compile_ms", float("nan")), row.get("eager_ms", float("nan"))
    err_key = "max_rel_err" if log_name == "run.log" else "max_rel_err_tuned"
    err = f"{row[err_key]:.1e}" if err_key in row else "-"
    print(f"{label:34} {phases['forward']:7.3f} {phases['backward']:7.3f} {gen:9.3f} {eager:8.3f} {comp:8.3f} "
          f"{gbs:6.0f} {gbs / copy:7.0%} {eager / gen:7.2f}x {comp / gen:6.2f}x {err:>8}")


def report(folder):
    torch_results = json.loads((folder / "torch.json").read_text())
    copy = torch_results["copy_gb_s"]
    print(f"device: {torch_results['device']}, torch {torch_results['torch']}, device-to-device copy {copy:.0f} GB/s")
    print(f"{'case':34} {'fwd':>7} {'bwd':>7} {'generated':>9} {'eager':>8} {'compile':>8} {'GB/s':>6} {'of copy':>7} "
          f"{'vs eager':>8} {'vs comp':>7} {'rel err':>8}")
    for case in json.loads((folder / "cases.json").read_text()):
        name, row = case["name"], torch_results["cases"].get(case["name"], {})
        report_row(folder, name, name, "run.log", row, copy)
        if (folder / name / "run_tuned.log").exists():  # TG_GEMM_TUNE=1 (gpu-bench.sh, cases with GEMMs)
            report_row(folder, name, name + " (GEMMs tuned)", "run_tuned.log", row, copy)

    nvrtc = folder / "nvrtc.txt"
    if nvrtc.exists():
        print(nvrtc.read_text().rstrip())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--small", action="store_true", help="tiny sizes (a dry run)")
    e.add_argument("--no-inputs", action="store_true", help="traces only (make inputs with `inputs`)")
    i = sub.add_parser("inputs")
    i.add_argument("folder")
    t = sub.add_parser("torch")
    t.add_argument("folder")
    t.add_argument("--device", default="cuda")
    t.add_argument("--repeat", type=int, default=20)
    t.add_argument("--no-compile", action="store_true")
    r = sub.add_parser("report")
    r.add_argument("folder")
    a = p.parse_args(argv)
    if a.cmd == "export":
        export(Path(a.out), a.small, not a.no_inputs)
    elif a.cmd == "inputs":
        write_inputs(Path(a.folder))
    elif a.cmd == "torch":
        time_torch(Path(a.folder), a.device, a.repeat, not a.no_compile)
    else:
        report(Path(a.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
