#!/usr/bin/env python3
"""Writes a PT2 archive the size of a 7B-parameter model for timing the PT2 reader: 32 of
tools/corpus.py's Llama blocks at Llama-7B's dimensions (hidden 4096, 32 heads, MLP 11008;
6.48 B parameters), built on the meta device so that no weight is allocated (the archive's
payloads are then empty; thunder-gen reads only the graph either way).

    .venv/bin/python tools/pt2_meta_stack.py /tmp/llama32.pt2 [--core]
    farm-bench -n 5 -- build/thunder-gen /tmp/llama32.pt2 --emit trace
"""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402


class Stack(torch.nn.Module):
    def __init__(self, layers=32, hidden=4096, heads=32, mlp=11008):
        super().__init__()
        self.blocks = torch.nn.ModuleList(corpus.LlamaBlock(hidden, heads, mlp) for _ in range(layers))

    def forward(self, x, cos, sin):
        for block in self.blocks:
            x = block(x, cos, sin)
        return x


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--core", action="store_true", help="save it after run_decompositions() (Core ATen)")
    args = parser.parse_args(argv)
    with torch.device("meta"):
        model = Stack().train()
    x = torch.zeros(1, 128, 4096, device="meta", requires_grad=True)
    cos, sin = (t.to("meta") for t in corpus.rope_cache(128, 128))
    program = torch.export.export(model, (x, cos, sin))
    if args.core:
        program = program.run_decompositions()
    torch.export.save(program, args.path)
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.path}: {params / 1e9:.2f} B parameters, {len(program.graph.nodes)} graph nodes")


if __name__ == "__main__":
    main()
