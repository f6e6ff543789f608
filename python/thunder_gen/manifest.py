"""manifest.json of a generated folder, read into plain records.

Only the fields the loader relies on are read, and each is checked, so a folder that is not a
thunder-gen output (or comes from an incompatible generator) is refused with the field named,
instead of failing later inside a C call.
"""
from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .errors import ManifestError
from .sizes import evaluate


def evaluate_sizes(sizes: tuple, at: dict) -> tuple[int, ...]:
    """A shape's sizes (integers and expressions) at the symbols' sizes `at`."""
    return tuple(s if isinstance(s, int) else evaluate(s, at) for s in sizes)

# Thunder's short dtype names (the trace format) as torch dtypes. b8 is C's bool: one byte.
TORCH_DTYPES = {
    "b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
    "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
    "f64": torch.float64,
}
# The C types of scalar (NumberProxy) arguments: the format has these three.
SCALAR_CTYPES = {"i64": ctypes.c_int64, "f64": ctypes.c_double, "b8": ctypes.c_bool}
FLOATING = {"f16", "bf16", "f32", "f64"}

# The i64 inputs thunder-gen adds to a trace with random ops (docs/trace-format.md: philox_seed, philox_offset).
RANDOM_STATE_INPUTS = ("philox_seed", "philox_offset")


@dataclass(frozen=True)
class Value:
    """A trace input or output: a tensor (dtype, shape) or a scalar (scalar dtype)."""
    name: str
    dtype: str | None
    shape: tuple[int, ...] | None
    scalar: str | None
    requires_grad: bool
    # A symbolic trace's input: its sizes as the trace wrote them (an int, or an expression over
    # the symbols: "B", "B*T"); None for a static one.
    sizes: tuple | None = None
    # A PT2 archive's input or output: "parameter", "buffer", "user_input", ...; "user_output", or
    # "buffer_update" (the buffer `fqn` after the step: a BatchNorm's running statistics).
    role: str | None = None
    fqn: str | None = None

    def shape_at(self, at: dict | None) -> tuple[int, ...]:
        """Its shape at the symbols' sizes `at` (None: the folder's one shape)."""
        return self.shape if at is None or self.sizes is None else evaluate_sizes(self.sizes, at)

    @property
    def is_tensor(self) -> bool:
        return self.scalar is None

    def describe(self) -> str:
        if self.scalar:
            return f"a {self.scalar} scalar"
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class Param:
    """One entry-point parameter, as manifest.json's entry_points list it."""
    name: str  # the C parameter name (x, or g_<name> where the name could clash in C)
    kind: str  # input, output, saved, cotangent, gradient
    of: str  # the trace value (input, output, saved value) it belongs to
    dtype: str | None
    shape: tuple[int, ...] | None
    scalar: str | None
    storage: str | None  # dense, or bitmask (b8 packed at one bit per element)
    nbytes: int | None
    # An entry point that takes its sizes at run time: the shape as integers and expressions over
    # the symbols (its `shape` is at specialized_at); None otherwise.
    sizes: tuple | None = None

    @property
    def is_tensor(self) -> bool:
        return self.scalar is None

    def shape_at(self, at: dict | None) -> tuple[int, ...]:
        """Its shape at the symbols' sizes `at` (None: the folder's one shape)."""
        return self.shape if at is None or self.sizes is None else evaluate_sizes(self.sizes, at)

    def nbytes_at(self, at: dict | None) -> int:
        """The bytes it is stored in at `at`: a bit per element in 32-bit words for a bitmask."""
        if at is None or self.sizes is None:
            return self.nbytes
        count = 1
        for d in self.shape_at(at):
            count *= d
        return (count + 31) // 32 * 4 if self.storage == "bitmask" else count * TORCH_DTYPES[self.dtype].itemsize


@dataclass(frozen=True)
class EntryPoint:
    name: str
    params: tuple[Param, ...]

    def of_kind(self, kind: str) -> list[Param]:
        return [p for p in self.params if p.kind == kind]


@dataclass(frozen=True)
class SavedValue:
    name: str
    kind: str  # input, output, intermediate
    scalar: str | None


@dataclass(frozen=True)
class Manifest:
    folder: Path
    trace: str
    header: str
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    saved: tuple[SavedValue, ...]  # saved_for_backward, in order
    saved_scalars: tuple[SavedValue, ...]
    forward: EntryPoint
    backward: EntryPoint | None
    workspace_bytes_function: str
    # A symbolic trace's sizes this folder was generated at ({"B": 8}); empty for static shapes.
    specialized_at: dict = field(default_factory=dict)
    # ... and its symbols' declarations ({"B": {"min": 1, "max": 64, "multiple_of": 1}}).
    symbols: dict = field(default_factory=dict)
    # ... and the library's function binding a call's sizes (<trace>_bind_sizes; the module calls
    # its array form, <trace>_bind_sizes_array), which takes the dims and rank of each input with
    # sizes, in order; "" for static shapes.
    bind_sizes_function: str = ""
    # Its entry points take the sizes at run time (a const int64_t* before the workspace: what
    # the binder writes, a size per symbol in the symbols' order) and its workspace function takes
    # them too: one folder for every size.
    takes_sizes: bool = False

    @property
    def status_string_function(self) -> str:
        return f"{self.trace}_status_string"  # the header's documented name (docs/output-folder.md)


class _Reader:
    """Field access that names the file and the JSON pointer of anything missing or mistyped."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, message: str):
        raise ManifestError(f"{self.path}: {where}: {message}")

    def get(self, obj, key, kind, where, required=True):
        if not isinstance(obj, dict):
            self.fail(where, "expected an object")
        if key not in obj:
            if required:
                self.fail(f"{where}/{key}", "missing")
            return None
        value = obj[key]
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            self.fail(f"{where}/{key}", f"expected {getattr(kind, '__name__', kind)}, found {type(value).__name__}")
        return value

    def dtype(self, obj, where, key="dtype"):
        name = self.get(obj, key, str, where)
        if name not in TORCH_DTYPES:
            self.fail(f"{where}/{key}", f"unknown dtype {name!r}")
        return name

    def shape(self, obj, where):
        dims = self.get(obj, "shape", list, where)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in dims):
            self.fail(f"{where}/shape", "expected a list of non-negative integers")
        return tuple(dims)

    def scalar(self, obj, where):
        name = self.get(obj, "scalar", str, where, required=False)
        if name is not None and name not in SCALAR_CTYPES:
            self.fail(f"{where}/scalar", f"unknown scalar dtype {name!r}")
        return name

    def value(self, obj, where) -> Value:
        name = self.get(obj, "name", str, where)
        scalar = self.scalar(obj, where)
        tensor = scalar is None
        return Value(name, self.dtype(obj, where) if tensor else None, self.shape(obj, where) if tensor else None,
                     scalar, bool(self.get(obj, "requires_grad", bool, where, required=False)), self.sizes(obj, where),
                     self.get(obj, "role", str, where, required=False), self.get(obj, "fqn", str, where, required=False))

    def sizes(self, obj, where):
        sizes = self.get(obj, "sizes", list, where, required=False)
        if sizes is not None and not all(isinstance(s, str) or (isinstance(s, int) and not isinstance(s, bool) and s >= 0) for s in sizes):
            self.fail(f"{where}/sizes", "expected sizes: integers and expressions over the symbols")
        return tuple(sizes) if sizes is not None else None

    def param(self, obj, where) -> Param:
        scalar = self.scalar(obj, where)
        tensor = scalar is None
        return Param(self.get(obj, "name", str, where), self.get(obj, "kind", str, where), self.get(obj, "of", str, where),
                     self.dtype(obj, where) if tensor else None, self.shape(obj, where) if tensor else None, scalar,
                     self.get(obj, "storage", str, where) if tensor else None,
                     self.get(obj, "bytes", int, where) if tensor else None, self.sizes(obj, where) if tensor else None)

    def entry_point(self, obj, where) -> EntryPoint:
        params = self.get(obj, "params", list, where)
        return EntryPoint(self.get(obj, "name", str, where),
                          tuple(self.param(p, f"{where}/params/{i}") for i, p in enumerate(params)))

    def saved(self, obj, where) -> SavedValue:
        return SavedValue(self.get(obj, "name", str, where), self.get(obj, "kind", str, where), self.scalar(obj, where))


def read_manifest(folder: str | Path) -> Manifest:
    """Reads and checks <folder>/manifest.json."""
    folder = Path(folder)
    path = folder / "manifest.json"
    if not path.is_file():
        raise ManifestError(f"{folder}: no manifest.json: not a folder written by thunder-gen")
    try:
        doc = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ManifestError(f"{path}: not valid JSON: {e}") from None
    r = _Reader(path)
    entry_points = r.get(doc, "entry_points", dict, "")
    if isinstance(doc.get("communication"), dict) or any(isinstance(e, dict) and e.get("takes_comm") for e in entry_points.values()):
        r.fail("/entry_points", "a distributed trace: its entry points take a communicator (thunder_gen_comm), "
                                "which thunder_gen.load does not pass; run it with its harness or call the library")
    takes_sizes = [bool(isinstance(e, dict) and e.get("takes_sizes")) for e in entry_points.values()]
    backward = r.get(entry_points, "backward", dict, "/entry_points", required=False)
    m = Manifest(
        folder=folder,
        trace=r.get(doc, "trace", str, ""),
        header=r.get(doc, "header", str, ""),
        inputs=tuple(r.value(v, f"/inputs/{i}") for i, v in enumerate(r.get(doc, "inputs", list, ""))),
        outputs=tuple(r.value(v, f"/outputs/{i}") for i, v in enumerate(r.get(doc, "outputs", list, ""))),
        saved=tuple(r.saved(v, f"/saved_for_backward/{i}")
                    for i, v in enumerate(r.get(doc, "saved_for_backward", list, ""))),
        saved_scalars=tuple(r.saved(v, f"/saved_scalars/{i}")
                            for i, v in enumerate(r.get(doc, "saved_scalars", list, ""))),
        forward=r.entry_point(r.get(entry_points, "forward", dict, "/entry_points"), "/entry_points/forward"),
        backward=r.entry_point(backward, "/entry_points/backward") if backward is not None else None,
        workspace_bytes_function=r.get(doc, "workspace_bytes_function", str, ""),
        specialized_at=_sizes(r, doc),
        symbols=_symbols(r, doc),
        bind_sizes_function=r.get(doc, "bind_sizes_function", str, "", required=False) or "",
        takes_sizes=any(takes_sizes),
    )
    if m.takes_sizes and (not all(takes_sizes) or not m.bind_sizes_function or not m.symbols):
        r.fail("/entry_points", "expected both entry points to take their sizes at run time, and a size binder and symbols for them")
    _check_consistent(m, r)
    _check_sizes(m, r)
    return m


def _sizes(r: _Reader, doc) -> dict:
    sizes = r.get(doc, "specialized_at", dict, "", required=False) or {}
    for name, size in sizes.items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            r.fail(f"/specialized_at/{name}", f"expected a size, found {size!r}")
    return dict(sizes)


def _symbols(r: _Reader, doc) -> dict:
    symbols = r.get(doc, "symbols", dict, "", required=False) or {}
    for name, decl in symbols.items():
        fields = ("min", "max", "multiple_of")
        if not isinstance(decl, dict) or not all(isinstance(decl.get(f), int) and not isinstance(decl.get(f), bool) for f in fields):
            r.fail(f"/symbols/{name}", "expected {\"min\": n, \"max\": n, \"multiple_of\": n}")
        if not (0 <= decl["min"] <= decl["max"] and decl["multiple_of"] >= 1):
            r.fail(f"/symbols/{name}", f"not a symbol's range: {decl}")
        if not (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name) and name not in ("max", "min")):
            r.fail(f"/symbols/{name}", "not a symbol's name (an identifier of at most 64 characters, not max or min)")
    at = r.get(doc, "specialized_at", dict, "", required=False) or {}
    if symbols and set(at) != set(symbols):
        r.fail("/specialized_at", f"expected a size for each symbol ({', '.join(sorted(symbols))})")
    for name, size in at.items():
        decl = symbols.get(name)
        if decl and not (decl["min"] <= size <= decl["max"] and size % decl["multiple_of"] == 0):
            r.fail(f"/specialized_at/{name}", f"{size} is outside the symbol's range {decl}")
    return {name: dict(decl) for name, decl in symbols.items()}


def _check_sizes(m: Manifest, r: _Reader) -> None:
    """Each symbolic input's sizes: one per dim, and their values at specialized_at its shape."""
    for i, v in enumerate(m.inputs):
        if v.sizes is None:
            continue
        if not v.is_tensor or len(v.sizes) != len(v.shape):
            r.fail(f"/inputs/{i}/sizes", f"expected one size per dim of the shape {list(v.shape or ())}")
        for d, (size, dim) in enumerate(zip(v.sizes, v.shape)):
            try:
                value = size if isinstance(size, int) else evaluate(size, m.specialized_at)
            except (KeyError, ValueError) as e:
                r.fail(f"/inputs/{i}/sizes/{d}", f"{size!r} is no size at specialized_at: {e}")
            if value != dim:
                r.fail(f"/inputs/{i}/sizes/{d}", f"{size!r} is {value} at specialized_at, but the shape says {dim}")
    for which, ep in (("forward", m.forward), ("backward", m.backward)):
        for i, p in enumerate(ep.params if ep and m.takes_sizes else ()):
            if p.is_tensor and (p.sizes is None or len(p.sizes) != len(p.shape)):
                r.fail(f"/entry_points/{which}/params/{i}/sizes", "expected one size per dim of the shape (the entry point takes its sizes at run time)")
    # (A folder from before the binder has none: its calls are then checked by shape alone.)
    if m.bind_sizes_function and (m.bind_sizes_function != f"{m.trace}_bind_sizes" or all(v.sizes is None for v in m.inputs)):
        r.fail("/bind_sizes_function", f"expected {m.trace}_bind_sizes, the size binder of a folder whose inputs have sizes, "
                                       f"found {m.bind_sizes_function!r}")


def _check_consistent(m: Manifest, r: _Reader) -> None:
    """What the loader assumes of the entry points' parameters, checked once here."""
    inputs = {v.name for v in m.inputs}
    outputs = {v.name for v in m.outputs}
    for v in m.outputs:
        if not v.is_tensor:
            r.fail("/outputs", f"output {v.name!r} is a scalar; the loader returns tensors only")
    for i, s in enumerate((*m.saved, *m.saved_scalars)):
        if s.kind not in ("input", "output", "intermediate"):
            where = f"/saved_for_backward/{i}" if i < len(m.saved) else f"/saved_scalars/{i - len(m.saved)}"
            r.fail(f"{where}/kind", f"unknown kind {s.kind!r}")
    saved = {(s.kind, s.name) for s in (*m.saved, *m.saved_scalars)}
    known = {"forward": {"input": inputs, "output": outputs, "saved": {s.name for s in m.saved if s.kind == "intermediate"}},
             "backward": {"input": {n for k, n in saved if k == "input"}, "output": {n for k, n in saved if k == "output"},
                          "saved": {n for k, n in saved if k == "intermediate"}, "cotangent": outputs, "gradient": inputs}}
    for which, ep in (("forward", m.forward), ("backward", m.backward)):
        for i, p in enumerate(ep.params if ep else ()):
            where = f"/entry_points/{which}/params/{i}"
            if p.kind not in known[which]:
                r.fail(f"{where}/kind", f"unexpected kind {p.kind!r} in the {which} entry point")
            if p.of not in known[which][p.kind]:
                r.fail(f"{where}/of", f"{p.of!r} is not among the {p.kind} values the manifest lists")
            if p.is_tensor and p.storage not in ("dense", "bitmask"):
                r.fail(f"{where}/storage", f"unknown storage {p.storage!r}")
            if not p.is_tensor and p.kind in ("output", "saved", "gradient"):
                r.fail(f"{where}/scalar", f"the {which} entry point writes {p.of!r}, and the loader writes tensors only")
    # Outputs and cotangents go by position (an output listed twice has a parameter per listing).
    for which, ep, kind in (("forward", m.forward, "output"), ("backward", m.backward, "cotangent")):
        if ep is not None and [p.of for p in ep.of_kind(kind)] != [v.name for v in m.outputs]:
            r.fail(f"/entry_points/{which}/params", f"its {kind} parameters are not one per output, in the outputs' order")
    if m.backward is None and any(v.requires_grad for v in m.inputs):
        r.fail("/entry_points", "inputs require grad but there is no backward entry point")
