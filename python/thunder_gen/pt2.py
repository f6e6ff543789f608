"""torch.export capture: a module as a PT2 archive (`model.pt2`) plus its example inputs as .npy.

    import thunder_gen
    thunder_gen.export(model, (x,), path="model.pt2")                    # the training IR
    thunder_gen.export(model, (x,), path="model_core.pt2", decompose=True)  # Core ATen
    # then: thunder-gen model.pt2 -o out/

export() runs torch.export.export on the module as the caller left it (normally train(): the
graph is specialized to that mode, dropout included), optionally run_decompositions() (Core
ATen), and torch.export.save. Beside `model.pt2` it writes `model.inputs/`, one `<name>.npy` per
graph placeholder, named by the placeholder (`ep.graph_signature.input_specs[i].arg.name`, e.g.
`x`, `p_fc1_weight`, `b_running_mean`, `c_lifted_tensor_0`): the user's inputs in the order
torch.export flattens (args, kwargs), and the parameters, buffers and lifted constants the
archive holds. These are the harness's `--inputs` files (docs/trace-format.md): little-endian,
C order, the tensor's own dtype, bf16 as its raw bits in `<u2`. A number among the user's inputs
becomes a 0-d array (int64, float64 or bool); None and strings have no placeholder value and no
file. A dtype a .npy file cannot hold (fp8, complex32, quantized) is refused, naming the input.

(The module is pt2, not export: a submodule named export would replace the package's function
`thunder_gen.export` with itself once imported.)

Nothing is left half-written: the archive and the folder are written into a scratch folder
beside `path` and moved into place only when all of them are complete, so a failing export
leaves an existing archive and inputs folder as they were.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch.utils import _pytree as pytree

from .errors import ExportError
from .npy import npy_array

def export(module, args, kwargs=None, *, path="model.pt2", decompose=False, dynamic_shapes=None, stack_traces=True):
    """Exports `module` called on `args` (and `kwargs`) with torch.export into `path` (a name
    ending in .pt2) and writes the example inputs into `<path without .pt2>.inputs/`.

    decompose=True saves `ep.run_decompositions()` (Core ATen) instead of the default training
    IR; dynamic_shapes goes to torch.export.export unchanged, and the names given to its Dims
    are recorded in the archive (symbol_names) for thunder-gen's --specialize. stack_traces=False drops the
    `stack_trace` of every node's metadata (absolute paths of the source files that made the
    graph): the archive is then the same whichever folder the code lived in. Returns `path` as a Path. Raises
    ValueError for a path not ending in .pt2, ExportError for an input a .npy cannot hold or a
    custom autograd.Function in the module (torch.export would drop its backward), and
    whatever torch.export raises for a module it cannot export.
    """
    path = Path(path)
    if path.suffix != ".pt2":
        raise ValueError(f"thunder_gen.export: path {str(path)!r} must end in .pt2 (torch.export.save's archive)")
    inputs_dir = inputs_folder(path)
    if inputs_dir.is_symlink() or (inputs_dir.exists() and not inputs_dir.is_dir()):
        raise ExportError(f"thunder_gen.export: {inputs_dir} exists and is not a folder; not replacing it")
    kwargs = dict(kwargs or {})
    with _refusing_custom_functions():
        ep = torch.export.export(module, tuple(args), kwargs, dynamic_shapes=dynamic_shapes)
    if decompose:
        ep = ep.run_decompositions()
    if not stack_traces:
        _drop_stack_traces(ep)
    arrays = placeholder_arrays(ep, tuple(args), kwargs)
    names = symbol_names(ep, module, tuple(args), kwargs, dynamic_shapes)
    extra_files = {SYMBOL_NAMES_FILE: json.dumps(names, sort_keys=True)} if names else None
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.stem}.") as scratch:
        # torch.export.save names the archive's root folder after the file, so it gets its final name.
        staged = Path(scratch) / path.name
        torch.export.save(ep, str(staged), extra_files=extra_files)
        staged_inputs = Path(scratch) / inputs_dir.name
        staged_inputs.mkdir()
        for name, array in arrays.items():
            np.save(staged_inputs / f"{name}.npy", array, allow_pickle=False)
        _replace(staged_inputs, inputs_dir, Path(scratch))
        os.replace(staged, path)
    return path


@contextlib.contextmanager
def _refusing_custom_functions():
    """torch.export traces a custom autograd.Function's forward and drops its backward (nothing in
    the archive says one was there), so generated gradients would silently differentiate the
    forward: the export is refused instead, naming the Function."""
    original = torch.autograd.Function.apply.__func__

    def apply(cls, *args, **kwargs):
        raise ExportError(f"thunder_gen.export: the module calls the custom autograd.Function {cls.__qualname__}, whose backward "
                          "torch.export drops (the archive would differentiate its forward instead); capture it with "
                          "thunder_gen.thunder_export, which keeps custom backwards")

    torch.autograd.Function.apply = classmethod(apply)
    try:
        yield
    finally:
        torch.autograd.Function.apply = classmethod(original)


def _drop_stack_traces(ep) -> None:
    graphs = [m.graph for m in ep.graph_module.modules() if isinstance(m, torch.fx.GraphModule)]  # subgraphs too
    for graph in graphs:
        for node in graph.nodes:
            node.meta.pop("stack_trace", None)


# The archive's record of the names given to Dim (torch.export.save's extra files): thunder-gen
# reads it, so that --specialize, the header and the manifest say `batch`, not torch's `s77`.
SYMBOL_NAMES_FILE = "thunder_gen_symbols.json"


def symbol_names(ep, module, args, kwargs, dynamic_shapes) -> dict:
    """{torch's symbol ("s77"): the name given to its Dim ("batch")}, for the dims of the call's
    top-level tensor arguments that `dynamic_shapes` (a dict by parameter name, or a tuple or list
    in parameter order) gives a named Dim. A symbol that Dims of different names reach, a derived
    size (2*s77), a Dim.AUTO or Dim.DYNAMIC, and a name that is not an identifier keep torch's
    name; so does every symbol of nested (pytree) inputs."""
    if not dynamic_shapes:
        return {}
    try:
        arguments = inspect.signature(module.forward).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return {}
    if isinstance(dynamic_shapes, dict):
        specs = {name: dynamic_shapes.get(name) for name in arguments}
    elif isinstance(dynamic_shapes, (list, tuple)):
        specs = dict(zip(arguments, dynamic_shapes))
    else:
        return {}
    user = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    fake = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    fake_of = {id(leaf): fake.get(name) for leaf, name in zip(_user_leaves(ep, args, kwargs), user)}
    names, ambiguous = {}, set()
    for param, value in arguments.items():
        spec, shape = specs.get(param), getattr(fake_of.get(id(value)), "shape", None)
        if not isinstance(value, torch.Tensor) or shape is None:
            continue
        dims = spec.items() if isinstance(spec, dict) else enumerate(spec) if isinstance(spec, (list, tuple)) else ()
        for d, dim in dims:
            name = getattr(dim, "__name__", None)
            if not isinstance(d, int) or not isinstance(name, str) or not (name.isascii() and name.isidentifier()) or name in ("max", "min"):
                continue
            size = shape[d] if -len(shape) <= d < len(shape) else None
            expr = getattr(getattr(size, "node", None), "expr", None)
            if expr is None or not getattr(expr, "is_Symbol", False):
                continue
            symbol = str(expr)
            if names.get(symbol, name) != name:
                ambiguous.add(symbol)
            names[symbol] = name
    for symbol in ambiguous:
        del names[symbol]
    taken = {str(s) for s in ep.range_constraints} - set(names)
    return {s: n for s, n in names.items() if n not in taken and list(names.values()).count(n) == 1}


def recorded_symbol_names(path) -> dict:
    """The {torch's symbol: name} export() recorded in the archive at `path` ({} if none)."""
    with zipfile.ZipFile(path) as z:
        entry = next((n for n in z.namelist() if n.endswith("/extra/" + SYMBOL_NAMES_FILE)), None)
        return json.loads(z.read(entry)) if entry else {}


def inputs_folder(path) -> Path:
    """`model.pt2` -> `model.inputs`: where export() writes the placeholders' .npy files."""
    path = Path(path)
    return path.with_name(path.name[: -len(".pt2")] + ".inputs")


def placeholder_arrays(ep, args, kwargs) -> dict:
    """{placeholder name: numpy array} for every graph input of `ep` that has a value."""
    user_values = iter(_user_leaves(ep, args, kwargs))
    arrays = {}
    for spec in ep.graph_signature.input_specs:
        name = spec.arg.name
        kind = spec.kind.name
        if kind == "USER_INPUT":
            value = next(user_values)
        elif kind in ("PARAMETER", "BUFFER"):
            value = ep.state_dict[spec.target] if spec.persistent is not False else ep.constants[spec.target]
        elif kind == "CONSTANT_TENSOR":
            value = ep.constants[spec.target]
        else:
            raise ExportError(f"thunder_gen.export: graph input {name!r} is of kind {kind} "
                              f"(target {spec.target!r}), which has no .npy form")
        array = _as_array(value, name)
        if array is not None:
            arrays[name] = array
    return arrays


def _user_leaves(ep, args, kwargs) -> list:
    """The user's inputs flattened as torch.export flattened them: (args, kwargs) with the
    kwargs in the exported signature's order."""
    order = _kwarg_order(ep)
    if order is not None and set(order) == set(kwargs):
        kwargs = {k: kwargs[k] for k in order}
    leaves = pytree.tree_leaves((args, kwargs))
    n_user = sum(1 for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT")
    if len(leaves) != n_user:
        raise ExportError(f"thunder_gen.export: the call's {len(leaves)} flattened inputs do not match "
                          f"the exported graph's {n_user} user inputs")
    return leaves


def _kwarg_order(ep):
    """The kwargs' names in the order the exported program flattens them, or None if unknown."""
    try:
        return list(ep.call_spec.in_spec.children_specs[1].context)
    except (AttributeError, IndexError, TypeError):
        return None


def _as_array(value, name):
    """A tensor or number as the array its .npy file holds; None for a value with no file."""
    if isinstance(value, torch.Tensor):
        try:
            return npy_array(value, name)
        except ExportError as e:
            raise ExportError(f"thunder_gen.export: {e}") from None
    if isinstance(value, bool):
        return np.array(value, dtype=np.bool_)
    if isinstance(value, int):
        return np.array(value, dtype="<i8")
    if isinstance(value, float):
        return np.array(value, dtype="<f8")
    if value is None or isinstance(value, str):
        return None
    raise ExportError(f"thunder_gen.export: input {name!r} is a {type(value).__name__}, which has no .npy form")


def _replace(staged: Path, target: Path, scratch: Path) -> None:
    """Moves the folder `staged` to `target`, an existing `target` first moved into `scratch`
    (deleted with it) so that the rename itself does not fail on a non-empty folder."""
    if target.exists():
        os.replace(target, scratch / "previous.inputs")
    os.replace(staged, target)
