"""What the checks against PyTorch eager share (tools/check_against_torch.py, tests/python_module.py):
eager's dropout replayed from the generated code's Philox streams, and the f64 measure that
settles a bf16 difference between the generated code and eager.

Needs numpy and torch.
"""
import contextlib
import copy
import math

import numpy as np
import torch
import torch.nn.functional as F

# ---- the runtime's Philox (templates/tg_runtime.cuh: philox_word, philox_uniform) ------------
M32 = np.uint64(0xFFFFFFFF)


def philox_uniform(seed, offset, n, stream):
    """Draws 0..n-1 of stream `stream` under (seed, offset), as float32 in [0, 1)."""
    seed, offset = np.uint64(seed % 2**64), np.uint64(offset % 2**64)  # i64 inputs, as the runtime casts them
    i = np.arange(n, dtype=np.uint64)
    block = (i >> np.uint64(2)) + (np.uint64(stream) << np.uint64(40))
    c0, c1 = block & M32, block >> np.uint64(32)
    c2 = np.full(n, offset & M32)
    c3 = np.full(n, offset >> np.uint64(32))
    k0, k1 = seed & M32, seed >> np.uint64(32)
    for _ in range(10):
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        n0 = (p1 >> np.uint64(32)) ^ c1 ^ k0
        n2 = (p0 >> np.uint64(32)) ^ c3 ^ k1
        c1, c3, c0, c2 = p1 & M32, p0 & M32, n0, n2
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & M32, (k1 + np.uint64(0xBB67AE85)) & M32
    words = np.stack([c0, c1, c2, c3])[(i & np.uint64(3)).astype(np.int64), np.arange(n)]
    return ((words >> np.uint64(8)).astype(np.float32) * np.float32(1.0 / 16777216.0))


class DropoutReplay:
    """Replaces F.dropout and F.scaled_dot_product_attention's dropout with masks drawn from the
    generated code's Philox streams, one stream per call in order."""

    def __init__(self, seed, offset):
        self.seed, self.offset, self.stream = seed, offset, 0
        self.notes = []

    def keep(self, shape, p):
        n = math.prod(shape)
        u = philox_uniform(self.seed, self.offset, n, self.stream)
        keep = torch.from_numpy(u < np.float32(1.0 - p)).reshape(shape)
        kept, sd = float(keep.sum()), math.sqrt(n * p * (1 - p))
        ok = abs(kept - n * (1 - p)) <= 5 * sd
        self.notes.append((f"dropout stream {self.stream}: kept {int(kept)} of {n} (p={p})", ok))
        self.stream += 1
        return keep

    def dropout(self, x, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return x
        return x * self.keep(tuple(x.shape), p).to(x.dtype) * (1.0 / (1.0 - p))

    def sdpa(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
        if dropout_p == 0:
            return self.original_sdpa(q, k, v, attn_mask=attn_mask, dropout_p=0.0, is_causal=is_causal, scale=scale, **kw)
        s = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.size(-1)))
        if is_causal:
            s = s.masked_fill(~torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(), float("-inf"))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
        p = torch.softmax(s, dim=-1)
        p = p * self.keep(tuple(p.shape), dropout_p).to(p.dtype) * (1.0 / (1.0 - dropout_p))
        return p @ v

    @contextlib.contextmanager
    def active(self):
        self.original_dropout, self.original_sdpa = F.dropout, F.scaled_dot_product_attention
        F.dropout, F.scaled_dot_product_attention = self.dropout, self.sdpa
        try:
            yield self
        finally:
            F.dropout, F.scaled_dot_product_attention = self.original_dropout, self.original_sdpa


# Under bf16 autocast, eager and the generated code each round to bf16 at every GEMM, and their
# inputs already differ in the last bf16 bit here and there (the attention's and the norms'
# intermediate roundings), so an element that is a sum cancelling to a small value can differ by
# more than bf16's tolerance relative to it, though neither is the less accurate. There both are
# measured against the same module computed in f64 without autocast: the generated result passes
# when its root-mean-square error is at most ACCURACY_MARGIN times eager's.
ACCURACY_MARGIN = 1.25


def f64_reference(module, args, leaves, cotangents, output_names):
    """The outputs and input gradients of `module` in f64, on the same inputs and cotangents, keyed
    as a check's expected results are: output names, and grad_<name> for each of `leaves` (name ->
    a parameter of `module` or one of `args`). Under autocast, pass the module inside the autocast
    wrapper: this runs without autocast."""
    exact_module = copy.deepcopy(module).double()
    exact_args = [a.detach().double().requires_grad_(a.requires_grad) if a.is_floating_point() else a for a in args]
    outputs = exact_module(*exact_args)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    torch.autograd.backward(outputs, [c.double() for c in cotangents])
    params = {id(p): exact for p, exact in zip(module.parameters(), exact_module.parameters())}
    inputs = {id(a): exact for a, exact in zip(args, exact_args)}
    exact = {name: o.detach() for name, o in zip(output_names, outputs)}
    for name, t in leaves.items():
        twin = params.get(id(t), inputs.get(id(t)))
        if twin is not None and twin.grad is not None:
            exact[f"grad_{name}"] = twin.grad
    return exact


def accuracy_line(out, label, got, want, exact) -> int:
    """Writes how far the generated result and eager's are from the f64 result (root mean square)
    and whether the generated one is within ACCURACY_MARGIN of eager's; returns 1 if not."""
    rms = lambda t: float((t.double() - exact.double()).pow(2).mean().sqrt())
    ours, eager = rms(got), rms(want.detach())
    ok = ours <= ACCURACY_MARGIN * eager
    out.write(f"{label}: differs from eager beyond bf16's tolerance; against f64: rms error {ours:.3g}, eager's {eager:.3g} "
              f"(ratio {ours / max(eager, 1e-300):.2f}, at most {ACCURACY_MARGIN}): {'ok, as accurate as eager' if ok else 'LESS ACCURATE'}\n")
    return 0 if ok else 1
