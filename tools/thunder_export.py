#!/usr/bin/env python3
"""Moved to python/thunder_gen/thunder_export.py (`python -m thunder_gen.thunder_export`). Run,
this file is that command; imported from tools/ as `thunder_export`, it is that module."""
import sys

import thunder_gen_binary  # noqa: F401  (puts this checkout's python/ first on sys.path)
from thunder_gen import thunder_export

if __name__ == "__main__":
    sys.exit(thunder_export.cli())
sys.modules[__name__] = thunder_export
