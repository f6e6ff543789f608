"""The op table as the Python tools see it: read from `thunder-gen list-ops --json` (src/ops/op_listing.h
names the fields), so the ops declared in src/ops/<family>.def need no copy here and no tool keeps a
list of ops of its own.

    op_table() -> [{"id": "prims.exp", "family": "unary_float_prims", "accepts": "floats", "params": [...], ...}, ...]
    op_row("prims.sum") -> that op's row;  params("prims.var") -> ["a", "dims", "correction"]
    family_ids("reduction_prims") -> ["prims.sum", "prims.prod", ...]
    unary_float_prims() -> {"exp": UnaryFloat(torch_function=torch.exp, domain=(-20.0, 4.0), ...), ...}
    binary_float_prims() -> {"atan2": BinaryFloat(torch_function=torch.atan2, domains=((-64.0, 64.0), (0.2, 64.0)), ...), ...}
    binary_exact_prims() -> {"eq": BinaryExact(torch_function=torch.eq, accepts="numbers_and_bool", bool_result=True, ...), ...}
    activations() -> {"torch.sigmoid": Activation(torch_function=torch.sigmoid, domain=(-2.0, 2.0), ...), ...}
    bool_result_ops() -> {"prims.eq", "torch.eq", "prims.isfinite", ...}
    declared_signature(row, leading=("cx",)) -> an inspect.Signature of the op's declared parameters
    aten_call(row, bound) -> what LibTorch's reference computes for an op declared with its ATen call

The thunder-gen binary is find_thunder_gen()'s (tools/thunder_gen_binary.py): $THUNDER_GEN, else
build/thunder-gen beside this folder, else PATH's.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from thunder_gen_binary import ThunderGenNotFound, find_thunder_gen

ROOT = Path(__file__).resolve().parent.parent


def torch_function_named(torch_name: str) -> Callable:
    """torch.exp for "torch.exp", torch.special.ndtri for "torch.special.ndtri"."""
    import torch
    f = torch
    for part in torch_name.split(".")[1:]:
        f = getattr(f, part)
    return f


@dataclass(frozen=True)
class UnaryFloat:
    name: str            # prims.<name>
    torch_name: str      # the PyTorch function that gives its value: torch.exp, torch.special.ndtri
    domain: tuple        # (lo, hi): where tests draw its operand
    differentiable: bool

    @property
    def torch_function(self) -> Callable:
        return torch_function_named(self.torch_name)


@dataclass(frozen=True)
class BinaryFloat:
    name: str            # prims.<name>
    torch_name: str      # the PyTorch function that gives its value: torch.atan2
    domains: tuple       # ((lo, hi) of a, (lo, hi) of b): where tests draw its operands
    accepts: str         # the operand dtypes, as src/ops/op_table.h names them (DTypes): floats, numbers, numbers_and_bool
    discontinuous: bool  # the result jumps (fmod, remainder): 16-bit operands are read rounded
    kinked: bool         # continuous, but the gradient compares the operands (maximum, minimum)

    @property
    def torch_function(self) -> Callable:
        return torch_function_named(self.torch_name)


@dataclass(frozen=True)
class BinaryExact:
    name: str            # prims.<name>
    torch_name: str      # the PyTorch function that gives its value: torch.eq, torch.bitwise_left_shift
    accepts: str         # the operand dtypes: numbers_and_bool, integers_and_bool, integers
    bool_result: bool    # a comparison: the result is b8 (else the operands' dtype)
    discontinuous: bool  # it reads floats (a comparison): 16-bit operands are read rounded

    @property
    def torch_function(self) -> Callable:
        return torch_function_named(self.torch_name)


@dataclass(frozen=True)
class Activation:
    id: str              # its torch id, which is also the PyTorch function: torch.nn.functional.leaky_relu
    domain: tuple        # (lo, hi): where tests draw its operand
    params: tuple        # its parameter names, the tensor first
    kinked: bool         # continuous, but its derivative jumps (at 0)

    @property
    def torch_function(self) -> Callable:
        return torch_function_named(self.id)


@functools.cache
def op_table() -> list[dict]:
    try:
        gen = find_thunder_gen()
    except ThunderGenNotFound as e:
        raise SystemExit(f"tools/op_declarations.py: cannot read the op table: {e}") from e
    try:
        out = subprocess.run([gen, "list-ops", "--json"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"tools/op_declarations.py: cannot read the op table from {gen} list-ops --json ({e})") from e
    return json.loads(out)


@functools.cache
def _rows_by_id() -> dict[str, dict]:
    return {row["id"]: row for row in op_table()}


def op_row(op_id: str) -> dict:
    """The declared row of `op_id`; an error naming it when thunder-gen declares no such op."""
    row = _rows_by_id().get(op_id)
    if row is None:
        raise KeyError(f"{op_id}: thunder-gen declares no such op (thunder-gen list-ops)")
    return row


def params(op_id: str) -> list[str]:
    """The names of op_id's parameters, in its signature's order."""
    return [p["name"] for p in op_row(op_id)["params"]]


def family_ids(family: str) -> list[str]:
    """The ids of the ops a family declares (src/ops/<family>.def), torch forms left out."""
    return [row["id"] for row in op_table() if row["family"] == family and "form_of" not in row]


def declared_rows(family: str) -> list[dict]:
    """The prims declared in src/ops/<family>.def (their torch forms left out)."""
    return [row for row in op_table() if row["family"] == family and "form_of" not in row]


@functools.cache
def unary_float_prims() -> dict[str, UnaryFloat]:
    return {row["id"].removeprefix("prims."): UnaryFloat(row["id"].removeprefix("prims."), row["torch"], tuple(row["domains"][0]),
                                                         row["gradient"] != "refused")
            for row in declared_rows("unary_float_prims")}


@functools.cache
def binary_float_prims() -> dict[str, BinaryFloat]:
    return {row["id"].removeprefix("prims."): BinaryFloat(row["id"].removeprefix("prims."), row["torch"],
                                                          tuple(tuple(d) for d in row["domains"]), row["accepts"],
                                                          row["discontinuous"], row["kinked"])
            for row in declared_rows("binary_float_prims")}


@functools.cache
def binary_exact_prims() -> dict[str, BinaryExact]:
    return {row["id"].removeprefix("prims."): BinaryExact(row["id"].removeprefix("prims."), row["torch"], row["accepts"],
                                                          row["bool_result"], row["discontinuous"])
            for row in declared_rows("binary_exact_prims")}


@functools.cache
def activations() -> dict[str, Activation]:
    """The activations declared by expressions (torch_activations.def's TG_ACTIVATION rows: the ones
    with a domain)."""
    return {row["id"]: Activation(row["id"], tuple(row["domains"][0]), tuple(p["name"] for p in row["params"]), row["kinked"])
            for row in declared_rows("torch_activations") if "domains" in row}


@functools.cache
def bool_result_ops() -> frozenset[str]:
    """The ids of the elementwise prims and torch-level forms whose result is b8."""
    return frozenset(row["id"] for row in op_table() if row.get("bool_result"))


_ATEN_CALL = re.compile(r"^([a-z0-9_]+)(?:\.([A-Za-z0-9_]+))?\(([^)]*)\)$")


def aten_call(row: dict, bound: dict):
    """LibTorch's ATen op as the declaration names it (row["aten"]: "softmax.int(a, dim)"), called on
    the parameters it lists, taken from `bound` (the op's arguments by parameter name)."""
    import torch
    m = _ATEN_CALL.match(row["aten"])
    if not m:
        raise ValueError(f"{row['id']}: aten \"{row['aten']}\" is not name.overload(params)")
    name, overload, names = m.group(1), m.group(2) or "default", [n.strip() for n in m.group(3).split(",") if n.strip()]
    return getattr(getattr(torch.ops.aten, name), overload)(*[bound[n] for n in names])


def declared_signature(row: dict, leading: tuple = ()) -> inspect.Signature:
    """The op's declared parameters as a Python signature (defaults are the declaration's, read as
    Python literals), after the parameters named in `leading` (a call context)."""
    kind = {False: inspect.Parameter.POSITIONAL_OR_KEYWORD, True: inspect.Parameter.KEYWORD_ONLY}
    parameters = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in leading]
    for p in row["params"]:
        default = ast.literal_eval(p["default"]) if "default" in p else inspect.Parameter.empty
        parameters.append(inspect.Parameter(p["name"], kind[p["keyword_only"]], default=default))
    return inspect.Signature(parameters)


def aten_ops(prefix: str) -> dict[str, dict]:
    """The ops whose ids start with `prefix` and whose declaration names the ATen call computing
    them (torch forms left out): id -> row."""
    return {row["id"]: row for row in op_table() if row["id"].startswith(prefix) and "aten" in row and "form_of" not in row}
