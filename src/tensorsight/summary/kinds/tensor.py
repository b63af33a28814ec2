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
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import is_torch_tensor, plugin_metadata, to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor, decode_tensorsight_tensor

__all__ = [
    "KIND",
    "MAX_TENSOR_BYTES",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "TensorRecord",
    "decode",
    "decode_any",
    "encode",
]

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


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class TensorRecord:
    """One tensor, stored exactly as written.

    ``dtype`` is the source dtype name (``"float32"``, ``"bfloat16"``, ``"float16"``,
    ``"int64"``, ``"string"``...). ``data`` is a numpy array of ``shape``; numpy has no
    bfloat16, so bfloat16 tensors keep their raw bits as ``uint16`` (``dtype == "bfloat16"``)
    and :meth:`to_float32` gives the exact float32 values. String tensors hold ``bytes``
    objects (numpy ``object`` array).
    """

    step: int
    wall_time: float
    dtype: str
    shape: tuple[int, ...]
    data: NDArray[Any]

    def to_float32(self) -> NDArray[np.float32]:
        """The values as float32 (exact for bfloat16, float16 and float8).

        float8 tensors (raw ``uint8`` bytes named e.g. ``"float8_e4m3fn"``) need the
        ``ml_dtypes`` package to convert.

        Raises:
            MissingDependencyError: A float8 tensor without ``ml_dtypes`` installed.
        """
        if self.dtype == "bfloat16":
            bits = self.data.astype(np.uint32) << np.uint32(16)
            return bits.view(np.float32).reshape(self.shape)
        if self.dtype.startswith("float8"):
            try:
                import ml_dtypes
            except ImportError as exc:
                from tensorsight.errors import MissingDependencyError

                msg = (
                    f"Tensor dtype {self.dtype}: needs ml_dtypes to convert: pip install ml_dtypes"
                )
                raise MissingDependencyError(msg) from exc
            view = self.data.view(getattr(ml_dtypes, self.dtype))
            return np.asarray(view, dtype=np.float32).reshape(self.shape)
        return np.asarray(self.data, dtype=np.float32)


def decode(raw: Raw) -> list[TensorRecord]:
    """A ``tensorsight.tensor`` value: the plugin content may name the true dtype."""
    name, shape, arr = decode_tensorsight_tensor(raw.content, raw.tensor)
    return [TensorRecord(raw.step, raw.wall_time, name, shape, arr)]


def decode_any(raw: Raw) -> list[TensorRecord]:
    """Any other tensor value (unknown plugins and plain TF2 tensors), kept as written."""
    name, shape, arr = decode_tensor(raw.tensor)
    return [TensorRecord(raw.step, raw.wall_time, name, shape, arr)]


SPEC = Kind(KIND, TensorRecord, PLUGIN_NAME, decode)
