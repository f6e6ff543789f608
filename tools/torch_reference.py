#!/usr/bin/env python3
"""torch_reference.py: a PyTorch interpreter of thunder-gen traces (format v1), and a checker.

    python3 tools/torch_reference.py TRACE.json DIR [--device cuda]
    python3 tools/torch_reference.py TRACE.json DIR --expected DIR2
    python3 tools/torch_reference.py TRACE.json DIR --thin

Loads DIR/<input>.npy for every trace input (as a harness writes them with --outputs DIR; bf16
as '<u2' raw bits), runs the trace with PyTorch on the chosen device, and compares every output
with DIR/<output>.npy using the tolerance table of reference/compare.cpp. Prints one line per
output and exits 0 when all match, 1 otherwise (2 on a usage error). With --expected, the
expected outputs and input gradients are another harness run's on the same inputs (gpu-check.sh
compares the GPU with the host emulation this way) and the trace is not run; --thin makes such a
folder small (see thin()), and --expected samples the results the same way.

The semantics are those of the LibTorch interpreter in reference/reference.cpp:
  - values are held in their compute dtype: f16/bf16 in f32, everything else as itself; rounding
    to a 16-bit float happens at an explicit prims.convert_element_type, and where a
    discontinuous prim (a comparison, argmax, floor, sign, isfinite, fmod, a conversion to an
    integer) reads a 16-bit operand;
  - an elementwise prim computes in the compute dtype of its first tensor operand (for
    prims.where: of its first tensor branch); numbers become 0-d tensors of that dtype;
  - integer prims.div truncates;
  - prims reductions take a list of dims and drop them; an empty list is the identity;
  - var/var_mean take the keyword `correction`; argmax/argmin take a dim or None;
  - pad takes one (lo, hi, interior) triple per dim, negative lo/hi crop;
  - symbols without a rule here run their `sub` decomposition; autograd_function_apply runs `fwd`.
Arguments bind to each prim's signature the way Python binds a call (the signature is the Python
function's own, named as in their declarations, src/ops/<family>.def).

Needs numpy and torch only.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parent.parent / "python"))  # the package, when not installed (a GPU machine)
from thunder_gen.compare import TOLERANCES, Comparison, compare, tolerance  # noqa: E402, F401 (this module's API)
from thunder_gen.npy import tensor_of  # noqa: E402
from op_declarations import aten_call, aten_ops, binary_exact_prims, binary_float_prims, declared_signature, unary_float_prims

# ---- dtypes -----------------------------------------------------------------------------------

# Thunder's short name -> (torch storage dtype, .npy descr)
DTYPES = {
    "b8": (torch.bool, "|b1"),
    "u8": (torch.uint8, "|u1"),
    "i8": (torch.int8, "|i1"),
    "i16": (torch.int16, "<i2"),
    "i32": (torch.int32, "<i4"),
    "i64": (torch.int64, "<i8"),
    "f16": (torch.float16, "<f2"),
    "bf16": (torch.bfloat16, "<u2"),  # raw bits
    "f32": (torch.float32, "<f4"),
    "f64": (torch.float64, "<f8"),
}
FLOATS = {"f16", "bf16", "f32", "f64"}

def storage_dtype(dt: str) -> torch.dtype:
    return DTYPES[dt][0]


def compute_dtype(dt: str) -> torch.dtype:
    """16-bit floats compute in f32; every other dtype as itself."""
    return torch.float32 if dt in ("f16", "bf16") else storage_dtype(dt)


# Two runs of the same generated code on different machines (the GPU against the host emulation)
# sum in different orders (cuBLASLt's GEMM tiling, GPU FMA contraction), so an element that is a
# sum of large terms (a GEMM output, a weight gradient) can differ by more than the elementwise
# table above allows. For such runs a float tensor also passes when both its error norm and its
# largest error are small against the tensor as a whole: ||a - e|| / ||e|| and max|a - e| / max|e|
# under this bound. (On an H200 against the emulation, the f32 outputs that needed it were at
# 5.5e-7 and 7.1e-7 at most.) Same-machine checks use the elementwise table only. A trace that
# computes through a narrower type than an output's gets that type's bound: a different order
# moves an intermediate to a neighbouring bf16 value, and what follows carries that step (on an
# H200, llama_block_bf16's f32 attention-weight gradient was 3.8e-4 off in norm).
CROSS_DEVICE_TOLERANCES = {"f64": 1e-12, "f32": 1e-5, "f16": 1e-3, "bf16": 1e-2}


def cross_device_bound(dt: str, trace: dict) -> float | None:
    """The cross-device bound for an output of dtype `dt`: the largest of its own and those of the
    float types the trace's values have (inputs, and the outputs of every op and sub-op)."""
    if dt not in CROSS_DEVICE_TOLERANCES:
        return None
    bounds = [CROSS_DEVICE_TOLERANCES[dt]]
    def visit(decls):
        for d in decls:
            if isinstance(d, dict) and d.get("dtype") in CROSS_DEVICE_TOLERANCES:
                bounds.append(CROSS_DEVICE_TOLERANCES[d["dtype"]])
    def walk(ops):
        for op in ops:
            visit(op.get("out", []))
            walk(op.get("sub", []))
    visit(trace["inputs"])
    walk(trace["ops"])
    return max(bounds)


# ---- trace arguments --------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A reference to a value by name (a bare JSON string)."""
    name: str


@dataclass(frozen=True)
class DType:
    """A dtype literal: {"dtype": "bf16"}."""
    name: str


@dataclass(frozen=True)
class Device:
    """A device literal: {"device": "cuda:0"}."""
    name: str


class TraceError(Exception):
    pass


def parse_arg(j, where: str):
    """JSON argument -> Ref, DType, Device, str (for {"str"}), number, bool, None or a list."""
    if isinstance(j, str):
        return Ref(j)
    if isinstance(j, list):
        return [parse_arg(x, f"{where}/{i}") for i, x in enumerate(j)]
    if isinstance(j, dict):
        if len(j) != 1:
            raise TraceError(f"{where}: a typed literal has exactly one key (dtype, device, str or float)")
        (key, text), = j.items()
        if key == "dtype":
            if text not in DTYPES:
                raise TraceError(f"{where}: unknown dtype {text!r}")
            return DType(text)
        if key == "device":
            return Device(text)
        if key == "str":
            return str(text)
        if key == "float":
            if text not in ("inf", "-inf", "nan"):
                raise TraceError(f"{where}: a float literal is 'inf', '-inf' or 'nan', not {text!r}")
            return float(text)
        raise TraceError(f"{where}: unknown typed literal {key!r}")
    return j  # int, float, bool, None


# ---- the prims --------------------------------------------------------------------------------
#
# Every prim is a Python function whose first parameter is the call context `cx` and whose other
# parameters are the prim's own, named as in its declaration (src/ops/<family>.def): a trace's args and kwargs bind to
# them with inspect.Signature.bind. Tensor-valued arguments arrive as tensors in their compute
# dtype, scalar values (NumberProxy) as 0-d tensors, literals as Python values. A prim returns one
# tensor or a tuple of them.


class Call:
    """What a prim needs besides its arguments: the operand dtype, output types and the device."""

    def __init__(self, interp: "Interpreter", symbol: str, operand_dt: str, outs: list[dict]):
        self.interp = interp
        self.symbol = symbol
        self.operand_dt = operand_dt  # Thunder dtype name of the first tensor operand
        self.outs = outs
        self.device = interp.device

    @property
    def ct(self) -> torch.dtype:
        """Compute dtype of the operands."""
        return compute_dtype(self.operand_dt)

    @property
    def floating(self) -> bool:
        return self.operand_dt in FLOATS

    def out_dt(self, i: int = 0) -> str:
        return self.outs[i]["dtype"]

    def out_shape(self, i: int = 0) -> list[int]:
        return list(self.outs[i]["shape"])

    def as_tensor(self, x, dtype: torch.dtype) -> torch.Tensor:
        """An operand as a tensor of `dtype`: tensors converted, numbers as 0-d tensors (via f64)."""
        if isinstance(x, torch.Tensor):
            return x.to(dtype)
        return torch.tensor(float(x), dtype=torch.float64, device=self.device).to(dtype)

    def operand(self, x) -> torch.Tensor:
        return self.as_tensor(x, self.ct)

    def as_stored(self, x) -> torch.Tensor:
        """An operand rounded to the operand dtype when that is a 16-bit float."""
        x = self.operand(x)
        return x.to(storage_dtype(self.operand_dt)).to(self.ct) if self.operand_dt in ("f16", "bf16") else x

    def number(self, x) -> float:
        return x.item() if isinstance(x, torch.Tensor) else float(x)


def wrap_dim(d: int, rank: int) -> int:
    if d < -rank or d >= max(rank, 1):
        raise TraceError(f"dim {d} is out of range for rank {rank}")
    return d + rank if d < 0 else d


def reduction_dims(a: torch.Tensor, dims) -> list[int]:
    out = [wrap_dim(d, a.dim()) for d in dims]
    if len(set(out)) != len(out):
        raise TraceError(f"dims {dims} list a dim twice")
    return sorted(out)


def unary(fn, integers_unchanged: bool = False):
    def prim(cx: Call, a):
        x = cx.operand(a)
        return x if integers_unchanged and not cx.floating else fn(x)
    return prim


def binary(fn):
    def prim(cx: Call, a, b):
        return fn(cx.operand(a), cx.operand(b))
    return prim


def discontinuous(prim):
    """An op whose result jumps when an operand moves by less than a rounding unit (comparisons,
    floor, sign, isfinite, fmod): it reads 16-bit operands rounded to their dtype, as generated
    code does (docs/design-notes.md, "Rounding")."""
    @functools.wraps(prim)
    def rounded(cx: Call, **operands):
        return prim(cx, **{name: cx.as_stored(x) for name, x in operands.items()})
    return rounded


def div(cx: Call, a, b):
    if cx.floating:
        return torch.div(cx.operand(a), cx.operand(b))
    return torch.div(cx.operand(a), cx.operand(b), rounding_mode="trunc")


def where(cx: Call, pred, a, b):
    return torch.where(cx.as_tensor(pred, torch.bool), cx.operand(a), cx.operand(b))


def lerp(cx: Call, start, end, weight):
    return torch.lerp(cx.operand(start), cx.operand(end), cx.operand(weight))


def convert_element_type(cx: Call, a, dtype):
    # The operand rounded to its own dtype (rounding rule 4, docs/design-notes.md), then to the
    # stored type, then held in the compute type.
    a = cx.as_stored(a)
    if dtype.name == "b8":
        return a != 0
    return a.to(storage_dtype(dtype.name)).to(compute_dtype(dtype.name))


def full(cx: Call, shape, fill_value, *, device, dtype):
    return cx.as_tensor(fill_value, compute_dtype(dtype.name)).expand(shape).contiguous()


def iota(cx: Call, length, *, start, step, device, dtype):
    r = torch.arange(0, length, dtype=torch.int64, device=cx.device)
    return (r * step + start).to(compute_dtype(dtype.name))


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
    dims = {wrap_dim(d, a.dim()) for d in dims}
    return a.reshape([n for i, n in enumerate(a.shape) if i not in dims])


def slice_prim(cx: Call, a, start_indices, end_indices, strides=None):
    strides = strides if strides is not None else [1] * a.dim()
    return a[tuple(slice(s, e, st) for s, e, st in zip(start_indices, end_indices, strides))]


def pad(cx: Call, a, padding_value, padding_config):
    # One dim at a time: output position lo + p * (interior + 1) takes input element p; positions
    # outside [0, out_len) are cropped away.
    x = a
    for d, (lo, hi, interior) in enumerate(padding_config):
        n = x.shape[d]
        out_len = lo + hi + n + (n - 1) * interior if n > 0 else lo + hi
        shape = list(x.shape)
        shape[d] = out_len
        padded = cx.as_tensor(padding_value, x.dtype).expand(shape).contiguous()
        src = [p for p in range(n) if 0 <= lo + p * (interior + 1) < out_len]
        if src:
            to = torch.tensor([lo + p * (interior + 1) for p in src], dtype=torch.int64, device=x.device)
            frm = torch.tensor(src, dtype=torch.int64, device=x.device)
            padded.index_copy_(d, to, x.index_select(d, frm))
        x = padded
    return x


def cat(cx: Call, tensors, dim):
    return torch.cat(list(tensors), dim)


def _sum(cx: Call, a, dims):
    dims = reduction_dims(a, dims)
    if not dims:
        return a  # torch would reduce everything for an empty dim list
    return a.sum(dims, dtype=a.dtype if cx.out_dt() in FLOATS else torch.int64)


def prod(cx: Call, a, dims):
    dims = reduction_dims(a, dims)
    for d in reversed(dims):
        a = a.prod(d, dtype=a.dtype if cx.out_dt() in FLOATS else torch.int64)
    return a


def amax(cx: Call, a, dims):
    dims = reduction_dims(a, dims)
    return a.amax(dims) if dims else a


def amin(cx: Call, a, dims):
    dims = reduction_dims(a, dims)
    return a.amin(dims) if dims else a


def var_mean(cx: Call, a, dims, *, correction):
    var, mean = torch.var_mean(a, reduction_dims(a, dims), correction=cx.number(correction), keepdim=False)
    return var, mean


def var(cx: Call, a, dims, *, correction):
    return var_mean(cx, a, dims, correction=correction)[0]


def argmax(cx: Call, a, dim):
    return torch.argmax(cx.as_stored(a), dim)


def argmin(cx: Call, a, dim):
    return torch.argmin(cx.as_stored(a), dim)


_UNARY = {
    "abs": torch.abs, "neg": torch.neg, "signbit": torch.signbit, "bitwise_not": torch.bitwise_not, "detach": torch.detach,
    # the unary float prims, declared in src/ops/unary_float_prims.def
    **{n: d.torch_function for n, d in unary_float_prims().items()},
}
_DISCONTINUOUS_UNARY = {"sign": torch.sign, "isfinite": torch.isfinite}
_ROUNDING = {"floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc}
# the binary float and exact prims, declared in src/ops/binary_float_prims.def and
# binary_exact_prims.def: name -> declaration
_BINARY = {**binary_float_prims(), **binary_exact_prims()}

# Symbol id -> function. The one place that says what each prim computes.
PRIMS = {
    **{f"prims.{n}": unary(f) for n, f in _UNARY.items()},
    **{f"prims.{n}": discontinuous(unary(f)) for n, f in _DISCONTINUOUS_UNARY.items()},
    **{f"prims.{n}": discontinuous(unary(f, integers_unchanged=True)) for n, f in _ROUNDING.items()},
    **{f"prims.{n}": discontinuous(binary(d.torch_function)) if d.discontinuous else binary(d.torch_function) for n, d in _BINARY.items()},
    "prims.div": div,
    "prims.where": where,
    "prims.lerp": lerp,
    "prims.convert_element_type": convert_element_type,
    "prims.full": full,
    "prims.iota": iota,
    "prims.broadcast_in_dim": broadcast_in_dim,
    "prims.reshape": reshape,
    "prims.transpose": transpose,
    "prims.squeeze": squeeze,
    "prims.slice_prim": slice_prim,
    "prims.pad": pad,
    "prims.cat": cat,
    "prims.sum": _sum,
    "prims.prod": prod,
    "prims.amax": amax,
    "prims.amin": amin,
    "prims.var": var,
    "prims.var_mean": var_mean,
    "prims.argmax": argmax,
    "prims.argmin": argmin,
}
CUSTOM_GRAD = "torch.ops.higher_order.autograd_function_apply"

# Each prim's signature, for binding a trace's args and kwargs.
_SIGNATURES = {symbol: inspect.signature(fn) for symbol, fn in PRIMS.items()}


def _by_declared_aten_call(row: dict):
    return lambda cx, **bound: aten_call(row, bound)


# A prim with no function above whose declaration names the ATen call computing it (an exact op:
# a shape prim) is that call, bound by its declared signature.
for _symbol, _row in aten_ops("prims.").items():
    if _symbol not in PRIMS:
        PRIMS[_symbol] = _by_declared_aten_call(_row)
        _SIGNATURES[_symbol] = declared_signature(_row, leading=("cx",))

# ---- the interpreter --------------------------------------------------------------------------


class Interpreter:
    """Runs a trace's ops over an environment of named values held in compute dtype."""

    def __init__(self, device: str | torch.device = "cpu"):
        self.device = torch.device(device)

    def run(self, trace: dict, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if trace.get("format") != "thunder-gen-trace":
            raise TraceError("/format: not a thunder-gen trace")
        if trace.get("version") != 1:
            raise TraceError(f"/version: unsupported format version {trace.get('version')!r} (this reader knows version 1)")
        env: dict[str, torch.Tensor] = {}
        decls: dict[str, dict] = {}
        for decl in trace["inputs"]:
            env[decl["name"]] = inputs[decl["name"]].to(self.device).to(compute_dtype(value_dtype(decl)))
            decls[decl["name"]] = decl
        self.ops(trace["ops"], env, decls, "/ops")
        return {name: env[name] for name in trace["outputs"]}

    def ops(self, ops: list[dict], env: dict, decls: dict, where: str) -> None:
        for i, op in enumerate(ops):
            self.one(op, env, decls, f"{where}/{i}")

    def one(self, op: dict, env: dict, decls: dict, where: str) -> None:
        symbol = op["op"]
        outs = op["out"]
        if symbol in PRIMS:
            results = self.call(symbol, op, env, decls, where)
            if isinstance(results, torch.Tensor):
                results = (results,)
            if len(results) != len(outs):
                raise TraceError(f"{where}/out: {symbol} gives {len(results)} values, the trace declares {len(outs)}")
            for decl, r in zip(outs, results):
                env[decl["name"]] = r.to(compute_dtype(value_dtype(decl))).contiguous()
                decls[decl["name"]] = decl
        elif symbol == CUSTOM_GRAD:
            self.custom_forward(op, env, decls, where)
        elif "sub" in op:
            self.ops(op["sub"], env, decls, f"{where}/sub")
            for decl in outs:
                decls[decl["name"]] = decl
        else:
            raise TraceError(f"{where}/op: unknown op {symbol!r} has no rule and no decomposition (\"sub\")")

    def custom_forward(self, op: dict, env: dict, decls: dict, where: str) -> None:
        """Runs `fwd` in its own scope: its inputs are the op's tensor args, its outputs the op's."""
        fwd = op["fwd"]
        args = [parse_arg(a, f"{where}/args/{i}") for i, a in enumerate(op.get("args", []))]
        tensors = [env[a.name] for a in args if isinstance(a, Ref) and not is_scalar(decls[a.name])]
        if len(tensors) != len(fwd["inputs"]):
            raise TraceError(f"{where}/fwd/inputs: has {len(fwd['inputs'])} inputs for {len(tensors)} tensor arguments")
        inner_env = {d["name"]: t for d, t in zip(fwd["inputs"], tensors)}
        inner_decls = {d["name"]: d for d in fwd["inputs"]}
        self.ops(fwd["ops"], inner_env, inner_decls, f"{where}/fwd/ops")
        if len(fwd["outputs"]) != len(op["out"]):
            raise TraceError(f"{where}/fwd/outputs: has {len(fwd['outputs'])} outputs for the op's {len(op['out'])}")
        for decl, name in zip(op["out"], fwd["outputs"]):
            env[decl["name"]] = inner_env[name]
            decls[decl["name"]] = decl

    def call(self, symbol: str, op: dict, env: dict, decls: dict, where: str):
        args = [parse_arg(a, f"{where}/args/{i}") for i, a in enumerate(op.get("args", []))]
        kwargs = {k: parse_arg(v, f"{where}/kwargs/{k}") for k, v in op.get("kwargs", {}).items()}
        sig = _SIGNATURES[symbol]
        try:
            bound = sig.bind(None, *args, **kwargs)
        except TypeError as e:
            raise TraceError(f"{where}: {symbol}: {e}") from None
        bound.apply_defaults()
        params = list(bound.arguments.items())[1:]  # without cx

        # The operand dtype: that of the first tensor argument (skipping where's predicate), else
        # that of the first output.
        operand_dt = op["out"][0]["dtype"]
        for _, a in params[1:] if symbol == "prims.where" else params:
            if isinstance(a, Ref) and a.name in decls and not is_scalar(decls[a.name]):
                operand_dt = value_dtype(decls[a.name])
                break

        def resolve(a):
            if isinstance(a, Ref):
                if a.name not in env:
                    raise TraceError(f"{where}: undefined value {a.name!r}")
                return env[a.name]
            if isinstance(a, list):
                return [resolve(x) for x in a]
            return a

        cx = Call(self, symbol, operand_dt, op["out"])
        return PRIMS[symbol](cx, **{name: resolve(a) for name, a in params})


def is_scalar(decl: dict) -> bool:
    return "scalar" in decl


def value_dtype(decl: dict) -> str:
    return decl["scalar"] if is_scalar(decl) else decl["dtype"]


def value_shape(decl: dict) -> list[int]:
    return [] if is_scalar(decl) else list(decl["shape"])


def type_text(decl: dict) -> str:
    if is_scalar(decl):
        return f"{decl['scalar']} scalar"
    return f"{decl['dtype']}[{', '.join(str(d) for d in decl['shape'])}]"


def run_trace(trace: dict, inputs: dict[str, torch.Tensor], device: str = "cpu") -> dict[str, torch.Tensor]:
    """Runs `trace` on `inputs` (name -> tensor in storage or compute dtype); returns its outputs
    by name, in compute dtype."""
    return Interpreter(device).run(trace, inputs)


# ---- .npy files -------------------------------------------------------------------------------


def load_npy(path: Path, dt: str) -> torch.Tensor:
    """A .npy file holding Thunder dtype `dt` as a CPU tensor in storage dtype (bf16 from '<u2')."""
    arr = np.load(path, allow_pickle=False)
    descr = DTYPES[dt][1]
    if np.dtype(descr) != arr.dtype:
        raise TraceError(f"{path}: expected dtype {descr} ({dt}), found {arr.dtype.str}")
    return tensor_of(arr, bf16=dt == "bf16")


def save_npy(path: Path, t: torch.Tensor, dt: str) -> None:
    """Writes a tensor as Thunder dtype `dt` the way the harness does (bf16 as '<u2' bits)."""
    t = t.detach().to("cpu").to(storage_dtype(dt)).contiguous()
    arr = t.view(torch.int16).numpy().view(np.uint16) if dt == "bf16" else t.numpy()
    np.save(path, arr, allow_pickle=False)


# ---- comparison -------------------------------------------------------------------------------


# A thinned results folder keeps of each large tensor every stride-th element of its flat view and
# its last THIN_TAIL elements (where tail loops write), and drops the inputs and cotangents, which a
# harness redraws from its seed: expected results small enough to carry to a GPU machine.
THIN_KEEP = 16384
THIN_TAIL = 1024


def thin_indices(size: int, stride: int) -> np.ndarray:
    """The flat positions a thinned tensor of `size` elements keeps."""
    return np.concatenate([np.arange(0, size - THIN_TAIL, stride), np.arange(size - THIN_TAIL, size)])


def thin(trace_path: Path, folder: Path) -> None:
    trace = json.loads(Path(trace_path).read_text())
    for d in trace["inputs"]:
        (folder / f"{d['name']}.npy").unlink(missing_ok=True)
    for o in trace["outputs"]:
        (folder / f"cotangent_{o}.npy").unlink(missing_ok=True)
    sampling = {}
    for path in sorted(folder.glob("*.npy")):
        arr = np.load(path, allow_pickle=False)
        if arr.size > THIN_KEEP + THIN_TAIL:
            stride = -(-(arr.size - THIN_TAIL) // THIN_KEEP)
            sampling[path.stem] = {"shape": list(arr.shape), "stride": stride}
            np.save(path, arr.reshape(-1)[thin_indices(arr.size, stride)], allow_pickle=False)
    (folder / "sampling.json").write_text(json.dumps(sampling, indent=1))


def check(trace_path: Path, folder: Path, device: str = "cpu", out=sys.stdout, expected_dir: Path | None = None) -> int:
    """Runs the trace on the inputs in `folder` and compares with the outputs there. Returns the
    number of outputs that do not match. With `expected_dir` (another harness's --outputs folder,
    run on the same inputs: the host emulation's, say) nothing runs: the outputs and every
    grad_<input> there are the expected values."""
    trace = json.loads(Path(trace_path).read_text())
    name = trace.get("name", Path(trace_path).stem)
    inputs = {}
    for decl in trace["inputs"]:
        t = load_npy(folder / f"{decl['name']}.npy", value_dtype(decl))
        if list(t.shape) != value_shape(decl):
            raise TraceError(f"{folder / (decl['name'] + '.npy')}: shape {list(t.shape)}, the trace declares {value_shape(decl)}")
        inputs[decl["name"]] = t

    out_decls = {}
    def collect(ops):
        for op in ops:
            for d in op["out"]:
                out_decls.setdefault(d["name"], d)
    collect(trace["ops"])
    for d in trace["inputs"]:
        out_decls.setdefault(d["name"], d)

    checked = list(trace["outputs"])
    if expected_dir is None:
        expected = run_trace(trace, inputs, device)
        against = f"PyTorch on {device}"
    else:
        for d in trace["inputs"]:
            if (expected_dir / f"grad_{d['name']}.npy").exists():
                out_decls[f"grad_{d['name']}"] = d
                checked.append(f"grad_{d['name']}")
        expected = {o: load_npy(expected_dir / f"{o}.npy", value_dtype(out_decls[o])) for o in checked}
        against = str(expected_dir)
        sampling_file = expected_dir / "sampling.json"
        sampling = json.loads(sampling_file.read_text()) if sampling_file.exists() else {}
    failures = 0
    worst = 0.0
    for oname in checked:
        decl = out_decls[oname]
        dt = value_dtype(decl)
        atol, rtol = tolerance(dt)
        path = folder / f"{oname}.npy"
        try:
            actual = load_npy(path, dt)
            if expected_dir is not None and oname in sampling:
                if list(actual.shape) != sampling[oname]["shape"]:
                    raise TraceError(f"shape {list(actual.shape)}, expected {sampling[oname]['shape']}")
                actual = actual.flatten()[torch.from_numpy(thin_indices(actual.numel(), sampling[oname]["stride"]))]
            c = compare(actual, expected[oname], dt)
            bound = cross_device_bound(dt, trace)
            if (expected_dir is not None and not c.ok and c.mismatches > 0 and c.nonfinite_mismatches == 0 and bound is not None
                    and c.norm_rel_err <= bound and c.max_abs_err <= bound * c.scale):
                c.ok = True  # elementwise differences of summation order only (see CROSS_DEVICE_TOLERANCES)
                c.note = c.summary() + f", within the cross-device bound {bound:g} of the norm and of max |expected| {c.scale:.3g}"
        except (OSError, ValueError, TraceError) as e:
            actual, c = None, Comparison(ok=False, note=f"cannot read: {e}")
        worst = max(worst, c.max_abs_err) if not math.isnan(c.max_abs_err) else worst
        print(f"{name}: {oname} {type_text(decl)}: {c.summary()} (atol {atol:g}, rtol {rtol:g}): "
              f"{'ok' if c.ok else 'MISMATCH'}", file=out)
        if not c.ok and c.first_mismatch >= 0:
            i = c.first_mismatch
            got = actual.flatten()[i].to(torch.float64).item()
            want = expected[oname].flatten()[i].to(torch.float64).item()
            print(f"  first mismatch at flat index {i}: generated {got:.9g}, expected {want:.9g}", file=out)
        failures += not c.ok
    n = len(checked)
    print(f"{name}: {n - failures} of {n} outputs match {against} (max abs err {worst:.3g})", file=out)
    return failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Run a thunder-gen trace with PyTorch and compare with a harness's outputs.")
    p.add_argument("trace", type=Path, help="trace JSON (format v1)")
    p.add_argument("dir", type=Path, help="folder with <input>.npy and <output>.npy, as `harness --outputs DIR` writes")
    p.add_argument("--device", default="cpu", help="torch device to compute on: cpu (default), cuda, cuda:1, ...")
    p.add_argument("--expected", type=Path, help="compare with this harness --outputs folder (outputs and gradients) "
                   "instead of running the trace")
    p.add_argument("--thin", action="store_true", help="thin DIR (a harness's results) into expected values to carry "
                   "elsewhere: drop inputs and cotangents, sample large tensors")
    a = p.parse_args(argv)
    try:
        if a.thin:
            thin(a.trace, a.dir)
            return 0
        return 1 if check(a.trace, a.dir, a.device, expected_dir=a.expected) else 0
    except (TraceError, OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"{a.trace}: error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
