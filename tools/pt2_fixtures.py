#!/usr/bin/env python3
"""Exports the corpus (tools/corpus.py) with torch.export into PT2 archives.

    .venv/bin/python tools/pt2_fixtures.py                      # every model into examples/pt2/
    .venv/bin/python tools/pt2_fixtures.py --only llama_block --out /tmp/pt2

For each model, built as tools/check_against_torch.py builds it (Model.fn(): seeded, train mode;
Model.inputs(): seeded), thunder_gen.export writes <out>/<model>.pt2, the default training IR,
and <out>/<model>_core.pt2, the same after run_decompositions() (Core ATen), each with its
.inputs/ folder. Stack traces are left out of the archives' node metadata (they name the
checkout's and the venv's absolute paths), so a rerun anywhere writes the same bytes. A model
torch.export refuses is not forced: the exception is printed and
recorded in <out>/README.md, which this script rewrites (with the torch version, the command,
the archives written and their sizes). Exits 1 when a model failed.
"""
import argparse
import sys
import traceback
import warnings
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(TOOLS))

FORMS = (("", False), ("_core", True))  # (file name suffix, decompose)

# What torch.export does to some corpus models, for whoever reads these archives.
NOTES = [
    "Notes:",
    "",
    "- `custom_functions_mlp`: torch.export inlines the `torch.autograd.Function` (TanhGate) and the",
    "  `autograd_function_apply` (quantize) into their forward ops (`tanh`, `sigmoid`, `round`, ...);",
    "  the custom backwards are not in the archive, so its gradients differ from eager's by design.",
    "- `*_bf16`: the default export wraps the whole autocast region in one",
    "  `torch.ops.higher_order.wrap_with_autocast` node with a nested graph (`as_graph`);",
    "  `run_decompositions()` inlines it with explicit `_to_copy` casts.",
    "",
]


def export_model(model, out):
    """Writes both forms of `model`; returns [(file name, None or the exception's text)]."""
    import torch
    import thunder_gen
    results = []
    for suffix, decompose in FORMS:
        name = f"{model.name}{suffix}.pt2"
        torch.manual_seed(0)  # nothing should draw, but the archive must not depend on it
        try:
            thunder_gen.export(model.fn(), model.inputs(), path=out / name, decompose=decompose, stack_traces=False)
            results.append((name, None))
        except Exception as e:  # noqa: BLE001: any refusal is recorded, not forced
            results.append((name, f"{type(e).__module__}.{type(e).__qualname__}: {first_line(e)}"))
            traceback.print_exc(limit=2)
    return results


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def archive_facts(path):
    """(schema version, verifiers, node count, higher-order and extension op targets) of an archive."""
    import json
    import zipfile
    with zipfile.ZipFile(path) as z:
        doc = json.loads(z.read(next(n for n in z.namelist() if n.endswith("/models/model.json"))))
    targets = [n["target"] for n in doc["graph_module"]["graph"]["nodes"]]
    special = sorted({t for t in targets if t.startswith(("torch.ops.higher_order.", "#"))})
    version = doc["schema_version"]
    return f"{version['major']}.{version['minor']}", ",".join(doc["verifiers"]), len(targets), special


def folder_bytes(folder):
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def readme(out, results, command):
    import torch
    written = [(n, out / n) for n, err in results if err is None]
    failed = [(n, err) for n, err in results if err is not None]
    lines = [
        "# The corpus as torch.export archives",
        "",
        f"Written by torch {torch.__version__} with `.venv/bin/python {command}`: for each",
        "model of tools/corpus.py, built as tools/check_against_torch.py builds it (train mode, seeded",
        "weights and inputs), `<model>.pt2` is the default export (the training IR) and",
        "`<model>_core.pt2` the same after `run_decompositions()` (Core ATen). Each has its",
        "`<model>.inputs/` folder (thunder_gen.export: one `<placeholder>.npy` per graph input).",
        "Node metadata holds no `stack_trace` (`stack_traces=False`: the source paths would make the",
        "bytes depend on the checkout); `nn_module_stack` and the rest are as torch wrote them.",
        "",
        "| archive | schema | IR | nodes | higher-order ops | archive bytes | inputs bytes |",
        "|---|---|---|---:|---|---:|---:|",
    ]
    total = 0
    for name, path in written:
        inputs = path.with_name(path.name[: -len(".pt2")] + ".inputs")
        a, i = path.stat().st_size, folder_bytes(inputs)
        total += a + i
        schema, ir, nodes, special = archive_facts(path)
        lines.append(f"| {name} | {schema} | {ir} | {nodes} | {', '.join(special) or '-'} | {a} | {i} |")
    lines += ["", f"{len(written)} archives, {total} bytes in all with their inputs. The inputs folders repeat the",
              "archives' weights, and the `_core` folders the default ones' files (git stores each",
              "distinct file once; the weights are also those of examples/corpus/*.inputs/).", ""]
    lines += NOTES
    if failed:
        lines += ["Not exported (torch.export refused them; recorded, not forced):", ""]
        for name, err in failed:
            default = name.replace("_core.pt2", ".pt2")
            where = " (in `run_decompositions()`: the default export succeeded)" if default != name and default in dict(written) else ""
            lines.append(f"- `{name}`{where}: `{err}`")
        lines.append("")
    (out / "README.md").write_text("\n".join(lines))
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="export only this corpus model (repeatable)")
    parser.add_argument("--out", default=str(ROOT / "examples" / "pt2"), help="output folder (default examples/pt2)")
    a = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import corpus
    models = [m for m in corpus.MODELS if not a.only or m.name in a.only]
    if a.only and len(models) != len(set(a.only)):
        parser.error(f"unknown model among {a.only}; the corpus has {[m.name for m in corpus.MODELS]}")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for model in models:
        for name, err in export_model(model, out):
            print(f"{name}: {'written' if err is None else 'FAILED: ' + err}", flush=True)
            results.append((name, err))
    if not a.only:
        command = "tools/pt2_fixtures.py" + ("" if out.resolve() == (ROOT / "examples" / "pt2").resolve() else f" --out {a.out}")
        print(f"{readme(out, results, command)} bytes written")
    return 1 if any(err for _, err in results) else 0


if __name__ == "__main__":
    sys.exit(main())
