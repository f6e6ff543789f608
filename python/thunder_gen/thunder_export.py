"""Exports a Lightning Thunder trace as a thunder-gen trace (format v1, docs/trace-format.md).

    from thunder_gen.thunder_export import export     # (the tools: `import thunder_export`)
    doc = export(module, x, name="my_block")           # thunder.jit, run once, convert
    json.dump(doc, open("my_block.json", "w"))

    python -m thunder_gen.thunder_export corpus --out examples/corpus      # rewrite the corpus
    python -m thunder_gen.thunder_export corpus --check examples/corpus    # exit 1 when a file differs
    python -m thunder_gen.thunder_export MODULE:FACTORY -o trace.json      # FACTORY() -> (fn, args[, name])
    python -m thunder_gen.thunder_export MODULE:FACTORY -o trace.json --dynamic x:0=B,1=T --symbol B=1:64 --symbol T=1:512
                                            # symbolic sizes (thunder_gen.symbolic_capture)
    python -m thunder_gen.thunder_export MODULE:FACTORY --distributed fsdp --world-size 16 -o trace.json --inputs DIR
                                            # FACTORY(rank) -> (module, args), wrapped with ddp or fsdp

`tools/thunder_export.py` is this module under its old name: run, it is the command above; imported
from tools/ as `thunder_export`, it is this module. The corpus (tools/corpus.py) is the checkout's:
`corpus` and the distributed models need the package to be used from its checkout.

What is written is Thunder's first computation trace, `thunder.last_traces(jfn)[0]`: the program
as the user wrote it, before Thunder's own autograd and fusion. Every bound symbol keeps its
symbol id (`prims.<name>` for prims), args and kwargs as Thunder bound them, outputs, tags and
its whole decomposition, nested as `sub`. A `torch.autograd.Function` and a call of
`torch.ops.higher_order.autograd_function_apply` become one `autograd_function_apply` op whose
`fwd` and `bwd` sub-traces are the traces Thunder made of the user's forward and backward.

Tensors are captured on the CPU and retargeted: the file's `device` is the target (`cuda:0` by
default) and device literals in arguments name it too. Anything the format cannot say (an
argument of an unknown type, a symbol that is neither a prim, a torch-level symbol nor a custom
autograd function) stops the export with an ExportError naming the symbol and the argument. So
does a symbol thunder-gen can neither run by a rule of its own nor lower through a decomposition
the trace records (Thunder passes several hundred torch functions to PyTorch whole): the error
names it and the source line that called it, rather than leaving a trace that fails at
generation. thunder-gen's rules come from `thunder-gen list-ops` (find_thunder_gen(): $THUNDER_GEN,
else this checkout's build/thunder-gen, else thunder-gen on PATH); with none found the check is
skipped, with a warning (a $THUNDER_GEN that names no executable file is an error).
"""
import argparse
import functools
import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

from .binary import ThunderGenNotFound, checkout, find_thunder_gen
from .errors import ExportError

CUSTOM_GRAD_OP = "torch.ops.higher_order.autograd_function_apply"
# Bound symbols that only plumb values in and out of a trace.
PLUMBING = {"unpack_trivial", "python_return", "python_del", "comment", "unpack_sequence", "unpack_key"}
# Tags that mean something to rematerialization; Thunder keeps DONT_RECOMPUTE_IN_BACKWARD on the
# symbol (prims.OpTags), the others on the bound symbol or its output proxies.
REMAT_TAGS = ("DONT_RECOMPUTE_IN_BACKWARD", "RECOMPUTE_IN_BACKWARD")


@functools.lru_cache(maxsize=None)
def thunder_gen_ops():
    """The op ids thunder-gen has rules for (`thunder-gen list-ops`), or None without a thunder-gen."""
    try:
        exe = find_thunder_gen()
    except ThunderGenNotFound as e:
        if e.override:
            raise
        warnings.warn(f"{e}. Ops are not checked against its rules")
        return None
    listing = subprocess.run([exe, "list-ops"], capture_output=True, text=True, check=True).stdout
    return frozenset(line.split("(", 1)[0] for line in listing.splitlines() if line.startswith(("prims.", "torch.", "thunder.distributed.prims.")))


def called_at(bsym):
    """Where the user's code called the symbol: 'file.py:123', or '' when Thunder did not record it."""
    positions = getattr(bsym, "source_positions", None)
    filename = getattr(bsym, "source_filename", None)
    if not filename or positions is None or getattr(positions, "lineno", None) is None:
        return ""
    return f"{filename}:{positions.lineno}"


def _thunder():
    import thunder  # imported lazily: `--help` and the corpus list work without it
    return thunder


def dtype_name(dtype):
    """Thunder's short dtype name (f32, bf16, b8, ...) of a thunder or torch dtype."""
    import torch
    # (a torch dtype needs no Thunder: gpu_bench.py writes inputs on machines without it)
    torch_dtype = dtype if isinstance(dtype, torch.dtype) else _thunder().dtypes.to_torch_dtype(dtype)
    names = {torch.bool: "b8", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
             torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
             torch.float64: "f64"}
    if torch_dtype not in names:
        raise ExportError(f"dtype {dtype} has no name in format v1")
    return names[torch_dtype]


class Exporter:
    def __init__(self, device):
        self.device = device
        self.check_ops = True  # off inside the decomposition of an op thunder-gen has a rule for

    # ---- values ------------------------------------------------------------------------------
    def is_tensor(self, x):
        return isinstance(x, _thunder().core.proxies.TensorProxy)

    def is_number_proxy(self, x):
        return isinstance(x, _thunder().core.proxies.NumberProxy)

    def declaration(self, p, with_grad=False):
        if self.is_tensor(p):
            d = {"name": p.name, "shape": [int(s) for s in p.shape], "dtype": dtype_name(p.dtype)}
            if with_grad:
                d["requires_grad"] = bool(p.requires_grad)
            return d
        if self.is_number_proxy(p):
            kind = {bool: "b8", int: "i64", float: "f64"}.get(p.python_type)
            if kind is None:
                raise ExportError(f"number {p.name} of type {p.python_type.__name__} has no scalar kind in format v1")
            return {"name": p.name, "scalar": kind}
        raise ExportError(f"{type(p).__name__} {getattr(p, 'name', p)!r} is neither a tensor nor a number")

    def flat_proxies(self, x, where):
        """The proxies of an output structure, in order; constants are refused."""
        thunder = _thunder()
        leaves, _ = thunder.core.pytree.tree_flatten(x)
        out = []
        for leaf in leaves:
            if isinstance(leaf, thunder.core.proxies.Proxy):
                out.append(leaf)
            elif leaf is not None:
                raise ExportError(f"{where}: output {leaf!r} is a constant, not a value")
        return out

    # ---- arguments ---------------------------------------------------------------------------
    def literal(self, x, where):
        thunder = _thunder()
        import torch
        if isinstance(x, thunder.core.proxies.Proxy):
            if self.is_tensor(x) or self.is_number_proxy(x):
                return x.name
            raise ExportError(f"{where}: {type(x).__name__} {x.name!r} cannot be an argument in format v1")
        if x is None or isinstance(x, bool):
            return x
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            if math.isnan(x):
                return {"float": "nan"}
            if math.isinf(x):
                return {"float": "inf" if x > 0 else "-inf"}
            return x
        if isinstance(x, str):
            return {"str": x}
        if isinstance(x, (list, tuple)):
            return [self.literal(v, f"{where}[{i}]") for i, v in enumerate(x)]
        if isinstance(x, (thunder.dtypes.dtype, torch.dtype)) or x in (float, int, bool):
            if x in (float, int, bool):  # Thunder accepts Python types as dtypes
                x = {float: torch.float32, int: torch.int64, bool: torch.bool}[x]
            try:
                return {"dtype": dtype_name(x)}
            except ExportError as e:
                raise ExportError(f"{where}: {e}") from None
        if isinstance(x, (thunder.devices.Device, torch.device)):
            return {"device": self.device}
        if isinstance(x, slice):
            return {"slice": [self.literal(x.start, where), self.literal(x.stop, where), self.literal(x.step, where)]}
        if x is Ellipsis:
            return {"ellipsis": "..."}
        if isinstance(x, torch.memory_format):
            return {"memory_format": str(x).removeprefix("torch.")}
        distributed = self.distributed_literal(x)
        if distributed is not None:
            return distributed
        raise ExportError(f"{where}: argument {x!r} of type {type(x).__name__} has no form in format v1")

    @staticmethod
    def distributed_literal(x):
        """The distributed prims' arguments: a process group as its world size (the rank is the
        communicator's at run time, never in the trace), DistParallelType and DistributedReduceOps
        by name; None for anything else."""
        import torch
        if torch.distributed.is_available() and isinstance(x, torch.distributed.ProcessGroup):
            return {"process_group": {"world_size": int(x.size())}}
        from thunder.core.proxies import DistParallelType
        from thunder.distributed.prims import DistributedReduceOps
        if isinstance(x, (DistParallelType, DistributedReduceOps)):
            return {"str": x.name}
        return None

    # ---- bound symbols -----------------------------------------------------------------------
    def symbol_id(self, bsym):
        thunder = _thunder()
        if isinstance(bsym.sym.id, thunder.core.prims.PrimIDs):
            return f"prims.{bsym.sym.name}"
        import thunder.distributed.prims as dist_prims
        if isinstance(bsym.sym.id, dist_prims.PrimIDs):
            return f"thunder.distributed.prims.{bsym.sym.name}"
        if isinstance(bsym.sym.id, str):
            return bsym.sym.id
        raise ExportError(f"symbol {bsym.sym.name!r} has an id of type {type(bsym.sym.id).__name__}")

    def tags(self, bsym):
        thunder = _thunder()
        names = {getattr(t, "_value", getattr(t, "name", str(t))) for t in bsym.tags}
        if thunder.core.prims.OpTags.DONT_RECOMPUTE_IN_BACKWARD in (bsym.sym.tags or ()):
            names.add("DONT_RECOMPUTE_IN_BACKWARD")
        for p in self.flat_proxies(bsym.output, bsym.sym.name):
            if any(getattr(t, "_value", None) == "RECOMPUTE_IN_BACKWARD" for t in getattr(p, "tags", ())):
                names.add("RECOMPUTE_IN_BACKWARD")
        return sorted(names)

    def custom_grad_traces(self, bsym):
        """(forward trace, backward trace, kind) Thunder recorded for a custom autograd function.

        Thunder keeps them only in the closure of the symbol's grad transform, one layout for
        torch.autograd.Function and one for autograd_function_apply (thunder/core/jit_ext.py)."""
        executor = bsym.sym.executor
        impl = getattr(executor, "implmap", {}).get(bsym.sym.id) if executor is not None else None
        grad = getattr(impl, "grad_transform", None)
        if grad is None or grad.__closure__ is None:
            return None
        cells = dict(zip(grad.__code__.co_freevars, (c.cell_contents for c in grad.__closure__)))
        if "aliased_trace_of_augmented_fwd" in cells:  # torch.autograd.Function
            bwd_fn = cells["bwd_impl_callable"]
            bwd_cells = dict(zip(bwd_fn.__code__.co_freevars, (c.cell_contents for c in bwd_fn.__closure__)))
            ctx = cells["ctx_proxy"]
            if ctx.saved_consts:
                raise ExportError(f"custom autograd function {bsym.sym.name}: non-tensor ctx attributes "
                                  f"({len(ctx.saved_consts)}) cannot be exported yet")
            return cells["aliased_trace_of_augmented_fwd"], bwd_cells["aliased_bwd_trace_impl"], "function"
        if "aliased_aug_fwd_trace" in cells:  # torch.ops.higher_order.autograd_function_apply
            return cells["aliased_aug_fwd_trace"], cells["aliased_bwd_trace"], "higher_order"
        return None

    def ops(self, bsyms, where, defined):
        out = []
        for bsym in bsyms:
            if bsym.sym.name in PLUMBING:
                continue
            op = self.op(bsym, f"{where}/{len(out)}", defined)
            if op is not None:
                out.append(op)
        return out

    def op(self, bsym, where, defined):
        thunder = _thunder()
        leaves, _ = thunder.core.pytree.tree_flatten(bsym.output)
        if not any(isinstance(x, thunder.core.proxies.Proxy) for x in leaves):
            return None  # a query answered by constants (a shape, say): later arguments hold them
        outs = self.flat_proxies(bsym.output, f"{where} ({bsym.sym.name})")
        new = [p for p in outs if p.name not in defined]
        if not new:
            return None  # Thunder returned an input unchanged (an alias): nothing to compute
        if len(new) != len(outs):
            raise ExportError(f"{where}: {bsym.sym.name} returns both new values and existing ones "
                              f"({', '.join(p.name for p in outs if p.name in defined)})")
        custom = self.custom_grad_traces(bsym)
        if custom is not None:
            return self.custom_op(bsym, custom, outs, where, defined)
        if bsym.sym.executor is not None and not isinstance(bsym.sym.id, str):
            raise ExportError(f"{where}: {bsym.sym.name} belongs to executor {bsym.sym.executor.name}, not to Thunder's language")
        symbol = self.symbol_id(bsym)
        self.refuse_if_unsupported(bsym, symbol, where)
        op = {"op": symbol}
        if bsym.args:
            op["args"] = [self.literal(a, f"{where} ({symbol}) arg {i}") for i, a in enumerate(bsym.args)]
        if bsym.kwargs:
            op["kwargs"] = {k: self.literal(v, f"{where} ({symbol}) kwarg {k}") for k, v in bsym.kwargs.items()}
        op["out"] = [self.declaration(p) for p in outs]
        tags = self.tags(bsym)
        if tags:
            op["tags"] = tags
        if bsym.subsymbols:
            inner = set(defined)
            # thunder-gen never lowers an op it has a rule for: its decomposition need not be runnable.
            outer_checks, self.check_ops = self.check_ops, self.check_ops and not self.has_rule(symbol)
            op["sub"] = self.ops(bsym.subsymbols, f"{where}/sub", inner)
            self.check_ops = outer_checks
        for p in outs:
            defined.add(p.name)
        return op

    @staticmethod
    def has_rule(symbol):
        known = thunder_gen_ops()
        return known is not None and symbol in known

    def refuse_if_unsupported(self, bsym, symbol, where):
        if not self.check_ops or thunder_gen_ops() is None or self.has_rule(symbol) or bsym.subsymbols:
            return
        at = called_at(bsym)
        raise ExportError(f"{where}: {symbol}{' called at ' + at if at else ''}: Thunder runs {symbol} whole (it hands it to "
                          f"PyTorch or an executor), so the trace holds no decomposition of it, and thunder-gen has no rule for it")

    def body(self, trace, inputs, outputs, where, saved=None):
        decls = [self.declaration(p) for p in inputs]
        defined = {p.name for p in inputs}
        body = {"inputs": decls, "ops": self.ops(trace.bound_symbols, f"{where}/ops", defined)}
        body["outputs"] = [None if p is None else self.literal(p, where) for p in outputs]
        if saved is not None:
            body["saved"] = [p.name for p in saved]
        return body

    def custom_op(self, bsym, traces, outs, where, defined):
        thunder = _thunder()
        fwd_trace, bwd_trace, kind = traces
        args = list(bsym.args)
        fwd_args = list(fwd_trace.args)
        if kind == "higher_order":  # the first argument is the (absent) ctx
            args, fwd_args = args[1:], fwd_args[1:]
        for i, a in enumerate(args):
            if self.is_number_proxy(a):
                raise ExportError(f"{where}: custom autograd function {bsym.sym.name}: number argument {i} is a proxy")
        tensor_pos = [i for i, a in enumerate(args) if self.is_tensor(a)]
        fwd_inputs = [fwd_args[i] for i in tensor_pos]
        primal, saved = fwd_trace.output
        primal = self.flat_proxies(primal, where)
        saved = self.flat_proxies(saved, where)
        bwd_args = [a for a in bwd_trace.args if isinstance(a, thunder.core.proxies.Proxy)]
        if kind == "function":  # Thunder orders them saved, then cotangents; format v1 the other way
            bwd_inputs = bwd_args[len(saved):] + bwd_args[:len(saved)]
        else:
            bwd_inputs = bwd_args
        grads = list(thunder.core.baseutils.sequencify(bwd_trace.output))
        if len(grads) != len(args):
            raise ExportError(f"{where}: custom autograd function {bsym.sym.name}: backward returns "
                              f"{len(grads)} gradients for {len(args)} arguments")
        for i, g in enumerate(grads):
            if g is not None and not self.is_tensor(g):
                raise ExportError(f"{where}: custom autograd function {bsym.sym.name}: gradient {i} is {g!r}")
        op = {"op": CUSTOM_GRAD_OP,
              "args": [self.literal(args[i], f"{where} arg {i}") for i in tensor_pos],
              "out": [self.declaration(p) for p in outs]}
        op["fwd"] = self.body(fwd_trace, fwd_inputs, primal, f"{where}/fwd", saved=saved)
        op["bwd"] = self.body(bwd_trace, bwd_inputs, [grads[i] for i in tensor_pos], f"{where}/bwd")
        for p in outs:
            defined.add(p.name)
        return op

    def trace(self, trace, name, source):
        inputs = [a for a in trace.args]
        for a in inputs:
            if not (self.is_tensor(a) or self.is_number_proxy(a)):
                raise ExportError(f"trace input {a!r} is neither a tensor nor a number")
        defined = {a.name for a in inputs}
        ops = self.ops(trace.bound_symbols, "/ops", defined)
        # After thunder.distributed's transforms a trace returns {"output": ..., "flat_args": ...}.
        returned = trace.output["output"] if isinstance(trace.output, dict) and "output" in trace.output else trace.output
        outputs = self.flat_proxies(returned, "trace output")
        return {
            "format": "thunder-gen-trace",
            "version": 1,
            "name": name,
            "device": self.device,
            "source": source,
            "inputs": [self.declaration(a, with_grad=self.is_tensor(a)) for a in inputs],
            "ops": ops,
            "outputs": [p.name for p in outputs],
        }


def export(fn, *args, name, device="cuda:0", **kwargs):
    """thunder.jit `fn` (a function or nn.Module), run it once on `args`, and convert its first
    computation trace to a format v1 document (a dict)."""
    return export_with_inputs(fn, *args, name=name, device=device, **kwargs)[0]


def export_with_inputs(fn, *args, name, device="cuda:0", **kwargs):
    """export(), and the tensors the trace's inputs were bound to: {input name: tensor}."""
    thunder = _thunder()
    import torch
    jfn = thunder.jit(fn)
    jfn(*args, **kwargs)
    trace = thunder.last_traces(jfn)[0]
    source = (f"lightning-thunder {thunder.__version__}, torch {torch.__version__}: "
              f"thunder.last_traces(jit({getattr(fn, '__name__', type(fn).__name__)}))[0], captured on the CPU")
    doc = Exporter(device).trace(trace, name, source)
    prologue = thunder.last_prologue_traces(jfn)[-1]
    return doc, input_tensors(doc, fn, args, kwargs, prologue_values(prologue, fn, args, kwargs))


def prologue_values(prologue, fn, args, kwargs):
    """{proxy name: object} for what Thunder's prologue unpacks from the call: its arguments (and
    what they hold), the module's parameters and buffers. The computation trace's inputs carry
    the prologue's names, so each input finds its tensor by what it is, whatever Thunder named it
    (a Conv2d's weight is `weight` after the helper function's argument, not `t_weight`)."""
    env = {}

    def value(x):
        return env.get(x.name) if hasattr(x, "name") and not isinstance(x, (str, int)) else x

    for bsym in prologue.bound_symbols:
        out = getattr(bsym.output, "name", None)
        a = [value(x) for x in bsym.args]
        kind = bsym.sym.name
        try:
            if kind == "unpack_trivial" and out in ("args", "kwargs"):
                env[out] = args if out == "args" else kwargs
            elif kind in ("unpack_function_obj", "unpack_thunder_module"):
                env[out] = fn
            elif kind == "unpack_getitem":
                env[out] = a[0][a[1]]
            elif kind == "unpack_attr":
                env[out] = getattr(a[0], a[1])
            elif kind == "unpack_parameter":
                env[out] = a[0].get_parameter(a[1])
            elif kind == "unpack_buffer":
                env[out] = a[0].get_buffer(a[1])
        except (KeyError, IndexError, AttributeError, TypeError):
            continue  # not something the computation reads: its inputs are checked below
    return env


def tensors_by_thunder_names(fn, args, kwargs):
    """Without Thunder's prologue (a trace exported earlier): Thunder names a module's parameters
    and buffers t_<qualified name with dots as underscores> and the call's arguments by their
    parameter names, which holds for the corpus's modules."""
    import inspect
    import torch
    known = {}
    if isinstance(fn, torch.nn.Module):
        for qualified, t in list(fn.named_parameters()) + list(fn.named_buffers()):
            known["t_" + qualified.replace(".", "_")] = t
        forward = fn.forward
        if any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(forward).parameters.values()) and \
                isinstance(getattr(fn, "inner", None), torch.nn.Module):
            forward = fn.inner.forward  # a wrapper passing its arguments on (corpus.BF16Autocast): Thunder names them as it does
        signature = inspect.signature(forward)
    else:
        signature = inspect.signature(fn)
    for pname, v in signature.bind(*args, **kwargs).arguments.items():
        if isinstance(v, torch.Tensor):
            known[pname] = v
    return known


def input_tensors(doc, fn, args, kwargs, unpacked=None):
    """The tensors behind the trace's inputs: from prologue_values() when given, else by name."""
    import torch
    if unpacked is None:
        unpacked = tensors_by_thunder_names(fn, args, kwargs)
    out = {}
    for decl in doc["inputs"]:
        t = unpacked.get(decl["name"])
        if not isinstance(t, torch.Tensor):
            raise ExportError(f"trace input {decl['name']!r} matches no argument, parameter or buffer")
        if list(t.shape) != decl.get("shape") or dtype_name(t.dtype) != decl.get("dtype"):
            raise ExportError(f"trace input {decl['name']!r} does not match the tensor Thunder bound it to")
        out[decl["name"]] = t
    return out


# ---- distributed: thunder.distributed.ddp / fsdp on a gloo group of CPU processes ----------------
def distributed_trace(jfn):
    """The trace thunder.distributed's ddp or fsdp transform made (the first holding synchronize
    calls), before Thunder's own autograd: thunder-gen derives the backward, collectives included."""
    for trace in _thunder().last_traces(jfn):
        if any(b.sym.name == "synchronize" for b in trace.bound_symbols):
            return trace
    raise ExportError("no trace holds thunder.distributed.prims.synchronize: was the module wrapped with ddp or fsdp?")


def _rank_case(what, rank):
    """(module, args) of rank `rank`: a corpus model's name (tools/corpus.py's DISTRIBUTED), or
    MODULE:FACTORY with FACTORY(rank) -> (module, args). Every rank must build the same module."""
    _tools_on_path()
    if ":" in what:
        sys.path.insert(0, os.getcwd())
        module_name, factory = what.split(":", 1)
        return getattr(importlib.import_module(module_name), factory)(rank)
    corpus = _corpus()
    model = corpus.distributed_model(what)
    return model.fn(), model.rank_inputs(rank)


def _distributed_worker(rank, world_size, port, kind, model_name, name, device, folder):
    """One rank: joins the gloo group, wraps the model with Thunder's ddp or fsdp, runs it on the
    rank's batch and writes the trace (rank<r>.json) and the tensors bound to its inputs."""
    import torch
    import torch.distributed as tdist
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    tdist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        thunder = _thunder()
        import thunder.distributed as td
        module, args = _rank_case(model_name, rank)
        jfn = thunder.jit(module)
        jfn = td.ddp(jfn) if kind == "ddp" else td.fsdp(jfn, device=torch.device("cpu"))
        jfn(*args)
        trace = distributed_trace(jfn)
        source = (f"lightning-thunder {thunder.__version__}, torch {torch.__version__}: thunder.distributed.{kind}(jit({type(module).__name__})), "
                  f"world size {world_size} (gloo, CPU): the trace after the {kind} transform; the same on every rank")
        doc = Exporter(device).trace(trace, name, source)
        prologue = thunder.last_prologue_traces(jfn)[-1]
        tensors = input_tensors(doc, jfn, args, {}, prologue_values(prologue, jfn, args, {}))
        if kind == "fsdp":
            tensors = zero_fsdp_padding(tensors, _rank_case(model_name, rank)[0], rank)
        with open(os.path.join(folder, f"rank{rank}.json"), "w") as f:
            f.write(dumps(doc))
        save_inputs(tensors, os.path.join(folder, f"rank{rank}"))
    finally:
        tdist.destroy_process_group()


def zero_fsdp_padding(tensors, module, rank):
    """fsdp pads a parameter's dim 0 to a multiple of the world size with uninitialised rows
    (torch.empty); the trace slices them off, but written to a file they would differ from run to
    run: zeros instead. A shard's rows past the unsharded parameter's are its padding."""
    rows_of = {"t_" + name.replace(".", "_"): p.shape[0] for name, p in module.named_parameters()}
    out = dict(tensors)
    for name, t in tensors.items():
        if name in rows_of and t.dim() > 0:
            first_padding = max(0, rows_of[name] - rank * t.shape[0])
            if first_padding < t.shape[0]:
                out[name] = t.detach().clone()
                out[name][first_padding:] = 0
    return out


def export_distributed(model_name, kind, name, inputs_folder, world_size=2, device="cuda:0", port=29531):
    """Exports a model (a corpus model's name, or MODULE:FACTORY, FACTORY(rank) -> (module, args))
    wrapped with thunder.distributed.<kind> ("ddp" or
    "fsdp") on a gloo group of `world_size` CPU processes (torch.multiprocessing). Every rank
    exports; their traces must be one document, which is returned. Each rank's input tensors (its
    batch; its parameter shards under fsdp) go to inputs_folder/rank<r>/."""
    import tempfile
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as scratch:
        mp.spawn(_distributed_worker, args=(world_size, port, kind, model_name, name, device, scratch), nprocs=world_size)
        texts = [open(os.path.join(scratch, f"rank{r}.json")).read() for r in range(world_size)]
        if any(t != texts[0] for t in texts):
            raise ExportError(f"{name}: the ranks exported different traces; a trace must be the same for every rank")
        if os.path.isdir(inputs_folder):
            shutil.rmtree(inputs_folder)
        for r in range(world_size):
            shutil.copytree(os.path.join(scratch, f"rank{r}"), os.path.join(inputs_folder, f"rank{r}"))
        return json.loads(texts[0])


def save_inputs(tensors, folder):
    """Writes each input as <folder>/<name>.npy, the harness's --inputs interface (bf16 as raw <u2)."""
    from .npy import save_npy
    os.makedirs(folder, exist_ok=True)
    for name, t in tensors.items():
        dtype_name(t.dtype)  # a dtype format v1 has no name for is refused
        save_npy(os.path.join(folder, f"{name}.npy"), t, name)


def dumps(doc):
    return json.dumps(doc, indent=1) + "\n"


def committed_differences(trace, inputs, folder, name):
    """The files of a fresh export (trace: its .json; inputs: the folder save_inputs wrote) that
    differ from the committed FOLDER/NAME.json and FOLDER/NAME.inputs/, missing or extra
    ones included; [] when all are equal byte for byte."""
    from pathlib import Path
    trace, inputs, folder = Path(trace), Path(inputs), Path(folder)
    committed_inputs = folder / f"{name}.inputs"
    pairs = [(trace, folder / f"{name}.json")]
    names = {p.name for p in inputs.glob("*.npy")} | {p.name for p in committed_inputs.glob("*.npy")}
    pairs += [(inputs / n, committed_inputs / n) for n in sorted(names)]
    return [str(want) for got, want in pairs
            if not (got.is_file() and want.is_file() and got.read_bytes() == want.read_bytes())]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", help="'corpus', or MODULE:FACTORY where FACTORY() returns (fn, args[, name])")
    parser.add_argument("-o", "--out", help="output file (MODULE:FACTORY) or folder (corpus)")
    parser.add_argument("--check", metavar="DIR", help="corpus: compare the traces and their inputs with the files in DIR instead of writing")
    parser.add_argument("--only", action="append", help="corpus: export only these models")
    parser.add_argument("--device", default="cuda:0", help="target device written into the trace")
    parser.add_argument("--distributed", choices=("ddp", "fsdp"),
                        help="MODULE:FACTORY with FACTORY(rank) -> (module, args): wrap it with thunder.distributed.ddp or fsdp")
    parser.add_argument("--world-size", type=int, default=2, help="--distributed: ranks (gloo processes on this machine)")
    parser.add_argument("--inputs", help="--distributed: folder for each rank's inputs (rank<r>/<input>.npy)")
    parser.add_argument("--dynamic", action="append", default=[], metavar="ARG:DIM=SYMBOL,...",
                        help="MODULE:FACTORY: these dims of this argument are symbolic (x:0=B,1=T); repeatable; needs --symbol for each symbol")
    parser.add_argument("--symbol", action="append", default=[], metavar="NAME=MIN:MAX[:MULTIPLE_OF]",
                        help="--dynamic: a symbol's range (B=1:64); repeatable")
    a = parser.parse_args(argv)
    _tools_on_path(required=False)  # MODULE:FACTORY found in tools/, as when this lived there
    if a.distributed:
        if not a.out or not a.inputs or ":" not in a.what:
            parser.error("--distributed needs MODULE:FACTORY, -o FILE and --inputs DIR")
        name = os.path.splitext(os.path.basename(a.out))[0]
        doc = export_distributed(a.what, a.distributed, name, a.inputs, world_size=a.world_size, device=a.device)
        with open(a.out, "w") as f:
            f.write(dumps(doc))
        return 0
    if a.what == "corpus":
        corpus = _corpus()
        folder = a.check or a.out
        if not folder:
            parser.error("corpus needs --out DIR or --check DIR")
        bad = 0
        for model in corpus.MODELS:
            if a.only and model.name not in a.only:
                continue
            doc, tensors = export_with_inputs(model.fn(), *model.inputs(), name=model.name, device=a.device)
            text = dumps(doc)
            path = os.path.join(folder, model.name + ".json")
            if a.check:
                with tempfile.TemporaryDirectory() as fresh:
                    with open(os.path.join(fresh, "trace.json"), "w") as f:
                        f.write(text)
                    save_inputs(tensors, os.path.join(fresh, "inputs"))
                    differs = committed_differences(os.path.join(fresh, "trace.json"), os.path.join(fresh, "inputs"), folder, model.name)
                print(f"{model.name}: {'DIFFERS from a fresh export: ' + ', '.join(differs) if differs else 'up to date'}")
                bad += bool(differs)
            else:
                os.makedirs(folder, exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
                save_inputs(tensors, os.path.join(folder, model.name + ".inputs"))
                print(f"wrote {path} and its inputs")
        return 1 if bad else 0
    module_name, _, factory_name = a.what.partition(":")
    if not factory_name or not a.out:
        parser.error("expected MODULE:FACTORY -o FILE")
    made = getattr(importlib.import_module(module_name), factory_name)()
    fn, args = made[0], made[1]
    name = made[2] if len(made) > 2 else factory_name
    if a.dynamic or a.symbol:
        from .symbolic_capture import export_symbolic, parse_dynamic, parse_symbol
        dynamic = dict(parse_dynamic(d) for d in a.dynamic)
        symbols = dict(parse_symbol(s) for s in a.symbol)
        doc = export_symbolic(fn, *args, name=name, dynamic=dynamic, symbols=symbols, device=a.device)
    else:
        doc = export(fn, *args, name=name, device=a.device)
    with open(a.out, "w") as f:
        f.write(dumps(doc))
    return 0


def _tools_on_path(required=True):
    """Puts the checkout's tools/ (corpus.py) on sys.path; outside a checkout an ExportError when
    `required`."""
    root = checkout()
    if root is None:
        if required:
            raise ExportError("the corpus is tools/corpus.py of a thunder-gen checkout, and this thunder_gen package is not "
                              "in one: run it from a checkout (tools/setup-python.sh installs it editable)")
        return
    tools = str(root / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)


def _corpus():
    _tools_on_path()
    return importlib.import_module("corpus")


def cli(argv=None):
    """main(), with an ExportError as a one-line message and exit status 1."""
    try:
        return main(argv)
    except ExportError as e:
        print(f"thunder_export: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(cli())
