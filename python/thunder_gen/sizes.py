"""Size expressions as a manifest writes them (docs/symbolic-shapes.md): evaluated to check a
manifest's sizes against its shapes. A call's sizes are bound by the library itself
(<trace>_bind_sizes, which the module calls).
"""
from __future__ import annotations

import ast
import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: lambda a, b: a // b}


def symbols_in(text: str) -> set:
    """The symbols a size expression names."""
    return {name for name in _IDENTIFIER.findall(text) if name not in ("max", "min")}


def evaluate(text: str, values: dict) -> int:
    """A size expression as thunder-gen writes one ("B*T", "T//2 + 1", "max(B, 2)") at `values`.
    Raises KeyError for a symbol not in `values`, ValueError for text outside that grammar."""
    if not isinstance(text, str) or len(text) > 4096:
        raise ValueError(f"not a size expression: {str(text)[:64]!r}")
    # Symbols become placeholders first: a symbol may be spelled like a Python keyword (None, class).
    placeholders = {}
    def placeholder(match):
        name = match.group(0)
        return name if name in ("max", "min") else placeholders.setdefault(name, f"s_{len(placeholders)}")
    spelled = _IDENTIFIER.sub(placeholder, text)
    names = {p: name for name, p in placeholders.items()}

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            return values[names[node.id]]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min")
                and len(node.args) == 2 and not node.keywords):
            return (max if node.func.id == "max" else min)(walk(node.args[0]), walk(node.args[1]))
        raise ValueError(f"not a size expression: {text!r}")
    try:
        return walk(ast.parse(spelled, mode="eval"))
    except (SyntaxError, RecursionError, MemoryError, ZeroDivisionError):
        raise ValueError(f"not a size expression: {text[:64]!r}") from None
