"""Decode a ``TensorProto`` into numpy, keeping low-precision dtypes exact (read side).

Used for the ``tensors`` kind (tensorsight's ``tensorsight.tensor`` plugin and generic
TensorFlow tensors) and by the TF2 plugin decoders (histograms, images, text, PR curves).
bfloat16 has no numpy dtype: its raw bits are kept as ``uint16`` under the dtype name
``"bfloat16"`` (see :class:`tensorsight.summary.records.TensorRecord`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.summary._limits import SizeLimitError, max_tensor_bytes

__all__ = ["DTYPES", "decode_tensor", "tensor_dtype_name"]

# TensorFlow DataType number -> (name, numpy dtype of the stored array, *_val field)
DTYPES: dict[int, tuple[str, str, str]] = {
    1: ("float32", "<f4", "float_val"),
    2: ("float64", "<f8", "double_val"),
    3: ("int32", "<i4", "int_val"),
    4: ("uint8", "u1", "int_val"),
    5: ("int16", "<i2", "int_val"),
    6: ("int8", "i1", "int_val"),
    7: ("string", "O", "string_val"),
    8: ("complex64", "<c8", "scomplex_val"),
    9: ("int64", "<i8", "int64_val"),
    10: ("bool", "?", "bool_val"),
    14: ("bfloat16", "<u2", "half_val"),
    17: ("uint16", "<u2", "int_val"),
    18: ("complex128", "<c16", "dcomplex_val"),
    19: ("float16", "<f2", "half_val"),
    22: ("uint32", "<u4", "uint32_val"),
    23: ("uint64", "<u8", "uint64_val"),
}


def tensor_dtype_name(dtype: int) -> str:
    """The dtype name of a TensorFlow DataType number (``"dtype_<n>"`` when unknown)."""
    entry = DTYPES.get(dtype)
    return entry[0] if entry else f"dtype_{dtype}"


def decode_tensor(tensor: Any) -> tuple[str, tuple[int, ...], NDArray[Any]]:
    """``(dtype name, shape, array)`` of a ``TensorProto`` message.

    Raises:
        ValueError: The dtype is not supported or the data does not match the shape.
        SizeLimitError: Filling the shape from one value would take more than
            ``TENSORSIGHT_MAX_TENSOR_MIB`` (checked before allocating).
    """
    shape = tuple(int(d.size) for d in tensor.tensor_shape.dim)
    entry = DTYPES.get(int(tensor.dtype))
    if entry is None:
        msg = f"unsupported tensor dtype {int(tensor.dtype)}"
        raise ValueError(msg)
    if any(d < 0 for d in shape):
        msg = f"tensor shape {list(shape)} has a negative dimension"
        raise ValueError(msg)
    name, np_dtype, field = entry
    count = math.prod(shape)  # Python ints: no overflow
    _check_fill(tensor, field, shape, count, np.dtype(np_dtype).itemsize)
    if name == "string":
        vals = list(tensor.string_val)
        arr: NDArray[Any] = np.empty(len(vals), dtype=object)
        arr[:] = vals
    elif tensor.tensor_content:
        arr = np.frombuffer(tensor.tensor_content, dtype=np_dtype).copy()
    else:
        raw = list(getattr(tensor, field))
        if field == "half_val":  # 16-bit patterns stored in int32s
            arr = np.asarray(raw, dtype=np.int64).astype(np.uint16).view(np_dtype)
        elif name in ("complex64", "complex128"):
            pairs = np.asarray(raw, dtype=np.float64).reshape(-1, 2)
            arr = (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype)
        else:
            arr = np.asarray(raw, dtype=np_dtype)
    if arr.size == 1 and count > 1:  # TensorFlow's "fill with the single value" rule
        arr = np.repeat(arr, count)
    if arr.size != count:
        msg = f"tensor has {arr.size} values for shape {list(shape)}"
        raise ValueError(msg)
    return name, shape, arr.reshape(shape)


def _check_fill(tensor: Any, field: str, shape: tuple[int, ...], count: int, item: int) -> None:
    """Refuse a shape that one stored value would fill beyond the limit (before allocating)."""
    if count <= 1 or tensor.tensor_content:
        return
    stored = len(getattr(tensor, field))
    if field in ("scomplex_val", "dcomplex_val"):
        stored //= 2  # (real, imaginary) pairs
    if stored != 1:
        return  # a size mismatch is reported after decoding; nothing is amplified
    size = count * item
    limit = max_tensor_bytes()
    if size > limit:
        msg = (
            f"tensor of shape {list(shape)} filled from one value would take {size} bytes, over "
            f"the limit of {limit >> 20} MiB (TENSORSIGHT_MAX_TENSOR_MIB)"
        )
        raise SizeLimitError(msg)


def decode_tensorsight_tensor(
    content: bytes, tensor: Any
) -> tuple[str, tuple[int, ...], NDArray[Any]]:
    """Decode a ``tensorsight.tensor`` value: the plugin JSON may name the true dtype."""
    name, shape, arr = decode_tensor(tensor)
    try:
        meta = json.loads(content.decode("utf-8")) if content else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        meta = {}
    declared = meta.get("dtype") if isinstance(meta, dict) else None
    if declared == "bfloat16" and arr.dtype != np.uint16:
        # Stored with another container dtype (e.g. DT_HALF bits or DT_INT32): keep raw bits.
        arr = arr.astype(np.uint16) if arr.dtype.kind in "iu" else arr.view(np.uint16)
    if isinstance(declared, str) and declared:
        name = declared
    return name, shape, arr
