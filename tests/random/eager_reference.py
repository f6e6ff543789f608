"""PyTorch references for the random traces of tools/random_traces.py, forward and backward.

    eager: PyTorch eager semantics. Every value is held in its own dtype, so every op's result is
           rounded to its dtype as PyTorch rounds it (a bf16 add rounds to bf16, a bf16 sum
           accumulates in f32 and rounds once); gradients by autograd, in the values' dtypes.
    wide:  the semantics of reference/reference.cpp (thunder-gen-check): floats held in f64,
           rounded only at explicit conversions.
    eager with `noise`: eager, with every computed float value that is not exact (the generator
           names the exact ones) and every gradient flowing into a value moved by one unit in its
           last place, up or down at random: a result that moves by half its tolerance under that is
           ill-conditioned (an implementation that rounds elsewhere, as a fused kernel does, may
           land anywhere in that range), and it is not checked. Coherent noise moves every element
           of a value the same way: a broadcast value's elements are one number, which a fused
           kernel rounds the same way in each, so their errors add up where random signs cancel.

Prims follow Thunder's semantics as reference/reference.cpp reads them (integer division
truncates, reductions take dim lists and an empty list is the identity, prod over several dims
one dim at a time); torch-level ops are PyTorch's own functions. Random draws (dropout, uniform,
attention dropout) replay the generated code's Philox streams (tools/check_against_torch.py's
philox_uniform), one stream per draw in trace order, as src/lower/rng.cpp binds them.

compare() is reference/compare.cpp's test: |a - e| <= atol + rtol * max(|e|, rms(e)) with the
same table (tools/torch_reference.py's TOLERANCES); integers and bools must be equal.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

TOOLS = Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
from op_declarations import aten_call, binary_exact_prims, binary_float_prims, declared_signature, op_table, torch_function_named, unary_float_prims  # noqa: E402
from torch_reference import DTYPES, TOLERANCES, load_npy  # noqa: E402

FLOATS = ("f32", "f64", "bf16", "f16")
SIGNIFICAND_BITS = {"bf16": 8, "f16": 11, "f32": 24, "f64": 53}
MIN_NORMAL_EXPONENT = {"bf16": -126, "f16": -14, "f32": -126, "f64": -1022}  # below: subnormals, spaced as at this exponent


def storage(dt: str) -> torch.dtype:
    return DTYPES[dt][0]


# ---- the interpreter ---------------------------------------------------------------------------


class Interpreter:
    """Runs a trace (format v1, as tools/random_traces.py writes them) in one of the modes above."""

    def __init__(self, trace: dict, mode: str, philox: tuple[int, int] = (0, 0), noise: tuple[set, int, bool] | None = None):
        assert mode in ("eager", "wide")
        self.trace = trace
        self.wide = mode == "wide"
        self.philox = philox
        self.stream = 0
        self.noise_exact, noise_seed, self.coherent = noise if noise else (set(), 0, False)
        self.noise = torch.Generator().manual_seed(noise_seed) if noise else None
        self.decls: dict[str, dict] = {}
        self.env: dict[str, torch.Tensor] = {}
        self.unperturbed: dict[str, torch.Tensor] = {}  # the trace's outputs, as computed

    def held(self, dt: str) -> torch.dtype:
        """The dtype a value of Thunder dtype dt is held in."""
        return torch.float64 if self.wide and dt in FLOATS else storage(dt)

    def run(self, inputs: dict[str, torch.Tensor]) -> list[torch.Tensor]:
        for d in self.trace["inputs"]:
            dt = d.get("dtype", d.get("scalar"))
            self.decls[d["name"]] = d
            self.env[d["name"]] = inputs[d["name"]]
        for op in self.trace["ops"]:
            self.one(op)
        return [self.unperturbed.get(n, self.env[n]) for n in self.trace["outputs"]]

    def one(self, op: dict) -> None:
        fn = OPS.get(op["op"]) or declared_op(op["op"])
        if fn is None:
            raise NotImplementedError(f"{op['op']}: no rule in tests/random/eager_reference.py, and its declaration names no "
                                      "PyTorch function or ATen call to compute it by")
        args = [self.resolve(a) for a in op.get("args", [])]
        kwargs = {k: self.resolve(v) for k, v in op.get("kwargs", {}).items()}
        results = fn(Call(self, op), *args, **kwargs)
        if isinstance(results, torch.Tensor):
            results = [results]
        for decl, r in zip(op["out"], results):
            self.decls[decl["name"]] = decl
            r = r.to(self.held(decl["dtype"])).contiguous()
            assert list(r.shape) == decl["shape"], (op["op"], list(r.shape), decl["shape"])
            if decl["name"] in self.trace["outputs"]:
                self.unperturbed[decl["name"]] = r
            self.env[decl["name"]] = self.perturbed(r, decl)

    def perturbed(self, r: torch.Tensor, decl: dict) -> torch.Tensor:
        """With noise: a computed float value as later ops read it moved by a unit in its last place
        (not the exact ones), and its gradient likewise. A trace output itself stays as
        computed: both sides round it once."""
        if self.noise is None or decl["dtype"] not in FLOATS:
            return r
        if r.requires_grad:
            r.register_hook(lambda g, dt=decl["dtype"]: self.jitter(g, dt))
        if decl["name"] in self.noise_exact:
            return r
        return self.jitter(r, decl["dtype"])

    def jitter(self, x: torch.Tensor | None, dt: str) -> torch.Tensor | None:
        """x moved by one unit in the last place of dt, up or down at random: another order of
        rounding (a fused kernel's f32 sum against PyTorch's, say) can land one unit away."""
        if x is None:  # no gradient flows into this value
            return None
        wide = x.detach().to(torch.float64)
        exponent = torch.floor(torch.log2(wide.abs().clamp_min(1e-300))).clamp_min(MIN_NORMAL_EXPONENT[dt])
        ulp = torch.exp2(exponent - (SIGNIFICAND_BITS[dt] - 1))
        signs = torch.randint(0, 2, () if self.coherent else x.shape, generator=self.noise).to(torch.float64) * 2 - 1
        return x + (signs * ulp).where(wide.isfinite(), 0.0).to(x.dtype)

    def resolve(self, a):
        if isinstance(a, str):
            return self.env[a]
        if isinstance(a, list):
            return [self.resolve(x) for x in a]
        if isinstance(a, dict):
            (key, text), = a.items()
            if key == "float":
                return float(text)
            return TypedLiteral(key, text)
        return a

    def next_stream(self) -> int:
        self.stream += 1
        return self.stream - 1


@dataclass(frozen=True)
class TypedLiteral:
    kind: str  # dtype, device, str
    text: str


class Call:
    """What an op's function needs besides its arguments."""

    def __init__(self, interp: Interpreter, op: dict):
        self.i = interp
        self.op = op
        self.outs = op["out"]

    def out_dt(self, k: int = 0) -> str:
        return self.outs[k]["dtype"]

    def held(self, dt: str) -> torch.dtype:
        return self.i.held(dt)

    def draws(self, n: int) -> torch.Tensor:
        """The next Philox stream's first n draws, as the generated code draws them."""
        from check_against_torch import philox_uniform
        seed, offset = self.i.philox
        return torch.from_numpy(philox_uniform(seed, offset, n, self.i.next_stream()).copy())


def text(x) -> str:
    return x.text if isinstance(x, TypedLiteral) else x


def operand_dtype(a, b=None) -> torch.dtype:
    for x in (a, b):
        if isinstance(x, torch.Tensor):
            return x.dtype
    raise ValueError("no tensor operand")


def number(x):
    return x.item() if isinstance(x, torch.Tensor) else x


# ---- prims ----


def unary(fn, integers_unchanged: bool = False):
    def prim(cx: Call, a):
        if integers_unchanged and not a.is_floating_point():
            return a.clone()
        return fn(a)
    return prim


def in_opmath(fn):
    """fn, or where PyTorch's CPU kernel has no 16-bit version (torch.special.ndtri), fn in f32
    rounded once to the 16-bit dtype: what PyTorch's CUDA kernels compute (opmath is f32)."""
    def call(a):
        try:
            return fn(a)
        except NotImplementedError:
            if a.dtype not in (torch.bfloat16, torch.float16):
                raise
            return fn(a.float()).to(a.dtype)
    return call


def binary(fn):
    """A binary prim; a number operand becomes a 0-d tensor of the other's dtype where torch wants
    tensors (maximum, atan2, a number first), else stays a number (computed in the op's own math)."""
    def prim(cx: Call, a, b):
        if isinstance(a, torch.Tensor):
            try:
                return fn(a, b)
            except TypeError:
                return fn(a, torch.tensor(b, dtype=a.dtype))
        return fn(torch.tensor(a, dtype=b.dtype), b)
    return prim


def torch_form(fn):
    """A torch-level elementwise call (torch.add, torch.exp, ...): PyTorch's own broadcasting and
    type promotion. A scalar input is a Python number there, as Thunder's number proxies are."""
    def call(cx: Call, *args, **kwargs):
        def python(a, name):
            scalar = isinstance(name, str) and "scalar" in cx.i.decls.get(name, {})
            return a.item() if scalar and isinstance(a, torch.Tensor) else text(a) if isinstance(a, TypedLiteral) else a
        args = [python(a, n) for a, n in zip(args, cx.op.get("args", []))]
        kwargs = {k: python(v, cx.op.get("kwargs", {}).get(k)) for k, v in kwargs.items() if v is not None}
        return fn(*args, **kwargs)
    return call


def div(cx: Call, a, b):
    if operand_dtype(a, b).is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


def where(cx: Call, pred, a, b):
    dt = cx.held(cx.out_dt())
    a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=dt)
    b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=dt)
    return torch.where(pred if isinstance(pred, torch.Tensor) else torch.tensor(bool(pred)), a, b)


def convert_element_type(cx: Call, a, dtype):
    dt = text(dtype)
    if dt == "b8":
        return a != 0
    return a.to(storage(dt)).to(cx.held(dt))


def full(cx: Call, shape, fill_value, *, device, dtype):
    return torch.full(shape, number(fill_value), dtype=cx.held(text(dtype)))


def iota(cx: Call, length, *, start, step, device, dtype):
    return (torch.arange(length, dtype=torch.int64) * step + start).to(cx.held(text(dtype)))


def uniform(cx: Call, shape, minval, maxval, *, device, dtype, seed=None, offset=None, stream=0):
    n = math.prod(shape)
    if seed is None:  # prims.uniform: bound to the trace's Philox seed and offset, a stream of its own
        u = cx.draws(n)
    else:
        from check_against_torch import philox_uniform
        u = torch.from_numpy(philox_uniform(int(number(seed)), int(number(offset)), n, int(stream)).copy())
    lo, hi = float(number(minval)), float(number(maxval))
    # In f32, as the kernel computes it (and reference/reference.cpp).
    x = torch.tensor(lo, dtype=torch.float32) + u * torch.tensor(hi - lo, dtype=torch.float32)
    return x.reshape(shape).to(storage(text(dtype))).to(cx.held(text(dtype)))


def broadcast_in_dim(cx: Call, a, shape, broadcast_dimensions):
    view = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        view[d] = a.shape[i]
    return a.reshape(view).expand(shape)


def reshape(cx: Call, a, shape):
    return a.reshape(shape)


def transpose(cx: Call, a, permutation):
    return a.permute(permutation)


def squeeze(cx: Call, a, dims):
    return a.reshape(cx.outs[0]["shape"])


def slice_prim(cx: Call, a, start_indices, end_indices, strides=None):
    strides = strides or [1] * a.dim()
    return a[tuple(slice(s, e, st) for s, e, st in zip(start_indices, end_indices, strides))]


def pad(cx: Call, a, padding_value, padding_config):
    """One dim at a time: output position lo + p * (interior + 1) takes input element p."""
    x = a
    for d, (lo, hi, interior) in enumerate(padding_config):
        n = x.shape[d]
        out_len = lo + hi + n + (n - 1) * interior if n > 0 else lo + hi
        shape = list(x.shape)
        shape[d] = out_len
        padded = torch.full(shape, number(padding_value), dtype=x.dtype)
        src = [p for p in range(n) if 0 <= lo + p * (interior + 1) < out_len]
        if src:
            to = torch.tensor([lo + p * (interior + 1) for p in src])
            padded = padded.index_copy(d, to, x.index_select(d, torch.tensor(src)))
        x = padded
    return x


def cat(cx: Call, tensors, dim=0):
    return torch.cat(list(tensors), dim)


def prim_sum(cx: Call, a, dims):
    if not dims:
        return a.clone()
    if a.is_floating_point():
        return a.sum(dims)
    return a.sum(dims, dtype=torch.int64)


def prod(cx: Call, a, dims):
    for d in sorted(dims, reverse=True):
        a = a.prod(d) if a.is_floating_point() else a.prod(d, dtype=torch.int64)
    return a


def amax(cx: Call, a, dims):
    return a.amax(dims) if dims else a.clone()


def amin(cx: Call, a, dims):
    return a.amin(dims) if dims else a.clone()


def var_mean(cx: Call, a, dims, *, correction):
    return torch.var_mean(a, dims, correction=number(correction))


def var(cx: Call, a, dims, *, correction):
    return torch.var(a, dims, correction=number(correction))


def argmax(cx: Call, a, dim):
    return torch.argmax(a, dim)


def argmin(cx: Call, a, dim):
    return torch.argmin(a, dim)


def matmul(cx: Call, a, b, *, bias=None, epilogue="none", transpose_a=False, transpose_b=False):
    left, right = (a.t() if transpose_a else a), (b.t() if transpose_b else b)
    c = torch.matmul(left, right)
    if bias is not None:
        c = c + bias
    ep = text(epilogue)
    if ep == "gelu_tanh":
        return F.gelu(c, approximate="tanh")
    if ep == "gelu_tanh_aux":
        return F.gelu(c, approximate="tanh"), c
    if ep == "bias_grad":
        return c, left.sum(-1)
    return c


# ---- torch-level ops ----


def softmax_like(fn):
    def op(cx: Call, a, dim, dtype=None):
        if dtype is not None:
            return fn(a, dim, dtype=cx.held(text(dtype)))
        return fn(a, dim)
    return op


def gelu(cx: Call, a, approximate="none"):
    return F.gelu(a, approximate=text(approximate))


def linear(cx: Call, a, w, bias=None):
    return F.linear(a, w, bias)


def torch_reduction(fn):
    def op(cx: Call, a, dim=None, keepdim=False, *, dtype=None):
        kwargs = {"dtype": cx.held(text(dtype))} if dtype is not None else {}
        dims = list(range(a.dim())) if dim is None else ([dim] if isinstance(dim, int) else dim)
        if not dims:
            return a.to(kwargs.get("dtype", a.dtype)).clone()
        return fn(a, dims, keepdim=keepdim, **kwargs)
    return op


def layer_norm(cx: Call, a, normalized_shape, weight=None, bias=None, eps=1e-5):
    return F.layer_norm(a, normalized_shape, weight, bias, eps)


def rms_norm(cx: Call, a, normalized_shape, weight=None, eps=None):
    if eps is None:  # the dtype's machine epsilon, as PyTorch's default (of the input's dtype)
        eps = torch.finfo(storage(cx.out_dt())).eps
    return F.rms_norm(a, normalized_shape, weight, eps)


def cross_entropy(cx: Call, a, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return F.cross_entropy(a, target.long(), ignore_index=ignore_index, reduction=text(reduction), label_smoothing=label_smoothing)


def nll_loss(cx: Call, a, target, weight=None, ignore_index=None, reduction="mean"):
    return F.nll_loss(a, target.long(), ignore_index=-1 if ignore_index is None else ignore_index, reduction=text(reduction))


def split(cx: Call, a, split_size_or_sections, dim=0):
    return [p.contiguous() for p in torch.split(a, split_size_or_sections, dim)]


def torch_var(cx: Call, a, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if correction is None:
        correction = 1 if unbiased is None else int(bool(unbiased))
    dims = list(range(a.dim())) if dim is None else ([dim] if isinstance(dim, int) else dim)
    return torch.var(a, dims, correction=correction, keepdim=keepdim)


def embedding(cx: Call, a, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    return F.embedding(a.long(), weight)


def sdpa(cx: Call, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, seed=None, offset=None, stream=0):
    if dropout_p == 0:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale)
    # With dropout: the math form, the mask from the generated code's Philox stream for this call.
    s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.size(-1)))
    if is_causal:
        s = s.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    p = torch.softmax(s, dim=-1)
    keep = (cx.draws(p.numel()) < np.float32(1.0 - dropout_p)).reshape(p.shape)
    return (p * keep.to(p.dtype) * (1.0 / (1.0 - dropout_p))) @ v


def dropout(cx: Call, a, p=0.5, training=True, inplace=False, *, seed=None, offset=None, stream=0):
    keep = (cx.draws(a.numel()) < np.float32(1.0 - p)).reshape(a.shape)  # every call takes a stream
    if not training or p == 0:
        return a.clone()
    return a * keep.to(a.dtype) * (1.0 / (1.0 - p))


def copy(cx: Call, a, order=None):
    return a.clone()


_UNARY = "abs neg sign signbit isfinite bitwise_not detach".split()
_DECLARED = unary_float_prims()  # src/ops/unary_float_prims.def
# src/ops/binary_float_prims.def and binary_exact_prims.def
_DECLARED_BINARY = {**binary_float_prims(), **binary_exact_prims()}

OPS = {
    **{f"prims.{n}": unary(getattr(torch, n)) for n in _UNARY},
    **{f"prims.{n}": unary(in_opmath(d.torch_function)) for n, d in _DECLARED.items()},
    **{d.torch_name: torch_form(in_opmath(d.torch_function)) for d in _DECLARED.values() if d.torch_name != "torch.tanh"},
    **{f"prims.{n}": unary(getattr(torch, n), integers_unchanged=True) for n in ("floor", "ceil", "round", "trunc")},
    **{f"prims.{n}": binary(d.torch_function) for n, d in _DECLARED_BINARY.items()},
    **{d.torch_name: torch_form(d.torch_function) for d in _DECLARED_BINARY.values()},
    **{f"torch.{n}": torch_form(getattr(torch, n)) for n in _UNARY + ["floor", "ceil", "round", "trunc", "where", "lerp"]
       if n != "tanh"},
    "prims.div": div,
    "prims.where": where,
    "prims.lerp": lambda cx, start, end, weight: torch.lerp(start, end, weight),
    "prims.convert_element_type": convert_element_type,
    "prims.full": full,
    "prims.iota": iota,
    "prims.uniform": uniform,
    "prims.uniform_philox": uniform,
    "prims.broadcast_in_dim": broadcast_in_dim,
    "prims.reshape": reshape,
    "prims.transpose": transpose,
    "prims.squeeze": squeeze,
    "prims.slice_prim": slice_prim,
    "prims.pad": pad,
    "prims.cat": cat,
    "prims.sum": prim_sum,
    "prims.prod": prod,
    "prims.amax": amax,
    "prims.amin": amin,
    "prims.var": var,
    "prims.var_mean": var_mean,
    "prims.argmax": argmax,
    "prims.argmin": argmin,
    "prims.matmul": matmul,
    "torch.softmax": softmax_like(torch.softmax),
    "torch.log_softmax": softmax_like(torch.log_softmax),
    "torch.relu": lambda cx, a, inplace=False: torch.relu(a),
    "torch.sigmoid": lambda cx, a: torch.sigmoid(a),
    "torch.tanh": lambda cx, a: torch.tanh(a),
    "torch.nn.functional.silu": lambda cx, a, inplace=False: F.silu(a),
    "torch.nn.functional.gelu": gelu,
    "torch.nn.functional.linear": linear,
    "torch.matmul": lambda cx, a, b: torch.matmul(a, b),
    "torch.reshape": reshape,
    "torch.permute": lambda cx, a, dims: a.permute(dims),
    "torch.transpose": lambda cx, a, dim0, dim1: a.transpose(dim0, dim1),
    "torch.unsqueeze": lambda cx, a, dim: a.unsqueeze(dim),
    "torch.sum": torch_reduction(torch.sum),
    "torch.mean": torch_reduction(torch.mean),
    "torch.nn.functional.layer_norm": layer_norm,
    "torch.nn.functional.rms_norm": rms_norm,
    "torch.nn.functional.cross_entropy": cross_entropy,
    "torch.nn.functional.nll_loss": nll_loss,
    "torch.cat": cat,
    "torch.split": split,
    "torch.var": torch_var,
    "torch.nn.functional.embedding": embedding,
    "torch.nn.functional.scaled_dot_product_attention": sdpa,
    "torch.nn.functional.dropout": dropout,
    "prims.shallow_copy": copy,
    "prims.stride_order": copy,
}


def declared_op(op_id: str):
    """An op with no entry in OPS, computed from its declaration (thunder-gen list-ops --json): a
    torch-level call by the PyTorch function its id names (PyTorch's own binding, defaults and
    eager roundings), a prim by the ATen call it declares."""
    row = next((r for r in op_table() if r["id"] == op_id), None)
    if row is None or "form_of" in row:
        return None
    if op_id.startswith("torch."):
        f = torch_function_named(op_id)
        return lambda cx, *args, **kwargs: f(*args, **kwargs)
    if "aten" not in row:
        return None
    signature = declared_signature(row)

    def call(cx, *args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return aten_call(row, bound.arguments)
    return call


# ---- forward and backward ----------------------------------------------------------------------


def input_dtype(decl: dict) -> str:
    return decl.get("dtype", decl.get("scalar"))


def evaluate(trace: dict, folder: Path, mode: str, noise: tuple[set, int, bool] | None = None) -> dict[str, torch.Tensor]:
    """Every output and every grad_<input> (inputs that require grad) of the trace on the inputs and
    cotangents in `folder` (a harness's --outputs folder, or the generator's inputs folder)."""
    interp = Interpreter(trace, mode, philox_of(folder), noise)
    leaves = {}
    for d in trace["inputs"]:
        t = load_npy(folder / f"{d['name']}.npy", input_dtype(d))
        t = t.to(interp.held(input_dtype(d)))
        if d.get("requires_grad"):
            t.requires_grad_(True)
        leaves[d["name"]] = t
    with torch.enable_grad():
        outs = interp.run(leaves)
    result = {name: o.detach() for name, o in zip(trace["outputs"], outs)}
    wanting = [d["name"] for d in trace["inputs"] if d.get("requires_grad")]
    if wanting:
        result.update(gradients(trace, folder, outs, leaves, wanting))
    return result


def values(trace: dict, folder: Path) -> dict[str, torch.Tensor]:
    """Every value of the trace, run eager on the inputs in `folder` (the minimizer turns values
    into inputs holding them)."""
    interp = Interpreter(trace, "eager", philox_of(folder))
    inputs = {d["name"]: load_npy(folder / f"{d['name']}.npy", input_dtype(d)) for d in trace["inputs"]}
    interp.run(inputs)
    return {n: t.detach() for n, t in interp.env.items()}


def gradients(trace: dict, folder: Path, outs: list, leaves: dict, wanting: list) -> dict[str, torch.Tensor]:
    roots, seeds = [], []
    for name, o in zip(trace["outputs"], outs):
        if o.requires_grad:
            cot = load_npy(folder / f"cotangent_{name}.npy", output_dtype(trace, name))
            roots.append(o)
            seeds.append(cot.to(o.dtype))
    grads = torch.autograd.grad(roots, [leaves[n] for n in wanting], seeds, allow_unused=True) if roots else [None] * len(wanting)
    return {f"grad_{n}": (g if g is not None else torch.zeros_like(leaves[n])).detach() for n, g in zip(wanting, grads)}


def output_dtype(trace: dict, name: str) -> str:
    for op in trace["ops"]:
        for o in op["out"]:
            if o["name"] == name:
                return o["dtype"]
    raise KeyError(name)


def philox_of(folder: Path) -> tuple[int, int]:
    seed, offset = folder / "philox_seed.npy", folder / "philox_offset.npy"
    if seed.exists() and offset.exists():
        return int(np.load(seed)), int(np.load(offset))
    return (0, 0)


# ---- comparison (reference/compare.cpp) --------------------------------------------------------


@dataclass
class Verdict:
    ok: bool
    max_abs_err: float = 0.0
    mismatches: int = 0
    first: int = -1
    actual: float = 0.0
    expected: float = 0.0

    def summary(self) -> str:
        s = f"max abs err {self.max_abs_err:.3g}, {self.mismatches} mismatching"
        if self.first >= 0:
            s += f" (first at flat index {self.first}: {self.actual:.9g}, expected {self.expected:.9g})"
        return s


def compare(actual: torch.Tensor, expected: torch.Tensor, dt: str, scale: float = 1.0, also: torch.Tensor | None = None) -> Verdict:
    """reference/compare.cpp's test with the tolerance scaled by `scale`; an element equal to its
    element of `also` passes too."""
    if tuple(actual.shape) != tuple(expected.shape):
        return Verdict(False, mismatches=-1)
    atol, rtol = TOLERANCES.get(dt, (0.0, 0.0))
    a = actual.detach().to(torch.float64).flatten()
    e = expected.detach().to(torch.float64).flatten()
    finite = a.isfinite() & e.isfinite()
    diff = (a - e).abs()
    rms = e[finite].square().mean().sqrt().item() if bool(finite.any()) else 0.0
    close = (diff <= scale * (atol + rtol * e.abs().clamp_min(rms))) & finite
    good = close | (a.isnan() & e.isnan()) | (a.isinf() & e.isinf() & (a == e))
    if also is not None:
        good = good | (a == also.detach().to(torch.float64).flatten())
    bad = ~good
    v = Verdict(ok=not bool(bad.any()), mismatches=int(bad.sum()))
    if bool(finite.any()):
        v.max_abs_err = diff[finite].max().item()
    if not v.ok:
        v.first = int(bad.nonzero()[0, 0])
        v.actual, v.expected = a[v.first].item(), e[v.first].item()
    return v
