"""Comparing a computed tensor with an expected one at a dtype's tolerance: the table of
reference/compare.cpp, shared by `python -m thunder_gen.check` and the project's checking tools."""
from __future__ import annotations

from dataclasses import dataclass

import torch

# (atol, rtol) by dtype: the table of reference/compare.cpp. Integers and bools must be equal.
TOLERANCES = {"f64": (1e-12, 1e-10), "f32": (1e-5, 1e-5), "f16": (1e-3, 1e-3), "bf16": (1e-2, 1.6e-2)}


def tolerance(dt: str) -> tuple[float, float]:
    return TOLERANCES.get(dt, (0.0, 0.0))


@dataclass
class Comparison:
    ok: bool = True
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    norm_rel_err: float = 0.0  # ||actual - expected|| / ||expected|| over the finite elements
    scale: float = 0.0  # max |expected| over them
    mismatches: int = 0
    nonfinite_mismatches: int = 0
    first_mismatch: int = -1  # flat index
    note: str = ""

    def summary(self) -> str:
        if self.note:
            return self.note
        return (f"max abs err {self.max_abs_err:.3g}, max rel err {self.max_rel_err:.3g}, norm rel err {self.norm_rel_err:.3g}, "
                f"{self.mismatches} mismatching")


def compare(actual: torch.Tensor, expected: torch.Tensor, dt: str) -> Comparison:
    """|actual - expected| <= atol + rtol * |expected| elementwise; NaN matches NaN, an inf an equal
    inf; integers and bools must be equal. As reference/compare.cpp."""
    if tuple(actual.shape) != tuple(expected.shape):
        return Comparison(ok=False, mismatches=-1,
                          note=f"shape {list(actual.shape)} differs from the expected {list(expected.shape)}")
    atol, rtol = tolerance(dt)
    a = actual.to(expected.device).to(torch.float64).flatten()
    e = expected.to(torch.float64).flatten()
    both_nan = a.isnan() & e.isnan()
    same_inf = a.isinf() & e.isinf() & (a == e)
    diff = (a - e).abs()
    finite = e.isfinite() & a.isfinite()
    close = (diff <= atol + rtol * e.abs()) & finite
    bad = ~(close | both_nan | same_inf)
    c = Comparison()
    c.mismatches = int(bad.sum().item())
    c.nonfinite_mismatches = int((bad & ~finite).sum().item())  # NaN or inf on one side only
    c.ok = c.mismatches == 0
    if bool(finite.any()):
        fd = diff[finite]
        c.max_abs_err = fd.max().item()
        c.max_rel_err = (fd / e.abs()[finite].clamp_min(1e-30)).max().item()
        c.norm_rel_err = (fd.norm() / e[finite].norm().clamp_min(1e-300)).item()
        c.scale = e[finite].abs().max().item()
    if not c.ok:
        c.first_mismatch = int(bad.nonzero()[0, 0].item())
    return c
