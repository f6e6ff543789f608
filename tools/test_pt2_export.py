"""Tests of thunder_gen.export (python/thunder_gen/pt2.py): the archive, its inputs folder,
the refusals, and that a failed export leaves the previous files alone.

    .venv/bin/python tools/test_pt2_export.py
"""
import json
import sys
import tempfile
import unittest
import warnings
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import thunder_gen  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

warnings.filterwarnings("ignore")


class Small(torch.nn.Module):
    """A parameter, a persistent and a non-persistent buffer, a lifted constant; positional,
    number and keyword inputs."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.register_buffer("shift", torch.arange(3.0), persistent=False)
        self.const = torch.tensor([1.0, 2.0, 3.0])

    def forward(self, x, n, *, bias, mask):
        return (self.fc(x) * self.scale + self.shift + self.const) * n + bias + mask.float().sum()


def small_call():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(2, 4, generator=g), 3), {"mask": torch.ones(2, dtype=torch.bfloat16), "bias": torch.randn(3, generator=g)}


def model_json(path):
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read(next(n for n in z.namelist() if n.endswith("models/model.json"))))


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp())
        torch.manual_seed(0)
        self.module = Small().train()

    def test_archive_and_one_file_per_placeholder(self):
        args, kwargs = small_call()
        path = thunder_gen.export(self.module, args, kwargs, path=self.dir / "small.pt2")
        self.assertEqual(path, self.dir / "small.pt2")
        self.assertEqual(model_json(path)["verifiers"], ["TRAINING"])
        ep = torch.export.load(path)
        names = [s.arg.name for s in ep.graph_signature.input_specs]
        files = sorted(p.stem for p in (self.dir / "small.inputs").iterdir())
        self.assertEqual(files, sorted(names))
        inputs = self.dir / "small.inputs"
        np.testing.assert_array_equal(np.load(inputs / "x.npy"), args[0].numpy())
        self.assertEqual(np.load(inputs / "n.npy").dtype.str, "<i8")
        self.assertEqual(int(np.load(inputs / "n.npy")), 3)
        self.assertEqual(np.load(inputs / "mask.npy").dtype.str, "<u2")  # bf16 bits
        self.assertEqual(int(np.load(inputs / "mask.npy")[0]), 0x3F80)
        np.testing.assert_array_equal(np.load(inputs / "p_fc_weight.npy"), self.module.fc.weight.detach().numpy())
        np.testing.assert_array_equal(np.load(inputs / "b_shift.npy"), [0.0, 1.0, 2.0])
        np.testing.assert_array_equal(np.load(inputs / "c_const.npy"), [1.0, 2.0, 3.0])

    def test_decompose_saves_core_aten(self):
        args, kwargs = small_call()
        path = thunder_gen.export(self.module, args, kwargs, path=self.dir / "core.pt2", decompose=True)
        doc = model_json(path)
        self.assertEqual(doc["verifiers"], ["ATEN"])
        targets = {n["target"] for n in doc["graph_module"]["graph"]["nodes"]}
        self.assertNotIn("torch.ops.aten.linear.default", targets)

    def test_stack_traces_false_drops_them(self):
        args, kwargs = small_call()
        kept = thunder_gen.export(self.module, args, kwargs, path=self.dir / "kept.pt2")
        dropped = thunder_gen.export(self.module, args, kwargs, path=self.dir / "dropped.pt2", stack_traces=False)
        metadata = lambda p: [n["metadata"] for n in model_json(p)["graph_module"]["graph"]["nodes"]]
        self.assertTrue(any("stack_trace" in m for m in metadata(kept)))
        self.assertFalse(any("stack_trace" in m for m in metadata(dropped)))
        self.assertTrue(all("nn_module_stack" in m for m in metadata(dropped)))

    def test_refuses_a_path_not_ending_in_pt2(self):
        with self.assertRaisesRegex(ValueError, "must end in .pt2"):
            thunder_gen.export(self.module, *small_call(), path=self.dir / "small.pt")

    def test_failed_export_leaves_previous_files(self):
        args, kwargs = small_call()
        path = thunder_gen.export(self.module, args, kwargs, path=self.dir / "m.pt2")
        before = path.read_bytes(), sorted(p.name for p in (self.dir / "m.inputs").iterdir())

        class Fp8(torch.nn.Module):
            def forward(self, x):
                return x.float() * 2

        with self.assertRaisesRegex(thunder_gen.ExportError, r"input 'x' has dtype torch.float8_e4m3fn"):
            thunder_gen.export(Fp8(), (torch.zeros(2, dtype=torch.float8_e4m3fn),), path=path)
        self.assertEqual((path.read_bytes(), sorted(p.name for p in (self.dir / "m.inputs").iterdir())), before)
        self.assertEqual(sorted(p.name for p in self.dir.iterdir()), ["m.inputs", "m.pt2"])  # no scratch left

    def test_the_function_survives_importing_its_module(self):
        import thunder_gen.pt2  # noqa: F401
        import thunder_gen.npy  # noqa: F401
        self.assertTrue(callable(thunder_gen.export))
        self.assertIs(thunder_gen.export, thunder_gen.pt2.export)

    def test_overwrites_the_inputs_folder(self):
        (self.dir / "m.inputs").mkdir()
        (self.dir / "m.inputs" / "stale.npy").write_bytes(b"old")
        thunder_gen.export(self.module, *small_call(), path=self.dir / "m.pt2")
        self.assertNotIn("stale.npy", {p.name for p in (self.dir / "m.inputs").iterdir()})

    def test_records_the_names_given_to_dim(self):
        Dim = torch.export.Dim
        rows, pair = Dim("rows", min=2, max=64), Dim("pair", min=1, max=8)
        args, kwargs = small_call()
        path = thunder_gen.export(self.module, args, kwargs, path=self.dir / "named.pt2",
                                  dynamic_shapes={"x": {0: rows}, "n": None, "bias": None, "mask": {0: rows}})
        recorded = thunder_gen.pt2.recorded_symbol_names(path)
        constraints = model_json(path)["range_constraints"]
        self.assertEqual(list(recorded.values()), ["rows"])  # x and mask share it: one symbol, one name
        self.assertIn(next(iter(recorded)), constraints)
        self.assertNotIn("pair", recorded.values())  # a Dim the call does not use names nothing
        # Names a size cannot have (max, min, not ASCII), Dim.AUTO, and no dynamic_shapes record nothing.
        for name in ("max", "größe"):
            unnamed = thunder_gen.export(self.module, args, kwargs, path=self.dir / "unnamed.pt2",
                                         dynamic_shapes={"x": {0: Dim(name, min=2, max=64)}, "n": None, "bias": None, "mask": {0: Dim.AUTO}})
            self.assertEqual(thunder_gen.pt2.recorded_symbol_names(unnamed), {}, name)
        self.assertEqual(thunder_gen.pt2.recorded_symbol_names(thunder_gen.export(self.module, args, kwargs, path=self.dir / "s.pt2")), {})


if __name__ == "__main__":
    unittest.main()
