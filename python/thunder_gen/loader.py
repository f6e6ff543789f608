"""thunder_gen.load and thunder_gen.build: a generated folder compiled (build.py) and bound as a
GeneratedModule (module.py). The package imports this module on first use (it imports torch)."""
from __future__ import annotations

from pathlib import Path

import torch

from .build import build as _build
from .manifest import read_manifest
from .module import GeneratedModule, Library


def _device(device) -> torch.device:
    d = torch.device(device)
    if d.type not in ("cpu", "cuda"):
        raise ValueError(f"device {str(d)!r}: expected 'cpu' (host emulation) or 'cuda'")
    if d.type == "cuda" and d.index is None:
        d = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
    return d


def build(out_dir: str | Path, device="cpu", *, build_root: str | Path | None = None, arch: str | None = None,
          verbose: bool = False) -> Path:
    """Compiles the generated folder for `device` ("cpu": the .cu files as C++ under host
    emulation; "cuda": nvcc) without loading it, and returns the shared library's path. A GPU is
    not needed to build for "cuda" (arch: "sm_90" and the like; default: the visible GPU's, else
    sm_90)."""
    d = _device(device)
    return _build(read_manifest(out_dir), d.type, build_root=build_root, arch=arch, device=d, verbose=verbose)


def load(out_dir: str | Path, device="cpu", *, build_root: str | Path | None = None, arch: str | None = None,
         verbose: bool = False) -> GeneratedModule:
    """Builds (or finds built) the generated folder `out_dir` for `device` and returns it as a
    torch.nn.Module whose forward takes the trace's inputs in order and whose outputs
    differentiate through the generated backward.

    device: "cpu" runs the host emulation (g++, Boost.Context); "cuda" or "cuda:N" the nvcc build.
    build_root: the cache folder (default: torch's extensions folder, $TORCH_EXTENSIONS_DIR or
    ~/.cache/torch_extensions, plus thunder_gen/)."""
    d = _device(device)
    if d.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"{out_dir}: device={str(d)!r}, but torch sees no CUDA device (torch.cuda.is_available() "
                           f"is False); thunder_gen.build(..., device='cuda') compiles without one")
    m = read_manifest(out_dir)
    path = _build(m, d.type, build_root=build_root, arch=arch, device=d, verbose=verbose)
    return GeneratedModule(m, Library(path, m), d)
