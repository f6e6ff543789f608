#!/usr/bin/env python3
"""Writes the small torch.export archives the C++ PT2 reader's tests read, for one torch version.

    .venv/bin/python tests/pt2/make_fixtures.py --out tests/pt2/torch-2.9
    /tmp/newtorch/bin/python tests/pt2/make_fixtures.py --out tests/pt2/torch-2.15   # another torch

Whatever python runs it, its torch writes the archives (the folder's name should say which).
Each module below, in train mode with seeded weights and inputs, goes through
thunder_gen.export (python/thunder_gen/pt2.py, the only part of the repository imported) as
`<name>.pt2`, the default training IR, and for mlp and attention also as `<name>_core.pt2`,
after run_decompositions(); each with its `<name>.inputs/` folder. dynamic/ holds exports with
dynamic batch and sequence sizes, each with the sizes its tests generate it at. `written-by.json` records the
torch version, the command, and each archive's schema_version, verifiers and size. Dims are at
most 16, so each archive is a few KB.
"""
import argparse
import json
import shutil
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
from thunder_gen.pt2 import export, recorded_symbol_names  # noqa: E402


class Mlp(nn.Module):
    """LayerNorm, Linear, GELU, Linear, Dropout(0.1), and the residual."""

    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class Attention(nn.Module):
    """Causal grouped-query attention: 4 query heads on 2 key/value heads through
    F.scaled_dot_product_attention(enable_gqa=True); views and transposes, no explicit softmax."""

    def __init__(self, dim=16, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2 * self.kv_heads, self.head_dim).transpose(1, 2).split(self.kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class Embedding(nn.Module):
    """nn.Embedding, a Linear, and the sum of the result."""

    def __init__(self, vocab=16, dim=8, out=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, out)

    def forward(self, ids):
        return self.proj(self.embed(ids)).sum()


class AutocastAttention(nn.Module):
    """The attention above under CPU bf16 autocast: a dynamic-shape export passes the region its
    sizes as SymInt operands."""

    def __init__(self):
        super().__init__()
        self.inner = Attention()

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner(x)


class RopeAttention(nn.Module):
    """Token ids embedded, q, k and v picked out of one projection (select on a constant dim),
    rotary halves of each head (slices of the head dim, a cat), causal attention, and the positions'
    own embedding table indexed with arange(T): slices and embeddings whose sizes are constants
    beside the symbolic ones."""

    def __init__(self, vocab=16, dim=16, heads=2, max_seq=24):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(max_seq, dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)

    def rotate(self, x):
        half = self.head_dim // 2
        return x * 0.5 + torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, ids):
        b, t = ids.shape
        x = self.embed(ids) + self.position(torch.arange(t))
        qkv = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = self.rotate(qkv[0]), self.rotate(qkv[1]), qkv[2]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class ShiftedLoss(nn.Module):
    """A language model's loss: each position's logits against the next token (logits[:, :-1]
    against targets[:, 1:], sizes T - 1 and B*T - B), cross-entropy's mean."""

    def __init__(self, dim=16, vocab=32):
        super().__init__()
        self.head = nn.Linear(dim, vocab)

    def forward(self, x, targets):
        logits = self.head(x)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), targets[:, 1:].reshape(-1))


class CausalConv(nn.Module):
    """A sequence mixer's convolutions over time: a depthwise causal conv (padded by 3, cut back
    to T), SiLU, then a strided conv halving T ((T - 1)//2 + 1) beside every other channel and
    step (a strided slice)."""

    def __init__(self, channels=16):
        super().__init__()
        self.mix = nn.Conv1d(channels, channels, 4, padding=3, groups=channels)
        self.down = nn.Conv1d(channels, channels // 2, 3, stride=2, padding=1)

    def forward(self, x):
        s = F.silu(self.mix(x)[..., :x.shape[-1]])
        return self.down(s), torch.tanh(s[:, ::2, ::2])


class LastToken(nn.Module):
    """A language model's head at the last position (h[:, -1], starting at T - 1) beside a pooled
    window of the last four (h[:, -4:], starting at T - 4): slices counted from the end of seq."""

    def __init__(self, dim=16, vocab=8):
        super().__init__()
        self.head = nn.Linear(dim, vocab)

    def forward(self, x):
        h = torch.tanh(x)
        return self.head(h[:, -1]), torch.sigmoid(h[:, -4:]).sum(1)


class AnyPooled(nn.Module):
    """Pooling over a seq that may be empty (seq from 0): whether any token's projection is
    positive, aten.any over seq (false over no tokens), gates the tokens' sum (0 over none); beside
    it a sum of squares, whose gradient reaches x at every seq but 0. A scale, not a Linear: a
    matrix product over batch*seq tokens is refused where that may be 0."""

    def __init__(self, dim=8):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        h = torch.tanh(x * self.scale)
        return h.sum(1) * (h > 0).any(1), (h * h).sum(1)


class Sliced(nn.Module):
    """Windows of seq from literal starts: h[:, 5:] and h[:, 3:] (starting at 5 and 3 at every
    size; their gradients, pads by those starts, are summed into h's) and every third position
    from 1 (h[:, 1::3], (seq + 1)//3 of them). (Until 150b643 such a start was a size unknown at
    other sizes, and the backward's workspace a number: no folder for every size.)"""

    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.tanh(self.proj(x))
        return torch.sin(h[:, 5:]), h[:, 3:].sum(1), h[:, 1::3] * 3


class Sized(nn.Module):
    """Sizes the graph computes with as SymInts: h scaled by seq (x.shape[1]), positions
    arange(P, P + T) after `past` (P its length) looked up in a table, and a sum over the tokens
    divided by their count (B * T, a loss's normalisation); beside them token embeddings whose row
    0 is padding (no gradient)."""

    def __init__(self, dim=8, positions=64, vocab=6):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.pos = nn.Embedding(positions, dim)
        self.tok = nn.Embedding(vocab, dim, padding_idx=0)

    def forward(self, x, past, ids):
        B, T, P = x.shape[0], x.shape[1], past.shape[1]
        h = torch.tanh(self.proj(x)) * T + self.tok(ids)
        h = h + self.pos(torch.arange(P, P + T, device=x.device))[None]
        return h, (h * past.mean(1, keepdim=True)).sum() / (B * T)


def batch_and_seq(names, seq_min):
    """dynamic_shapes giving each input's dims 0 and 1 one batch and one seq Dim."""
    b, t = torch.export.Dim("batch", min=1, max=4), torch.export.Dim("seq", min=seq_min, max=24)
    return {name: {0: b, 1: t} for name in names}


def floats(g, *shape):
    return torch.randn(*shape, generator=g).requires_grad_(True)


# name -> (module class, example inputs from a seeded generator, also run_decompositions()?)
CASES = {
    "mlp": (Mlp, lambda g: (floats(g, 2, 4, 8),), True),
    "attention": (Attention, lambda g: (floats(g, 1, 4, 16),), True),
    "embedding": (Embedding, lambda g: (torch.randint(0, 16, (2, 4), generator=g),), False),
}


# Dynamic-shape exports (dynamic/<name>.pt2): name -> (module class, example inputs, dynamic_shapes).
# Each gets dynamic/<name>.sizes: the sizes its test generates it at, one line per folder.
DYNAMIC_CASES = {
    "mlp_dynamic": (Mlp, lambda g: (floats(g, 3, 6, 8),),
                    lambda: {"x": {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("seq", min=1, max=32)}}),
    "attention_dynamic": (Attention, lambda g: (floats(g, 2, 6, 16),),
                          lambda: {"x": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=2, max=24)}}),
    "attention_bf16_dynamic": (AutocastAttention, lambda g: (floats(g, 2, 6, 16),),
                               lambda: {"x": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=2, max=24)}}),
    "rope_dynamic": (RopeAttention, lambda g: (torch.randint(0, 16, (2, 6), generator=g),),
                     lambda: {"ids": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=2, max=24)}}),
    # (seq from 3: torch.export's guards keep T - 1 above 1)
    "shifted_loss_dynamic": (ShiftedLoss, lambda g: (floats(g, 2, 6, 16), torch.randint(0, 32, (2, 6), generator=g)),
                             lambda: batch_and_seq(["x", "targets"], 3)),
    # (seq from 3: torch.export's guards keep (seq + 1)//2 above 1)
    # (seq from 5: at 4, h[:, -4:] would be all of h, a guard torch.export keeps)
    "last_dynamic": (LastToken, lambda g: (floats(g, 2, 6, 16),), lambda: batch_and_seq(["x"], 5)),
    # (seq from 7: torch.export's guards keep seq - 5 above 1)
    "sliced_dynamic": (Sliced, lambda g: (floats(g, 2, 9, 8),),
                       lambda: {"x": {0: torch.export.Dim("batch", min=1, max=8), 1: torch.export.Dim("seq", min=7, max=64)}}),
    "sized_dynamic": (Sized, lambda g: (floats(g, 2, 6, 8), floats(g, 2, 5, 8), torch.randint(0, 6, (2, 6), generator=g)),
                      lambda: {"x": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=2, max=24)},
                               "past": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("past", min=1, max=32)},
                               "ids": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=2, max=24)}}),
    # (seq from 0: the any over no tokens is false, where an amax would have no value)
    "any_dynamic": (AnyPooled, lambda g: (floats(g, 2, 6, 8),),
                    lambda: {"x": {0: torch.export.Dim("batch", min=1, max=4), 1: torch.export.Dim("seq", min=0, max=24)}}),
    "conv_dynamic": (CausalConv, lambda g: (floats(g, 2, 16, 9),),
                     lambda: {"x": {0: torch.export.Dim("batch", min=1, max=4), 2: torch.export.Dim("seq", min=3, max=24)}}),
}


def model_json(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(next(n for n in z.namelist() if n.endswith("/models/model.json"))))


def test_sizes(doc, names):
    """Four assignments of the archive's symbols, as {name: size} (the name given to the symbol's
    Dim): each at its least size, at 3, at 17 (odd, not a multiple of 16), at its largest; clamped
    into its range_constraints."""
    ranges = {names.get(k, k): v for k, v in doc["range_constraints"].items() if k.isidentifier()}
    picks = []
    for pick in ("min", 3, 17, "max"):
        sizes = {}
        for name, r in sorted(ranges.items()):
            lo, hi = r["min_val"], r["max_val"]
            sizes[name] = lo if pick == "min" else hi if pick == "max" else min(max(pick, lo), hi)
        if sizes not in picks:
            picks.append(sizes)
    return picks


def shape_at(meta, sizes, names):
    """A tensor_values entry's shape with its symbols (plain `Symbol('sN', ...)` sizes) at `sizes`."""
    def symbol(size):
        s = size["as_expr"]["expr_str"].split("'")[1]
        return sizes[names.get(s, s)]
    return [size["as_int"] if "as_int" in size else symbol(size) for size in meta["sizes"]]


def write_dynamic_case(name, out):
    """Writes <name>.pt2, <name>.sizes (a line per test: `batch=3,seq=17`, the names given to
    Dim) and, per line, the harness's inputs at those sizes: <name>.<batch_3_seq_17>.inputs/ (user inputs drawn from a seeded
    generator, the parameters as the archive holds them)."""
    build, inputs, dynamic_shapes = DYNAMIC_CASES[name]
    torch.manual_seed(0)
    path = export(build().train(), inputs(torch.Generator().manual_seed(1)), path=out / f"{name}.pt2", dynamic_shapes=dynamic_shapes())
    doc, names = model_json(path), recorded_symbol_names(path)
    graph, example = doc["graph_module"]["graph"], out / f"{name}.inputs"
    lines = []
    examples = inputs(torch.Generator().manual_seed(1))
    for sizes in test_sizes(doc, names):
        line = ",".join(f"{k}={v}" for k, v in sizes.items())
        lines.append(line)
        folder = out / f"{name}.{line.replace('=', '_').replace(',', '_')}.inputs"
        folder.mkdir(exist_ok=True)
        g = torch.Generator().manual_seed(2)
        users = iter(examples)
        for spec in doc["graph_module"]["signature"]["input_specs"]:
            arg = next(iter(spec.values()))["arg"]
            placeholder = arg["as_tensor"]["name"] if "as_tensor" in arg else arg["name"]
            if "user_input" in spec:
                shape = shape_at(graph["tensor_values"][placeholder], sizes, names)
                given = next(users)  # (token ids drawn as ids, up to the example's largest)
                x = torch.randn(*shape, generator=g) if given.is_floating_point() else torch.randint(0, int(given.max()) + 1, shape, generator=g)
                np.save(folder / f"{placeholder}.npy", x.numpy(), allow_pickle=False)
            else:
                shutil.copy(example / f"{placeholder}.npy", folder / f"{placeholder}.npy")
    shutil.rmtree(example)
    (out / f"{name}.sizes").write_text("\n".join(lines) + "\n")
    return {f"dynamic/{path.name}": archive_facts(path)}


def archive_facts(path):
    with zipfile.ZipFile(path) as z:
        doc = json.loads(z.read(next(n for n in z.namelist() if n.endswith("/models/model.json"))))
    return {"schema_version": doc["schema_version"], "verifiers": doc["verifiers"],
            "torch_version": doc.get("torch_version"), "bytes": path.stat().st_size}


def write_case(name, out):
    """Writes <name>.pt2 (and <name>_core.pt2); returns their archive_facts by file name."""
    build, inputs, with_core = CASES[name]
    facts = {}
    for suffix, decompose in (("", False), ("_core", True)):
        if decompose and not with_core:
            continue
        torch.manual_seed(0)
        module = build().train()
        path = export(module, inputs(torch.Generator().manual_seed(1)), path=out / f"{name}{suffix}.pt2", decompose=decompose)
        facts[path.name] = archive_facts(path)
    return facts


def main(argv=None):
    default = ROOT / "tests" / "pt2" / ("torch-" + ".".join(torch.__version__.split("+")[0].split(".")[:2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(default), help=f"the version folder (default {default.relative_to(ROOT)})")
    parser.add_argument("--only", action="append", choices=sorted(DYNAMIC_CASES),
                        help="write this dynamic case alone (the others kept, written-by.json updated); repeatable")
    a = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    archives = {}
    if a.only and (out / "written-by.json").exists():
        archives = json.loads((out / "written-by.json").read_text())["archives"]
    for name in [] if a.only else CASES:
        archives.update(write_case(name, out))
    (out / "dynamic").mkdir(exist_ok=True)
    for name in a.only or DYNAMIC_CASES:
        archives.update(write_dynamic_case(name, out / "dynamic"))
    record = {"torch": torch.__version__, "python": sys.version.split()[0],
              "command": f"python tests/pt2/make_fixtures.py --out {a.out}", "archives": archives}
    (out / "written-by.json").write_text(json.dumps(record, indent=1) + "\n")
    for file, f in archives.items():
        v = f["schema_version"]
        print(f"{out / file}: schema {v['major']}.{v['minor']}, {','.join(f['verifiers'])}, {f['bytes']} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
