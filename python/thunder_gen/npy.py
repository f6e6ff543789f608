"""Tensors as the arrays of the harness's .npy files (docs/trace-format.md): little-endian, C
order, the tensor's own dtype, bf16 as its raw bits in `<u2` (numpy has no bfloat16)."""
from __future__ import annotations

import numpy as np
import torch

from .errors import ExportError

# torch dtypes a .npy file holds as themselves; bf16 goes as its bits.
NUMPY_DTYPES = {
    torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
    torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16, torch.float32: np.float32,
    torch.float64: np.float64, torch.complex64: np.complex64, torch.complex128: np.complex128,
}
NUMPY_DTYPES.update({getattr(torch, n): np.dtype(n).type for n in ("uint16", "uint32", "uint64") if hasattr(torch, n)})


def npy_array(t: torch.Tensor, name: str) -> np.ndarray:
    """`t` as the array its .npy file holds; ExportError, naming `name`, for a dtype or layout a
    .npy file cannot hold (fp8, complex32, quantized, sparse)."""
    t = t.detach().to("cpu")
    if t.layout != torch.strided:
        raise ExportError(f"input {name!r} has layout {t.layout}, which a .npy file cannot hold")
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).astype("<u2", copy=False)
    if t.dtype not in NUMPY_DTYPES:
        raise ExportError(f"input {name!r} has dtype {t.dtype}, which a .npy file cannot hold")
    array = t.numpy()
    return array.astype(array.dtype.newbyteorder("<"), copy=False)


def save_npy(path, t: torch.Tensor, name: str) -> None:
    np.save(path, npy_array(t, name), allow_pickle=False)


def tensor_of(array: np.ndarray, bf16: bool = False) -> torch.Tensor:
    """npy_array's inverse: the tensor a .npy file's array holds (bf16 from its '<u2' bits when
    `bf16`), a CPU tensor of its own memory."""
    array = array.copy(order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
    if bf16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
