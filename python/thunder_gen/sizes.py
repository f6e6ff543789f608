"""The sizes of a call into a folder generated from a symbolic trace (docs/symbolic-shapes.md).

Each symbol is bound from the inputs' shapes (a dim the trace sizes as the symbol alone), checked
between inputs, against the symbol's range and divisibility, and every other dim is compared with
its size expression evaluated at those values. What is wrong is said naming the input, the
dimension, the symbol and its range; sizes that are all consistent but not the ones the folder was
generated at are told as the --specialize that would generate a folder for them.
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


def range_text(name: str, decl: dict) -> str:
    """"2 <= T <= 512, a multiple of 16", as thunder-gen says it."""
    text = f"{decl['min']} <= {name} <= {decl['max']}"
    return text + (f", a multiple of {decl['multiple_of']}" if decl["multiple_of"] > 1 else "")


def _assignment(sizes: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))


def check_call(manifest, shapes: dict) -> str | None:
    """None when the tensors' shapes ({input name: shape}) are the ones the folder runs at; else
    what is wrong, in a sentence."""
    symbolic = [v for v in manifest.inputs if v.is_tensor and v.sizes is not None and v.name in shapes]
    for v in symbolic:
        if len(shapes[v.name]) != len(v.sizes):
            return f"input {v.name!r}: expected {len(v.sizes)} dimensions ({list(v.sizes)}), got {len(shapes[v.name])}"
    bound, source = {}, {}
    for v in symbolic:
        for d, size in enumerate(v.sizes):
            if isinstance(size, str) and size.isidentifier():
                got = shapes[v.name][d]
                if size in bound and bound[size] != got:
                    return (f"input {v.name!r} dim {d} is {got}, but {size} is {bound[size]} "
                            f"({source[size]}): the inputs disagree on {size}")
                bound.setdefault(size, got)
                source.setdefault(size, f"input {v.name!r} dim {d}")
    for name, value in bound.items():
        decl = manifest.symbols.get(name)
        if decl and not (decl["min"] <= value <= decl["max"] and value % decl["multiple_of"] == 0):
            return f"{source[name]} is {value}, but {name} must be {range_text(name, decl)}"
    # A symbol no input's dim gives alone (only inside B*T, say) is taken at the folder's size.
    at = {**manifest.specialized_at, **bound}
    for v in symbolic:
        for d, size in enumerate(v.sizes):
            try:
                want = size if isinstance(size, int) else evaluate(size, at)
            except KeyError:
                continue  # (a symbol the manifest does not size)
            if shapes[v.name][d] != want:
                if isinstance(size, int):
                    return f"input {v.name!r} dim {d} is {shapes[v.name][d]}, but the trace's size there is {want}"
                unbound = sorted(symbols_in(size) - set(bound))
                assumed = f" ({', '.join(unbound)} as this folder has {'them' if len(unbound) > 1 else 'it'}: no input dim is one alone)" if unbound else ""
                return (f"input {v.name!r} dim {d} is {shapes[v.name][d]}, but the trace's size there is {size} = {want} "
                        f"at {_assignment({k: at[k] for k in symbols_in(size)})}{assumed}")
    moved = {k: v for k, v in bound.items() if manifest.specialized_at.get(k) != v}
    if moved:
        return (f"the inputs are at {_assignment(bound)}, and this folder runs at {_assignment(manifest.specialized_at)} "
                f"only; generate one for these sizes with --specialize {_assignment(at)}")
    return None
