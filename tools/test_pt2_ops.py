"""The ATen ops that no corpus model calls, through torch.export and thunder-gen, against PyTorch
eager at the values where an op's definition has a case of its own: NaN and infinities, a bound
that is hit exactly, a base of 0, ties (argmax's, and max pooling's, whose gradient goes to the first maximum), pooling windows past the end (ceil_mode), nearest upsampling, repeated indices, a negative pad, quotients of -x.5 rounded
down and toward 0. The tensor operators &, | and ^, new_zeros, new_ones and fill_ come along, and detach (no gradient
flows through it), and a BatchNorm in training (its updated running statistics compared too). One module calls them
all; it is exported as the default training IR and as Core ATen (where several become others:
relu6 a hardtanh, F.pad a constant_pad_nd, max_pool2d a max_pool2d_with_indices), and each archive is checked by `python -m
thunder_gen.check` (every output and every gradient, NaN matching NaN).

    .venv/bin/python tools/test_pt2_ops.py [--work DIR]
"""
import argparse
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
import thunder_gen  # noqa: E402
from thunder_gen import check  # noqa: E402
from thunder_gen.binary import find_thunder_gen  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

warnings.filterwarnings("ignore")

NAN, INF = float("nan"), float("inf")


class SpecialValues(nn.Module):
    """Each output is one op (or two) at values that single out its cases; the parameters carry
    gradients through each."""

    def __init__(self):
        super().__init__()
        # Exact bounds of relu6 and hardtanh (the gradient is 0 there, as ATen's hardtanh_backward),
        # both sides of 0 for ELU.
        self.bounded = nn.Parameter(torch.tensor([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0, 100.0]))  # (ELU's expm1(100) overflows f32)
        # Exponents of pow(0, e) and pow(2, e): the gradient at base 0 is 0 for e >= 0, -inf below.
        self.exponent = nn.Parameter(torch.tensor([-1.0, 0.0, 0.5, 1.0, 2.0]))
        self.table = nn.Parameter(torch.arange(24.0).reshape(6, 4) / 8)
        self.grid = nn.Parameter(torch.linspace(-1, 1, 2 * 4 * 3 * 3).reshape(2, 4, 3, 3))
        self.channel_scale = nn.Parameter(torch.linspace(0.5, 2.0, 4))
        # Training-mode batch norm: its running statistics (and num_batches_tracked) are the
        # generated code's buffer_update outputs, compared with the module's buffers after the step.
        self.norm = nn.BatchNorm2d(4, momentum=0.3)
        # Windows whose maximum is tied (channel 1 is constant): max pooling's gradient goes to the
        # first of them, in the window's row-major order.
        self.tied = nn.Parameter(torch.tensor([[[[1.0, 1.0, 0.0, 2.0], [1.0, 0.0, 2.0, 2.0], [3.0, 3.0, 3.0, 0.0], [0.0, 3.0, 1.0, 1.0]],
                                                 [[0.5] * 4] * 4]]))

    def forward(self, special, rows, ties):
        finite = torch.where(torch.isnan(special) | torch.isinf(special), torch.zeros_like(special), special)
        return (
            torch.isnan(special), torch.isinf(special), torch.isinf(-special),
            finite * self.bounded[:1],
            F.relu6(self.bounded), F.hardtanh(self.bounded), F.elu(self.bounded, alpha=0.5),
            torch.pow(0.0, self.exponent), torch.pow(2.0, self.exponent),
            torch.index_select(self.table, 0, rows),                     # rows repeat: the gradient sums them
            torch.index_select(self.grid, 1, rows[:3] % 4),              # along an inner dim
            torch.flip(self.table, dims=[0, -1]),
            self.table.repeat(2, 1, 3),                                   # a new leading dim
            F.pad(self.table, (1, -1, -2, 3), value=0.5),                 # a crop on two sides
            F.group_norm(self.grid, 2, self.channel_scale, -self.channel_scale),
            F.group_norm(self.grid * 3, 4),                               # no affine
            self.grid.var(dim=(2, 3), unbiased=False), self.grid.var(1),
            ties.argmax(-1), ties.argmin(0), ties.argmax(),               # the first of equal values
            torch.logical_xor(ties > 1, ties < 3), (ties > 2).any(), (ties > 2).any(-1), torch.any(ties > 2, dim=()),
            torch.clamp(self.table, min=self.table[:1] * 0.5, max=self.table[:, :1] + 1),
            (ties > 1) & (ties < 4), (ties > 1) ^ (ties < 3),
            torch.div(self.grid * 5, 2, rounding_mode="floor"), torch.div(self.grid * 5, 2, rounding_mode="trunc"),  # -x.5 parts
            torch.ops.aten.div.Scalar_mode(self.grid * 5, 2, rounding_mode="floor"), (ties > 3).any((0, 1)),
            self.table.new_ones(4) * self.channel_scale, ties.new_zeros(3, 1).fill_(-2.5) + ties,
            self.exponent * self.exponent.detach(),                       # the gradient is the detached factor
            self.norm(self.norm(self.grid * 2 + 1) * 3),                 # the statistics updated twice
            F.max_pool2d(self.tied, 2), F.max_pool2d(self.tied * 2, 3, stride=2, padding=1),  # ResNet's stem
            F.max_pool1d(self.tied.flatten(2), 3, stride=1, dilation=2),
            F.max_pool1d((special * self.bounded[6:7]).reshape(1, 1, 8), 2),  # NaN and infinities in windows
            F.avg_pool2d(self.grid, 2, stride=1, padding=1, count_include_pad=False), F.avg_pool2d(self.grid, 3, 2, 1, divisor_override=5),
            F.avg_pool1d(self.tied.flatten(2), 4), F.adaptive_avg_pool2d(self.grid, 1), F.adaptive_avg_pool2d(self.tied, (2, 4)),
            # ceil_mode: last windows past the end (and past the padding, which count_include_pad counts only up to its end)
            F.max_pool2d(self.tied, 3, 2, ceil_mode=True), F.avg_pool2d(self.tied * 3, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(self.tied[..., :3], 2, ceil_mode=True, count_include_pad=False),
            # nearest upsampling by whole factors: each element's gradient sums its copies
            F.interpolate(self.grid, scale_factor=2), F.interpolate(self.tied, size=(12, 8)), F.interpolate(self.grid, scale_factor=(3, 1)),
        )


def inputs():
    special = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.5, -3.0, 1e30])
    rows = torch.tensor([5, 0, 5, 2, 2, 2, 1])
    ties = torch.tensor([[1.0, 3.0, 3.0, 2.0], [4.0, 4.0, 0.0, 0.0], [2.0, 1.0, 1.0, 4.0]])
    return special, rows, ties


class FractionalUpsample(nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=1.5)


def refused(work: Path) -> bool:
    """Nearest upsampling by 1.5 (4 -> 6 rows: sources 0, 0, 1, 2, 2, 3, no repetition) is refused
    naming the dim, writing nothing."""
    archive = thunder_gen.export(FractionalUpsample(), (torch.randn(1, 2, 4, 6).requires_grad_(True),), path=work / "fractional.pt2")
    out = work / "fractional_out"
    r = subprocess.run([str(find_thunder_gen()), str(archive), "-o", str(out)], capture_output=True, text=True)
    ok = r.returncode == 1 and "upsampling of spatial dim 0 from 4 to 6 elements: only whole factors" in r.stderr and not out.exists()
    print(f"== fractional upsampling refused: {'ok' if ok else 'FAILED: ' + r.stderr.strip()}", flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp())
    work.mkdir(parents=True, exist_ok=True)
    failed = 0
    for form in ("training", "core"):
        module = SpecialValues().train()
        archive = thunder_gen.export(module, inputs(), path=work / f"special_values_{form}.pt2", decompose=form == "core")
        print(f"== {form}: {archive.name}", flush=True)
        status = check.main([str(archive), "--module", f"{__name__}:SpecialValues", "--work", str(work / f"{form}_out")])
        failed += status != 0
        print(f"== {form}: {'ok' if status == 0 else f'FAILED (exit {status})'}", flush=True)
    failed += not refused(work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
