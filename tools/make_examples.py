#!/usr/bin/env python3
"""Writes the example traces in examples/*.json (thunder-gen-trace, version 1).

Each example is a hand-written trace in the shape Lightning Thunder gives its traces: prims, and
torch-level symbols with their decomposition in `sub`. A small builder below infers every output's
shape and dtype as thunder-gen's shape rules do, binding arguments by the prims' declared
signatures and reading which prims give a bool result and which are reductions from the
declarations (`thunder-gen list-ops --json`, tools/op_declarations.py), so the JSON stays
consistent when an example changes. Plain python3, standard library only:

    python3 tools/make_examples.py            # rewrite examples/*.json made by this script
    python3 tools/make_examples.py --check    # exit 1 when a committed file differs from its output

examples/softmax.json is hand-written and not touched. Inputs are drawn by the harness uniformly in
[-2, 2) for floats and [-4, 4] for integers (u8: [0, 8]), so every example builds the domain its ops
need inside the trace (log(abs(x) + 1), asin(x * 0.5), divisor abs(y) + 1, shift & 7, ...).
"""
import json
import math
import os
import sys

from op_declarations import bool_result_ops, family_ids, op_table, params

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

FLOATS = ("f16", "bf16", "f32", "f64")
# The prims whose result is b8 (the comparisons, signbit, isfinite), by short name.
BOOL_RESULT = {op.removeprefix("prims.") for op in bool_result_ops() if op.startswith("prims.")}
# The reductions (src/ops/reduction_prims.def), by short name.
REDUCTIONS = {op.removeprefix("prims.") for op in family_ids("reduction_prims")}
DEVICE = {"device": "cuda:0"}


def dtype(name):
    return {"dtype": name}


class Builder:
    """Collects ops of one trace (or of one custom-gradient body) and infers their outputs."""

    def __init__(self, names=None):
        self.values = {}          # name -> ("tensor", shape, dtype) | ("scalar", kind)
        self.scopes = [set()]     # names visible, innermost last
        self.lists = [[]]         # where new ops go, innermost last
        self.names = names if names is not None else {"next": 0}

    # ---- declarations ------------------------------------------------------------------
    def fresh(self):
        n = "t%d" % self.names["next"]
        self.names["next"] += 1
        return n

    def declare(self, name, shape, dt):
        assert name not in self.values, "defined twice: " + name
        self.values[name] = ("tensor", list(shape), dt)
        self.scopes[-1].add(name)
        return name

    def decl(self, name):
        v = self.values[name]
        if v[0] == "scalar":
            return {"name": name, "scalar": v[1]}
        return {"name": name, "shape": v[1], "dtype": v[2]}

    def shape(self, name):
        return self.values[name][1]

    def dtype(self, name):
        return self.values[name][2]

    def is_tensor(self, a):
        if not isinstance(a, str):
            return False
        assert any(a in s for s in self.scopes), "not visible here: " + a
        return self.values[a][0] == "tensor"

    # ---- ops ---------------------------------------------------------------------------
    def op(self, symbol, *args, kwargs=None, tags=None, name=None):
        """Appends prims.<symbol>; returns the output name (or a tuple for var_mean)."""
        outs = self.infer(symbol, list(args), kwargs or {})
        names = []
        for i, (shape, dt) in enumerate(outs):
            n = name[i] if isinstance(name, (list, tuple)) else (name if name and i == 0 else self.fresh())
            names.append(self.declare(n, shape, dt))
        op = {"op": "prims." + symbol, "args": list(args)}
        if kwargs:
            op["kwargs"] = kwargs
        op["out"] = [self.decl(n) for n in names]
        if tags:
            op["tags"] = tags
        self.lists[-1].append(op)
        return names[0] if len(names) == 1 else tuple(names)

    def begin(self, symbol, args, kwargs=None, tags=None):
        """Opens a torch-level call; the ops until end() are its decomposition (`sub`)."""
        self.lists.append([])
        self.scopes.append(set())
        return {"symbol": symbol, "args": args, "kwargs": kwargs, "tags": tags}

    def end(self, call, outs):
        sub = self.lists.pop()
        inner = self.scopes.pop()
        for n in outs:
            assert n in inner, "the decomposition does not define " + n
            self.scopes[-1].add(n)
        op = {"op": call["symbol"], "args": call["args"]}
        if call["kwargs"]:
            op["kwargs"] = call["kwargs"]
        op["out"] = [self.decl(n) for n in outs]
        if call["tags"]:
            op["tags"] = call["tags"]
        op["sub"] = sub
        self.lists[-1].append(op)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def torch(self, symbol, args, kwargs, shape, dt):
        """A torch-level op thunder-gen has a row for, written without a decomposition (as an
        exporter that knows thunder-gen's table may); its output type is given."""
        out = self.declare(self.fresh(), shape, dt)
        op = {"op": symbol, "args": list(args)}
        if kwargs:
            op["kwargs"] = kwargs
        op["out"] = [self.decl(out)]
        self.lists[-1].append(op)
        return out

    def custom(self, args, fwd, bwd):
        """torch.ops.higher_order.autograd_function_apply: fwd/bwd are finished Body objects."""
        outs = []
        for o in fwd.outputs:
            _, shape, dt = fwd.b.values[o]
            outs.append(self.declare(self.fresh(), shape, dt))
        for a, i in zip([a for a in args if self.is_tensor(a)], fwd.inputs):
            assert self.shape(a) == fwd.b.shape(i) and self.dtype(a) == fwd.b.dtype(i), "fwd input mismatch"
        op = {"op": "torch.ops.higher_order.autograd_function_apply", "args": list(args),
              "out": [self.decl(n) for n in outs], "fwd": fwd.json(), "bwd": bwd.json()}
        self.lists[-1].append(op)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ---- shape and dtype rules (as thunder-gen's, src/ops/<family>.cpp) -------------------------
    def bind(self, params, args, kwargs):
        vals = dict(zip(params, args))
        for k, v in kwargs.items():
            assert k in params and k not in vals, "bad keyword " + k
            vals[k] = v
        return vals

    def infer(self, s, args, kwargs):
        v = self.bind(params("prims." + s), args, kwargs)  # by the prim's declared signature
        if s in ("where",):
            if self.is_tensor(v["pred"]):
                assert self.dtype(v["pred"]) == "b8"
            ts = [x for x in (v["a"], v["b"]) if self.is_tensor(x)]
            assert ts, "where needs a tensor branch"
            if len(ts) == 2:
                assert self.dtype(ts[0]) == self.dtype(ts[1]), "where: branch dtypes differ"
            like = ts[0]
            for x in (v["pred"], v["a"], v["b"]):
                if self.is_tensor(x):
                    assert self.shape(x) == self.shape(like), "where: shapes differ"
            return [(self.shape(like), self.dtype(like))]
        if s == "convert_element_type":
            return [(self.shape(v["a"]), v["dtype"]["dtype"])]
        if s == "full":
            return [(v["shape"], v["dtype"]["dtype"])]
        if s == "uniform_philox":
            return [(v["shape"], v["dtype"]["dtype"])]
        if s == "uniform":
            return [(v["shape"], v["dtype"]["dtype"])]
        if s == "matmul":
            a, b = self.shape(v["a"]), self.shape(v["b"])
            assert a[-1] == b[-2] and (len(b) == 2 or b[:-2] == a[:-2]), "matmul: shapes %s and %s" % (a, b)
            assert self.dtype(v["a"]) == self.dtype(v["b"])
            return [(a[:-1] + [b[-1]], self.dtype(v["a"]))]
        if s == "iota":
            return [([v["length"]], v["dtype"]["dtype"])]
        if s == "broadcast_in_dim":
            a, shape, bd = v["a"], v["shape"], v["broadcast_dimensions"]
            assert len(bd) == len(self.shape(a))
            for i, d in enumerate(bd):
                assert self.shape(a)[i] in (1, shape[d]), "cannot broadcast"
            return [(shape, self.dtype(a))]
        if s == "reshape":
            assert math.prod(v["shape"]) == math.prod(self.shape(v["a"]))
            return [(v["shape"], self.dtype(v["a"]))]
        if s == "transpose":
            sh = self.shape(v["a"])
            return [([sh[d] for d in v["permutation"]], self.dtype(v["a"]))]
        if s == "squeeze":
            sh = self.shape(v["a"])
            dims = {d % len(sh) for d in v["dims"]}
            assert all(sh[d] == 1 for d in dims)
            return [([n for i, n in enumerate(sh) if i not in dims], self.dtype(v["a"]))]
        if s == "slice_prim":
            sh = self.shape(v["a"])
            st = v.get("strides") or [1] * len(sh)
            out = [(e - b + k - 1) // k for b, e, k in zip(v["start_indices"], v["end_indices"], st)]
            return [(out, self.dtype(v["a"]))]
        if s == "pad":
            sh = self.shape(v["a"])
            out = [lo + hi + n + max(n - 1, 0) * it for n, (lo, hi, it) in zip(sh, v["padding_config"])]
            return [(out, self.dtype(v["a"]))]
        if s == "cat":
            ts = v["tensors"]
            sh = list(self.shape(ts[0]))
            d = v["dim"] % len(sh)
            sh[d] = sum(self.shape(t)[d] for t in ts)
            assert all(self.dtype(t) == self.dtype(ts[0]) for t in ts)
            return [(sh, self.dtype(ts[0]))]
        if s in REDUCTIONS:
            sh = self.shape(v["a"])
            if s in ("argmax", "argmin"):
                dims = list(range(len(sh))) if v["dim"] is None else [v["dim"] % len(sh)]
            else:
                dims = [d % len(sh) for d in v["dims"]]
            out = [n for i, n in enumerate(sh) if i not in dims]
            dt = "i64" if s in ("argmax", "argmin") else self.dtype(v["a"])
            if s in ("var", "var_mean"):
                assert dt in FLOATS
            return [(out, dt)] * (2 if s == "var_mean" else 1)
        # elementwise
        ts = [a for a in list(args) + list(kwargs.values()) if self.is_tensor(a)]
        assert ts, s + " needs a tensor operand"
        for t in ts:
            assert self.shape(t) == self.shape(ts[0]), "%s: shapes %s and %s differ" % (s, self.shape(t), self.shape(ts[0]))
            assert self.dtype(t) == self.dtype(ts[0]), "%s: dtypes %s and %s differ" % (s, self.dtype(t), self.dtype(ts[0]))
        return [(self.shape(ts[0]), "b8" if s in BOOL_RESULT else self.dtype(ts[0]))]


class Body:
    """A custom-gradient sub-trace (fwd or bwd): its own scope."""

    def __init__(self, names):
        self.b = Builder(names)
        self.inputs, self.outputs, self.saved = [], [], None

    def input(self, name, shape, dt):
        self.inputs.append(self.b.declare(name, shape, dt))
        return name

    def json(self):
        j = {"inputs": [self.b.decl(n) for n in self.inputs], "ops": self.b.lists[0], "outputs": self.outputs}
        if self.saved is not None:
            j["saved"] = self.saved
        return j


class Trace(Builder):
    def __init__(self, name, source, device=None):
        super().__init__()
        self.name, self.source, self.device = name, source, device
        self.inputs, self.outputs = [], []

    def input(self, name, shape, dt, requires_grad=False, init=None):
        """init: (lo, hi) for the harness's draws (the "init" extension), e.g. a weight's scale."""
        self.declare(name, shape, dt)
        d = self.decl(name)
        if requires_grad:
            d["requires_grad"] = True
        if init is not None:
            d["init"] = {"uniform": [init[0], init[1]]}
        self.inputs.append(d)
        return name

    def scalar(self, name, kind):
        self.values[name] = ("scalar", kind)
        self.scopes[-1].add(name)
        self.inputs.append({"name": name, "scalar": kind})
        return name

    def json(self):
        j = {"format": "thunder-gen-trace", "version": 1, "name": self.name}
        if self.device:
            j["device"] = self.device
        j["source"] = self.source
        j["inputs"] = self.inputs
        j["ops"] = self.lists[0]
        j["outputs"] = self.outputs
        return j


# ---- JSON layout: one op per line, decompositions and bodies nested below their op -------------
def dumps(x):
    return json.dumps(x, separators=(", ", ": "))


def op_lines(op, indent):
    nested = [k for k in ("sub", "fwd", "bwd") if k in op]
    if not nested:
        return [indent + dumps(op)]
    head = {k: v for k, v in op.items() if k not in nested}
    lines = [indent + dumps(head)[:-1] + ","]
    inner = indent + " "
    for i, k in enumerate(nested):
        last = i == len(nested) - 1
        if k == "sub":
            lines.append(inner + '"sub": [')
            lines += ops_lines(op[k], inner + "  ")
            lines.append(inner + "]" + ("}" if last else ","))
        else:
            body = op[k]
            lines.append(inner + dumps(k) + ': {"inputs": ' + dumps(body["inputs"]) + ",")
            lines.append(inner + ' "ops": [')
            lines += ops_lines(body["ops"], inner + "   ")
            tail = inner + ' ], "outputs": ' + dumps(body["outputs"])
            if "saved" in body:
                tail += ', "saved": ' + dumps(body["saved"])
            lines.append(tail + "}" + ("}" if last else ","))
    return lines


def ops_lines(ops, indent):
    out = []
    for i, op in enumerate(ops):
        ls = op_lines(op, indent)
        if i < len(ops) - 1:
            ls[-1] += ","
        out += ls
    return out


def render(t):
    j = t.json()
    lines = ["{"]
    for k in ("format", "version", "name", "device", "source"):
        if k in j:
            lines.append("  %s: %s," % (dumps(k), dumps(j[k])))
    lines.append('  "inputs": [')
    lines += ["    " + dumps(d) + ("," if i < len(j["inputs"]) - 1 else "") for i, d in enumerate(j["inputs"])]
    lines.append("  ],")
    lines.append('  "ops": [')
    lines += ops_lines(j["ops"], "    ")
    lines.append("  ],")
    lines.append('  "outputs": ' + dumps(j["outputs"]))
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == j, "layout changed the document"
    return text


# ---- the examples -------------------------------------------------------------------------------
EXAMPLES_MADE = []


def example(fn):
    EXAMPLES_MADE.append(fn)
    return fn


@example
def chain10():
    t = Trace("chain10", "hand-written: a fused chain of exactly 10 elementwise prims over x f32[1024, 1024] "
                         "(tanh(log(|sin(1.5x + 0.25)^2 - x| + 1)) * 3); generated code must be one kernel")
    x = t.input("x", [1024, 1024], "f32")
    a = t.op("mul", x, 1.5)
    a = t.op("add", a, 0.25)
    a = t.op("sin", a)
    a = t.op("mul", a, a)
    a = t.op("sub", a, x)
    a = t.op("abs", a)
    a = t.op("add", a, 1.0)
    a = t.op("log", a)
    a = t.op("tanh", a)
    a = t.op("mul", a, 3.0)
    t.outputs = [a]
    return t


@example
def deep_residual():
    t = Trace("deep_residual", "hand-written: 40 stacked blocks y = y + tanh(y - rowmean(y) * 0.5), each reading "
                               "the previous block: long elementwise chains through row reductions over the "
                               "same rows, which fusion must cut (written and re-read) instead of recomputing "
                               "the whole chain in every row pass")
    y = t.input("x", [64, 512], "f32")
    for _ in range(40):
        m = t.op("mul", t.op("sum", y, [1]), 1.0 / 512)
        d = t.op("sub", y, t.op("broadcast_in_dim", t.op("mul", m, 0.5), [64, 512], [0]))
        y = t.op("add", y, t.op("tanh", d))
    t.outputs = [y]
    return t


@example
def residual_scale():
    t = Trace("residual_scale", "hand-written: a real-size fused epilogue over f32[2048, 2048] (4M elements): "
                                "residual + x * gamma (LayerScale, gamma row-broadcast) * s (per-token scale "
                                "[2048, 1], broadcast through its size-1 dim), as torch.add/torch.mul calls with "
                                "their broadcasts in `sub`; one output")
    x = t.input("x", [2048, 2048], "f32")
    residual = t.input("residual", [2048, 2048], "f32")
    gamma = t.input("gamma", [2048], "f32")
    s = t.input("s", [2048, 1], "f32")
    call = t.begin("torch.mul", [x, gamma])
    y = t.end(call, [t.op("mul", x, t.op("broadcast_in_dim", gamma, [2048, 2048], [1]))])
    call = t.begin("torch.mul", [y, s])
    y = t.end(call, [t.op("mul", y, t.op("broadcast_in_dim", s, [2048, 2048], [0, 1]))])
    call = t.begin("torch.add", [residual, y])
    t.outputs = [t.end(call, [t.op("add", residual, y)])]
    return t


@example
def unary_f32():
    t = Trace("unary_f32", "hand-written: every elementwise unary prim of the exp/log/sqrt/rounding families on f32, "
                           "each on a domain it accepts, one output per op; isfinite sees real infinities "
                           "(1/floor(x) and a where with an inf literal)")
    x = t.input("x", [256, 512], "f32")
    outs = []
    ax = t.op("abs", x)
    a1 = t.op("add", ax, 1.0)                  # [1, 3)
    for f in ("exp", "exp2", "expm1"):
        outs.append(t.op(f, x))
    outs.append(t.op("log", a1))
    outs.append(t.op("log1p", ax))
    outs.append(t.op("log2", a1))
    outs.append(t.op("log10", a1))
    outs.append(t.op("sqrt", ax))
    outs.append(t.op("rsqrt", t.op("add", ax, 0.25)))
    outs.append(t.op("reciprocal", a1))
    outs.append(t.op("neg", x))
    s = t.op("mul", x, 3.0)
    for f in ("floor", "ceil", "round", "trunc", "sign"):
        outs.append(t.op(f, s))
    # exact halves (k / 2 for integer k): round is half-to-even, like torch.round
    halves = t.op("mul", t.op("floor", t.op("mul", x, 4.0)), 0.5)
    outs.append(t.op("round", halves))
    outs.append(t.op("signbit", t.op("sub", x, 0.5)))
    inv = t.op("reciprocal", t.op("floor", x))  # inf where floor(x) == 0
    outs.append(t.op("isfinite", inv))
    big = t.op("where", t.op("gt", x, 1.75), {"float": "inf"}, x)
    big = t.op("where", t.op("lt", x, -1.75), {"float": "-inf"}, big)
    outs.append(t.op("isfinite", big))
    outs.append(big)
    t.outputs = outs
    return t


@example
def trig_f64():
    t = Trace("trig_f64", "hand-written: the trigonometric, hyperbolic and error-function prims on f64 (domains built "
                          "in the trace: asin(x/2), acosh(|x|+1), atanh(0.4x), erfinv(0.45x)), plus atan2")
    x = t.input("x", [128, 512], "f64")
    y = t.input("y", [128, 512], "f64")
    outs = [t.op(f, x) for f in ("sin", "cos", "tanh", "sinh", "cosh", "atan", "asinh", "erf", "erfc")]
    outs.append(t.op("tan", t.op("mul", x, 0.7)))
    half = t.op("mul", x, 0.5)
    outs.append(t.op("asin", half))
    outs.append(t.op("acos", half))
    outs.append(t.op("acosh", t.op("add", t.op("abs", x), 1.0)))
    outs.append(t.op("atanh", t.op("mul", x, 0.4)))
    outs.append(t.op("erfinv", t.op("mul", x, 0.45)))
    outs.append(t.op("atan2", y, x))
    t.outputs = outs
    return t


@example
def binary_float():
    t = Trace("binary_float", "hand-written: the binary and ternary float prims (add sub mul div pow fmod remainder "
                              "atan2 maximum minimum lerp where and the six comparisons) on f32 and bf16; "
                              "pow on a positive base, fmod/remainder by |y| + 0.5 and by a negative divisor")
    x = t.input("x", [256, 512], "f32")
    y = t.input("y", [256, 512], "f32")
    a = t.input("a", [256, 512], "bf16")
    b = t.input("b", [256, 512], "bf16")
    outs = []
    outs.append(t.op("add", x, y))
    outs.append(t.op("sub", x, y))
    outs.append(t.op("mul", x, y))
    d = t.op("add", t.op("abs", y), 0.5)
    outs.append(t.op("div", x, d))
    outs.append(t.op("pow", t.op("add", t.op("abs", x), 0.5), y))
    outs.append(t.op("fmod", x, d))
    outs.append(t.op("remainder", x, d))
    outs.append(t.op("remainder", x, t.op("neg", d)))
    outs.append(t.op("atan2", x, y))
    outs.append(t.op("maximum", x, y))
    outs.append(t.op("minimum", x, y))
    outs.append(t.op("lerp", x, y, 0.3))
    w = t.op("mul", t.op("add", y, 2.0), 0.25)    # weight in [0, 1)
    outs.append(t.op("lerp", x, y, w))
    fx, fy = t.op("floor", x), t.op("floor", y)   # equal often enough to matter
    for c in ("eq", "ne", "lt", "le", "gt", "ge"):
        outs.append(t.op(c, fx, fy))
    outs.append(t.op("where", t.op("gt", x, y), x, 0.0))
    # bf16: computed in f32 registers, rounded once per stored output
    outs.append(t.op("add", a, b))
    outs.append(t.op("mul", a, b))
    outs.append(t.op("div", a, t.op("add", t.op("abs", b), 1.0)))
    outs.append(t.op("maximum", a, b))
    outs.append(t.op("pow", t.op("add", t.op("abs", a), 0.5), 2.0))
    outs.append(t.op("le", a, b))
    t.outputs = outs
    return t


@example
def int_arith():
    t = Trace("int_arith", "hand-written: integer arithmetic on i32 and i64: add sub mul, truncating div, "
                           "remainder and fmod (divisor |y| + 1, and negative), abs neg sign maximum minimum, "
                           "integer floor/ceil/round/trunc/signbit, comparisons and where, sum/prod/amax/amin/"
                           "argmax/argmin, and conversions i32 <-> i64 <-> f64/f32")
    x = t.input("x", [256, 256], "i32")
    y = t.input("y", [256, 256], "i32")
    p = t.input("p", [256, 256], "i64")
    q = t.input("q", [256, 256], "i64")
    outs = []
    d = t.op("add", t.op("abs", y), 1)           # [1, 5]
    nd = t.op("neg", d)
    outs.append(t.op("div", x, d))
    outs.append(t.op("div", x, nd))
    outs.append(t.op("remainder", x, d))
    outs.append(t.op("remainder", x, nd))
    outs.append(t.op("fmod", x, nd))
    outs.append(t.op("sub", t.op("mul", x, y), t.op("add", x, 7)))
    outs.append(t.op("maximum", x, y))
    outs.append(t.op("minimum", x, y))
    outs.append(t.op("sign", x))
    s = t.op("add", t.op("floor", x), t.op("ceil", y))
    s = t.op("add", s, t.op("round", x))
    outs.append(t.op("sub", s, t.op("trunc", y)))
    outs.append(t.op("signbit", x))
    outs.append(t.op("where", t.op("lt", x, y), x, y))
    # i64
    dq = t.op("add", t.op("abs", q), 1)
    outs.append(t.op("div", t.op("mul", p, 1000000007), dq))      # beyond 32 bits
    outs.append(t.op("remainder", p, dq))
    outs.append(t.op("fmod", t.op("neg", p), dq))
    outs.append(t.op("sum", x, [1]))
    outs.append(t.op("sum", t.op("convert_element_type", x, dtype("i64")), [0, 1]))
    outs.append(t.op("amax", p, [0]))
    outs.append(t.op("amin", y, [1]))
    outs.append(t.op("argmax", x, 1))           # ties: the first index wins
    outs.append(t.op("argmin", p, None))
    few = t.op("slice_prim", p, [0, 0], [256, 8], None)
    outs.append(t.op("prod", few, [1]))
    # conversions
    outs.append(t.op("convert_element_type", t.op("mul", p, q), dtype("i32")))
    xf = t.op("convert_element_type", x, dtype("f64"))
    outs.append(t.op("div", xf, 3.0))
    back = t.op("convert_element_type", t.op("mul", t.op("convert_element_type", y, dtype("f32")), 0.75), dtype("i32"))
    outs.append(back)                           # f32 -> i32 truncates toward zero
    t.outputs = outs
    return t


@example
def int_bitwise():
    t = Trace("int_bitwise", "hand-written: bitwise prims and shifts on i8, u8 and i16 (shift amounts y & 7), "
                             "wrapping add/sub/mul in the narrow types, maximum/minimum, and reductions "
                             "sum/amax/amin/argmin over narrow integers")
    a = t.input("a", [128, 512], "i8")
    b = t.input("b", [128, 512], "i8")
    c = t.input("c", [128, 512], "u8")
    d = t.input("d", [128, 512], "u8")
    e = t.input("e", [128, 512], "i16")
    f = t.input("f", [128, 512], "i16")
    outs = []
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        outs.append(t.op(op, a, b))
    outs.append(t.op("bitwise_not", a))
    sb = t.op("bitwise_and", b, 7)
    outs.append(t.op("bitwise_left_shift", a, sb))      # wraps in 8 bits
    outs.append(t.op("bitwise_right_shift", a, sb))     # arithmetic: sign fills
    outs.append(t.op("maximum", a, b))
    outs.append(t.op("minimum", a, b))
    outs.append(t.op("mul", t.op("mul", a, b), 9))         # wraps in i8
    # u8
    cd = t.op("sub", c, d)                                  # wraps below zero
    sd = t.op("bitwise_and", d, 7)
    outs.append(cd)
    outs.append(t.op("bitwise_right_shift", cd, sd))
    outs.append(t.op("bitwise_left_shift", c, sd))
    outs.append(t.op("bitwise_xor", t.op("bitwise_not", c), d))
    outs.append(t.op("div", cd, t.op("add", d, 1)))
    outs.append(t.op("gt", cd, 128))
    # i16
    sf = t.op("bitwise_and", f, 7)
    outs.append(t.op("bitwise_left_shift", t.op("mul", e, 1000), sf))
    outs.append(t.op("bitwise_right_shift", e, sf))
    outs.append(t.op("bitwise_or", t.op("bitwise_and", e, f), t.op("bitwise_xor", e, 255)))
    outs.append(t.op("remainder", e, t.op("add", t.op("abs", f), 1)))
    # reductions and conversions between the narrow types
    outs.append(t.op("sum", e, [1]))
    outs.append(t.op("sum", t.op("convert_element_type", a, dtype("i16")), [0]))
    outs.append(t.op("amax", c, [1]))
    outs.append(t.op("amin", a, [0]))
    outs.append(t.op("argmin", c, None))
    outs.append(t.op("argmax", e, 0))
    outs.append(t.op("convert_element_type", e, dtype("i8")))     # wraps
    outs.append(t.op("convert_element_type", a, dtype("u8")))     # wraps
    t.outputs = outs
    return t


@example
def bool_masks():
    t = Trace("bool_masks", "hand-written: b8 masks: comparisons, bitwise and/or/xor/not on b8, maximum/minimum "
                            "and eq/ne on b8, isfinite, amax/amin over b8, b8 -> f32/i32 conversions, where, and "
                            "a masked mean")
    m = t.input("m", [256, 256], "b8")
    x = t.input("x", [256, 256], "f32")
    outs = []
    pos = t.op("gt", x, 0.0)
    outs.append(t.op("bitwise_and", m, pos))
    outs.append(t.op("bitwise_or", m, pos))
    outs.append(t.op("bitwise_xor", m, pos))
    outs.append(t.op("bitwise_not", m))
    outs.append(t.op("maximum", m, pos))
    outs.append(t.op("minimum", m, pos))
    outs.append(t.op("eq", m, pos))
    outs.append(t.op("ne", m, True))
    outs.append(t.op("isfinite", m))
    outs.append(t.op("amax", m, [1]))
    outs.append(t.op("amin", m, [0]))
    mf = t.op("convert_element_type", m, dtype("f32"))
    num = t.op("sum", t.op("mul", x, mf), [1])
    den = t.op("add", t.op("sum", mf, [1]), 1.0)
    outs.append(t.op("div", num, den))                       # masked row mean
    outs.append(t.op("sum", t.op("convert_element_type", m, dtype("i32")), [0]))
    outs.append(t.op("where", m, x, t.op("neg", x)))
    outs.append(t.op("convert_element_type", x, dtype("b8")))  # x != 0
    t.outputs = outs
    return t


@example
def shape_ops():
    t = Trace("shape_ops", "hand-written: data movement prims: squeeze, transpose (2-d and 3-d), reshape, slice_prim "
                           "with strides and with null strides, pad with lo/hi/interior padding and a negative lo, "
                           "cat, broadcast_in_dim (row, column, size-1 dims, new leading dims, by keyword), "
                           "full and iota given device/dtype by keyword",
              device="cuda:0")
    x = t.input("x", [64, 1, 96], "f32")
    y = t.input("y", [32, 48], "i16")
    z = t.input("z", [8, 16], "f64")
    v = t.input("v", [1, 48], "f32")
    outs = []
    s = t.op("squeeze", x, [1])                             # [64, 96]
    tr = t.op("transpose", s, [1, 0])                       # [96, 64]
    r = t.op("reshape", tr, [48, 128])
    sl = t.op("slice_prim", r, [2, 1], [46, 127], [2, 3])   # [22, 42]
    outs.append(t.op("mul", sl, 2.0))
    p = t.op("pad", sl, 0.5, [[-2, 3, 1], [1, 0, 2]])       # [44, 125]
    outs.append(p)
    p2 = t.op("pad", t.op("squeeze", x, [-2]), -1.0, [[1, -3, 0], [0, 0, 0]])   # [62, 96]
    outs.append(t.op("exp", p2))
    left = t.op("slice_prim", s, [0, 0], [32, 48], None)
    right = t.op("slice_prim", s, [32, 48], [64, 96], None)
    outs.append(t.op("cat", [left, right, t.op("neg", left)], 1))   # [32, 144]
    outs.append(t.op("cat", [left, right], 0))                      # [64, 48]
    # row and column broadcasts over y, with full and iota built by keyword
    ones = t.op("full", [32, 48], 7, kwargs={"device": DEVICE, "dtype": dtype("i16")})
    col = t.op("iota", 48, kwargs={"start": -5, "step": 3, "device": DEVICE, "dtype": dtype("i16")})
    row = t.op("iota", 32, kwargs={"start": 0, "step": 1, "device": DEVICE, "dtype": dtype("i16")})
    colb = t.op("broadcast_in_dim", col, [32, 48], [1])
    rowb = t.op("broadcast_in_dim", row, kwargs={"shape": [32, 48], "broadcast_dimensions": [0]})
    outs.append(t.op("add", t.op("mul", y, colb), t.op("sub", rowb, ones)))
    # size-1 dims: v [1, 48] stretched over 32 rows, then a new leading dim
    vb = t.op("broadcast_in_dim", v, [32, 48], [0, 1])
    yf = t.op("convert_element_type", y, dtype("f32"))
    outs.append(t.op("add", yf, vb))
    z3 = t.op("broadcast_in_dim", z, [4, 8, 16], [1, 2])
    z3 = t.op("transpose", z3, [2, 0, 1])                   # [16, 4, 8]
    z2 = t.op("reshape", z3, [16, 32])
    outs.append(t.op("mul", z2, t.op("full", [16, 32], 0.25, kwargs={"device": DEVICE, "dtype": dtype("f64")})))
    t.outputs = outs
    return t


@example
def flip():
    t = Trace("flip", "hand-written: prims.flip (Thunder's torch.flip) of one and of two dims (one of 32, one given as "
                      "a negative index) of f32 and i32 values, feeding elementwise ops, and its gradient", device="cuda:0")
    x = t.input("x", [6, 32, 4], "f32", requires_grad=True)
    y = t.input("y", [5, 7], "i32")
    w = t.input("w", [6, 32, 4], "f32", requires_grad=True)
    outs = [t.op("mul", t.op("flip", x, [0, -2]), w)]
    outs.append(t.op("add", t.op("flip", y, [1]), 3))
    outs.append(t.op("exp", t.op("flip", t.op("neg", w), [2])))
    t.outputs = outs
    return t


@example
def contiguous_views():
    t = Trace("contiguous_views", "hand-written: views of contiguous memory feeding one pointwise kernel over [64, 768]: "
                                  "reshapes of [4, 16, 768] (f32 and bf16) and a reshape of a reshape, each read at the "
                                  "kernel's own element i; a squeeze; rows 2.. of [66, 768] (i + 1536); every second "
                                  "column of [64, 1536] (i * 2); a row-broadcast bias; a transpose's reshape (pieces of "
                                  "192 contiguous elements) and a 2-d transpose (a gather). Index code must need no "
                                  "division for the first six, and ptx_check.py finds every run the lanes read "
                                  "contiguously loaded with one vector access")
    x = t.input("x", [4, 16, 768], "f32", requires_grad=True)
    xh = t.input("xh", [4, 16, 768], "bf16")
    y = t.input("y", [64, 768], "f32")
    z = t.input("z", [64, 1, 768], "f32")
    w = t.input("w", [66, 768], "f32", requires_grad=True)
    v = t.input("v", [64, 1536], "f32")
    bias = t.input("bias", [768], "f32")
    u = t.input("u", [4, 64, 192], "f32")
    g = t.input("g", [768, 64], "f32")
    a = t.op("reshape", x, [64, 768])
    ah = t.op("convert_element_type", t.op("reshape", xh, [64, 768]), dtype("f32"))
    b = t.op("reshape", t.op("reshape", y, [4, 16, 768]), [64, 768])
    c = t.op("squeeze", z, [1])
    d = t.op("slice_prim", w, [2, 0], [66, 768], None)
    e = t.op("slice_prim", v, [0, 0], [64, 1536], [1, 2])
    f = t.op("broadcast_in_dim", bias, [64, 768], [1])
    pieces = t.op("reshape", t.op("transpose", u, [1, 0, 2]), [64, 768])
    gathered = t.op("transpose", g, [1, 0])
    out1 = t.op("add", t.op("mul", t.op("add", a, ah), b), t.op("sub", c, d))
    out2 = t.op("add", t.op("mul", e, f), t.op("sub", pieces, gathered))
    t.outputs = [t.op("mul", out1, d), out2]
    return t


@example
def reductions():
    t = Trace("reductions", "hand-written: reduction prims: sum, prod, amax, amin over one, several and all dims; "
                            "var and var_mean with correction given by keyword; argmax/argmin with a dim, a "
                            "negative dim and dim null; on f32, f64 and f16; f16 sums over the rows of a row kernel "
                            "kept in f32 parts, 1100 rows in 512 (t21 element by element, t22 over a value per row)")
    x = t.input("x", [64, 32, 48], "f32")
    y = t.input("y", [128, 96], "f64")
    h = t.input("h", [64, 256], "f16")
    hr = t.input("hr", [1100, 48], "f16")
    outs = []
    outs.append(t.op("sum", x, [0, 2]))
    outs.append(t.op("sum", x, [0, 1, 2]))
    outs.append(t.op("prod", t.op("add", t.op("mul", x, 0.05), 1.0), [2]))
    outs.append(t.op("amax", x, [1]))
    outs.append(t.op("amin", x, [0, 2]))
    outs.append(t.op("var", x, [2], kwargs={"correction": 1}))
    outs.extend(t.op("var_mean", y, [0], kwargs={"correction": 0}))
    outs.append(t.op("var", y, [0, 1], kwargs={"correction": 1}))
    outs.append(t.op("argmax", x, 2))
    outs.append(t.op("argmin", x, -1))
    outs.append(t.op("argmax", y, None))
    outs.append(t.op("argmin", y, None))
    outs.append(t.op("sum", h, [1]))
    outs.append(t.op("amax", h, [0]))
    outs.extend(t.op("var_mean", h, [1], kwargs={"correction": 1}))
    outs.append(t.op("prod", y, [0, 1]))
    per_row = t.op("sum", hr, [1])
    outs.append(per_row)
    outs.append(t.op("sum", hr, [0]))
    outs.append(t.op("sum", per_row, [0]))
    t.outputs = outs
    return t


def layer_norm_sub(t, x, w, b, n, eps):
    """Thunder's decomposition of torch.nn.functional.layer_norm over the last dim."""
    rows = t.shape(x)[:-1]
    full = t.shape(x)
    keep = rows + [1]
    bd = list(range(len(rows)))
    var, mean = t.op("var_mean", x, [len(rows)], kwargs={"correction": 0})
    var_k = t.op("broadcast_in_dim", var, keep, bd)
    mean_k = t.op("broadcast_in_dim", mean, keep, bd)
    rstd = t.op("rsqrt", t.op("add", var_k, eps))
    mean_b = t.op("broadcast_in_dim", mean_k, full, bd + [len(rows)])
    centered = t.op("sub", x, mean_b)
    rstd_b = t.op("broadcast_in_dim", rstd, full, bd + [len(rows)])
    out = t.op("mul", centered, rstd_b)
    wb = t.op("broadcast_in_dim", w, full, [len(rows)])
    out = t.op("mul", out, wb)
    bb = t.op("broadcast_in_dim", b, full, [len(rows)])
    return t.op("add", out, bb)


def layer_norm_inputs(t, rows, n):
    """x f32[rows, n], weight and bias f32[n], all requiring grad."""
    return (t.input("x", [rows, n], "f32", requires_grad=True), t.input("w", [n], "f32", requires_grad=True),
            t.input("b", [n], "f32", requires_grad=True))


@example
def layer_norm():
    t = Trace("layer_norm", "hand-written: torch.nn.functional.layer_norm(x, [1024], w, b, 1e-05) over "
                            "x f32[2048, 1024] (2M elements) as Thunder decomposes it: var_mean with correction 0, "
                            "keepdim broadcasts through size-1 dims, add eps, rsqrt, sub, mul, weight and bias "
                            "broadcast over rows")
    x, w, b = layer_norm_inputs(t, 2048, 1024)
    call = t.begin("torch.nn.functional.layer_norm", [x, [1024], w, b, 1e-05])
    out = layer_norm_sub(t, x, w, b, 1024, 1e-05)
    t.outputs = [t.end(call, [out])]
    return t


@example
def gelu_bf16():
    t = Trace("gelu_bf16", "hand-written: bias add then torch.nn.functional.gelu(h, approximate='tanh') on "
                           "bf16[2048, 1024] computed in f32 (Thunder's upcast), plus the exact erf gelu of the "
                           "same h; bias broadcast over rows")
    x = t.input("x", [2048, 1024], "bf16")
    bias = t.input("bias", [1024], "bf16")
    call = t.begin("torch.add", [x, bias])
    bb = t.op("broadcast_in_dim", bias, [2048, 1024], [1])
    h32 = t.op("add", t.op("convert_element_type", x, dtype("f32")), t.op("convert_element_type", bb, dtype("f32")))
    h = t.op("convert_element_type", h32, dtype("bf16"))
    h = t.end(call, [h])
    call = t.begin("torch.nn.functional.gelu", [h], {"approximate": {"str": "tanh"}})
    a = t.op("convert_element_type", h, dtype("f32"))
    cube = t.op("mul", t.op("mul", a, a), a)
    inner = t.op("add", a, t.op("mul", cube, 0.044715))
    inner = t.op("mul", inner, math.sqrt(2.0 / math.pi))
    g = t.op("mul", t.op("mul", a, 0.5), t.op("add", t.op("tanh", inner), 1.0))
    g = t.op("convert_element_type", g, dtype("bf16"))
    g = t.end(call, [g])
    call = t.begin("torch.nn.functional.gelu", [h], {"approximate": {"str": "none"}})
    a = t.op("convert_element_type", h, dtype("f32"))
    e = t.op("erf", t.op("mul", a, 1.0 / math.sqrt(2.0)))
    ge = t.op("mul", t.op("mul", a, 0.5), t.op("add", e, 1.0))
    ge = t.op("convert_element_type", ge, dtype("bf16"))
    ge = t.end(call, [ge])
    t.outputs = [g, ge]
    return t


@example
def swiglu_f16():
    t = Trace("swiglu_f16", "hand-written: LLaMA MLP gate, torch.nn.functional.silu(gate) * up on f16[1024, 2048] "
                            "(2M elements); silu as Thunder decomposes it in f32 (x * reciprocal(1 + exp(-x))), "
                            "torch.mul upcast and rounded back to f16")
    gate = t.input("gate", [1024, 2048], "f16")
    up = t.input("up", [1024, 2048], "f16")
    call = t.begin("torch.nn.functional.silu", [gate], {"inplace": False})
    a = t.op("convert_element_type", gate, dtype("f32"))
    sig = t.op("reciprocal", t.op("add", t.op("exp", t.op("neg", a)), 1.0))
    s = t.op("convert_element_type", t.op("mul", a, sig), dtype("f16"))
    s = t.end(call, [s])
    call = t.begin("torch.mul", [s, up])
    m = t.op("mul", t.op("convert_element_type", s, dtype("f32")), t.op("convert_element_type", up, dtype("f32")))
    m = t.op("convert_element_type", m, dtype("f16"))
    t.outputs = [t.end(call, [m])]
    return t


def rms_norm_bf16_sub(t, x, w):
    rows, n = t.shape(x)
    a = t.op("convert_element_type", x, dtype("f32"))
    ms = t.op("div", t.op("sum", t.op("mul", a, a), [1]), float(n))
    ms = t.op("broadcast_in_dim", ms, [rows, 1], [0])
    r = t.op("rsqrt", t.op("add", ms, 1e-06))
    r = t.op("broadcast_in_dim", r, [rows, n], [0, 1])
    y = t.op("convert_element_type", t.op("mul", a, r), dtype("bf16"))
    wb = t.op("broadcast_in_dim", w, [rows, n], [1])
    return t.op("convert_element_type",
                t.op("mul", t.op("convert_element_type", y, dtype("f32")), t.op("convert_element_type", wb, dtype("f32"))),
                dtype("bf16"))


def rms_norm_bf16_example(name, source, rows, requires_grad):
    t = Trace(name, source)
    x = t.input("x", [rows, 1024], "bf16", requires_grad=requires_grad)
    w = t.input("w", [1024], "bf16", requires_grad=requires_grad)
    call = t.begin("torch.nn.functional.rms_norm", [x, [1024], w, 1e-06])
    t.outputs = [t.end(call, [rms_norm_bf16_sub(t, x, w)])]
    return t


@example
def rms_norm_bf16():
    return rms_norm_bf16_example("rms_norm_bf16", "hand-written: torch.nn.functional.rms_norm(x, [1024], w, 1e-06) on "
                                                  "bf16[2048, 1024]: mixed precision, x converted to f32 for the mean of "
                                                  "squares (keepdim broadcast through a size-1 dim) and the result rounded "
                                                  "back to bf16 before the bf16 weight", 2048, False)


@example
def rms_norm_bf16_train():
    return rms_norm_bf16_example("rms_norm_bf16_train", "hand-written: the rms_norm_bf16 example over bf16[600, 1024] "
                                                        "with x and w requiring grad: the weight gradient sums over the "
                                                        "600 rows in f32, which the backward's row kernel does in 512 "
                                                        "partial sums (some of two rows) and a kernel after it totals, "
                                                        "before the rounding to bf16", 600, True)


def log_softmax_sub(t, x, dim):
    rows = t.shape(x)[:-1]
    full = t.shape(x)
    bd = list(range(len(rows)))
    m = t.op("amax", x, [dim])
    mb = t.op("broadcast_in_dim", m, full, bd)
    sh = t.op("sub", x, mb)
    s = t.op("sum", t.op("exp", sh), [dim])
    ls = t.op("broadcast_in_dim", t.op("log", s), full, bd)
    return t.op("sub", sh, ls)


@example
def cross_entropy():
    t = Trace("cross_entropy", "hand-written: torch.nn.functional.cross_entropy(logits, target) with "
                               "reduction='mean' and ignore_index=-100 over 1000 classes: log_softmax (nested "
                               "torch.log_softmax with its own decomposition), then a gather-free pick via a one-hot "
                               "mask (iota + eq + where); targets made valid in the trace as target % 1000; "
                               "1200 rows, more than the 512 partial sums of the mean (two or three rows a block)")
    logits = t.input("logits", [1200, 1000], "f32", requires_grad=True)
    target = t.input("target", [1200], "i64")
    tgt = t.op("remainder", target, 1000)
    t.outputs = [cross_entropy_call(t, logits, tgt, -100)]
    return t


def cross_entropy_call(t, logits, tgt, ignore_index):
    """torch.nn.functional.cross_entropy(logits [N, C], tgt [N], reduction='mean') as Thunder
    decomposes it: log_softmax, a gather-free pick through a one-hot mask (iota + eq + where),
    ignored targets masked out of the sum and the count."""
    n, c = t.shape(logits)
    call = t.begin("torch.nn.functional.cross_entropy", [logits, tgt],
                   {"weight": None, "size_average": None, "ignore_index": ignore_index, "reduce": None,
                    "reduction": {"str": "mean"}, "label_smoothing": 0.0})
    c2 = t.begin("torch.log_softmax", [logits, 1], {"dtype": None})
    logp = t.end(c2, [log_softmax_sub(t, logits, 1)])
    classes = t.op("iota", c, kwargs={"start": 0, "step": 1, "device": DEVICE, "dtype": dtype("i64")})
    onehot = t.op("eq", t.op("broadcast_in_dim", classes, [n, c], [1]), t.op("broadcast_in_dim", tgt, [n, c], [0]))
    picked = t.op("sum", t.op("where", onehot, logp, 0.0), [1])
    valid = t.op("ne", tgt, ignore_index)
    nll = t.op("where", valid, t.op("neg", picked), 0.0)
    count = t.op("sum", t.op("convert_element_type", valid, dtype("f32")), [0])
    return t.end(call, [t.op("div", t.op("sum", nll, [0]), count)])


@example
def attention_softmax_f16():
    t = Trace("attention_softmax_f16", "hand-written: causal attention probabilities on f16 scores[8, 128, 128]: "
                                       "upcast, scale by a scalar input, causal mask from two iotas (ge) broadcast "
                                       "over heads, masked_fill with -inf, torch.softmax(dim=-1) with its "
                                       "decomposition, and the result rounded to f16")
    scores = t.input("scores", [8, 128, 128], "f16")
    scale = t.scalar("scale", "f64")
    a = t.op("convert_element_type", scores, dtype("f32"))
    a = t.op("mul", a, scale)
    i = t.op("iota", 128, kwargs={"start": 0, "step": 1, "device": DEVICE, "dtype": dtype("i32")})
    rows = t.op("broadcast_in_dim", i, [128, 128], [0])
    cols = t.op("broadcast_in_dim", i, [128, 128], [1])
    causal = t.op("broadcast_in_dim", t.op("ge", rows, cols), [8, 128, 128], [1, 2])
    a = t.op("where", causal, a, {"float": "-inf"})
    call = t.begin("torch.softmax", [a, -1], {"dtype": None})
    m = t.op("broadcast_in_dim", t.op("amax", a, [2]), [8, 128, 128], [0, 1])
    e = t.op("exp", t.op("sub", a, m))
    s = t.op("broadcast_in_dim", t.op("sum", e, [2]), [8, 128, 128], [0, 1])
    p = t.end(call, [t.op("div", e, s)])
    t.outputs = [t.op("convert_element_type", p, dtype("f16"))]
    return t


@example
def custom_grad():
    t = Trace("custom_grad", "hand-written: a torch.autograd.Function ScaledTanh (y = 1.5 * tanh(x), hand-written "
                             "backward g * 1.5 * (1 - tanh(x)^2) saving tanh(x)) captured as "
                             "torch.ops.higher_order.autograd_function_apply between two prims; its forward is "
                             "inlined and fuses with its neighbours")
    x = t.input("x", [512, 512], "f32", requires_grad=True)
    pre = t.op("mul", x, 2.0)
    fwd = Body(t.names)
    a = fwd.input("a", [512, 512], "f32")
    th = fwd.b.op("tanh", a, name="th")
    out = fwd.b.op("mul", th, 1.5, name="out")
    fwd.outputs, fwd.saved = [out], [th]
    bwd = Body(t.names)
    g = bwd.input("g", [512, 512], "f32")
    th2 = bwd.input("th", [512, 512], "f32")
    sq = bwd.b.op("mul", th2, th2, name="sq")
    one_minus = bwd.b.op("sub", 1.0, sq, name="one_minus")
    gs = bwd.b.op("mul", g, 1.5, name="gs")
    ga = bwd.b.op("mul", gs, one_minus, name="ga")
    bwd.outputs = [ga]
    y = t.custom([pre], fwd, bwd)
    t.outputs = [t.op("add", y, x)]
    return t


def custom_unary(t, x, shape, fwd_op, bwd_scale, name):
    """A torch.autograd.Function with forward fwd_op(a) (None: the identity) saving a, and
    backward g * cos(a) * bwd_scale (fwd_op "sin") or g * bwd_scale (identity)."""
    fwd = Body(t.names)
    a = fwd.input("a", shape, "f32")
    fwd.outputs, fwd.saved = [fwd.b.op(fwd_op, a, name="y") if fwd_op else a], [a] if fwd_op else []
    bwd = Body(t.names)
    g = bwd.input("g", shape, "f32")
    if fwd_op:
        a2 = bwd.input("a", shape, "f32")
        ga = bwd.b.op("mul", g, bwd.b.op("cos", a2, name="c"), name="ga")
    else:
        ga = g
    if bwd_scale != 1:
        ga = bwd.b.op("mul", ga, float(bwd_scale), name="scaled")
    bwd.outputs = [ga]
    return t.custom([x], fwd, bwd)


@example
def custom_functions():
    t = Trace("custom_functions", "hand-written after Thunder's custom autograd.Function tests: sin with backward "
                                  "g*cos(x) (the true gradient), sin with backward g*cos(x)*200 (deliberately wrong: "
                                  "thunder-gen must use it as written), an identity with backward 2*g, and a custom "
                                  "function whose forward calls another custom function (the inner backward is never "
                                  "used: the outer one's is)")
    shape = [300, 257]
    x = t.input("x", shape, "f32", requires_grad=True)
    y = t.input("y", shape, "f32", requires_grad=True)
    z = t.input("z", shape, "f32", requires_grad=True)
    w = t.input("w", shape, "f32", requires_grad=True)
    outs = [custom_unary(t, x, shape, "sin", 1, "sin_true"),
            custom_unary(t, y, shape, "sin", 200, "sin_x200"),
            custom_unary(t, z, shape, None, 2, "identity_2g")]
    # Outer: forward exp(inner_sin(a)) where inner_sin is itself custom (backward g * 7, never
    # used); backward g * 3 (deliberately not the derivative).
    fwd = Body(t.names)
    a = fwd.input("a", shape, "f32")
    inner = custom_unary(fwd.b, a, shape, "sin", 7, "inner")
    fwd.outputs, fwd.saved = [fwd.b.op("exp", inner, name="e")], []
    bwd = Body(t.names)
    g = bwd.input("g", shape, "f32")
    bwd.outputs = [bwd.b.op("mul", g, 3.0, name="g3")]
    outs.append(t.custom([w], fwd, bwd))
    t.outputs = outs
    return t


@example
def scalar_inputs():
    t = Trace("scalar_inputs", "hand-written: Thunder NumberProxy inputs (f64, i64, b8) used in elementwise ops and "
                               "as full's fill value: x * alpha + beta, n + k, where(flag, ...), and a typed "
                               "{\"dtype\": \"f32\"} conversion, and var with its correction from a scalar")
    x = t.input("x", [256, 256], "f32")
    n = t.input("n", [256, 256], "i32")
    alpha = t.scalar("alpha", "f64")
    beta = t.scalar("beta", "f64")
    k = t.scalar("k", "i64")
    flag = t.scalar("flag", "b8")
    outs = []
    outs.append(t.op("add", t.op("mul", x, alpha), beta))
    outs.append(t.op("add", n, k))
    outs.append(t.op("mul", t.op("convert_element_type", n, dtype("f32")), alpha))
    outs.append(t.op("where", flag, x, t.op("neg", x)))
    outs.append(t.op("bitwise_and", t.op("gt", x, beta), flag))
    fill = t.op("full", [256, 256], alpha, kwargs={"device": DEVICE, "dtype": dtype("f32")})
    outs.append(t.op("sub", x, fill))
    outs.append(t.op("maximum", n, k))
    # A scalar as a reduction's argument: var's correction from the i64 input k (in [-4, 4]).
    outs.append(t.op("var", x, [1], kwargs={"correction": k}))
    t.outputs = outs
    return t


def fan_in(n):
    """PyTorch's default nn.Linear init range, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), rounded."""
    r = round(1.0 / math.sqrt(n), 6)
    return (-r, r)


# ---- composite models: torch-level calls with the decompositions Thunder gives them ------------
def linear(t, x, w, b=None):
    """torch.nn.functional.linear(x, w, b): x @ w^T + b, w [out, in]."""
    call = t.begin("torch.nn.functional.linear", [x, w, b])
    y = t.op("matmul", x, t.op("transpose", w, [1, 0]))
    if b is not None:
        shape = t.shape(y)
        y = t.op("add", y, t.op("broadcast_in_dim", b, shape, [len(shape) - 1]))
    return t.end(call, [y])


def layer_norm_call(t, x, w, b, eps=1e-5):
    n = t.shape(x)[-1]
    call = t.begin("torch.nn.functional.layer_norm", [x, [n], w, b, eps])
    return t.end(call, [layer_norm_sub(t, x, w, b, n, eps)])


def gelu_tanh(t, x):
    call = t.begin("torch.nn.functional.gelu", [x], {"approximate": {"str": "tanh"}})
    cube = t.op("mul", t.op("mul", x, x), x)
    inner = t.op("mul", t.op("add", x, t.op("mul", cube, 0.044715)), math.sqrt(2.0 / math.pi))
    g = t.op("mul", t.op("mul", x, 0.5), t.op("add", t.op("tanh", inner), 1.0))
    return t.end(call, [g])


def dropout(t, x, p, seed, offset):
    """Thunder's decomposition with its RNG state made explicit: uniform_philox draws, keep where
    r < 1 - p, scale by 1 / (1 - p). The gradient needs only the b8 keep mask. seed and offset
    are also passed to the call itself (thunder-gen's extension of the signature), so its own
    lowering draws from the same inputs."""
    call = t.begin("torch.nn.functional.dropout", [x],
                   {"p": p, "training": True, "inplace": False, "seed": seed, "offset": offset})
    r = t.op("uniform_philox", t.shape(x), 0.0, 1.0,
             kwargs={"device": DEVICE, "dtype": dtype("f32"), "seed": seed, "offset": offset})
    keep = t.op("lt", r, 1.0 - p)
    y = t.op("mul", t.op("mul", x, t.op("convert_element_type", keep, dtype(t.dtype(x)))), 1.0 / (1.0 - p))
    return t.end(call, [y])


def softmax_call(t, x):
    shape = t.shape(x)
    bd = list(range(len(shape) - 1))
    call = t.begin("torch.softmax", [x, -1], {"dtype": None})
    m = t.op("broadcast_in_dim", t.op("amax", x, [len(shape) - 1]), shape, bd)
    e = t.op("exp", t.op("sub", x, m))
    s = t.op("broadcast_in_dim", t.op("sum", e, [len(shape) - 1]), shape, bd)
    return t.end(call, [t.op("div", e, s)])


@example
def wide_rows():
    t = Trace("wide_rows", "hand-written: torch.softmax(layer_norm(x, [8192], w, b), -1) over x f32[8, 8192]: rows "
                           "longer than 16 elements for each of a 256-thread block's threads, so the row kernels "
                           "take 512 or 1024 threads to keep a row in registers")
    t.outputs = [softmax_call(t, layer_norm_call(t, *layer_norm_inputs(t, 8, 8192)))]
    return t


@example
def gpt2_mlp():
    t = Trace("gpt2_mlp", "hand-written after a GPT-2 block's MLP half: x + dropout(linear(gelu_tanh(linear("
                          "layer_norm(x), 768 -> 3072)), 3072 -> 768), p=0.1) on 64 tokens; every torch-level call "
                          "with Thunder's decomposition, dropout from explicit Philox seed and offset inputs")
    x = t.input("x", [4, 16, 768], "f32", requires_grad=True)
    ln_w = t.input("ln_w", [768], "f32", requires_grad=True, init=(0.5, 1.5))
    ln_b = t.input("ln_b", [768], "f32", requires_grad=True, init=fan_in(768))
    w1 = t.input("w_fc", [3072, 768], "f32", requires_grad=True, init=fan_in(768))
    b1 = t.input("b_fc", [3072], "f32", requires_grad=True, init=fan_in(768))
    w2 = t.input("w_proj", [768, 3072], "f32", requires_grad=True, init=fan_in(3072))
    b2 = t.input("b_proj", [768], "f32", requires_grad=True, init=fan_in(3072))
    seed = t.scalar("seed", "i64")
    offset = t.scalar("offset", "i64")
    h = layer_norm_call(t, x, ln_w, ln_b)
    h = gelu_tanh(t, linear(t, h, w1, b1))
    h = dropout(t, linear(t, h, w2, b2), 0.1, seed, offset)
    call = t.begin("torch.add", [x, h])
    t.outputs = [t.end(call, [t.op("add", x, h)])]
    return t


@example
def gpt2_mlp_inference_bf16():
    t = Trace("gpt2_mlp_inference_bf16", "hand-written: the GPT-2 MLP half for inference in bf16, x + linear(gelu_tanh("
                                         "linear(layer_norm(x), 768 -> 3072)), 3072 -> 768) on 128 tokens; both bias "
                                         "adds and the GELU fold into cuBLASLt epilogues")
    x = t.input("x", [4, 32, 768], "bf16")
    ln_w = t.input("ln_w", [768], "bf16", init=(0.5, 1.5))
    ln_b = t.input("ln_b", [768], "bf16", init=fan_in(768))
    w1 = t.input("w_fc", [3072, 768], "bf16", init=fan_in(768))
    b1 = t.input("b_fc", [3072], "bf16", init=fan_in(768))
    w2 = t.input("w_proj", [768, 3072], "bf16", init=fan_in(3072))
    b2 = t.input("b_proj", [768], "bf16", init=fan_in(3072))
    h = layer_norm_call(t, x, ln_w, ln_b)
    h = linear(t, gelu_tanh(t, linear(t, h, w1, b1)), w2, b2)
    call = t.begin("torch.add", [x, h])
    t.outputs = [t.end(call, [t.op("add", x, h)])]
    return t


@example
def attention_block():
    t = Trace("attention_block", "hand-written after a GPT-2 attention block: fused QKV projection (linear 256 -> "
                                 "768), split into heads (reshape, permute), causal softmax attention in the math "
                                 "form of scaled_dot_product_attention (q k^T / sqrt(d), iota causal mask, "
                                 "softmax, @ v), heads merged, output projection; batch 2, 64 tokens, 4 heads of 64")
    B, T, C, H = 2, 64, 256, 4
    D = C // H
    x = t.input("x", [B, T, C], "f32", requires_grad=True)
    w_qkv = t.input("w_qkv", [3 * C, C], "f32", requires_grad=True, init=fan_in(C))
    b_qkv = t.input("b_qkv", [3 * C], "f32", requires_grad=True, init=fan_in(C))
    w_o = t.input("w_o", [C, C], "f32", requires_grad=True, init=fan_in(C))
    qkv = linear(t, x, w_qkv, b_qkv)
    # torch.split's three outputs, with the slices Thunder decomposes it into.
    names = [t.fresh() for _ in range(3)]
    call = t.begin("torch.split", [qkv, C, -1])
    parts = [t.op("slice_prim", qkv, [0, 0, k * C], [B, T, (k + 1) * C], [1, 1, 1], name=names[k]) for k in range(3)]
    parts = t.end(call, parts)

    def head(k):
        part = parts[k]
        call = t.begin("torch.reshape", [part, [B, T, H, D]])
        part = t.end(call, [t.op("reshape", part, [B, T, H, D])])
        call = t.begin("torch.permute", [part, [0, 2, 1, 3]])
        part = t.end(call, [t.op("transpose", part, [0, 2, 1, 3])])
        return t.op("reshape", part, [B * H, T, D])

    q, k, v = head(0), head(1), head(2)
    call = t.begin("torch.nn.functional.scaled_dot_product_attention", [q, k, v],
                   {"attn_mask": None, "dropout_p": 0.0, "is_causal": True, "scale": None})
    s = t.op("mul", t.op("matmul", q, t.op("transpose", k, [0, 2, 1])), 1.0 / math.sqrt(D))
    i = t.op("iota", T, kwargs={"start": 0, "step": 1, "device": DEVICE, "dtype": dtype("i64")})
    causal = t.op("ge", t.op("broadcast_in_dim", i, [T, T], [0]), t.op("broadcast_in_dim", i, [T, T], [1]))
    s = t.op("where", t.op("broadcast_in_dim", causal, [B * H, T, T], [1, 2]), s, {"float": "-inf"})
    y = t.end(call, [t.op("matmul", softmax_call(t, s), v)])
    y = t.op("reshape", t.op("transpose", t.op("reshape", y, [B, H, T, D]), [0, 2, 1, 3]), [B, T, C])
    t.outputs = [linear(t, y, w_o)]
    return t


@example
def llama_mlp():
    t = Trace("llama_mlp", "hand-written after a Llama block's second half: rms_norm then the SwiGLU MLP "
                           "(silu(x w_gate^T) * (x w_up^T)) w_down^T, 512 -> 1376 -> 512, on 2 x 32 tokens, with "
                           "the residual")
    x = t.input("x", [2, 32, 512], "f32", requires_grad=True)
    g = t.input("norm_w", [512], "f32", requires_grad=True, init=(0.5, 1.5))
    w_gate = t.input("w_gate", [1376, 512], "f32", requires_grad=True, init=fan_in(512))
    w_up = t.input("w_up", [1376, 512], "f32", requires_grad=True, init=fan_in(512))
    w_down = t.input("w_down", [512, 1376], "f32", requires_grad=True, init=fan_in(1376))
    call = t.begin("torch.nn.functional.rms_norm", [x, [512], g, 1e-6])
    ms = t.op("broadcast_in_dim", t.op("div", t.op("sum", t.op("mul", x, x), [2]), 512.0), [2, 32, 1], [0, 1])
    r = t.op("broadcast_in_dim", t.op("rsqrt", t.op("add", ms, 1e-6)), [2, 32, 512], [0, 1, 2])
    h = t.end(call, [t.op("mul", t.op("mul", x, r), t.op("broadcast_in_dim", g, [2, 32, 512], [2]))])
    gate = linear(t, h, w_gate)
    call = t.begin("torch.nn.functional.silu", [gate], {"inplace": False})
    s = t.end(call, [t.op("mul", gate, t.op("reciprocal", t.op("add", t.op("exp", t.op("neg", gate)), 1.0)))])
    up = linear(t, h, w_up)
    y = linear(t, t.op("mul", s, up), w_down)
    t.outputs = [t.op("add", x, y)]
    return t


@example
def classifier_head():
    t = Trace("classifier_head", "hand-written: a classifier head, linear 512 -> 1000 then "
                                 "torch.nn.functional.cross_entropy(logits, target, ignore_index=-1, "
                                 "reduction='mean'); a quarter of the targets are ignored (target % 1000 - "
                                 "(target == 3) * 1001)")
    x = t.input("x", [256, 512], "f32", requires_grad=True)
    w = t.input("w", [1000, 512], "f32", requires_grad=True, init=fan_in(512))
    b = t.input("b", [1000], "f32", requires_grad=True, init=fan_in(512))
    target = t.input("target", [256], "i64")
    tgt = t.op("remainder", target, 1000)
    # The harness draws targets in [-4, 4]: those equal to 3 become ignore_index -1.
    tgt = t.op("where", t.op("eq", target, 3), -1, tgt)
    t.outputs = [cross_entropy_call(t, linear(t, x, w, b), tgt, -1)]
    return t


@example
def pooling_cnn():
    t = Trace("pooling_cnn", "hand-written: pooling as Thunder records the torch.nn.functional calls: a small "
                             "CNN (a 2x2 patch convolution, ReLU, ResNet's stem max_pool2d: 3x3, stride 2, padding 1; "
                             "avg_pool2d with count_include_pad=False; adaptive_avg_pool2d to 1x1; a linear "
                             "classifier), a dilated, strided max_pool1d and an avg_pool1d with ceil_mode over sequences, "
                             "adaptive_avg_pool1d to a divisor of the length, and max_pool3d, avg_pool3d with "
                             "divisor_override and adaptive_avg_pool3d over a volume")
    f = "f32"
    image = t.input("image", [2, 3, 24, 24], f, requires_grad=True)
    conv_w = t.input("conv_w", [8, 3, 2, 2], f, requires_grad=True, init=fan_in(12))
    h = t.torch("torch.nn.functional.conv2d", [image, conv_w], {"stride": 2}, [2, 8, 12, 12], f)
    h = t.torch("torch.relu", [h], None, [2, 8, 12, 12], f)
    h = t.torch("torch.nn.functional.max_pool2d", [h, 3, 2, 1], None, [2, 8, 6, 6], f)
    h = t.torch("torch.nn.functional.avg_pool2d", [h, 3], {"stride": 1, "padding": 1, "count_include_pad": False}, [2, 8, 6, 6], f)
    h = t.torch("torch.nn.functional.adaptive_avg_pool2d", [h, [1, 1]], None, [2, 8, 1, 1], f)
    fc_w = t.input("fc_w", [4, 8], f, requires_grad=True, init=fan_in(8))
    fc_b = t.input("fc_b", [4], f, requires_grad=True, init=fan_in(8))
    logits = linear(t, t.op("reshape", h, [2, 8]), fc_w, fc_b)
    seq = t.input("seq", [2, 4, 20], f, requires_grad=True)
    peaks = t.torch("torch.nn.functional.max_pool1d", [seq, 3], {"stride": 2, "dilation": 2}, [2, 4, 8], f)
    means = t.torch("torch.nn.functional.avg_pool1d", [peaks, 3], {"ceil_mode": True}, [2, 4, 3], f)  # the last window holds 2
    fifths = t.torch("torch.nn.functional.adaptive_avg_pool1d", [seq, 5], None, [2, 4, 5], f)
    volume = t.input("volume", [1, 2, 4, 6, 6], f, requires_grad=True)
    cubes = t.torch("torch.nn.functional.max_pool3d", [volume, 2], None, [1, 2, 2, 3, 3], f)
    slabs = t.torch("torch.nn.functional.avg_pool3d", [volume, [1, 3, 3]], {"stride": [1, 2, 2], "padding": [0, 1, 1], "divisor_override": 4},
                    [1, 2, 4, 3, 3], f)
    coarse = t.torch("torch.nn.functional.adaptive_avg_pool3d", [volume, [2, 1, 3]], None, [1, 2, 2, 1, 3], f)
    t.outputs = [logits, means, fifths, cubes, slabs, coarse]
    return t


@example
def dropout_p09():
    t = Trace("dropout_p09", "the contract's example as written there: torch.nn.functional.dropout(x, p=0.9) on "
                             "f32[1024, 1024], no decomposition and no random state in the trace (thunder-gen adds "
                             "philox_seed and philox_offset inputs); tests/tools/dropout_property.cpp checks that "
                             "every output is 0 or x / (1 - p) and the gradient g / (1 - p) under the same mask")
    x = t.input("x", [1024, 1024], "f32", requires_grad=True)
    t.outputs = [t.torch("torch.nn.functional.dropout", [x], {"p": 0.9, "training": True, "inplace": False},
                         [1024, 1024], "f32")]
    return t


@example
def dropout_sub():
    t = Trace("dropout_sub", "dropout_p09 as Thunder records it: the torch.nn.functional.dropout call with its "
                             "decomposition in sub (prims.uniform, prims.lt, prims.convert_element_type, prims.mul); "
                             "thunder-gen uses its own row for the call and binds the draw to philox_seed and "
                             "philox_offset; the rematerialization tests tag it")
    x = t.input("x", [1024, 1024], "f32", requires_grad=True)
    p = 0.9
    call = t.begin("torch.nn.functional.dropout", [x], {"p": p, "training": True, "inplace": False})
    r = t.op("uniform", [1024, 1024], 0.0, 1.0, kwargs={"device": DEVICE, "dtype": dtype("f32")})
    keep = t.op("lt", r, 1.0 - p)
    y = t.op("mul", t.op("mul", x, t.op("convert_element_type", keep, dtype("f32"))), 1.0 / (1.0 - p))
    t.outputs = [t.end(call, [y])]
    return t


@example
def torch_ops():
    t = Trace("torch_ops", "hand-written: every torch-level op thunder-gen has a row for, written without "
                           "decompositions and bound positionally and by keyword, in a small trained graph: "
                           "linear, relu, sigmoid, detach (no gradient flows into the sigmoid through the matmul), "
                           "tanh, transpose, matmul, softmax, log_softmax, mean, "
                           "unsqueeze, permute, reshape, gelu (tanh), silu, sum, cat, var, nll_loss, embedding, "
                           "scaled_dot_product_attention (causal)")
    f = "f32"
    x = t.input("x", [64, 96], f, requires_grad=True)
    w = t.input("w", [48, 96], f, requires_grad=True, init=fan_in(96))
    b = t.input("b", [48], f, requires_grad=True, init=fan_in(96))
    h = t.torch("torch.nn.functional.linear", [x, w], {"bias": b}, [64, 48], f)
    r = t.torch("torch.relu", [h], None, [64, 48], f)
    s = t.torch("torch.sigmoid", [h], None, [64, 48], f)
    sd = t.torch("torch.detach", [s], None, [64, 48], f)
    th = t.torch("torch.tanh", [h], None, [64, 48], f)
    st = t.torch("torch.transpose", [sd, 0, -1], None, [48, 64], f)
    m = t.torch("torch.matmul", [r, st], None, [64, 64], f)
    sm = t.torch("torch.softmax", [m, -1], {"dtype": None}, [64, 64], f)
    ls = t.torch("torch.log_softmax", [m], {"dim": 1}, [64, 64], f)
    mean = t.torch("torch.mean", [ls], None, [], f)
    u = t.torch("torch.unsqueeze", [th, 0], None, [1, 64, 48], f)
    p = t.torch("torch.permute", [u, [2, 0, 1]], None, [48, 1, 64], f)
    rs = t.torch("torch.reshape", [p, [48, -1]], None, [48, 64], f)
    g = t.torch("torch.nn.functional.gelu", [h], {"approximate": {"str": "tanh"}}, [64, 48], f)
    si = t.torch("torch.nn.functional.silu", [h, False], None, [64, 48], f)
    gs = t.torch("torch.sum", [g], {"dim": [0], "keepdim": True}, [1, 48], f)
    both = t.torch("torch.cat", [[sm, ls]], {"dim": 0}, [128, 64], f)
    var = t.torch("torch.var", [h, 1], {"correction": 0}, [64], f)
    target = t.op("remainder", t.input("target", [64], "i64"), 64)
    nll = t.torch("torch.nn.functional.nll_loss", [ls, target], {"reduction": {"str": "sum"}}, [], f)
    table = t.input("table", [10, 12], f, requires_grad=True)
    ids = t.op("remainder", t.input("ids", [16, 16], "i64"), 10)
    emb = t.torch("torch.nn.functional.embedding", [ids, table], None, [16, 16, 12], f)
    q = t.torch("torch.reshape", [h, [16, 16, 12]], None, [16, 16, 12], f)
    att = t.torch("torch.nn.functional.scaled_dot_product_attention", [q, emb, emb], {"is_causal": True}, [16, 16, 12], f)
    t.outputs = [sm, mean, rs, gs, si, both, var, nll, att]
    return t


@example
def opaque_torch_ops():
    t = Trace("opaque_torch_ops", "hand-written: the torch calls models make that Thunder runs whole or thunder-gen "
                                  "knows without a decomposition (docs/torch-ops.md), bound positionally and by keyword, in "
                                  "a small trained graph: addmm (GPT-2's Conv1D), bmm, baddbmm, masked_fill, triu, tril, "
                                  "addcmul, addcdiv, clamp with tensor and number bounds, max and min in their three forms, "
                                  "cumsum (f32, and i64 with dtype=), normalize, embedding with padding_idx, gather, cross_entropy "
                                  "and nll_loss with class weights, conv2d and conv1d as patch embeddings (kernel == stride), "
                                  "prims.linear on bf16 operands as Thunder's autocast records F.linear, "
                                  "multi_head_attention_forward with b8 and float masks")
    f = "f32"
    x = t.input("x", [32, 64], f, requires_grad=True)
    w = t.input("w", [64, 48], f, requires_grad=True, init=fan_in(64))  # Conv1D's [in, out]
    b = t.input("b", [48], f, requires_grad=True, init=fan_in(64))
    h = t.torch("torch.addmm", [b, x, w], None, [32, 48], f)
    h2 = t.torch("torch.addmm", [h, x, w], {"beta": 0.5, "alpha": 2.0}, [32, 48], f)
    q = t.torch("torch.reshape", [h, [4, 8, 48]], None, [4, 8, 48], f)
    k = t.torch("torch.transpose", [t.torch("torch.reshape", [h2, [4, 8, 48]], None, [4, 8, 48], f), 1, 2], None, [4, 48, 8], f)
    s = t.torch("torch.bmm", [q, k], None, [4, 8, 8], f)
    # (A bias of all of s2's shape: a [8, 8] one broadcast over the batch is read element by element
    # in nvcc's PTX, which tests/ptx_check.py refuses; the broadcast forms are in grad_cases.h.)
    bias = t.input("attn_bias", [4, 8, 8], f, requires_grad=True)
    s2 = t.torch("torch.baddbmm", [bias, q, k], {"alpha": 0.125}, [4, 8, 8], f)
    upper = t.torch("torch.triu", [t.op("ge", bias, -5.0), 1], None, [4, 8, 8], "b8")  # all true, then above the diagonal
    masked = t.torch("torch.masked_fill", [s2, t.op("lt", bias, -1.5), -1e4], None, [4, 8, 8], f)
    masked = t.torch("torch.masked_fill", [masked, upper], {"value": 0.0}, [4, 8, 8], f)
    low = t.torch("torch.tril", [s], {"diagonal": -1}, [4, 8, 8], f)
    lo = t.input("lo", [48], f, requires_grad=True)
    clamped = t.torch("torch.clamp", [h, lo], {"max": 1.0}, [32, 48], f)
    denom = t.torch("torch.clamp", [h2], {"min": 0.5}, [32, 48], f)
    prod = t.torch("torch.addcmul", [h, h2, clamped], {"value": 0.5}, [32, 48], f)
    quot = t.torch("torch.addcdiv", [h, h2, denom], None, [32, 48], f)
    vmax, imax = t.declare(t.fresh(), [32], f), t.declare(t.fresh(), [32], "i64")
    t.lists[-1].append({"op": "torch.max", "args": [prod, 1], "out": [t.decl(vmax), t.decl(imax)]})
    vmin, imin = t.declare(t.fresh(), [1, 48], f), t.declare(t.fresh(), [1, 48], "i64")
    t.lists[-1].append({"op": "torch.min", "args": [quot], "kwargs": {"dim": 0, "keepdim": True}, "out": [t.decl(vmin), t.decl(imin)]})
    top = t.torch("torch.max", [quot], None, [], f)
    both = t.torch("torch.min", [h, h2], None, [32, 48], f)
    rows = t.torch("torch.max", [h], {"other": lo}, [32, 48], f)
    running = t.torch("torch.cumsum", [both], {"dim": 1}, [32, 48], f)
    counts = t.torch("torch.cumsum", [t.input("counts", [4, 6], "i32"), -1], {"dtype": dtype("i64")}, [4, 6], "i64")
    unit = t.torch("torch.nn.functional.normalize", [rows], {"dim": -1}, [32, 48], f)
    table = t.input("table", [10, 12], f, requires_grad=True)
    ids = t.op("remainder", t.input("ids", [16, 16], "i64"), 10)
    emb = t.torch("torch.nn.functional.embedding", [ids, table], {"padding_idx": 0}, [16, 16, 12], f)
    classes = t.input("class_weight", [48], f, init=(0.5, 1.5))
    target = t.op("remainder", t.input("target", [32], "i64"), 48)
    ce = t.torch("torch.nn.functional.cross_entropy", [running, target, classes], {"label_smoothing": 0.1}, [], f)
    logp = t.torch("torch.log_softmax", [unit, 1], None, [32, 48], f)
    picks = t.op("remainder", t.input("picks", [32, 3], "i64"), 48)  # some rows pick one class twice
    picked = t.torch("torch.gather", [logp, -1, picks], None, [32, 3], f)
    nll = t.torch("torch.nn.functional.nll_loss", [logp, target], {"weight": classes, "reduction": {"str": "none"}}, [32], f)
    # nn.MultiheadAttention's call as Thunder records it (4 heads of 12 over 4 sequences of 8): the
    # packed in-projection, upper's causal pattern as a b8 [8, 8] attn_mask (true: not attended),
    # a float key_padding_mask, the weights averaged over heads.
    seq = t.torch("torch.transpose", [q, 0, 1], None, [8, 4, 48], f)
    causal = t.op("reshape", t.op("slice_prim", upper, [0, 0, 0], [1, 8, 8], None), [8, 8])
    in_w = t.input("in_proj_weight", [144, 48], f, requires_grad=True, init=fan_in(48))
    in_b = t.input("in_proj_bias", [144], f, requires_grad=True, init=fan_in(48))
    out_w = t.input("out_proj_weight", [48, 48], f, requires_grad=True, init=fan_in(48))
    out_b = t.input("out_proj_bias", [48], f, requires_grad=True, init=fan_in(48))
    attn, attn_w = t.declare(t.fresh(), [8, 4, 48], f), t.declare(t.fresh(), [4, 8, 8], f)
    t.lists[-1].append({"op": "torch.nn.functional.multi_head_attention_forward",
                        "args": [seq, seq, seq, 48, 4, in_w, in_b, None, None, False, 0.0, out_w, out_b],
                        "kwargs": {"key_padding_mask": t.input("key_padding", [4, 8], f), "attn_mask": causal},
                        "out": [t.decl(attn), t.decl(attn_w)]})
    # ViT's patch embedding (nn.Conv2d with kernel == stride, positional as Thunder records it) and
    # a conv1d over a length its kernel does not divide (the last sample is not read).
    image = t.input("image", [2, 3, 8, 8], f, requires_grad=True)
    patch_w = t.input("patch_w", [16, 3, 4, 4], f, requires_grad=True, init=fan_in(48))
    patch_b = t.input("patch_b", [16], f, requires_grad=True, init=fan_in(48))
    patches = t.torch("torch.nn.functional.conv2d", [image, patch_w, patch_b, [4, 4], [0, 0], [1, 1], 1], None, [2, 16, 2, 2], f)
    frames = t.input("frames", [2, 4, 10], f, requires_grad=True)
    frame_w = t.input("frame_w", [6, 4, 3], f, requires_grad=True, init=fan_in(12))
    strided = t.torch("torch.nn.functional.conv1d", [frames, frame_w], {"stride": 3}, [2, 6, 3], f)
    # prims.convolution, what conv3d and torch.convolution decompose to (all nine arguments).
    volume = t.input("volume", [1, 2, 4, 4, 6], f, requires_grad=True)
    volume_w = t.input("volume_w", [4, 2, 2, 2, 3], f, requires_grad=True, init=fan_in(24))
    cubes = t.torch("prims.convolution", [volume, volume_w, None, [2, 2, 3], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1], None,
                    [1, 4, 2, 2, 2], f)
    # prims.linear, as Thunder's autocast records F.linear: the operands converted to bf16 first
    # (bias given, and null), the GEMM on bf16 with f32 accumulation, the gradients back to f32.
    # Each bf16 operand feeds one GEMM: where one feeds two, the generated gradient equals PyTorch
    # eager's (each GEMM's gradient rounded to bf16, then their bf16 sum), but thunder-gen-check's
    # LibTorch reference keeps both in f32 and rounds the sum once, a bf16 unit apart (docs/torch-ops.md).
    proj_w = t.input("proj_w", [24, 48], f, requires_grad=True, init=fan_in(48))
    proj_b = t.input("proj_b", [24], f, requires_grad=True, init=fan_in(48))
    gate_w = t.input("gate_w", [24, 48], f, requires_grad=True, init=fan_in(48))
    bf16 = [t.op("convert_element_type", v, dtype("bf16")) for v in (h, proj_w, proj_b, h2, gate_w)]
    projected = t.torch("prims.linear", bf16[:3], None, [32, 24], "bf16")
    unbiased = t.torch("prims.linear", [bf16[3], bf16[4], None], None, [32, 24], "bf16")
    t.outputs = [masked, low, vmax, imax, vmin, top, counts, emb, ce, nll, picked, prod, clamped, patches, strided, cubes, projected,
                 unbiased, attn, attn_w]
    return t


@example
def exp_chain_matmul():
    t = Trace("exp_chain_matmul", "hand-written: y = exp(exp(exp(x / 4))) @ w, the README's example of reading "
                                  "the manifest's saved_for_backward list (x / 4 keeps seeded inputs in [-2, 2) "
                                  "from overflowing f32)")
    x = t.input("x", [256, 128], "f32", requires_grad=True)
    w = t.input("w", [128, 64], "f32", requires_grad=True, init=fan_in(128))
    y = t.op("exp", t.op("exp", t.op("exp", t.op("mul", x, 0.25))))
    t.outputs = [t.op("matmul", y, w)]
    return t


# ---- coverage report ------------------------------------------------------------------------------
def walk(ops):
    for op in ops:
        yield op
        yield from walk(op.get("sub", []))
        for k in ("fwd", "bwd"):
            if k in op:
                yield from walk(op[k]["ops"])


def table_ops():
    """The prims thunder-gen declares (their torch forms left out)."""
    return sorted(row["id"] for row in op_table() if row["id"].startswith("prims.") and "form_of" not in row)


def main(argv):
    check = "--check" in argv
    os.makedirs(EXAMPLES, exist_ok=True)
    used, dtypes, stale = set(), set(), []
    for fn in EXAMPLES_MADE:
        t = fn()
        assert t.name == fn.__name__
        text = render(t)
        path = os.path.join(EXAMPLES, t.name + ".json")
        old = open(path).read() if os.path.exists(path) else None
        if check:
            if old != text:
                stale.append(path)
        elif old != text:
            with open(path, "w") as f:
                f.write(text)
        j = json.loads(text)
        for op in walk(j["ops"]):
            used.add(op["op"])
        for d in j["inputs"]:
            dtypes.add(d.get("dtype") or d.get("scalar"))
        for op in walk(j["ops"]):
            for o in op["out"]:
                dtypes.add(o.get("dtype"))
    missing = [o for o in table_ops() if o not in used]
    all_dt = ["b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
    print("%d examples; ops not covered: %s; dtypes not covered: %s" % (
        len(EXAMPLES_MADE), missing or "none", [d for d in all_dt if d not in dtypes] or "none"), file=sys.stderr)
    if stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
