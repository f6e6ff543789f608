"""Compiling a generated folder into a shared library with torch.utils.cpp_extension.

The library is plain C (the entry points of include/<trace>.h), with no Python or torch code in
it: the loader calls it through ctypes, so no build compiles torch's headers (a pybind11 glue file
including torch/extension.h took 73 s of g++ on the 2-core test machine; a corpus model's whole
library takes 3-6 s). cpp_extension still does the building: compiler detection, flags, ninja,
the lock on a build folder, and the cache's place.

Cache: <root>/<name>/, root = the build_root argument, or where torch builds JIT extensions
($TORCH_EXTENSIONS_DIR, else ~/.cache/torch_extensions/py311_cu128 and the like) plus
thunder_gen/. The name ends in a hash of everything the build reads (the folder's sources and
header, the manifest, the mode, the flags, torch's and Python's versions), so a changed folder gets
a new name and a build of its own, and a process that loaded the old library can load the new one
beside it (a library is never reloaded under the same path). The sources are copied into
<name>/src first: what was hashed is what is compiled, whatever happens to the folder afterwards.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import torch
from torch.utils import cpp_extension

from .errors import BuildError
from .manifest import Manifest

# Part of every cache key: bump it when the way a library is built changes.
BUILD_RECIPE = "1"
MODES = ("cpu", "cuda")
# cpp_extension links torch's libraries after ours; the library uses none of them, so it records
# only what it does use (Boost.Context; cudart and cuBLASLt) and loads whatever torch is installed.
# (libstdc++ named before them: torch's libc10 exports a libstdc++ function of its own.)
AS_NEEDED = ["-Wl,--as-needed", "-lstdc++"]
# The generated CMakeLists.txt's default GPU architecture, used when no GPU is visible.
DEFAULT_CUDA_ARCH = "90"


def default_build_root() -> Path:
    """Where torch builds JIT extensions, plus thunder_gen/: $TORCH_EXTENSIONS_DIR, else
    get_default_build_root()/py<version>_<cuda tag> (~/.cache/torch_extensions/py311_cu128)."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root is None:
        cuda = "cpu" if torch.version.cuda is None else "cu" + torch.version.cuda.replace(".", "")
        python = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
        root = Path(cpp_extension.get_default_build_root()) / f"{python}_{cuda}"
    return Path(root) / "thunder_gen"


def _sources(m: Manifest) -> dict[str, bytes]:
    """Relative path -> bytes of every file a build reads: the runtime headers and .cu files at the
    folder's top, the public header, the manifest. (Not harness.cpp, CMakeLists.txt, nor a build
    folder a user made inside it.)"""
    folder = m.folder
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix in (".cu", ".cuh", ".h"))
    header = Path(m.header)
    if header.is_absolute() or ".." in header.parts:
        raise BuildError(f"{folder / 'manifest.json'}: header {m.header!r} is not a path inside the folder")
    files = {}
    for rel in [*names, header.as_posix(), "manifest.json"]:
        try:
            files[rel] = (folder / rel).read_bytes()
        except OSError as e:
            raise BuildError(f"{folder}: cannot read {rel}: {e.strerror}") from None
    for needed in ["forward.cu"] + (["backward.cu"] if m.backward else []):
        if needed not in files:
            raise BuildError(f"{folder}: {needed} is missing")
    return files


def _cache_key(files: dict[str, bytes], mode: str, flags: list[str]) -> str:
    h = hashlib.sha256()
    for part in (BUILD_RECIPE, mode, sys.version, torch.__version__, "\0".join(flags)):
        h.update(part.encode() + b"\0")
    for rel, data in sorted(files.items()):
        h.update(f"{rel}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def _write_if_changed(path: Path, data: bytes) -> None:
    """Writes by renaming a complete temporary file, and only when the bytes differ: a build of the
    same key running beside this one never reads half a file, and ninja sees no new timestamps."""
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _cuda_arch(arch: str | None, device: torch.device) -> str:
    """"90" for sm_90: the argument, else the device's own, else the generated CMake's default."""
    if arch is None:
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability(device)
            return f"{major}{minor}"
        return DEFAULT_CUDA_ARCH
    digits = re.fullmatch(r"(?:sm_)?(\d+)([a-z]?)", arch.replace(".", ""))
    if not digits:
        raise ValueError(f"arch {arch!r}: expected e.g. 'sm_90' or '9.0'")
    return digits.group(1) + digits.group(2)


def _recipe(m: Manifest, mode: str, arch: str | None, device: torch.device) -> dict:
    """cpp_extension.load's arguments for one mode, but the paths (sources are relative to src/)."""
    if mode == "cpu":
        # The two .cu files as one C++ translation unit: the emulated runtime is compiled once.
        unity = "".join(f'#include "{f}"\n' for f in ["forward.cu"] + (["backward.cu"] if m.backward else []))
        return dict(extra_files={"thunder_gen_unity.cpp": unity.encode()}, sources=["thunder_gen_unity.cpp"],
                    extra_cflags=["-std=c++20", "-O2", "-fno-strict-aliasing"],
                    extra_ldflags=["-lboost_context", "-pthread", *AS_NEEDED], with_cuda=False)
    if cpp_extension.CUDA_HOME is None:
        raise BuildError("device='cuda' needs the CUDA toolkit (nvcc), and torch found none: "
                         "set CUDA_HOME, or put nvcc on PATH")
    sm = _cuda_arch(arch, device)
    cuda_lib = Path(cpp_extension.CUDA_HOME) / "lib64"
    return dict(extra_files={}, sources=["forward.cu"] + (["backward.cu"] if m.backward else []),
                extra_cflags=["-O2", "-fno-strict-aliasing"],
                extra_cuda_cflags=["-std=c++17", f"-gencode=arch=compute_{sm},code=sm_{sm}",
                                   "-Xcompiler=-fno-strict-aliasing"],
                extra_ldflags=[f"-L{cuda_lib}", "-lcublasLt", f"-Wl,-rpath,{cuda_lib}", *AS_NEEDED], with_cuda=True)


def build(m: Manifest, mode: str, *, build_root: str | Path | None = None, arch: str | None = None,
          device: torch.device | None = None, verbose: bool = False) -> Path:
    """Compiles the folder of manifest `m` for `mode` ("cpu": host emulation, "cuda": nvcc), or
    finds it compiled; returns the shared library's path."""
    if mode not in MODES:
        raise ValueError(f"device {mode!r}: expected one of {MODES}")
    files = _sources(m)
    root = Path(build_root) if build_root is not None else default_build_root()
    recipe = _recipe(m, mode, arch, device or torch.device(mode))
    extra_files, sources = recipe.pop("extra_files"), recipe.pop("sources")
    flags = [*recipe["extra_cflags"], *recipe.get("extra_cuda_cflags", []), *recipe["extra_ldflags"], *sources]
    key = _cache_key({**files, **extra_files}, mode, flags)
    name = f"tg_{m.trace[:40]}_{mode}_{key[:16]}"
    build_dir = root / name
    src = build_dir / "src"
    for rel, data in {**files, **extra_files}.items():
        _write_if_changed(src / rel, data)
    try:
        path = cpp_extension.load(name=name, sources=[str(src / s) for s in sources], build_directory=str(build_dir),
                                  extra_include_paths=[str(src), str(src / "include")], verbose=verbose,
                                  is_python_module=False, **recipe)
    except (RuntimeError, OSError) as e:
        hint = ("device='cpu' needs g++, ninja and Boost.Context (Debian: libboost-context-dev)" if mode == "cpu"
                else "device='cuda' needs nvcc and cuBLASLt from the CUDA toolkit at CUDA_HOME")
        raise BuildError(f"{m.folder}: building the {mode} library {name} failed ({hint}):\n{_head(str(e))}") from None
    return Path(path)


def _head(text: str, limit: int = 6000) -> str:
    """The compiler's first errors (the later ones mostly follow from them)."""
    return text if len(text) <= limit else text[:limit] + "\n..."
