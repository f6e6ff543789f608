"""Tests of tools/thunder_export.py's refusals and encodings (the corpus itself is checked by
`thunder_export.py corpus --check` and tools/check_against_torch.py).

    .venv/bin/python tools/test_thunder_export.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import thunder_export  # noqa: E402
from thunder_gen_binary import built_thunder_gen  # noqa: E402

warnings.filterwarnings("ignore")


class ScaleByCtxAttribute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.scale = 3.0  # a non-tensor ctx attribute: format v1 has no place for it
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale


class TrainedAttention(torch.nn.Module):
    """Self-attention with batch_first (weights averaged over heads), then cross-attention on a
    memory of another length with the weights per head; packed in-projections."""
    calls = 2

    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.MultiheadAttention(16, 4, batch_first=True), torch.nn.MultiheadAttention(16, 2)

    def forward(self, x, memory):
        a, a_weights = self.a(x, x, x)
        b, b_weights = self.b(x.transpose(0, 1), memory, memory, average_attn_weights=False)
        return a, a_weights, b, b_weights


class FrozenAttention(torch.nn.Module):
    """kdim/vdim (separate q/k/v weights) with a float 2-D attn_mask and key_padding_mask; the
    is_causal hint with its causal mask and no weights; a float 3-D attn_mask without biases."""
    calls = 3

    def __init__(self):
        super().__init__()
        self.c = torch.nn.MultiheadAttention(16, 4, kdim=6, vdim=10)
        self.d = torch.nn.MultiheadAttention(16, 4, bias=False)
        self.requires_grad_(False)

    def forward(self, seq, memory, k6, v10, mask, padding, mask3, causal):
        c, c_weights = self.c(seq, k6, v10, attn_mask=mask, key_padding_mask=padding)
        d, _ = self.d(seq, seq, seq, attn_mask=causal, is_causal=True, need_weights=False)
        e, e_weights = self.d(memory, memory, memory, attn_mask=mask3)
        return c, c_weights, d, e, e_weights


def write_eager_results(doc, tensors, outputs, folder):
    """Writes, as a harness run would (its --inputs and --outputs files in one folder), a trace's
    inputs, its `outputs` as PyTorch eager computed them and, when it trains, cotangents and eager's
    gradients of the inputs that require them: thunder-gen-check then compares eager with LibTorch."""
    from pathlib import Path
    import torch_reference
    thunder_export.save_inputs(tensors, folder)
    decls = {d["name"]: d for d in doc["inputs"]}
    for name, value in zip(doc["outputs"], outputs):
        torch_reference.save_npy(Path(folder) / f"{name}.npy", value.detach(), "f32")
    leaves = {n: t for n, t in tensors.items() if decls[n].get("requires_grad")}
    if not leaves:
        return
    g = torch.Generator().manual_seed(1)
    cotangents = [torch.randn(o.shape, generator=g) for o in outputs]
    for name, c in zip(doc["outputs"], cotangents):
        torch_reference.save_npy(Path(folder) / f"cotangent_{name}.npy", c, "f32")
    grads = torch.autograd.grad(outputs, list(leaves.values()), cotangents)
    for name, grad in zip(leaves, grads):
        torch_reference.save_npy(Path(folder) / f"grad_{name}.npy", grad, "f32")


class ExporterTest(unittest.TestCase):
    def test_unexpressible_dtype_names_the_symbol(self):
        with self.assertRaises(thunder_export.ExportError) as e:
            thunder_export.export(lambda x: (x.to(torch.complex64) * 2).real, torch.randn(4), name="complex")
        self.assertIn("complex", str(e.exception))
        self.assertRegex(str(e.exception), r"^/ops/\d+ \(torch\.Tensor\.to\) arg 1: ")

    def test_ctx_attribute_is_refused_with_the_function_named(self):
        x = torch.randn(4, requires_grad=True)
        with self.assertRaises(thunder_export.ExportError) as e:
            thunder_export.export(lambda x: ScaleByCtxAttribute.apply(x), x, name="ctx_attr")
        self.assertIn("ScaleByCtxAttribute", str(e.exception))
        self.assertIn("ctx attributes", str(e.exception))

    def test_an_op_thunder_gen_cannot_run_is_refused_at_export(self):
        def uses_addbmm(b, a, w):
            return torch.addbmm(b, a, w)  # Thunder hands torch.addbmm to PyTorch: no decomposition
        with self.assertRaises(thunder_export.ExportError) as e:
            thunder_export.export(uses_addbmm, torch.randn(3, 4), torch.randn(2, 3, 5), torch.randn(2, 5, 4), name="addbmm")
        message = str(e.exception)
        self.assertRegex(message, r"^/ops/\d+: torch\.addbmm called at .*test_thunder_export\.py:\d+: ")
        self.assertIn("thunder-gen has no rule for it", message)

    def test_ops_with_rules_or_decompositions_export(self):
        doc = thunder_export.export(lambda x: torch.nn.functional.gelu(torch.softmax(x, -1)), torch.randn(2, 8), name="ok")
        self.assertEqual([op["op"] for op in doc["ops"]], ["torch.softmax", "torch.nn.functional.gelu"])

    def test_opaque_torch_calls_bind_to_thunder_gens_rows(self):
        """The calls of docs/torch-ops.md as models make them: Thunder records its own argument
        lists (baddbmm's out=None, max's keepdim after a tensor), which the rows must read."""
        def calls(b, x, w, s, m, ids, table, weight, target):
            h = torch.addmm(b, x, w)                                   # GPT-2's Conv1D
            v, _ = torch.max(h, 1)
            low, _ = h.min(dim=-1, keepdim=True)
            pair = torch.min(h, torch.full_like(h, 0.5)) + torch.max(h, h * 0.5)
            a = torch.baddbmm(s, s, s, beta=0.5, alpha=0.125) + torch.bmm(s, s)
            a = torch.triu(a.masked_fill(m, float("-inf")).masked_fill(~m, 0.0), diagonal=1) + torch.tril(a, -1)
            c = torch.clamp(pair, min=-torch.ones_like(pair), max=torch.ones_like(pair)) + torch.clamp(pair, max=0.7)
            c = torch.addcdiv(torch.addcmul(c, c, c, value=0.1), c, c.abs() + 1, value=-0.01)
            pos = m.long().cumsum(-1) - 1
            n = torch.nn.functional.normalize(c, dim=-1)
            e = torch.nn.functional.embedding(ids, table, padding_idx=0)
            loss = torch.nn.functional.cross_entropy(n, target, weight=weight, ignore_index=1)
            return v, low, a, pos, e, loss, h.max()
        args = (torch.randn(6), torch.randn(4, 5), torch.randn(5, 6), torch.randn(2, 3, 3), torch.rand(2, 3, 3) > 0.5,
                torch.randint(0, 5, (2, 4)), torch.randn(5, 3), torch.rand(6) + 0.5, torch.randint(0, 6, (4,)))
        doc = thunder_export.export(calls, *args, name="opaque_calls")
        ops = {op["op"] for op in doc["ops"]}
        for op in ("torch.addmm", "torch.max", "torch.min", "torch.baddbmm", "torch.bmm", "torch.masked_fill", "torch.triu",
                   "torch.tril", "torch.clamp", "torch.addcmul", "torch.addcdiv", "torch.cumsum", "torch.nn.functional.normalize",
                   "torch.nn.functional.embedding", "torch.nn.functional.cross_entropy"):
            self.assertIn(op, ops)
        exe = built_thunder_gen()
        if not exe:
            self.skipTest("no thunder-gen binary to validate with")
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "opaque_calls.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            run = subprocess.run([exe, "validate", path], capture_output=True, text=True)
            self.assertEqual(run.returncode, 0, run.stderr)

    def test_multihead_attention_modules_bind_and_match_eager(self):
        """nn.MultiheadAttention as Thunder records it (the transposes of batch_first, then
        multi_head_attention_forward with Thunder's argument list) validates against thunder-gen's
        row, and thunder-gen-check's LibTorch evaluation of the trace matches PyTorch eager on the
        same tensors: every output and, for the trained modules, every input gradient. Thunder
        records masks, need_weights=False and kdim/vdim only where nothing requires a gradient."""
        torch.manual_seed(0)
        trained = (TrainedAttention(), torch.randn(2, 5, 16, requires_grad=True), torch.randn(7, 2, 16, requires_grad=True))
        frozen = (FrozenAttention(), torch.randn(5, 2, 16), torch.randn(7, 2, 16), torch.randn(7, 2, 6), torch.randn(7, 2, 10),
                  torch.randn(5, 7), torch.randn(2, 7), torch.randn(8, 7, 7), torch.nn.Transformer.generate_square_subsequent_mask(5))
        exe, check = built_thunder_gen(), os.environ.get("THUNDER_GEN_CHECK")
        for name, (module, *args) in (("mha_trained", trained), ("mha_frozen", frozen)):
            with self.subTest(name), tempfile.TemporaryDirectory() as work:
                doc, tensors = thunder_export.export_with_inputs(module, *args, name=name)
                self.assertEqual(sum(op["op"] == "torch.nn.functional.multi_head_attention_forward" for op in doc["ops"]), module.calls)
                path = os.path.join(work, "trace.json")
                with open(path, "w") as f:
                    f.write(thunder_export.dumps(doc))
                if not exe or not check:
                    self.skipTest("no thunder-gen binary and no $THUNDER_GEN_CHECK to validate and evaluate with")
                run = subprocess.run([exe, "validate", path], capture_output=True, text=True)
                self.assertEqual(run.returncode, 0, run.stderr)
                write_eager_results(doc, tensors, module(*args), work)
                run = subprocess.run([check, path, work], capture_output=True, text=True)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_inputs_found_by_what_they_are_not_by_thunder_names(self):
        class Project(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(4, 8))
                self.register_buffer("scale", torch.full((4,), 0.5))

            def _project(self, inp, weight, gain):  # as Conv2d's _conv_forward(input, weight, bias)
                return torch.nn.functional.linear(inp, weight) * gain

            def forward(self, x, *, shift):
                return self._project(x, self.w, self.scale) + shift

        m, x, shift = Project(), torch.randn(2, 8), torch.randn(4)
        doc, tensors = thunder_export.export_with_inputs(m, x, shift=shift, name="project")
        self.assertEqual(sorted(d["name"] for d in doc["inputs"]), ["gain", "shift", "weight", "x"])  # Thunder's names
        for name, expected in (("x", x), ("shift", shift), ("weight", m.w), ("gain", m.scale)):
            self.assertIs(tensors[name], expected)

    def test_literals_and_custom_function_shape(self):
        def f(x):
            return torch.clamp(x, min=float("-inf"), max=1.0)[..., 1:3]
        doc = thunder_export.export(f, torch.randn(2, 4, requires_grad=True), name="lits")
        text = thunder_export.dumps(doc)
        self.assertIn('"float": "-inf"', text)
        self.assertIn('"ellipsis": "..."', text)
        self.assertIn('"slice": [', text)
        self.assertEqual(doc["inputs"][0], {"name": "x", "shape": [2, 4], "dtype": "f32", "requires_grad": True})


if __name__ == "__main__":
    unittest.main()
