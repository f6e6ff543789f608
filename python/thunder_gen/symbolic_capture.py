"""A Thunder trace with symbolic sizes: one program captured at several sizes, merged into one
document whose sizes are expressions over named symbols (docs/symbolic-shapes.md).

    from thunder_gen.symbolic_capture import export_symbolic
    doc = export_symbolic(block, x, name="block", dynamic={"x": {0: "B", 1: "T"}},
                          symbols={"B": (1, 64), "T": (1, 512)})

    python -m thunder_gen.thunder_export MODULE:FACTORY -o trace.json --dynamic x:0=B,1=T --symbol B=1:64 --symbol T=1:512

Thunder traces at fixed sizes, so the program is traced once per size assignment (`plan()`: each
symbol at three values, each pair of symbols moved together, and a last point kept back to check
the result) and the traces are merged (`merge()`; the point kept back has every symbol at its largest size): they must be the same program (same ops,
names, arguments) up to integers; an integer that is the same in every trace is a constant, one
that differs is fitted with a polynomial in the symbols of degree two at most (`B`, `B*T`,
`T*T`, `(B*T)//2`) with rational coefficients, written over one denominator as a floor division,
and the fit must hold at the point kept back. Anything else is refused, naming the place: a
program that changes shape with the sizes (Thunder took another path), a float that changes
(a scale computed from a size), a size no such polynomial explains.
"""
import itertools
from fractions import Fraction
from math import lcm

from .errors import ExportError


# ---- which sizes to capture at ---------------------------------------------------------------------
def admissible(lo, hi, multiple_of, count):
    """`count` small distinct sizes in [lo, hi] that are multiples of `multiple_of`: away from 0
    and 1 (where broadcasting and Thunder's specializations change a program) and from powers of
    two (which hide a floor division) where the range leaves a choice; None if it holds fewer."""
    def multiples(start):
        first = -(-start // multiple_of) * multiple_of
        return list(itertools.islice(range(first, hi + 1, multiple_of), 64))
    values = multiples(max(lo, 2))
    if len(values) < count:
        values = multiples(lo)
    if len(values) < count:
        return None
    preferred = [v for v in values if v & (v - 1)]
    return preferred[:count] if len(preferred) >= count else values[:count]


def plan(symbols):
    """The size assignments to capture at: (fitting points, the point kept back). `symbols` is
    {name: (min, max)} or {name: (min, max, multiple_of)}."""
    values, largest = {}, {}
    for name, declared in symbols.items():
        lo, hi, multiple = (tuple(declared) + (1,))[:3]
        largest[name] = hi // multiple * multiple
        picked = admissible(lo, hi, multiple, 4)
        if picked is None or largest[name] in picked[:3]:
            raise ExportError(f"symbol {name}: [{lo}, {hi}] holds fewer than 4 multiples of {multiple} to capture at; widen its range")
        values[name] = picked
    names = sorted(values)
    base = {n: values[n][0] for n in names}
    points = [dict(base)]
    for n in names:
        for v in values[n][1:3]:
            points.append({**base, n: v})
    for a, b in itertools.combinations(names, 2):
        points.append({**base, a: values[a][1], b: values[b][1]})
    # The point kept back is each symbol's largest size: what is fitted at small sizes must also
    # hold at the top of the range (a clamp such as min(T, 1024) would not).
    held_back = {n: largest[n] for n in names}
    return points, held_back


# ---- fitting an integer to the sizes ----------------------------------------------------------------
def monomials(names):
    """1, each symbol, each product of two (squares too): the terms a size is fitted with."""
    out = [()]
    out += [(n,) for n in names]
    out += list(itertools.combinations_with_replacement(names, 2))
    return out


def term_value(term, point):
    v = 1
    for n in term:
        v *= point[n]
    return v


def solve(rows, rhs):
    """The exact solution of a square or overdetermined system in Fractions (least squares is not
    needed: the system is consistent or the fit fails), or None when it has none or many."""
    cols = len(rows[0])
    m = [[Fraction(x) for x in row] + [Fraction(y)] for row, y in zip(rows, rhs)]
    pivots = []
    r = 0
    for c in range(cols):
        pivot = next((i for i in range(r, len(m)) if m[i][c] != 0), None)
        if pivot is None:
            return None  # a term the points cannot tell apart from others
        m[r], m[pivot] = m[pivot], m[r]
        m[r] = [x / m[r][c] for x in m[r]]
        for i in range(len(m)):
            if i != r and m[i][c] != 0:
                f = m[i][c]
                m[i] = [x - f * y for x, y in zip(m[i], m[r])]
        pivots.append(c)
        r += 1
    if any(row[-1] != 0 for row in m[r:]):
        return None
    return [m[i][-1] for i in range(cols)]


def expression(coefficients, terms):
    """The fitted polynomial as the trace format writes sizes: `2*B*T + T + 1`, or over a common
    denominator `(B*T + 1)//2`."""
    denominator = lcm(*(c.denominator for c in coefficients))
    parts = []
    for c, term in sorted(zip(coefficients, terms), key=lambda ct: (-len(ct[1]), ct[1])):
        k = int(c * denominator)
        if k == 0:
            continue
        body = "*".join(term)
        text = str(abs(k)) if not body else body if abs(k) == 1 else f"{abs(k)}*{body}"
        parts.append(("- " if k < 0 else "+ ") + text)
    text = " ".join(parts) or "0"
    text = text[2:] if text.startswith("+ ") else "-" + text[2:] if text.startswith("- ") else text
    return text if denominator == 1 else f"({text})//{denominator}"


def fit(values, points, names):
    """The expression a size takes at `points` (an integer per point), or None."""
    terms = monomials(names)
    solution = solve([[term_value(t, p) for t in terms] for p in points], values)
    if solution is None:
        # Fewer points than terms tell some apart only with the constant and linear terms.
        terms = monomials(names)[: 1 + len(names)]
        solution = solve([[term_value(t, p) for t in terms] for p in points], values)
    if solution is None:
        return None
    return expression(solution, terms), solution, terms


# ---- merging the captures --------------------------------------------------------------------------
class Merger:
    def __init__(self, points, held_back, names):
        self.points, self.held_back, self.names = points, held_back, names

    def where(self, path):
        return "/" + "/".join(str(p) for p in path)

    def op_name(self, doc, path):
        if len(path) >= 2 and path[0] == "ops" and isinstance(path[1], int):
            return f" ({doc['ops'][path[1]].get('op', '?')})"
        return ""

    def merge(self, docs, check, path):
        first = docs[0]
        if any(type(d) is not type(first) for d in docs + [check]):  # (True == 1 and 2.0 == 2 in Python)
            raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: the program differs between sizes "
                              f"(a {type(first).__name__} at one size, a {next(type(d).__name__ for d in docs + [check] if type(d) is not type(first))} "
                              "at another)")
        if isinstance(first, bool) or first is None or isinstance(first, str):
            if any(d != first for d in docs + [check]):
                raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: the program differs between sizes "
                                  f"({first!r} at {self.points[0]}, {next(d for d in docs if d != first)!r} elsewhere): "
                                  "Thunder traced another program at another size")
            return first
        if isinstance(first, int):
            return self.size(docs, check, path)
        if isinstance(first, float):
            if any(d != first for d in docs + [check]):
                raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: a number changes with the sizes ({first!r}, ...): "
                                  "thunder-gen's symbolic sizes are integers")
            return first
        if isinstance(first, list):
            if any(not isinstance(d, list) or len(d) != len(first) for d in docs + [check]):
                raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: the program differs between sizes (a list of "
                                  "another length): Thunder traced another program at another size")
            return [self.merge([d[i] for d in docs], check[i], path + [i]) for i in range(len(first))]
        if any(not isinstance(d, dict) or d.keys() != first.keys() for d in docs + [check]):
            raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: the program differs between sizes (other fields)")
        return {k: self.merge([d[k] for d in docs], check[k], path + [k]) for k in first}

    def size(self, docs, check, path):
        if any(not isinstance(d, int) or isinstance(d, bool) for d in docs + [check]):
            raise ExportError(f"{self.where(path)}: the program differs between sizes (an integer became something else)")
        if all(d == docs[0] for d in docs) and check == docs[0]:
            return docs[0]
        fitted = fit(docs, self.points, self.names)
        if fitted is None or evaluate(fitted, self.held_back) != check:
            seen = ", ".join(f"{d} at {format_point(p)}" for d, p in zip(docs, self.points))
            raise ExportError(f"{self.where(path)}{self.op_name(self.root, path)}: no size expression explains this integer ({seen})")
        text = fitted[0]
        # A value declaration's shape entry (inputs[i].shape[k], out[i].shape[k]) is written bare;
        # an integer argument, a kwarg named shape among them, as {"size": ...}.
        declared = len(path) >= 4 and path[-2] == "shape" and path[-4] in ("inputs", "out")
        return text if declared else {"size": text}


def evaluate(fitted, point):
    _, solution, terms = fitted
    v = sum(c * term_value(t, point) for c, t in zip(solution, terms))
    return int(v) if v.denominator == 1 else None


def format_point(point):
    return ",".join(f"{k}={v}" for k, v in sorted(point.items()))


def merge(docs, points, check_doc, held_back, symbols):
    """One trace document with symbolic sizes from `docs` (one per point of `points`) and
    `check_doc` (at `held_back`); `symbols` {name: (min, max[, multiple_of])} become its "symbols"."""
    names = sorted(symbols)
    m = Merger(points, held_back, names)
    m.root = docs[0]
    merged = m.merge(docs, check_doc, [])
    declared = {}
    for name in names:
        lo, hi, multiple = (tuple(symbols[name]) + (1,))[:3]
        declared[name] = {"min": lo, "max": hi} if multiple == 1 else {"min": lo, "max": hi, "multiple_of": multiple}
    out = {}
    for k, v in merged.items():  # "symbols" after "device", as docs/trace-format.md lists the fields
        out[k] = v
        if k == "device":
            out["symbols"] = declared
    if "symbols" not in out:
        out["symbols"] = declared
    return out


# ---- capturing ---------------------------------------------------------------------------------------
def resized(example, dims, point, generator):
    """A tensor like `example` with each dim of `dims` ({dim: symbol}) at the point's size: drawn
    as the example's dtype asks (integers within the example's range)."""
    import torch
    shape = list(example.shape)
    for dim, symbol in dims.items():
        shape[dim] = point[symbol]
    if example.dtype.is_floating_point:
        t = torch.randn(shape, generator=generator).to(example.dtype)
    else:
        lo, hi = int(example.min()), int(example.max())
        t = torch.randint(lo, hi + 1, shape, generator=generator).to(example.dtype)
    return t.requires_grad_(example.requires_grad)


def arguments_at(fn, args, dynamic, point):
    """`args` with each input `dynamic` names ({parameter name or position: {dim: symbol}})
    resized to `point`."""
    import inspect
    import torch
    forward = fn.forward if isinstance(fn, torch.nn.Module) else fn
    params = [p for p in inspect.signature(forward).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    position = {p.name: i for i, p in enumerate(params[: len(args)])}
    position.update({i: i for i in range(len(args))})
    unknown = [k for k in dynamic if k not in position]
    if unknown:
        raise ExportError(f"--dynamic names {unknown}, which are not among the call's arguments "
                          f"{[p.name for p in params[: len(args)]] or list(range(len(args)))}")
    g = torch.Generator().manual_seed(0)
    out = list(args)
    for key, dims in dynamic.items():
        i = position[key]
        if not isinstance(out[i], torch.Tensor) or any(d >= out[i].dim() or d < -out[i].dim() for d in dims):
            raise ExportError(f"--dynamic {key}: argument {i} has no dims {sorted(dims)}")
        out[i] = resized(args[i], {d % args[i].dim(): s for d, s in dims.items()}, point, g)
    return out


def export_symbolic(fn, *args, name, dynamic, symbols, device="cuda:0"):
    """thunder_export.export() at every size plan() picks, merged into one symbolic trace.
    `dynamic`: {argument name: {dim: symbol}}; `symbols`: {symbol: (min, max[, multiple_of])}."""
    from .thunder_export import export
    used = {s for dims in dynamic.values() for s in dims.values()}
    if used != set(symbols):
        raise ExportError(f"--dynamic uses symbols {sorted(used)} and --symbol declares {sorted(symbols)}: they must be the same")
    points, held_back = plan(symbols)
    docs = [export(fn, *arguments_at(fn, args, dynamic, p), name=name, device=device) for p in points]
    check = export(fn, *arguments_at(fn, args, dynamic, held_back), name=name, device=device)
    doc = merge(docs, points, check, held_back, symbols)
    doc["source"] += f"; symbolic: captured at {'; '.join(format_point(p) for p in points + [held_back])}"
    return doc


def parse_dynamic(text):
    """`x:0=B,1=T` -> ("x", {0: "B", 1: "T"}); an argument by position: `0:0=B` -> (0, {0: "B"})."""
    arg, _, dims = text.partition(":")
    out = {}
    for item in dims.split(","):
        dim, _, symbol = item.partition("=")
        if not (arg.isidentifier() or arg.isdigit()) or not dim.strip().lstrip("-").isdigit() or not symbol.isidentifier():
            raise ExportError(f"--dynamic {text!r}: expected ARG:DIM=SYMBOL[,DIM=SYMBOL...], such as x:0=B,1=T (ARG a name or a position)")
        out[int(dim)] = symbol
    return (int(arg) if arg.isdigit() else arg), out


def parse_symbol(text):
    """`B=1:64` or `T=8:512:8` -> ("B", (1, 64)) or ("T", (8, 512, 8))."""
    name, _, bounds = text.partition("=")
    parts = bounds.split(":")
    if not name.isidentifier() or len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise ExportError(f"--symbol {text!r}: expected NAME=MIN:MAX[:MULTIPLE_OF], such as B=1:64")
    return name, tuple(int(p) for p in parts)
