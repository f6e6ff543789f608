#!/usr/bin/env python3
"""ops_table.py: writes docs/ops.md, the table of every op thunder-gen knows, from
`thunder-gen list-ops --json` (tools/op_declarations.py finds the binary). Plain python3.

    python3 tools/ops_table.py           # rewrite docs/ops.md
    python3 tools/ops_table.py --check   # exit 1 when docs/ops.md differs from what this writes
"""
from __future__ import annotations

import sys
from pathlib import Path

from op_declarations import op_table

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ops.md"

GRADIENT = {"rule": "its own rule", "lowering": "through its lowering", "none": "none flows", "refused": "refused (no rule)"}


def signature(row: dict) -> str:
    parts, starred = [], False
    for p in row["params"]:
        if p["keyword_only"] and not starred:
            parts.append("*")
            starred = True
        parts.append(p["name"] + ("=" + p["default"] if "default" in p else ""))
    return "(" + ", ".join(parts) + ")"


def gradient(row: dict) -> str:
    text = GRADIENT[row["gradient"]]
    return f"{text}, reads {row['grad_saves']}" if row["gradient"] == "rule" else text


def reference(row: dict) -> str:
    if "aten" in row:
        return f"`aten::{row['aten']}`"
    if row["fusion"] == "elementwise" and "torch" in row:
        return f"`{row['torch']}`"
    return "by hand"


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def family_table(family: str, rows: list[dict]) -> list[str]:
    lines = [f"## {family}", "", f"Declared in `src/ops/{family}.def`.", "",
             "| op | signature | fusion | dtypes | gradient | LibTorch reference | notes |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        notes = row.get("summary", "")
        if "code" in row:
            notes = (notes + "; " if notes else "") + f"`{row['code']}`"
        lines.append("| " + " | ".join(cell(c) for c in [f"`{row['id']}`", f"`{signature(row)}`", row["fusion"], row["accepts"], gradient(row),
                                                           reference(row), notes]) + " |")
    return lines + [""]


def document() -> str:
    rows = op_table()
    declared = [r for r in rows if "form_of" not in r]
    forms = [r for r in rows if "form_of" in r]
    families: dict[str, list[dict]] = {}
    for row in declared:
        families.setdefault(row["family"], []).append(row)
    lines = ["# The ops thunder-gen knows", "",
             "Written by `tools/ops_table.py` from `thunder-gen list-ops --json`: do not edit it by hand (`python3 tools/ops_table.py`",
             "rewrites it; the test `ops_table` fails when it is out of date). Each op is declared once, as a row of its family's",
             "`src/ops/<family>.def` (docs/design-notes.md, \"Where an op lives\").", "",
             f"{len(declared)} ops in {len(families)} families, and the torch-level forms of {len(forms)} elementwise prims. "
             "*gradient*: its own rule and what it reads of the forward, or differentiated through its lowering's prims; "
             "*LibTorch reference*: the ATen call or PyTorch function the reference interpreter (reference/) computes it with, "
             "or a function of its own (`reference/evaluators.cpp`).", ""]
    for family, members in families.items():
        lines += family_table(family, members)
    lines += ["## Torch-level forms of the elementwise prims", "",
              "Each takes tensors and numbers, broadcasts and promotes them as PyTorch does, and is lowered to the prim "
              "(src/ops/torch_elementwise.h):", "",
              ", ".join(f"`{r['id']}`" for r in forms), ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = document()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: python3 tools/ops_table.py rewrites it from thunder-gen list-ops --json",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
