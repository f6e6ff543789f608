#!/usr/bin/env python3
"""torch.compile's rematerialization plan costed by thunder-gen's time model.

    python3 tools/peer_plans.py nanogpt_block llama_block      # default: these two
    python3 tools/peer_plans.py mlp_dropout --verbose --keep /tmp/peer
    python3 tools/peer_plans.py llama_block --thunder-gen build/thunder-gen

For each corpus model (tools/corpus.py):
1. builds the module with its parameters set from the trace's input .npy files
   (examples/corpus/<model>.inputs/) and runs AOTAutograd on it on the CPU, as torch.compile does:
   inductor's decompositions, then min_cut_rematerialization_partition. The forward graph's
   outputs beyond the module's are what it saves for the backward; a saved tensor that is a view
   of a module input or parameter costs nothing extra, the others are activations.
2. runs that forward graph and the thunder-gen trace (tools/torch_reference.py, every value of
   every decomposition level recorded, plus prims.matmul and prims.uniform, which it has no rule
   for) on the same inputs, dropout drawn on both sides from the same counter-based Philox
   streams (thunder_gen.eager_check.philox_uniform, one stream per draw in call order, as
   thunder-gen numbers them), and matches each saved tensor to the earliest trace value of the
   same dtype with equal contents (same shape, else the same elements in row-major order, else
   through the tensor it is a view of; equal within 1e-5 of the tensor's largest element). The
   match must hold on the captured inputs and on a perturbed copy of them, both sides run on
   each, so that a norm weight of ones or a zero bias does not make two values look alike. A
   saved view of a module input or parameter is that trace input.
3. writes tags: `save` on the op that defines each matched intermediate, `recompute` on every
   other op of the forward; where thunder-gen refuses a set of policies, the recompute tags it
   names (else all of them) are dropped and it tries again. A tag can only select an op of the
   trace as thunder-gen decomposes it before planning (`thunder-gen TRACE --emit decomposed`):
   a value inside a call that thunder-gen keeps whole and differentiates by its own rule
   (scaled_dot_product_attention, layer_norm, dropout, ...) is selected as that whole call, and
   `save` on it pins every piece of it (`--verbose` marks these "with its pieces").
4. runs `thunder-gen explain TRACE --tags FILE` (default objective: time) and prints one line for
   that plan; one for a second tag set, the matched ops untagged (the planner chooses within
   them) and every other op `recompute`; and the same numbers for thunder-gen's default plan and
   for --remat-objective bytes.

torch.compile's own bytes count a saved tensor at numel * element size (a bool mask at a byte an
element); thunder-gen's are as it stores them (a b8 mask at a bit an element).

Needs torch and numpy; no GPU.
"""
from __future__ import annotations

import argparse
import inspect
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.fx
import torch.utils._pytree as pytree

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import corpus  # noqa: E402
import torch_reference  # noqa: E402
from thunder_gen_binary import find_thunder_gen  # noqa: E402  (puts this checkout's python/ first)
from thunder_gen.eager_check import philox_uniform  # noqa: E402

CORPUS = ROOT / "examples" / "corpus"
# Any seed serves: both sides draw the same masks from it.
PHILOX_SEED, PHILOX_OFFSET = 0, 0
# "Equal contents": the two computations differ only in rounding (summation order, fused ops), so
# the largest difference is measured against the tensor's largest element (an element near zero
# after cancellation differs by more than its own size allows).
MATCH_TOLERANCE = 1e-5
THUNDER_DTYPE = {torch_dtype: name for name, (torch_dtype, _) in torch_reference.DTYPES.items()}
# ATen ops whose result shares its operand's storage and elements (a saved one is its operand).
VIEW_OPS = {"view", "_unsafe_view", "reshape", "permute", "transpose", "t", "alias", "unsqueeze", "squeeze", "detach"}
RANDOM_OPS = {"rand", "rand_like"}


# ---- the trace and its inputs ----------------------------------------------------------------


def load_trace(model_name: str) -> tuple[Path, dict, dict[str, torch.Tensor]]:
    """The trace's path, its JSON, and its inputs as captured (name -> tensor in storage dtype)."""
    path = CORPUS / f"{model_name}.json"
    doc = json.loads(path.read_text())
    folder = CORPUS / f"{model_name}.inputs"
    inputs = {d["name"]: torch_reference.load_npy(folder / f"{d['name']}.npy", torch_reference.value_dtype(d))
              for d in doc["inputs"]}
    return path, doc, inputs


def trace_name_of_parameter(param_name: str, trace_inputs: dict) -> str:
    """The trace input Thunder named after a module parameter: t_<path with dots as underscores>."""
    for name in (param_name, param_name.removeprefix("inner.")):  # BF16Autocast wraps the module as `inner`
        candidate = "t_" + name.replace(".", "_")
        if candidate in trace_inputs:
            return candidate
    raise KeyError(f"no trace input for parameter {param_name!r}")


# ---- torch.compile's plan ----------------------------------------------------------------------


def build_module(model: corpus.Model, trace_inputs: dict) -> tuple[torch.nn.Module, list[torch.Tensor], list[str]]:
    """The corpus module with its parameters equal to the trace's inputs, its example inputs read
    from the trace's .npy files, and the trace input names in AOTAutograd's primal order
    (parameters, then the forward's arguments)."""
    module = model.fn()
    primal_names = []
    with torch.no_grad():
        for name, p in module.named_parameters():
            trace_name = trace_name_of_parameter(name, trace_inputs)
            p.copy_(trace_inputs[trace_name])
            primal_names.append(trace_name)
    if list(module.buffers()):
        raise NotImplementedError(f"{model.name}: modules with buffers")
    forward = module.inner.forward if isinstance(module, corpus.BF16Autocast) else module.forward
    arg_names = list(inspect.signature(forward).parameters)
    examples = model.inputs()
    args = []
    for name, example in zip(arg_names, examples):
        value = trace_inputs[name].to(example.dtype).clone()
        args.append(value.requires_grad_(example.requires_grad))
        primal_names.append(name)
    return module, args, primal_names


def capture_partition(module: torch.nn.Module, args: list[torch.Tensor]) -> tuple[torch.fx.GraphModule, int]:
    """AOTAutograd's partitioned forward graph of `module` (torch.compile's decompositions and
    min-cut partitioner) and the number of the module's own outputs among its outputs."""
    from functorch.compile import aot_module, make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    graphs = {}

    def keep_forward(gm, example_inputs):
        graphs["forward"] = gm
        return make_boxed_func(gm.forward)

    def keep_backward(gm, example_inputs):
        return make_boxed_func(gm.forward)

    compiled = aot_module(module, fw_compiler=keep_forward, bw_compiler=keep_backward,
                          partition_fn=min_cut_rematerialization_partition, decompositions=select_decomp_table())
    outputs = compiled(*args)
    return graphs["forward"], len(pytree.tree_leaves(outputs))


class PhiloxDraws(torch.fx.Interpreter):
    """Runs a graph with each torch.rand drawn from the next Philox stream, as 1 - u: torch's
    decomposed dropout keeps rand > p where thunder-gen's keeps u < 1 - p."""

    def __init__(self, gm):
        super().__init__(gm)
        self.stream = 0

    def call_function(self, target, args, kwargs):
        if getattr(target, "_opname", None) not in RANDOM_OPS:
            return super().call_function(target, args, kwargs)
        shape = list(args[0].shape) if isinstance(args[0], torch.Tensor) else list(args[0])
        n = int(torch.Size(shape).numel())
        u = torch.from_numpy(philox_uniform(PHILOX_SEED, PHILOX_OFFSET, n, self.stream)).reshape(shape)
        self.stream += 1
        return (1.0 - u).to(kwargs.get("dtype") or torch.float32)


@dataclass
class SavedTensor:
    node: str  # the fx node's name
    base: str  # the node whose storage it is (itself unless a view)
    primal: str | None  # the trace input it is a view of, if any
    shape: list[int]
    dtype: torch.dtype

    @property
    def nbytes(self) -> int:
        return torch.Size(self.shape).numel() * torch.empty((), dtype=self.dtype).element_size()

    @property
    def is_mask(self) -> bool:
        return self.dtype == torch.bool

    def describe(self) -> str:
        return f"{self.node} {THUNDER_DTYPE.get(self.dtype, self.dtype)}{self.shape}"


def storage_root(node: torch.fx.Node) -> torch.fx.Node:
    """The node whose elements `node` views (through view-like ATen ops)."""
    while node.op == "call_function" and getattr(node.target, "_opname", None) in VIEW_OPS:
        node = node.args[0]
    return node


def forward_values(gm: torch.fx.GraphModule, primals: list[torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every node's value in one run of the forward graph on `primals`."""
    values = {}

    class Recording(PhiloxDraws):
        def run_node(self, n):
            values[n.name] = super().run_node(n)
            return values[n.name]

    Recording(gm).run(*[p.detach() for p in primals])
    return values


def saved_tensors(gm: torch.fx.GraphModule, n_user_outputs: int, primal_names: list[str],
                  values: dict[str, torch.Tensor]) -> list[SavedTensor]:
    """What the forward graph saves for the backward (its outputs after the module's own)."""
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(primal_names):
        raise RuntimeError(f"the forward graph has {len(placeholders)} inputs, the module {len(primal_names)}")
    primal_of = dict(zip(placeholders, primal_names))
    saved = []
    for node in list(output_node.args[0])[n_user_outputs:]:
        if isinstance(node, torch.fx.Node) and isinstance(values.get(node.name), torch.Tensor):
            base = storage_root(node)
            v = values[node.name]
            saved.append(SavedTensor(node.name, base.name, primal_of.get(base), list(v.shape), v.dtype))
    return saved


# ---- the trace's values ------------------------------------------------------------------------


class RecordingInterpreter(torch_reference.Interpreter):
    """torch_reference's interpreter keeping every value it defines, at every decomposition level,
    in definition order. It also runs the two prims it has no rule for: prims.uniform, drawn from
    the Philox streams in order, and prims.matmul (as written by Thunder: no epilogue)."""

    def __init__(self):
        super().__init__("cpu")
        self.values: dict[str, torch.Tensor] = {}
        self.decls: dict[str, dict] = {}
        self.stream = 0

    def one(self, op, env, decls, where):
        if op["op"] == "prims.uniform":
            self.draw_uniform(op, env, decls)
        elif op["op"] == "prims.matmul":
            self.matmul(op, env, decls)
        else:
            super().one(op, env, decls, where)
        for decl in op["out"]:
            if decl["name"] not in self.values and decl["name"] in env:
                self.values[decl["name"]] = env[decl["name"]]
                self.decls[decl["name"]] = decl

    def draw_uniform(self, op, env, decls):
        (decl,) = op["out"]
        n = int(torch.Size(decl["shape"]).numel())
        u = philox_uniform(PHILOX_SEED, PHILOX_OFFSET, n, self.stream)
        self.stream += 1
        env[decl["name"]] = torch.from_numpy(u).reshape(decl["shape"])
        decls[decl["name"]] = decl


    def matmul(self, op, env, decls):
        a, b = (env[name] for name in op["args"][:2])
        if op.get("kwargs"):
            raise torch_reference.TraceError(f"prims.matmul with {sorted(op['kwargs'])}: not run here")
        (decl,) = op["out"]
        env[decl["name"]] = torch.matmul(a, b).to(torch_reference.compute_dtype(decl["dtype"]))
        decls[decl["name"]] = decl


def trace_values(doc: dict, inputs: dict[str, torch.Tensor]) -> RecordingInterpreter:
    """The trace run on `inputs`: its interpreter, holding every named intermediate."""
    interp = RecordingInterpreter()
    interp.run(doc, inputs)
    return interp


def perturbed(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Other float inputs of the same shapes: a second run on them tells apart values that the
    captured parameters make equal (a norm's weight of ones, a bias of zeros)."""
    g = torch.Generator().manual_seed(3)
    return {name: t + 0.25 * torch.randn(t.shape, generator=g).to(t.dtype) if t.is_floating_point() else t
            for name, t in inputs.items()}


@dataclass
class Run:
    """One input set run both ways: the forward graph's node values and the trace's values."""
    nodes: dict[str, torch.Tensor]
    trace: RecordingInterpreter


def run_both(gm, doc, inputs: dict[str, torch.Tensor], primal_names: list[str], primal_dtypes: list[torch.dtype]) -> Run:
    primals = [inputs[name].to(dtype) for name, dtype in zip(primal_names, primal_dtypes)]
    return Run(forward_values(gm, primals), trace_values(doc, inputs))


# ---- matching ----------------------------------------------------------------------------------


def same_elements(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal element count and kind, and equal elements in row-major order."""
    if a.numel() != b.numel():
        return False
    a, b = a.reshape(-1), b.reshape(-1)
    if a.dtype == torch.bool or b.dtype == torch.bool:
        return a.dtype == b.dtype and bool(torch.equal(a, b))
    if a.dtype.is_floating_point != b.dtype.is_floating_point:
        return False
    a, b = a.to(torch.float64), b.to(torch.float64)
    scale = b.abs().max().item() if b.numel() else 0.0
    return bool(torch.isfinite(a).equal(torch.isfinite(b))) and (a - b).nan_to_num().abs().max().item() <= MATCH_TOLERANCE * scale


@dataclass
class Match:
    saved: SavedTensor
    trace_value: str | None = None
    how: str = ""  # "input", "same shape", "reshaped", "through the view of <node> (...)"


def find_trace_value(node: str, runs: list[Run], dtype_name: str) -> tuple[str | None, str]:
    """The earliest trace value equal to the fx node's in every run: same shape first, then
    reshaped."""
    first = runs[0]
    candidates = [name for name, decl in first.trace.decls.items() if decl.get("dtype") == dtype_name]
    shape = list(first.nodes[node].shape)
    for wanted_shape in (True, False):
        for name in candidates:
            if wanted_shape and list(first.trace.values[name].shape) != shape:
                continue
            if all(same_elements(r.nodes[node], r.trace.values[name]) for r in runs):
                return name, "same shape" if wanted_shape else "reshaped"
    return None, ""


def match_saved(saved: list[SavedTensor], runs: list[Run]) -> list[Match]:
    matches = []
    for s in saved:
        if s.primal is not None:
            matches.append(Match(s, s.primal, "input"))
            continue
        dtype_name = THUNDER_DTYPE.get(s.dtype)
        name, how = find_trace_value(s.node, runs, dtype_name)
        if name is None and s.base != s.node:
            name, how = find_trace_value(s.base, runs, dtype_name)
            how = f"through the view of {s.base} ({how})" if name else ""
        matches.append(Match(s, name, how))
    return matches


# ---- tags --------------------------------------------------------------------------------------


def decomposed_ops(thunder_gen: str, trace: Path) -> list[list[str]]:
    """The ops of the trace as thunder-gen plans over them (--emit decomposed): each op's output
    names. Tags select these; a name inside one of them is not selectable on its own."""
    listing = subprocess.run([thunder_gen, str(trace), "--emit", "decomposed"], capture_output=True, text=True, check=True).stdout
    ops = []
    for line in listing.splitlines():
        m = re.match(r"^\s+\(?([\w, ]+?)\)? = [\w.]+\(", line)
        if m:
            ops.append([n.strip() for n in m.group(1).split(",")])
    return ops


def calls_with_pieces(thunder_gen: str, trace: Path) -> set[str]:
    """The ops thunder-gen differentiates as several prims (--emit joint names their pieces
    <output>__0, <output>__1, ...): a tag on one covers every piece, its gradient's inputs too."""
    listing = subprocess.run([thunder_gen, str(trace), "--emit", "joint"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"\b([A-Za-z_]\w*?)__\d+ = ", listing))


def selector_of_each_value(doc: dict, ops: list[list[str]]) -> dict[str, str]:
    """Trace value name -> the selector (@first output of an op thunder-gen keeps) that covers it:
    the value's own op, else the innermost enclosing call thunder-gen keeps whole."""
    op_of_name = {name: outs[0] for outs in ops for name in outs}
    selector = {}

    def walk(trace_ops, enclosing):
        for op in trace_ops:
            own = next((op_of_name[d["name"]] for d in op["out"] if d["name"] in op_of_name), None)
            inner = own or enclosing
            for d in op["out"]:
                if inner is not None:
                    selector.setdefault(d["name"], inner)
            walk(op.get("sub", []), inner)

    walk(doc["ops"], None)
    return selector


def mapped_tags(matches: list[Match], doc: dict, ops: list[list[str]], matched_policy: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """`matched_policy` (save, or None: no tag) on the op covering each matched intermediate,
    `recompute` on every other op of the forward; and, for the report, each matched value's
    selector."""
    selector = selector_of_each_value(doc, ops)
    input_names = {d["name"] for d in doc["inputs"]}
    matched_selectors = {m.trace_value: "@" + selector[m.trace_value] for m in matches
                         if m.trace_value is not None and m.trace_value not in input_names}
    tags = {"@" + outs[0]: "recompute" for outs in ops}
    for sel in matched_selectors.values():
        if matched_policy is None:
            tags.pop(sel, None)
        else:
            tags[sel] = matched_policy
    return tags, matched_selectors


# ---- thunder-gen explain ----------------------------------------------------------------------


@dataclass
class Plan:
    saved_tensors: int
    saved_bytes: int
    activation_bytes: int
    forward_us: float
    backward_us: float
    step_us: float
    saved_names: list[str] = field(default_factory=list)


class Refused(Exception):
    pass


def explain(thunder_gen: str, trace: Path, extra: list[str]) -> Plan:
    r = subprocess.run([thunder_gen, "explain", str(trace), *extra], capture_output=True, text=True)
    if r.returncode != 0:
        raise Refused((r.stderr or r.stdout).strip())
    text = r.stdout
    saved = re.search(r"saved for the backward: (\d+) tensors, (\d+) bytes \((\d+) of them activations", text)
    step = re.search(r"predicted step: forward ([\d.]+) us \+ backward ([\d.]+) us = ([\d.]+) us", text)
    if not saved or not step:
        raise RuntimeError(f"cannot read thunder-gen explain's plan:\n{text[:2000]}")
    names = re.findall(r"^  (\S+) \w+\[[\d, ]*\]\s+\d+ bytes", text.split("recomputed in the backward")[0], re.M)
    return Plan(int(saved[1]), int(saved[2]), int(saved[3]), float(step[1]), float(step[2]), float(step[3]), names)


def explain_with_tags(thunder_gen: str, trace: Path, tags: dict[str, str], work: Path, log) -> tuple[Plan, dict, list[str]]:
    """explain under `tags`; where thunder-gen refuses them, drops the recompute tags on the values
    its message names (else all recompute tags) and tries again. Returns the plan, the tags it
    took and what was dropped."""
    tags, dropped = dict(tags), []
    for _ in range(len(tags) + 1):
        tags_file = work / f"{trace.stem}.peer_tags.json"
        tags_file.write_text(json.dumps(tags, indent=1))
        try:
            return explain(thunder_gen, trace, ["--tags", str(tags_file)]), tags, dropped
        except Refused as e:
            log(f"  thunder-gen refused the tags: {str(e).splitlines()[-1]}")
            # It names values as it decomposes them: t99__3 is a piece of the call defining t99.
            named = dict.fromkeys("@" + re.sub(r"__\d+$", "", n) for n in re.findall(r"\b[A-Za-z_]\w*\b", str(e)))
            culprits = [s for s in named if tags.get(s) == "recompute"]
            if not culprits:
                culprits = [s for s, p in tags.items() if p == "recompute"]
            if not culprits:
                raise
            for s in culprits:
                del tags[s]
            dropped += culprits
    raise RuntimeError("no set of tags was accepted")


# ---- the report --------------------------------------------------------------------------------


def plan_line(model: str, label: str, plan: Plan) -> str:
    return (f"{model}: {label}: {plan.saved_tensors} saved, {plan.activation_bytes} activation bytes "
            f"({plan.saved_bytes} in all); predicted forward {plan.forward_us:.3f} us + backward {plan.backward_us:.3f} us "
            f"= {plan.step_us:.3f} us")


@dataclass
class TorchPlan:
    saved: list[SavedTensor]
    matches: list[Match]

    @property
    def activations(self) -> list[SavedTensor]:
        return [s for s in self.saved if s.primal is None]

    def summary(self) -> str:
        nbytes = sum(s.nbytes for s in self.saved)
        act = sum(s.nbytes for s in self.activations)
        act_bits = sum(s.nbytes // 8 if s.is_mask else s.nbytes for s in self.activations)
        matched = sum(m.trace_value is not None for m in self.matches)
        return (f"saves {len(self.saved)} tensors, {nbytes} bytes; {len(self.activations)} activations, {act} bytes "
                f"({act_bits} with b8 masks as bits, as thunder-gen stores them); "
                f"matched {matched}, unmatched {len(self.saved) - matched}")


def torch_compile_plan(model: corpus.Model, doc: dict, inputs: dict[str, torch.Tensor]) -> TorchPlan:
    """torch.compile's saved tensors for `model`, each matched to a trace value over two input
    sets: the captured one and a perturbed one."""
    module, args, primal_names = build_module(model, inputs)
    fw, n_user = capture_partition(module, args)
    primal_dtypes = [p.dtype for _, p in module.named_parameters()] + [a.dtype for a in args]
    runs = [run_both(fw, doc, inp, primal_names, primal_dtypes) for inp in (inputs, perturbed(inputs))]
    saved = saved_tensors(fw, n_user, primal_names, runs[0].nodes)
    return TorchPlan(saved, match_saved(saved, runs))


def report_matches(model: str, plan: TorchPlan, selectors: dict[str, str], split: set[str], verbose: bool) -> None:
    for m in plan.matches:
        if m.trace_value is None:
            print(f"{model}: unmatched: {m.saved.describe()}" + (f" (a view of {m.saved.base})" if m.saved.base != m.saved.node else ""))
        elif verbose:
            sel = selectors.get(m.trace_value)
            tag = "" if sel is None else f", tag {sel}" + (" (with its pieces)" if sel[1:] in split else "")
            print(f"  saved {m.saved.describe()} {m.saved.nbytes} bytes = {m.trace_value} ({m.how}){tag}")


def run_model(model: corpus.Model, thunder_gen: str, work: Path, verbose: bool) -> None:
    trace, doc, inputs = load_trace(model.name)
    plan = torch_compile_plan(model, doc, inputs)
    ops = decomposed_ops(thunder_gen, trace)
    print(f"{model.name}: torch.compile (AOTAutograd, inductor decompositions, min-cut partition) {plan.summary()}")
    variants = {"save": "torch.compile's plan as tags: save its values, recompute the rest",
                None: "torch.compile's values left to the planner, the rest recomputed"}
    for policy, label in variants.items():
        tags, selectors = mapped_tags(plan.matches, doc, ops, policy)
        if policy == "save":
            report_matches(model.name, plan, selectors, calls_with_pieces(thunder_gen, trace), verbose)
        mapped, taken, dropped = explain_with_tags(thunder_gen, trace, tags, work, print)
        counts = ", ".join(f"{sum(p == q for p in taken.values())} {q}" for q in ("save", "recompute"))
        print(plan_line(model.name, f"{label} ({counts}{', ' + str(len(dropped)) + ' recompute dropped' if dropped else ''})", mapped))
        if verbose:
            print(f"  thunder-gen saves: {' '.join(mapped.saved_names)}")
    print(plan_line(model.name, "thunder-gen default (time)", explain(thunder_gen, trace, [])))
    print(plan_line(model.name, "thunder-gen --remat-objective bytes", explain(thunder_gen, trace, ["--remat-objective", "bytes"])))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["nanogpt_block", "llama_block"], help="corpus models")
    parser.add_argument("--thunder-gen", help="the generator (default: $THUNDER_GEN, else build/thunder-gen, else PATH's)")
    parser.add_argument("--keep", metavar="DIR", help="write the tags files here (default: a temporary folder)")
    parser.add_argument("--verbose", action="store_true", help="one line per saved tensor and its match")
    a = parser.parse_args(argv)
    thunder_gen = a.thunder_gen or find_thunder_gen()
    models = {m.name: m for m in corpus.MODELS}
    unknown = [m for m in a.models if m not in models]
    if unknown:
        parser.error(f"unknown models {unknown}; the corpus has {sorted(models)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(a.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in a.models:
            run_model(models[name], thunder_gen, work, a.verbose)
    return 0


if __name__ == "__main__":
    sys.exit(main())
