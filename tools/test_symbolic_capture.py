"""Tests of thunder_gen.symbolic_capture: the capture plan, the fitting of sizes, the merge's
refusals (on hand-made documents, no Thunder), and a Thunder capture of a block with dynamic
batch and sequence sizes, which thunder-gen must turn, at each size, into exactly the code a
capture at that size gives.

    .venv/bin/python tools/test_symbolic_capture.py
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import thunder_gen_binary  # noqa: E402,F401  (this checkout's python/ first)
from thunder_gen.errors import ExportError  # noqa: E402
from thunder_gen import symbolic_capture as sc  # noqa: E402
from thunder_gen_binary import built_thunder_gen  # noqa: E402

warnings.filterwarnings("ignore")

SYMBOLS = {"B": (1, 16), "T": (1, 64)}


def doc_at(point, scale=1.0, extra_op=False):
    """A trace document as an export at `point` would write it: x [B, T, 4] reshaped to [B*T, 4]."""
    b, t = point["B"], point["T"]
    ops = [{"op": "torch.reshape", "args": ["x", b * t, 4], "out": [{"name": "r", "shape": [b * t, 4], "dtype": "f32"}]},
           {"op": "torch.mul", "args": ["r", scale], "out": [{"name": "y", "shape": [b * t, 4], "dtype": "f32"}]}]
    if extra_op:
        ops.append({"op": "torch.neg", "args": ["y"], "out": [{"name": "z", "shape": [b * t, 4], "dtype": "f32"}]})
    return {"format": "thunder-gen-trace", "version": 1, "name": "t", "device": "cuda:0", "source": "test",
            "inputs": [{"name": "x", "shape": [b, t, 4], "dtype": "f32", "requires_grad": True}], "ops": ops,
            "outputs": ["y"]}


def merged(make=doc_at):
    points, held_back = sc.plan(SYMBOLS)
    return sc.merge([make(p) for p in points], points, make(held_back), held_back, SYMBOLS)


class PlanAndFit(unittest.TestCase):
    def test_plan_avoids_0_1_and_powers_of_two_and_keeps_a_point_back(self):
        points, held_back = sc.plan(SYMBOLS)
        self.assertEqual(len(points), 6)  # base, each symbol at 2 more values, the pair: the 6 terms 1 B T B*B B*T T*T
        for p in points:
            for v in p.values():
                self.assertGreaterEqual(v, 2)
                self.assertTrue(v & (v - 1))
        self.assertNotIn(held_back, points)
        self.assertEqual(held_back, {"B": 16, "T": 64})  # the top of each range
        self.assertEqual(sc.admissible(8, 64, 8, 4), [24, 40, 48, 56])
        with self.assertRaisesRegex(ExportError, "fewer than 4 multiples"):
            sc.plan({"B": (1, 3)})

    def test_fit_finds_polynomials_over_one_denominator(self):
        points, held_back = sc.plan(SYMBOLS)
        cases = {"B*T": lambda b, t: b * t, "2*T + 1": lambda b, t: 2 * t + 1, "T*T - B": lambda b, t: t * t - b,
                 "(T*T + T)//2": lambda b, t: t * (t + 1) // 2}
        for text, f in cases.items():
            values = [f(p["B"], p["T"]) for p in points]
            fitted = sc.fit(values, points, ["B", "T"])
            self.assertEqual(fitted[0], text)
            self.assertEqual(sc.evaluate(fitted, held_back), f(held_back["B"], held_back["T"]))

    def test_parse_flags(self):
        self.assertEqual(sc.parse_dynamic("x:0=B,1=T"), ("x", {0: "B", 1: "T"}))
        self.assertEqual(sc.parse_dynamic("0:-1=T"), (0, {-1: "T"}))
        self.assertEqual(sc.parse_symbol("T=8:512:8"), ("T", (8, 512, 8)))
        for bad in ("x", "x:0", "x:a=B", "1x:0=B", "x:0=2B"):
            with self.assertRaises(ExportError):
                sc.parse_dynamic(bad)
        for bad in ("B", "B=1", "B=1:x", "B=1:2:3:4"):
            with self.assertRaises(ExportError):
                sc.parse_symbol(bad)


class Merge(unittest.TestCase):
    def test_a_shape_kwarg_is_a_size_literal(self):
        def with_kwarg(p):
            d = doc_at(p)
            d["ops"][0]["kwargs"] = {"shape": [p["B"] * p["T"], 4]}
            return d
        self.assertEqual(merged(with_kwarg)["ops"][0]["kwargs"]["shape"], [{"size": "B*T"}, 4])

    def test_sizes_become_expressions_and_the_rest_stays(self):
        doc = merged()
        self.assertEqual(doc["symbols"], {"B": {"min": 1, "max": 16}, "T": {"min": 1, "max": 64}})
        self.assertEqual(doc["inputs"][0]["shape"], ["B", "T", 4])
        self.assertEqual(doc["ops"][0]["args"], ["x", {"size": "B*T"}, 4])
        self.assertEqual(doc["ops"][0]["out"][0]["shape"], ["B*T", 4])
        self.assertEqual(doc["ops"][1]["args"], ["r", 1.0])
        self.assertEqual(list(doc)[:5], ["format", "version", "name", "device", "symbols"])

    def test_refusals_name_the_place(self):
        with self.assertRaisesRegex(ExportError, r"^/ops/1/args/1 \(torch.mul\): a number changes with the sizes"):
            merged(lambda p: doc_at(p, scale=1.0 / p["T"]))
        with self.assertRaisesRegex(ExportError, r"^/ops: the program differs between sizes \(a list of another length\)"):
            merged(lambda p: doc_at(p, extra_op=p["B"] > 3))
        with self.assertRaisesRegex(ExportError, r"^/ops/0/args/2 \(torch.reshape\): no size expression explains this integer \(4 at B=3,T=3"):
            merged(lambda p: {**doc_at(p), "ops": [{**doc_at(p)["ops"][0], "args": ["x", p["B"] * p["T"], p["T"] // 2 + 4 - 1]}]
                              + doc_at(p)["ops"][1:]})

        with self.assertRaisesRegex(ExportError, r"^/ops/0/args/2 \(torch.reshape\): no size expression explains this integer"):
            merged(lambda p: {**doc_at(p), "ops": [{**doc_at(p)["ops"][0], "args": ["x", p["B"] * p["T"], min(p["T"], 32)]}] + doc_at(p)["ops"][1:]})
        with self.assertRaisesRegex(ExportError, r"^/ops/1/args/1 \(torch.mul\): the program differs between sizes \(a bool at one size, a int at another\)"):
            merged(lambda p: {**doc_at(p), "ops": [doc_at(p)["ops"][0], {**doc_at(p)["ops"][1], "args": ["r", True if p["B"] == 3 else 1]}]})

        def renamed(p):
            d = copy.deepcopy(doc_at(p))
            d["ops"][1]["op"] = "torch.mul" if p["T"] < 5 else "torch.div"
            return d
        with self.assertRaisesRegex(ExportError, r"^/ops/1/op \(torch.mul\): the program differs between sizes"):
            merged(renamed)


def thunder_available():
    try:
        import thunder  # noqa: F401
        return built_thunder_gen() is not None
    except ImportError:
        return False


@unittest.skipUnless(thunder_available(), "needs lightning-thunder and a built thunder-gen")
class ThunderCapture(unittest.TestCase):
    """A pre-norm MLP block with a [B*T, C] view, captured symbolically, generated at two sizes:
    each folder's kernels and host code are those of a capture at that size."""

    @classmethod
    def setUpClass(cls):
        import torch
        from thunder_gen.thunder_export import export
        torch.manual_seed(0)
        cls.block = Block()
        cls.symbolic = sc.export_symbolic(cls.block, torch.randn(2, 5, 16, requires_grad=True), name="block",
                                          dynamic={"x": {0: "B", 1: "T"}}, symbols=SYMBOLS)
        cls.static = {(b, t): export(cls.block, torch.randn(b, t, 16, requires_grad=True), name="block") for b, t in ((3, 7), (5, 17))}

    def generated(self, doc, folder, *flags):
        path = os.path.join(folder, "trace.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        subprocess.run([built_thunder_gen(), path, "-o", os.path.join(folder, "out"), *flags], check=True, capture_output=True)
        out = {}
        for name in ("forward.cu", "backward.cu", "kernels.cu"):
            with open(os.path.join(folder, "out", name)) as f:
                text = f.read().split("\n", 1)[1]  # (past the banner naming the input file)
            # A symbolic trace's forward.cu ends with its size binder, which a static one has no use for.
            out[name] = text.split('\n#ifndef __CUDACC_RTC__\n#include "tg_sizes.h"')[0]
        return out

    def test_symbols_and_sizes(self):
        self.assertEqual(self.symbolic["inputs"][0]["shape"], ["B", "T", 16])
        self.assertIn("B*T", json.dumps(self.symbolic))
        self.assertIn("symbolic: captured at", self.symbolic["source"])

    def test_each_size_generates_what_a_capture_at_it_does(self):
        for (b, t), static in self.static.items():
            with self.subTest(B=b, T=t), tempfile.TemporaryDirectory() as work:
                os.makedirs(os.path.join(work, "s"))
                os.makedirs(os.path.join(work, "d"))
                self.assertEqual(self.generated(self.symbolic, os.path.join(work, "s"), "--specialize", f"B={b},T={t}"),
                                 self.generated(static, os.path.join(work, "d")))

    def test_an_argument_not_in_the_call_is_refused(self):
        import torch
        with self.assertRaisesRegex(ExportError, "--dynamic names \\['y'\\]"):
            sc.export_symbolic(self.block, torch.randn(2, 5, 16), name="b", dynamic={"y": {0: "B"}}, symbols={"B": (1, 16)})
        with self.assertRaisesRegex(ExportError, "--dynamic 0: argument 0 has no dims \\[3\\]"):
            sc.export_symbolic(self.block, torch.randn(2, 5, 16), name="b", dynamic={0: {3: "B"}}, symbols={"B": (1, 16)})


def Block():
    import torch
    import torch.nn.functional as F

    class _Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.fc, self.out = torch.nn.LayerNorm(16), torch.nn.Linear(16, 32), torch.nn.Linear(32, 16)

        def forward(self, x):
            b, t, c = x.shape
            return F.log_softmax((x + self.out(F.gelu(self.fc(self.ln(x))))).reshape(b * t, c), dim=-1)
    return _Block()


if __name__ == "__main__":
    unittest.main()
