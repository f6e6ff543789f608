"""The op table as the Python tools see it: read from `thunder-gen list-ops --json`, so the unary
float prims declared in include/thunder_gen/unary_float_prims.def need no copy here.

    unary_float_prims() -> {"exp": UnaryFloat(torch_function=torch.exp, domain=(-20.0, 4.0), ...), ...}

The thunder-gen binary is $THUNDER_GEN, else build/thunder-gen beside this folder.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class UnaryFloat:
    name: str            # prims.<name>
    torch_name: str      # the PyTorch function that gives its value: torch.exp, torch.special.ndtri
    domain: tuple        # (lo, hi): where tests draw its operand
    differentiable: bool

    @property
    def torch_function(self) -> Callable:
        import torch
        f = torch
        for part in self.torch_name.split(".")[1:]:
            f = getattr(f, part)
        return f


def thunder_gen() -> str:
    return os.environ.get("THUNDER_GEN", str(Path(os.environ.get("TG_BUILD_DIR", ROOT / "build")) / "thunder-gen"))


@functools.cache
def op_table() -> list[dict]:
    try:
        out = subprocess.run([thunder_gen(), "list-ops", "--json"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"tools/op_declarations.py: cannot read the op table from {thunder_gen()} list-ops --json ({e}): "
                         "build it (tools/build.sh thunder-gen) or set THUNDER_GEN") from e
    return json.loads(out)


@functools.cache
def unary_float_prims() -> dict[str, UnaryFloat]:
    return {row["id"].removeprefix("prims."): UnaryFloat(row["id"].removeprefix("prims."), row["torch"], tuple(row["domain"]),
                                                         row["grad_saves"] != "none")
            for row in op_table() if "torch" in row and row["id"].startswith("prims.")}
