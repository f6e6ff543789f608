"""Where the thunder-gen binary is, for Python code that runs it (the project's tools and tests,
or a program of your own):

    from thunder_gen.binary import find_thunder_gen
    subprocess.run([find_thunder_gen(), "trace.json", "-o", "out/"], check=True)

find_thunder_gen() looks, in order, at:
  1. $THUNDER_GEN, an override: when it is set, it must name an executable file, else the error
     names it (no other place is tried);
  2. the build folder of the checkout this package is part of, <checkout>/build/thunder-gen, when
     the package is used from its checkout (the editable install tools/setup-python.sh makes, or
     PYTHONPATH=<checkout>/python). The package is plain Python: it ships no binary and records
     none, so this is the package's own build;
  3. thunder-gen on PATH (where `cmake --install build --prefix P` puts it: P/bin).
When none holds it, ThunderGenNotFound names every place looked and how to build thunder-gen or
set THUNDER_GEN. Standard library only: importing this module does not import torch.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import ThunderGenError

OVERRIDE = "THUNDER_GEN"
EXECUTABLE = "thunder-gen"


class ThunderGenNotFound(ThunderGenError, FileNotFoundError):
    """No thunder-gen binary where find_thunder_gen() looks; the message names the places.
    `override` is true when $THUNDER_GEN was set (and names no executable file)."""

    def __init__(self, message: str, override: bool = False):
        super().__init__(message)
        self.override = override


def checkout() -> Path | None:
    """The checkout this package is part of (<checkout>/python/thunder_gen/ is its folder), or
    None when it is installed elsewhere."""
    package = Path(__file__).resolve().parent
    root = package.parent.parent
    if package.parent.name == "python" and (root / "CMakeLists.txt").is_file() and (root / "src").is_dir():
        return root
    return None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_thunder_gen() -> str:
    """The thunder-gen binary's absolute path: $THUNDER_GEN, else the checkout's build, else PATH's."""
    override = os.environ.get(OVERRIDE)
    if override:
        path = Path(override)
        if not _executable(path):
            what = "is a folder" if path.is_dir() else "is not executable" if path.exists() else "does not exist"
            raise ThunderGenNotFound(f"${OVERRIDE}={override} names no executable file (it {what}): point it at the thunder-gen "
                                     f"binary, or unset it to look in the checkout's build folder and on PATH", override=True)
        return os.path.abspath(path)
    looked = [f"${OVERRIDE} (not set)"]
    root = checkout()
    if root is not None:
        built = root / "build" / EXECUTABLE
        if _executable(built):
            return str(built)
        looked.append(f"{built} (the checkout's build folder)")
    else:
        looked.append(f"no checkout's build folder ({Path(__file__).resolve().parent} is not in a checkout's python/)")
    on_path = shutil.which(EXECUTABLE)
    if on_path:
        return os.path.abspath(on_path)
    looked.append(f"PATH ({os.environ.get('PATH', '')})")
    build = f"{root}/tools/build.sh thunder-gen" if root is not None else "tools/build.sh thunder-gen in a checkout"
    raise ThunderGenNotFound(f"no thunder-gen binary found. Looked at: {'; '.join(looked)}. Build it ({build}), install it on "
                             f"PATH (cmake --install build --prefix P puts it in P/bin), or set ${OVERRIDE} to its path")
