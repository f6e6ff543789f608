"""The tools' way to the thunder-gen binary: find_thunder_gen() of this checkout's package
(python/thunder_gen/binary.py: $THUNDER_GEN, else build/thunder-gen, else PATH), importable
without installing the package and without torch.

    from thunder_gen_binary import ThunderGenNotFound, find_thunder_gen
"""
import sys
from pathlib import Path

# This checkout's python/ first: its tools run with its package (and find its build folder),
# whichever thunder_gen an environment has installed.
_PYTHON = str(Path(__file__).resolve().parent.parent / "python")
if _PYTHON not in sys.path:
    sys.path.insert(0, _PYTHON)

from thunder_gen.binary import ThunderGenNotFound, find_thunder_gen  # noqa: E402

__all__ = ["ThunderGenNotFound", "find_thunder_gen", "built_thunder_gen"]


def built_thunder_gen():
    """find_thunder_gen()'s binary, or None where there is none, for tests that are skipped
    without one. A $THUNDER_GEN that names no executable file still raises."""
    try:
        return find_thunder_gen()
    except ThunderGenNotFound as e:
        if e.override:
            raise
        return None
