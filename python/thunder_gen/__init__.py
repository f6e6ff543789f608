"""thunder_gen: a folder written by `thunder-gen trace.json -o out/` as a differentiable
torch.nn.Module.

    import thunder_gen
    block = thunder_gen.load("out/", device="cpu")   # host emulation; "cuda" on a GPU
    y = block(x, w, b)             # the trace's inputs in trace order; a tensor or a tuple
    y.backward(g)                  # runs the generated backward

load() compiles the folder with torch.utils.cpp_extension (cached; see build.py for where and
how the cache is keyed), binds the entry points that manifest.json lists, and returns a
GeneratedModule. Wrong arguments are refused naming the trace's input and what was expected; an
entry point's failing status becomes a StatusError carrying <trace>_status_string's words.

export(module, args, path="model.pt2") (pt2.py) captures a module with torch.export into a
PT2 archive for `thunder-gen model.pt2 -o out/`, its example inputs as .npy files beside it.

find_thunder_gen() (binary.py) is where the thunder-gen binary is, for Python code that runs it.
Importing the package does not import torch: load, build, export and the names that need torch are
imported on their first use, so the tools that only run the generator work without it.
"""
from __future__ import annotations

import importlib

from .binary import ThunderGenNotFound, find_thunder_gen
from .errors import BuildError, ExportError, ManifestError, StatusError, ThunderGenError

__all__ = ["load", "build", "export", "read_manifest", "default_build_root", "GeneratedModule", "Manifest", "find_thunder_gen",
           "ThunderGenError", "ManifestError", "BuildError", "ExportError", "StatusError", "ThunderGenNotFound"]
__version__ = "0.1.0"

# The names that need torch, by the module defining each.
_ON_FIRST_USE = {"load": ".loader", "build": ".loader", "export": ".pt2", "read_manifest": ".manifest", "Manifest": ".manifest",
                 "default_build_root": ".build", "GeneratedModule": ".module", "Library": ".module"}


def __getattr__(name: str):
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # All of them at once: importing .loader imports the submodule build.py, which binds the
    # package's attribute `build` to that module; the function must replace it.
    for each, module in _ON_FIRST_USE.items():
        globals()[each] = getattr(importlib.import_module(module, __name__), each)
    return globals()[name]


def __dir__():
    return sorted(set(globals()) | set(_ON_FIRST_USE))
