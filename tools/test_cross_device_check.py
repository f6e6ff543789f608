#!/usr/bin/env python3
"""Tests of torch_reference.py --thin / --expected, the comparison gpu-check.sh makes between a GPU
run and a host-emulation run: thinned expected values still catch a single wrong element, a NaN,
a wrong tail element; summation-order noise passes only within the cross-device norm bound, the
bound of the narrowest float type the trace computes with."""
import io
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
import torch_reference  # noqa: E402

TRACE = TOOLS.parent / "examples" / "layer_norm.json"


class CrossDeviceCheck(unittest.TestCase):
    def setUp(self):
        self.work = Path(tempfile.mkdtemp())
        trace = json.loads(TRACE.read_text())
        decls = {o["name"]: o for op in trace["ops"] for o in op["out"]}
        decls.update({d["name"]: d for d in trace["inputs"]})
        rng = np.random.default_rng(0)
        self.run = self.work / "run"
        self.run.mkdir()
        self.results = list(trace["outputs"]) + [f"grad_{d['name']}" for d in trace["inputs"] if d.get("requires_grad")]
        for name in [d["name"] for d in trace["inputs"]] + self.results:
            shape = decls[name[5:] if name.startswith("grad_") else name]["shape"]
            np.save(self.run / f"{name}.npy", rng.uniform(-2, 2, shape).astype(np.float32))
        self.expected = self.work / "expected"
        shutil.copytree(self.run, self.expected)
        torch_reference.thin(TRACE, self.expected)

    def tearDown(self):
        shutil.rmtree(self.work)

    def failures(self):
        self.log = io.StringIO()
        return torch_reference.check(TRACE, self.run, out=self.log, expected_dir=self.expected)

    def edit(self, name, change):
        a = np.load(self.run / f"{name}.npy")
        change(a.reshape(-1))
        np.save(self.run / f"{name}.npy", a)

    def test_thinning_keeps_a_sample_and_drops_inputs(self):
        sampling = json.loads((self.expected / "sampling.json").read_text())
        self.assertIn("grad_x", sampling)
        self.assertFalse((self.expected / "x.npy").exists())
        self.assertLess(np.load(self.expected / "grad_x.npy").size, np.load(self.run / "grad_x.npy").size)
        self.assertEqual(self.failures(), 0)

    def test_a_wrong_sampled_element_fails(self):
        stride = json.loads((self.expected / "sampling.json").read_text())["grad_x"]["stride"]
        self.edit("grad_x", lambda f: f.__setitem__(3 * stride, f[3 * stride] + 1.0))
        self.assertEqual(self.failures(), 1)

    def test_a_wrong_tail_element_fails(self):
        self.edit("grad_x", lambda f: f.__setitem__(-1, f[-1] + 0.01))
        self.assertEqual(self.failures(), 1)

    def test_a_nan_fails(self):
        self.edit("grad_w", lambda f: f.__setitem__(0, np.nan))
        self.assertEqual(self.failures(), 1)

    def test_summation_order_noise_passes_within_the_cross_device_bound_only(self):
        # Noise up to 8e-6 of the tensor's scale: over the elementwise table near zero, under the bound.
        def noise(level):
            rng = np.random.default_rng(1)
            return lambda f: f.__setitem__(slice(None), f + (level * np.abs(f).max() * rng.uniform(-1, 1, f.size)).astype(np.float32))
        self.edit("grad_w", noise(8e-6))
        self.assertEqual(self.failures(), 0)
        self.assertIn("within the cross-device bound", self.log.getvalue())  # the elementwise table alone fails it
        self.edit("grad_b", noise(1e-4))
        self.assertEqual(self.failures(), 1)

    def test_a_trace_computing_in_bf16_gets_the_bf16_bound_for_its_f32_results(self):
        trace = json.loads(TRACE.read_text())
        self.assertEqual(torch_reference.cross_device_bound("f32", trace), 1e-5)
        trace["ops"][0].setdefault("sub", []).append({"op": "prims.convert_element_type", "out": [{"name": "narrow", "shape": [], "dtype": "bf16"}]})
        self.assertEqual(torch_reference.cross_device_bound("f32", trace), 1e-2)
        self.assertEqual(torch_reference.cross_device_bound("f64", trace), 1e-2)
        self.assertIsNone(torch_reference.cross_device_bound("i64", trace))


if __name__ == "__main__":
    unittest.main()
