"""The op table as the Python tools see it: read from `thunder-gen list-ops --json`, so the prims
declared in src/ops/unary_float_prims.def, binary_float_prims.def and
binary_exact_prims.def need no copy here.

    unary_float_prims() -> {"exp": UnaryFloat(torch_function=torch.exp, domain=(-20.0, 4.0), ...), ...}
    binary_float_prims() -> {"atan2": BinaryFloat(torch_function=torch.atan2, domains=((-64.0, 64.0), (0.2, 64.0)), ...), ...}
    binary_exact_prims() -> {"eq": BinaryExact(torch_function=torch.eq, accepts="numbers_and_bool", bool_result=True, ...), ...}
    bool_result_ops() -> {"prims.eq", "torch.eq", "prims.isfinite", ...}

The thunder-gen binary is find_thunder_gen()'s (tools/thunder_gen_binary.py): $THUNDER_GEN, else
build/thunder-gen beside this folder, else PATH's.
"""

from __future__ import annotations

import functools
import json
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
    accepts: str         # the operand dtypes, as src/ops/op_table.cpp names them: floats, numbers, numbers_and_bool
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


def declared_rows(family: str) -> list[dict]:
    """The prims declared in src/ops/<family>_prims.def."""
    return [row for row in op_table() if row.get("family") == family and row["id"].startswith("prims.")]


@functools.cache
def unary_float_prims() -> dict[str, UnaryFloat]:
    return {row["id"].removeprefix("prims."): UnaryFloat(row["id"].removeprefix("prims."), row["torch"], tuple(row["domains"][0]),
                                                         row["grad_saves"] != "none")
            for row in declared_rows("unary_float")}


@functools.cache
def binary_float_prims() -> dict[str, BinaryFloat]:
    return {row["id"].removeprefix("prims."): BinaryFloat(row["id"].removeprefix("prims."), row["torch"],
                                                          tuple(tuple(d) for d in row["domains"]), row["accepts"],
                                                          row["discontinuous"], row["kinked"])
            for row in declared_rows("binary_float")}


@functools.cache
def binary_exact_prims() -> dict[str, BinaryExact]:
    return {row["id"].removeprefix("prims."): BinaryExact(row["id"].removeprefix("prims."), row["torch"], row["accepts"],
                                                          row["bool_result"], row["discontinuous"])
            for row in declared_rows("binary_exact")}


@functools.cache
def bool_result_ops() -> frozenset[str]:
    """The ids of the elementwise prims and torch-level forms whose result is b8."""
    return frozenset(row["id"] for row in op_table() if row.get("bool_result"))
