"""Tests of tools/torch_reference.py, on the CPU: no GPU needed.

    python3 -m pytest tools/test_torch_reference.py

1. For every examples/*.json: generate it with thunder-gen, build the harness for host emulation
   (g++), run it, and check that the PyTorch reference agrees with every output it wrote. The
   generated code is itself checked against LibTorch by ctest, so agreement here tests the Python
   interpreter against the same semantics.
2. Small hand-written traces pin the semantics of the trace format that the examples may not
   reach: integer division, rounding only at convert_element_type, empty dims lists, pad, binding
   by keyword, typed literals, decompositions and custom-gradient bodies.

Needs torch and numpy (skipped without them). The example tests need thunder-gen ($THUNDER_GEN,
else build/thunder-gen, else PATH's: tools/thunder_gen_binary.py), g++ and Boost.Context; they are
skipped when there is no thunder-gen.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import torch_reference as ref  # noqa: E402
from thunder_gen_binary import built_thunder_gen  # noqa: E402

SCRIPT = ROOT / "tools" / "torch_reference.py"
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))


def build_and_run(trace: Path, work: Path) -> Path:
    """Generates `trace`, builds its host-emulation harness and runs it; returns the folder it
    wrote its inputs and outputs to. Raises AssertionError with the log on any failure."""
    gen, res = work / "gen", work / "results"
    res.mkdir(parents=True)
    cxx = os.environ.get("CXX", "g++")
    steps = [
        [built_thunder_gen(), str(trace), "-o", str(gen)],
        [cxx, "-std=c++20", "-O1", "-fno-strict-aliasing", "-I", str(gen), "-xc++", str(gen / "forward.cu"), "-xnone",
         str(gen / "harness.cpp"), "-lboost_context", "-lpthread", "-o", str(gen / "harness")],
        [str(gen / "harness"), "--outputs", str(res), "--quiet"],
    ]
    for cmd in steps:
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode == 0, f"{' '.join(cmd)}\nexit {p.returncode}\n{p.stdout}{p.stderr}"
    return res


@pytest.fixture(scope="session")
def harness_results(tmp_path_factory):
    """Every example built and run once, in parallel: name -> results folder (or the error)."""
    if built_thunder_gen() is None:
        pytest.skip("no thunder-gen binary: build it (tools/build.sh thunder-gen) or set THUNDER_GEN")
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        pytest.skip("no C++ compiler")
    base = tmp_path_factory.mktemp("examples")

    def one(trace: Path):
        try:
            return trace.stem, build_and_run(trace, base / trace.stem)
        except AssertionError as e:
            return trace.stem, e

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        return dict(pool.map(one, EXAMPLES))


@pytest.mark.parametrize("trace", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_agrees_with_emulated_harness(trace, harness_results):
    res = harness_results[trace.stem]
    if isinstance(res, AssertionError):
        raise res
    out = io.StringIO()
    failures = ref.check(trace, res, "cpu", out=out)
    print(out.getvalue())
    assert failures == 0, out.getvalue()


def test_command_line_reports_a_mismatch(harness_results, tmp_path):
    """The command line exits 0 on agreement; a spoiled output makes it print MISMATCH, exit 1."""
    if not EXAMPLES:
        pytest.skip("no examples")
    trace = EXAMPLES[0]
    res = harness_results[trace.stem]
    if isinstance(res, AssertionError):
        pytest.skip(f"{trace.stem} did not build")
    ok = subprocess.run([sys.executable, str(SCRIPT), str(trace), str(res)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr

    spoiled = tmp_path / "spoiled"
    shutil.copytree(res, spoiled)
    doc = json.loads(trace.read_text())
    name = doc["outputs"][0]
    decl = next(d for op in doc["ops"] for d in op["out"] if d["name"] == name)
    t = ref.load_npy(spoiled / f"{name}.npy", decl["dtype"])
    ref.save_npy(spoiled / f"{name}.npy", (t.to(torch.float64) + 1).to(t.dtype), decl["dtype"])
    bad = subprocess.run([sys.executable, str(SCRIPT), str(trace), str(spoiled)], capture_output=True, text=True)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "MISMATCH" in bad.stdout


# ---- semantics, on hand-written traces ----------------------------------------------------------


def T(name, dtype, shape):
    return {"name": name, "shape": shape, "dtype": dtype}


def op(symbol, args, outs, **extra):
    return {"op": symbol, "args": args, "out": outs, **extra}


def run(inputs, ops, outputs, values):
    """Runs a trace over `inputs` (declarations) with `values` (name -> tensor); returns outputs."""
    trace = {"format": "thunder-gen-trace", "version": 1, "name": "t", "inputs": inputs, "ops": ops, "outputs": outputs}
    return ref.run_trace(trace, values)


def test_integer_division_truncates():
    a = torch.tensor([-7, 7, -8, 5], dtype=torch.int32)
    out = run([T("a", "i32", [4])], [op("prims.div", ["a", 2], [T("q", "i32", [4])])], ["q"], {"a": a})
    assert out["q"].tolist() == [-3, 3, -4, 2]
    assert out["q"].dtype == torch.int32


def test_16_bit_floats_compute_in_f32_and_round_only_at_convert():
    x = torch.tensor([1.0, 256.0], dtype=torch.bfloat16)
    ops = [op("prims.add", ["x", 0.5], [T("y", "bf16", [2])]),  # 256.5 is not a bf16: held unrounded
           op("prims.convert_element_type", ["y", {"dtype": "bf16"}], [T("z", "bf16", [2])])]
    out = run([T("x", "bf16", [2])], ops, ["y", "z"], {"x": x})
    assert out["y"].dtype == torch.float32 and out["y"].tolist() == [1.5, 256.5]
    assert out["z"].dtype == torch.float32 and out["z"].tolist() == [1.5, 256.0]  # round to nearest even


def test_reductions_drop_their_dims_and_an_empty_list_is_the_identity():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    ops = [op("prims.sum", ["x", [-1, 0]], [T("s", "f32", [3])]),
           op("prims.sum", ["x", []], [T("same", "f32", [2, 3, 4])]),
           op("prims.amax", ["x", [1]], [T("m", "f32", [2, 4])]),
           op("prims.prod", ["x", []], [T("p", "f32", [2, 3, 4])]),
           op("prims.argmax", ["x", None], [T("ai", "i64", [])]),
           op("prims.argmin", ["x", 1], [T("an", "i64", [2, 4])])]
    out = run([T("x", "f32", [2, 3, 4])], ops, ["s", "same", "m", "p", "ai", "an"], {"x": x})
    assert torch.equal(out["s"], x.sum((0, 2)))
    assert torch.equal(out["same"], x) and torch.equal(out["p"], x)
    assert torch.equal(out["m"], x.amax(1))
    assert out["ai"].item() == 23 and out["an"].tolist() == [[0] * 4] * 2


def test_var_mean_takes_correction_by_keyword_or_from_a_scalar():
    x = torch.tensor([[1.0, 2.0, 3.0, 6.0]])
    inputs = [T("x", "f32", [1, 4]), {"name": "c", "scalar": "i64"}]
    ops = [op("prims.var_mean", ["x", [1]], [T("v", "f32", [1]), T("m", "f32", [1])], kwargs={"correction": 0}),
           op("prims.var", ["x", [1]], [T("v1", "f32", [1])], kwargs={"correction": "c"})]
    out = run(inputs, ops, ["v", "m", "v1"], {"x": x, "c": torch.tensor(1)})
    assert out["m"].tolist() == [3.0]
    assert out["v"].tolist() == [3.5] and out["v1"].tolist() == pytest.approx([14 / 3])


def test_pad_crops_with_negative_padding_and_spaces_with_interior():
    x = torch.tensor([1.0, 2.0, 3.0])
    ops = [op("prims.pad", ["x", 0.0, [[-1, 2, 1]]], [T("p", "f32", [6])]),
           op("prims.pad", ["x", {"float": "-inf"}, [[1, -2, 0]]], [T("q", "f32", [2])])]
    out = run([T("x", "f32", [3])], ops, ["p", "q"], {"x": x})
    assert out["p"].tolist() == [0.0, 2.0, 0.0, 3.0, 0.0, 0.0]
    assert out["q"].tolist() == [-math.inf, 1.0]


def test_shape_prims():
    x = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    ops = [op("prims.slice_prim", ["x", [0, 1], [3, 4]], [T("s", "i64", [3, 3])]),  # strides default None
           op("prims.slice_prim", [], [T("s2", "i64", [2, 2])],
              kwargs={"a": "x", "start_indices": [0, 0], "end_indices": [3, 4], "strides": [2, 3]}),
           op("prims.broadcast_in_dim", ["r", [2, 3, 4], [1]], [T("b", "i64", [2, 3, 4])]),
           op("prims.transpose", ["x", [1, 0]], [T("t", "i64", [4, 3])]),
           op("prims.squeeze", ["r1", [0]], [T("q", "i64", [3])]),
           op("prims.cat", [["x", "x"], -1], [T("c", "i64", [3, 8])])]
    values = {"x": x, "r": torch.tensor([7, 8, 9]), "r1": torch.tensor([[7, 8, 9]])}
    inputs = [T("x", "i64", [3, 4]), T("r", "i64", [3]), T("r1", "i64", [1, 3])]
    out = run(inputs, ops, ["s", "s2", "b", "t", "q", "c"], values)
    assert torch.equal(out["s"], x[:, 1:])
    assert torch.equal(out["s2"], x[::2, ::3])
    assert out["b"].shape == (2, 3, 4) and out["b"][1, 2, 3].item() == 9
    assert torch.equal(out["t"], x.T) and out["q"].tolist() == [7, 8, 9]
    assert torch.equal(out["c"], torch.cat([x, x], 1))


def test_arguments_bind_by_signature_and_typed_literals():
    dev = {"device": "cuda:0"}
    ops = [op("prims.iota", [4], [T("i", "i64", [4])], kwargs={"start": 10, "step": -3, "device": dev, "dtype": {"dtype": "i64"}}),
           op("prims.full", [[2], {"float": "nan"}], [T("n", "f16", [2])], kwargs={"device": dev, "dtype": {"dtype": "f16"}}),
           op("prims.lerp", [], [T("l", "f32", [2])], kwargs={"weight": 0.25, "end": "e", "start": "s"}),
           op("prims.where", ["p", {"float": "inf"}, "s"], [T("w", "f32", [2])])]
    values = {"s": torch.tensor([0.0, 4.0]), "e": torch.tensor([8.0, 0.0]), "p": torch.tensor([True, False])}
    inputs = [T("s", "f32", [2]), T("e", "f32", [2]), T("p", "b8", [2])]
    out = run(inputs, ops, ["i", "n", "l", "w"], values)
    assert out["i"].tolist() == [10, 7, 4, 1]
    assert out["n"].dtype == torch.float32 and out["n"].isnan().all()
    assert out["l"].tolist() == [2.0, 3.0]
    assert out["w"].tolist() == [math.inf, 4.0]
    with pytest.raises(ref.TraceError, match="positional"):  # iota's start is keyword-only
        run(inputs, [op("prims.iota", [4, 1], [T("j", "i64", [4])])], ["j"], values)


def test_decompositions_and_custom_forward_bodies():
    x = torch.tensor([[0.5, -1.0]])
    S = [1, 2]
    ops = [
        op("torch.nn.functional.relu", ["x"], [T("r", "f32", S)],
           sub=[op("prims.gt", ["x", 0], [T("g", "b8", S)]), op("prims.where", ["g", "x", 0.0], [T("r", "f32", S)])]),
        # fwd has its own scope: its "x" is the op's tensor argument "r", not the trace's x.
        op("torch.ops.higher_order.autograd_function_apply", ["r"], [T("c", "f32", S), T("d", "f32", S)],
           fwd={"inputs": [T("x", "f32", S)],
                "ops": [op("prims.mul", ["x", 3.0], [T("y", "f32", S)])],
                "outputs": ["y", "x"], "saved": []},
           bwd={"inputs": [T("g1", "f32", S), T("g2", "f32", S)], "ops": [], "outputs": ["g1"]}),
    ]
    out = run([T("x", "f32", S)], ops, ["r", "c", "d"], {"x": x})
    assert out["r"].tolist() == [[0.5, 0.0]]
    assert out["c"].tolist() == [[1.5, 0.0]] and out["d"].tolist() == [[0.5, 0.0]]


def test_refuses_unknown_versions_and_ops():
    with pytest.raises(ref.TraceError, match="version"):
        ref.run_trace({"format": "thunder-gen-trace", "version": 2, "inputs": [], "ops": [], "outputs": []}, {})
    with pytest.raises(ref.TraceError, match="no rule and no decomposition"):
        run([T("x", "f32", [1])], [op("torch.special", ["x"], [T("y", "f32", [1])])], ["y"], {"x": torch.zeros(1)})


def test_npy_round_trip_keeps_bf16_bits(tmp_path):
    x = torch.tensor([1.0, -2.5, 3.140625, float("inf")], dtype=torch.bfloat16)
    ref.save_npy(tmp_path / "x.npy", x, "bf16")
    raw = np.load(tmp_path / "x.npy")
    assert raw.dtype == np.dtype("<u2") and raw.tolist() == x.view(torch.int16).numpy().view(np.uint16).tolist()
    assert torch.equal(ref.load_npy(tmp_path / "x.npy", "bf16"), x)
    ref.save_npy(tmp_path / "s.npy", torch.tensor(2.5, dtype=torch.float64), "f64")
    assert ref.load_npy(tmp_path / "s.npy", "f64").shape == ()


def test_compare_uses_the_tolerance_table():
    e = torch.tensor([1.0, float("nan"), float("inf"), 100.0])
    assert ref.compare(e + torch.tensor([9e-6, 0, 0, 9e-4]), e, "f32").ok
    c = ref.compare(e + torch.tensor([2e-5, 0, 0, 0]), e, "f32")
    assert not c.ok and c.mismatches == 1 and c.first_mismatch == 0
    assert not ref.compare(torch.tensor([1, 2]), torch.tensor([1, 3]), "i32").ok
    assert not ref.compare(torch.zeros(2), torch.zeros(3), "f32").ok
