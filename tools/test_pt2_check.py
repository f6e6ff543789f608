"""Tests of `python -m thunder_gen.check` (python/thunder_gen/check.py): a module with dropout
matches its archive's generated code; a factory whose module computes something else, or returns
fewer outputs, is found out (exit 1); an output without a gradient and an unused parameter are
handled; the archive's own program is eager's when no module is given; a failing factory, missing
inputs and a program with random ops but no module cannot be checked (exit 2, in one line).

    .venv/bin/python tools/test_pt2_check.py
"""
import contextlib
import io
import sys
import tempfile
import unittest
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import thunder_gen  # noqa: E402
from thunder_gen import check  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

warnings.filterwarnings("ignore")


class Mlp(nn.Module):
    def __init__(self, act=F.gelu, p=0.1):
        super().__init__()
        self.norm, self.fc1, self.fc2, self.act = nn.LayerNorm(8), nn.Linear(8, 16), nn.Linear(16, 8), act
        self.drop = nn.Dropout(p) if p else nn.Identity()
        self.register_buffer("scale", torch.full((8,), 0.5))

    def forward(self, x):
        return x + self.drop(self.fc2(self.act(self.fc1(self.norm(x))))) * self.scale


def make():
    return Mlp()


def with_relu():
    return Mlp(F.relu)


def raises():
    raise ValueError("no weights here")


class Two(Mlp):
    """Two outputs, one of which no input's gradient flows from (an integer count), and a parameter
    the forward never reads (its eager gradient is None, the generated one zero)."""

    def __init__(self):
        super().__init__(p=None)
        self.unused = nn.Parameter(torch.ones(3))

    def forward(self, x):
        y = super().forward(x)
        return y, (y > 0).sum()


class FirstHalf(Two):
    """The same parameters, one output fewer than the archive's two."""

    def forward(self, x):
        return super().forward(x)[0]


class Autocast(nn.Module):
    """Linears under bf16 autocast; the result in f32."""

    def __init__(self, act=F.gelu):
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(8, 32), nn.Linear(32, 8), act

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.fc2(self.act(self.fc1(x))).float() + x


def autocast():
    return Autocast()


def autocast_relu():
    return Autocast(F.relu)


def two():
    return Two()


def first_half():
    return FirstHalf()


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = check.main([str(a) for a in argv])
    return rc, out.getvalue(), err.getvalue()


class CheckTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = Path(cls.tmp.name)
        torch.manual_seed(0)
        x = torch.randn(2, 4, 8, requires_grad=True)
        cls.dropout = root / "dropout.pt2"
        thunder_gen.export(Mlp().train(), (x,), path=cls.dropout)
        cls.plain = root / "plain.pt2"
        thunder_gen.export(Mlp(p=None).train(), (x,), path=cls.plain)
        torch.manual_seed(0)
        cls.autocast = root / "autocast.pt2"
        thunder_gen.export(Autocast().train(), (x,), path=cls.autocast)
        torch.manual_seed(0)
        cls.two = root / "two.pt2"
        thunder_gen.export(Two().train(), (x,), path=cls.two)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_module_with_dropout_matches(self):
        rc, out, _ = run(self.dropout, "--module", f"{__name__}:make", "--work", Path(self.tmp.name) / "w1")
        self.assertEqual(rc, 0, out)
        self.assertIn("grad of fc1.weight f32[16, 8]", out)
        self.assertIn("grad of x f32[2, 4, 8]", out)
        self.assertIn("dropout.pt2: matches PyTorch eager", out)

    def test_another_module_is_found_out(self):
        rc, out, _ = run(self.dropout, "--module", f"{__name__}:with_relu", "--work", Path(self.tmp.name) / "w2")
        self.assertEqual(rc, 1, out)
        self.assertIn("MISMATCH", out)

    def test_archive_program_is_eager_without_a_module(self):
        rc, out, _ = run(self.plain, "--work", Path(self.tmp.name) / "w3")
        self.assertEqual(rc, 0, out)
        self.assertIn("grad of norm.weight", out)

    def test_random_ops_need_the_module(self):
        rc, _, err = run(self.dropout, "--work", Path(self.tmp.name) / "w4")
        self.assertEqual(rc, 2)
        self.assertIn("give the module with --module", err)

    def test_failing_factory_is_one_line(self):
        rc, out, err = run(self.plain, "--module", f"{__name__}:raises", "--work", Path(self.tmp.name) / "w6")
        self.assertEqual(rc, 2)
        self.assertEqual(err.strip(), f"thunder_gen.check: --module {__name__}:raises: ValueError: no weights here")

    def test_outputs_and_gradients_eager_lacks(self):
        rc, out, _ = run(self.two, "--module", f"{__name__}:first_half", "--work", Path(self.tmp.name) / "w7")
        self.assertEqual(rc, 1, out)
        self.assertIn("eager computes none: MISSING", out)
        rc, out, _ = run(self.two, "--module", f"{__name__}:two", "--work", Path(self.tmp.name) / "w8")
        self.assertEqual(rc, 0, out)
        self.assertIn("grad of unused: zero (eager computes none): ok", out)

    def test_autocast_against_f64(self):
        rc, out, _ = run(self.autocast, "--module", f"{__name__}:autocast", "--autocast", "--work", Path(self.tmp.name) / "w9")
        self.assertEqual(rc, 0, out)
        self.assertIn("grad of fc1.weight", out)
        # The f64 rule excuses rounding, not a different module.
        rc, out, _ = run(self.autocast, "--module", f"{__name__}:autocast_relu", "--autocast", "--work", Path(self.tmp.name) / "w10")
        self.assertEqual(rc, 1, out)
        self.assertIn("LESS ACCURATE", out)

    def test_work_folder_not_ours_is_left_alone(self):
        work = Path(self.tmp.name) / "w11"
        (work / "out").mkdir(parents=True)
        (work / "out" / "notes.txt").write_text("mine")
        rc, _, err = run(self.plain, "--work", work)
        self.assertEqual(rc, 2)
        self.assertIn("--force", err)
        self.assertEqual((work / "out" / "notes.txt").read_text(), "mine")
        rc, out, _ = run(self.plain, "--work", Path(self.tmp.name) / "w3")  # an earlier output is replaced
        self.assertEqual(rc, 0, out)

    def test_missing_inputs_folder(self):
        lone = Path(self.tmp.name) / "lone.pt2"
        lone.write_bytes(self.plain.read_bytes())
        rc, _, err = run(lone, "--work", Path(self.tmp.name) / "w5")
        self.assertEqual(rc, 2)
        self.assertIn("lone.inputs", err)
        self.assertIn("thunder_gen.export writes", err)


if __name__ == "__main__":
    unittest.main()
