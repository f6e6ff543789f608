"""The loaded folder as a torch.nn.Module: argument checks, the ctypes calls, and autograd."""
from __future__ import annotations

import ctypes
import numbers
from pathlib import Path

import torch
from torch.autograd.function import once_differentiable

from .errors import ManifestError, StatusError
from .manifest import FLOATING, RANDOM_STATE_INPUTS, SCALAR_CTYPES, TORCH_DTYPES, EntryPoint, Manifest, Param, Value

# Workspace offsets are 256-byte aligned from its start (docs/design-notes.md); torch's CPU
# allocator aligns to 64 only, so the workspace is over-allocated and its start rounded up.
WORKSPACE_ALIGNMENT = 256
# A backward parameter's kind -> the kind saved_for_backward gives the value it reads.
SAVED_KINDS = {"input": "input", "output": "output", "saved": "intermediate"}


class Library:
    """The built library's entry points, bound through ctypes with the parameter types the
    manifest gives: a pointer for every tensor, the C type of its dtype for every scalar."""

    def __init__(self, path: Path, m: Manifest):
        self.path = path
        self.cdll = ctypes.CDLL(str(path))
        self.takes_sizes = m.takes_sizes
        self.forward = self._bind(m.forward)
        self.backward = self._bind(m.backward) if m.backward else None
        self._workspace_bytes = self._symbol(m.workspace_bytes_function, ctypes.c_size_t, [ctypes.c_void_p] if m.takes_sizes else [])
        self._fixed_workspace_bytes = None if m.takes_sizes else int(self._workspace_bytes())
        self.symbols = sorted(m.symbols)  # the binder's order (by name)
        self._status_string = self._symbol(m.status_string_function, ctypes.c_char_p, [ctypes.c_int])
        self._sized_inputs = [v.name for v in m.inputs if v.is_tensor and v.sizes is not None]
        # (its array form: one argument per input would pass ctypes' limit of 1024 for large traces)
        self._bind_sizes = (self._symbol(m.bind_sizes_function + "_array", ctypes.c_int,
                                         [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t])
                            if m.bind_sizes_function else None)

    def _symbol(self, name: str, restype, argtypes):
        try:
            fn = getattr(self.cdll, name)
        except AttributeError:
            raise ManifestError(f"{self.path}: the manifest names {name}, which the library does not define") from None
        fn.restype, fn.argtypes = restype, argtypes
        return fn

    def _bind(self, ep: EntryPoint):
        argtypes = [SCALAR_CTYPES[p.scalar] if p.scalar else ctypes.c_void_p for p in ep.params]
        sizes = [ctypes.c_void_p] if self.takes_sizes else []
        return self._symbol(ep.name, ctypes.c_int, argtypes + sizes + [ctypes.c_void_p, ctypes.c_void_p])  # (sizes,) workspace, stream

    def workspace_bytes(self, at: dict | None) -> int:
        """The workspace an entry point takes, at the symbols' sizes `at` where it takes them at run time."""
        if self._fixed_workspace_bytes is not None:
            return self._fixed_workspace_bytes
        return int(self._workspace_bytes(self.sizes_array(at)))

    def sizes_array(self, at: dict):
        return (ctypes.c_int64 * len(self.symbols))(*(at[name] for name in self.symbols))

    def bind_sizes(self, shapes: dict) -> tuple[str | None, dict | None]:
        """(None, the symbols' sizes) when the inputs' shapes ({name: shape}) bind them to sizes the
        folder runs at; else (the library's words for what is wrong (<trace>_bind_sizes), None)."""
        if self._bind_sizes is None or any(name not in shapes for name in self._sized_inputs):
            return None, None  # (an argument that is not a tensor is refused on its own)
        arrays = [(ctypes.c_int64 * max(len(shapes[name]), 1))(*shapes[name]) for name in self._sized_inputs]
        dims = (ctypes.c_void_p * len(arrays))(*[ctypes.addressof(a) for a in arrays])
        ranks = (ctypes.c_int * len(arrays))(*[len(shapes[name]) for name in self._sized_inputs])
        message = ctypes.create_string_buffer(4096)
        sizes = (ctypes.c_int64 * max(len(self.symbols), 1))()
        status = self._bind_sizes(dims, ranks, sizes, message, len(message))
        if status:
            return message.value.decode(errors="replace"), None
        return None, dict(zip(self.symbols, sizes))

    def status_string(self, status: int) -> str:
        return (self._status_string(status) or b"").decode(errors="replace")


class Runner:
    """Calls the entry points on one device: allocates what they write, passes a workspace and the
    current stream, and turns a failing status into a StatusError."""

    def __init__(self, m: Manifest, lib: Library, device: torch.device):
        self.m, self.lib, self.device = m, lib, device

    def _buffer(self, p: Param, at: dict | None) -> torch.Tensor:
        if p.storage == "bitmask":  # b8 packed into 32-bit words: only its byte count matters
            return torch.empty(p.nbytes_at(at), dtype=torch.uint8, device=self.device)
        return torch.empty(p.shape_at(at), dtype=TORCH_DTYPES[p.dtype], device=self.device)

    def _call(self, fn, ep: EntryPoint, args: list, at: dict | None) -> None:
        # One workspace per call from torch's allocator (see "The generated folder as a library"
        # in docs/design-notes.md): the entry points then allocate and synchronize nothing, the
        # memory is torch's (counted, cached, stream-ordered), and two calls never share one.
        workspace = None
        if workspace_bytes := self.lib.workspace_bytes(at):
            space = torch.empty(workspace_bytes + WORKSPACE_ALIGNMENT, dtype=torch.uint8, device=self.device)
            workspace = -(-space.data_ptr() // WORKSPACE_ALIGNMENT) * WORKSPACE_ALIGNMENT
        pointers = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
        if self.lib.takes_sizes:
            pointers.append(self.lib.sizes_array(at))
        if self.device.type == "cuda":
            with torch.cuda.device(self.device):
                status = fn(*pointers, workspace, torch.cuda.current_stream(self.device).cuda_stream)
        else:
            status = fn(*pointers, workspace, None)
        if status != 0:
            raise StatusError(f"{ep.name} returned status {status}: {self.lib.status_string(status)}", status)

    def forward(self, values: dict, at: dict | None) -> tuple[list[torch.Tensor], dict]:
        """values: trace input name -> tensor or number; at: the symbols' sizes where the folder
        takes them at run time, else None. Returns the outputs in the manifest's
        order (a buffer of its own for each position, an output listed twice too: the entry point
        takes them as distinct restrict pointers) and what the backward may need:
        (kind of saved value, name) -> tensor or number, kinds as saved_for_backward names them."""
        args, outputs, available = [], [], {("input", name): v for name, v in values.items()}
        for p in self.m.forward.params:
            if p.kind == "input":
                args.append(values[p.of])
                continue
            buffer = self._buffer(p, at)
            args.append(buffer)
            if p.kind == "output":
                outputs.append(buffer)
                available.setdefault(("output", p.of), buffer)
            else:
                available[("intermediate", p.of)] = buffer
        self._call(self.lib.forward, self.m.forward, args, at)
        return outputs, available

    def backward(self, saved: dict, cotangents: list, at: dict | None) -> dict[str, torch.Tensor]:
        """saved: (kind, name) -> saved value, as forward's second result; cotangents: one tensor or None per output, in the
        manifest's order. Returns input name -> gradient for every gradient the backward writes."""
        ep = self.m.backward
        grads = {p.of: self._buffer(p, at) for p in ep.of_kind("gradient")}
        # The backward takes a cotangent for every output position, integer ones too (which
        # nothing differentiates: autograd hands none): zeros there.
        cotangent_params = iter(cotangents)
        args = []
        for p in ep.params:
            if p.kind == "cotangent":
                g = next(cotangent_params)
                args.append(g if g is not None else torch.zeros(p.shape_at(at), dtype=TORCH_DTYPES[p.dtype], device=self.device))
            else:
                args.append(grads[p.of] if p.kind == "gradient" else saved[(SAVED_KINDS[p.kind], p.of)])
        self._call(self.lib.backward, ep, args, at)
        return grads


class _GeneratedFunction(torch.autograd.Function):
    """The generated forward and backward as one autograd node. It saves exactly the tensors of
    the manifest's saved_for_backward (inputs, outputs and the forward's extra outputs), and the
    saved_scalars as plain numbers."""

    @staticmethod
    def forward(ctx, module, scalars, at, *tensors):
        m = module.manifest
        values = {**scalars, **dict(zip(module.tensor_input_names, tensors))}
        outputs, available = module.runner.forward(values, at)
        ctx.module, ctx.at = module, at
        ctx.saved_scalars = {(s.kind, s.name): available[(s.kind, s.name)] for s in m.saved_scalars}
        ctx.save_for_backward(*(available[(s.kind, s.name)] for s in m.saved))
        # (integer outputs, and the buffers' new values: running statistics carry no gradient)
        ctx.mark_non_differentiable(*(t for t, o in zip(outputs, m.outputs) if o.dtype not in FLOATING or o.role == "buffer_update"))
        return tuple(outputs)

    @staticmethod
    @once_differentiable
    def backward(ctx, *grads):
        module = ctx.module
        m = module.manifest
        saved = {**dict(zip(((s.kind, s.name) for s in m.saved), ctx.saved_tensors)), **ctx.saved_scalars}
        cotangents = [g.to(TORCH_DTYPES[out.dtype]).contiguous() if out.dtype in FLOATING and g is not None else None
                      for out, g in zip(m.outputs, grads)]
        computed = module.runner.backward(saved, cotangents, ctx.at)
        wanted = ctx.needs_input_grad[3:]
        return (None, None, None, *(computed.get(name) if want else None
                              for name, want in zip(module.tensor_input_names, wanted)))


class GeneratedModule(torch.nn.Module):
    """A trace's generated forward and backward. forward(*inputs, philox_seed=None,
    philox_offset=None) takes the trace's inputs in trace order (tensors, and Python numbers for
    scalar inputs) and returns its outputs: a tensor for one, a tuple for several. Holds no
    parameters: a model's weights are inputs of its trace."""

    def __init__(self, manifest: Manifest, library: Library, device: torch.device):
        super().__init__()
        self.manifest, self.library, self.device = manifest, library, device
        self.runner = Runner(manifest, library, device)
        names = {v.name for v in manifest.inputs}
        self.random_state = all(n in names for n in RANDOM_STATE_INPUTS)
        self.positional = [v for v in manifest.inputs if not (self.random_state and v.name in RANDOM_STATE_INPUTS)]
        self.tensor_input_names = [v.name for v in manifest.inputs if v.is_tensor]
        graded = {p.of for p in manifest.backward.of_kind("gradient")} if manifest.backward else set()
        self.differentiable_inputs = [n for n in self.tensor_input_names if n in graded]

    @property
    def input_names(self) -> list[str]:
        """The names forward's positional arguments have in the trace."""
        return [v.name for v in self.positional]

    def extra_repr(self) -> str:
        return (f"trace={self.manifest.trace!r}, device={str(self.device)!r}, inputs={self.input_names}, "
                f"outputs={[o.name for o in self.manifest.outputs]}")

    def forward(self, *args, philox_seed=None, philox_offset=None):
        values, at = self._bind(args, philox_seed, philox_offset)
        if self._needs_graph(values):
            scalars = {k: v for k, v in values.items() if not isinstance(v, torch.Tensor)}
            outputs = _GeneratedFunction.apply(self, scalars, at, *(values[n] for n in self.tensor_input_names))
        else:
            outputs, _ = self.runner.forward(values, at)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _needs_graph(self, values: dict) -> bool:
        return (self.manifest.backward is not None and torch.is_grad_enabled()
                and any(values[n].requires_grad for n in self.differentiable_inputs))

    # ---- arguments ----------------------------------------------------------------------------

    def _where(self, decl: Value, position: int | None) -> str:
        at = f" (argument {position})" if position is not None else ""
        return f"{self.manifest.trace}: input {decl.name!r}{at}"

    def _bind(self, args: tuple, philox_seed, philox_offset) -> tuple[dict, dict | None]:
        """The arguments by input name, checked, and the symbols' sizes where the folder takes them
        at run time (else None)."""
        if len(args) != len(self.positional):
            raise TypeError(f"{self.manifest.trace}: expected {len(self.positional)} inputs "
                            f"({', '.join(self.input_names)}), got {len(args)}")
        at = None
        if self.manifest.symbols:  # a symbolic trace's folder: the sizes as a whole, said by symbol
            shapes = {d.name: tuple(a.shape) for d, a in zip(self.positional, args) if d.is_tensor and isinstance(a, torch.Tensor)}
            problem, bound = self.runner.lib.bind_sizes(shapes)
            if problem:
                raise ValueError(f"{self.manifest.trace}: {problem}")
            at = bound if self.manifest.takes_sizes else None
        values = {}
        for i, (decl, arg) in enumerate(zip(self.positional, args)):
            values[decl.name] = self._check_tensor(decl, arg, i, at) if decl.is_tensor else self._check_scalar(decl, arg, i)
        if self.random_state:
            if philox_seed is None:  # torch's default generator: torch.manual_seed makes runs repeatable
                philox_seed = int(torch.randint(-2**63, 2**63 - 1, (), dtype=torch.int64))
            by_name = {v.name: v for v in self.manifest.inputs}
            values["philox_seed"] = self._check_scalar(by_name["philox_seed"], philox_seed, None)
            offset = 0 if philox_offset is None else philox_offset
            values["philox_offset"] = self._check_scalar(by_name["philox_offset"], offset, None)
        elif philox_seed is not None or philox_offset is not None:
            raise TypeError(f"{self.manifest.trace}: philox_seed and philox_offset are for traces with random ops; "
                            f"this one has none")
        return values, at

    def _check_tensor(self, decl: Value, arg, position: int, at: dict | None) -> torch.Tensor:
        where, want, shape = self._where(decl, position), TORCH_DTYPES[decl.dtype], decl.shape_at(at)
        expected = f"expected a contiguous {want} tensor of shape {list(shape)} on {self.device}"
        if not isinstance(arg, torch.Tensor):
            raise TypeError(f"{where}: {expected}, got {type(arg).__name__}")
        if arg.dtype != want:
            raise TypeError(f"{where}: expected dtype {want} ({decl.dtype}), got {arg.dtype}")
        if tuple(arg.shape) != shape:
            sizes = self.manifest.specialized_at
            note = (f" (this folder was generated for the sizes {', '.join(f'{k}={v}' for k, v in sizes.items())} of a symbolic trace; "
                    "generate another with --specialize for other sizes)") if sizes and at is None else ""
            raise ValueError(f"{where}: expected shape {list(shape)}, got {list(arg.shape)}{note}")
        if arg.device != self.device:
            raise ValueError(f"{where}: expected a tensor on {self.device}, got one on {arg.device}")
        if arg.layout != torch.strided:
            raise ValueError(f"{where}: expected a dense (strided) tensor, got layout {arg.layout}")
        if not arg.is_contiguous():
            raise ValueError(f"{where}: expected a contiguous tensor (C order), got strides {list(arg.stride())}; "
                             f"pass .contiguous()")
        if arg.is_neg() or arg.is_conj():  # lazy views: the memory does not hold the values yet
            raise ValueError(f"{where}: expected a tensor without a pending negation or conjugation "
                             f"(call .resolve_neg() / .resolve_conj())")
        return arg

    def _check_scalar(self, decl: Value, arg, position: int | None):
        where = self._where(decl, position)
        if decl.scalar == "b8":
            if not isinstance(arg, bool):
                raise TypeError(f"{where}: expected a Python bool (b8 scalar), got {type(arg).__name__}")
            return arg
        if isinstance(arg, bool) or not isinstance(arg, numbers.Integral if decl.scalar == "i64" else numbers.Real):
            kind = "int (i64" if decl.scalar == "i64" else "float (f64"
            raise TypeError(f"{where}: expected a Python {kind} scalar), got {type(arg).__name__}")
        if decl.scalar == "i64":
            if not -2**63 <= int(arg) < 2**63:
                raise ValueError(f"{where}: {arg} does not fit in an i64")
            return int(arg)
        return float(arg)
