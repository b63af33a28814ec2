"""Whole tensors: raw little-endian bytes in a ``TensorProto``, dtype kept exactly.

Spec (docs/formats/summaries.md, "tensors"): ``tensor.dtype`` is the TensorFlow DataType,
``tensor_content`` the C-order little-endian bytes, plugin ``tensorsight.tensor`` with JSON
content ``{"version": 1, "dtype": "<torch/numpy dtype name>"}``, data class TENSOR.
bfloat16 and float16 are stored bit-exactly as DT_BFLOAT16 / DT_HALF; torch's float8 types
are stored as DT_UINT8 bytes and named in the content.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import is_torch_tensor, plugin_metadata, to_numpy

__all__ = ["KIND", "MAX_TENSOR_BYTES", "PLUGIN_NAME", "SCHEMA_VERSION", "encode"]

KIND = "tensors"
PLUGIN_NAME = "tensorsight.tensor"
SCHEMA_VERSION = 1
MAX_TENSOR_BYTES = 512 * 1024 * 1024
"""Largest ``tensor_content`` one ``add_tensor`` call may write (protobuf's limit is 2 GiB)."""

_NUMPY_DTYPES: dict[str, str] = {
    "float16": "DT_HALF",
    "float32": "DT_FLOAT",
    "float64": "DT_DOUBLE",
    "int8": "DT_INT8",
    "int16": "DT_INT16",
    "int32": "DT_INT32",
    "int64": "DT_INT64",
    "uint8": "DT_UINT8",
    "uint16": "DT_UINT16",
    "uint32": "DT_UINT32",
    "uint64": "DT_UINT64",
    "bool": "DT_BOOL",
    "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
}


def _from_torch(value: Any, tag: str) -> tuple[NDArray[Any], str, str]:
    """(array holding the raw bytes, DataType name, dtype name) of a torch tensor."""
    torch = sys.modules["torch"]
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    if tensor.is_conj():
        tensor = tensor.resolve_conj()
    if tensor.is_neg():
        tensor = tensor.resolve_neg()
    tensor = tensor.contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16), "DT_BFLOAT16", name
    if tensor.element_size() == 1 and name.startswith("float8"):
        return tensor.view(torch.uint8).numpy(), "DT_UINT8", name
    if name not in _NUMPY_DTYPES:
        msg = (
            f"Tensor {tag!r}: dtype {tensor.dtype} cannot be stored. Expected one of "
            f"bfloat16, float8_*, {', '.join(_NUMPY_DTYPES)}. Convert it with .to(...) first."
        )
        raise UsageError(msg)
    return tensor.numpy(), _NUMPY_DTYPES[name], name


def encode(tag: str, tensor: object, *, max_bytes: int = MAX_TENSOR_BYTES) -> Any:
    """A ``Summary.Value`` holding the whole ``tensor`` bit-exactly.

    Args:
        tag: Series name.
        tensor: torch tensor (any dtype above, any device), numpy array or number.
        max_bytes: Size limit of the raw bytes.

    Raises:
        UsageError: Unsupported dtype, or the tensor is larger than ``max_bytes``.
    """
    if is_torch_tensor(tensor):
        array, dt_name, dtype_name = _from_torch(tensor, tag)
    else:
        array = to_numpy(tensor, what=f"Tensor {tag!r}")
        dtype_name = array.dtype.name
        if dtype_name not in _NUMPY_DTYPES:
            msg = (
                f"Tensor {tag!r}: numpy dtype {array.dtype} cannot be stored. Expected one of "
                f"{', '.join(_NUMPY_DTYPES)}."
            )
            raise UsageError(msg)
        dt_name = _NUMPY_DTYPES[dtype_name]
    if array.nbytes > max_bytes:
        msg = (
            f"Tensor {tag!r}: {array.nbytes} bytes (shape {tuple(array.shape)}, {dtype_name}) "
            f"exceed the limit of {max_bytes} bytes. Expected at most {max_bytes} bytes. Log a "
            "slice, or save big tensors with tensorsight.dump or safetensors instead."
        )
        raise UsageError(msg)
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    proto = tb.TensorProto(
        dtype=tb.DataType[dt_name],
        tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=int(n)) for n in array.shape]
        ),
        tensor_content=little.tobytes(),
    )
    content = json.dumps({"version": SCHEMA_VERSION, "dtype": dtype_name}).encode()
    metadata = plugin_metadata(PLUGIN_NAME, content, tb.DataClass["DATA_CLASS_TENSOR"])
    return tb.Summary.Value(tag=tag, tensor=proto, metadata=metadata)
