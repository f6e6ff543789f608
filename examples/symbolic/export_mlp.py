"""Exports a pre-norm MLP block with torch.export, its batch and sequence sizes dynamic: the
archive the README generates one folder for every size from.

    PYTHONPATH=python .venv/bin/python examples/symbolic/export_mlp.py mlp.pt2
"""
import sys

import torch
from torch.export import Dim

import thunder_gen


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(torch.nn.functional.layer_norm(x, [64]))))


if __name__ == "__main__":
    torch.manual_seed(0)
    thunder_gen.export(MLP(), (torch.randn(2, 5, 64),), path=sys.argv[1] if len(sys.argv) > 1 else "mlp.pt2",
                       dynamic_shapes={"x": {0: Dim("batch", min=1, max=16), 1: Dim("seq", min=1, max=128)}})
