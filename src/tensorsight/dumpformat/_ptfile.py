"""Memory-map the tensor of a ``torch.save`` file without importing torch.

msprobe writes every dumped tensor with ``torch.save(tensor, path)``. Since torch 1.6 that
file is an uncompressed zip archive::

    <name>/data.pkl             pickle: _rebuild_tensor_v2(storage, offset, size, stride, ...)
    <name>/byteorder            "little" (absent in older files: little as well)
    <name>/data/<key>           the storage's raw bytes, stored (not deflated), 64-byte aligned
    <name>/version, .format_version, .storage_alignment, .data/serialization_id

:func:`read_pt` handles the plain case (one tensor, one storage, a little-endian numeric
dtype): it reads ``data.pkl`` with an unpickler that knows a few names and nothing else
(``torch._utils._rebuild_tensor_v2`` and ``_v3``, ``collections.OrderedDict``, the
``torch.*Storage`` and ``torch.storage.UntypedStorage`` markers, the dtype names ``_v3``
takes, and the storage reference), checks every offset and stride against the
storage, and returns a read-only numpy view of the memory-mapped storage bytes: no copy, no
torch import (about 1 s of a compare's start-up), and, as with
``torch.load(weights_only=True)``, no code from the file runs. Everything else (the legacy
non-zip format, parameters, tensors with hooks or subclasses, compressed entries, big-endian
files, dtypes numpy cannot hold) returns ``None`` and the caller falls back to
``torch.load(..., weights_only=True)``, which also reports corrupt files. Like
``torch.load(mmap=True)``, the storage bytes are not checked against the zip's CRC-32.
"""

from __future__ import annotations

import io
import math
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight.dumpformat import _fs

__all__ = ["read_pt"]

# pickled storage class name -> (dtype name, numpy dtype of its bits)
_STORAGES: dict[str, tuple[str, str]] = {
    "DoubleStorage": ("float64", "<f8"),
    "FloatStorage": ("float32", "<f4"),
    "HalfStorage": ("float16", "<f2"),
    "BFloat16Storage": ("bfloat16", "<u2"),
    "Float8_e4m3fnStorage": ("float8_e4m3fn", "u1"),
    "Float8_e5m2Storage": ("float8_e5m2", "u1"),
    "LongStorage": ("int64", "<i8"),
    "IntStorage": ("int32", "<i4"),
    "ShortStorage": ("int16", "<i2"),
    "CharStorage": ("int8", "i1"),
    "ByteStorage": ("uint8", "u1"),
    "BoolStorage": ("bool", "?"),
}
# dtypes pickled by name (torch._utils._rebuild_tensor_v3, over an untyped byte storage)
_DTYPES: dict[str, tuple[str, str]] = {
    **{dtype: (dtype, bits) for dtype, bits in _STORAGES.values()},
    "uint16": ("uint16", "<u2"),
    "uint32": ("uint32", "<u4"),
    "uint64": ("uint64", "<u8"),
}
_MAX_PICKLE_BYTES = 1 << 16  # one tensor's data.pkl is ~160 bytes
# zip records (APPNOTE.TXT 4.3): end of central directory, central header, local header
_END = struct.Struct("<4sHHHHIIH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_END_MAGIC, _CENTRAL_MAGIC, _LOCAL_MAGIC = b"PK\x05\x06", b"PK\x01\x02", b"PK\x03\x04"
_MAX_COMMENT = 0xFFFF


class _Unsupported(Exception):
    """The file is not the plain one-tensor case (the caller uses torch.load)."""


@dataclass(frozen=True, slots=True)
class _StorageType:
    dtype: str
    bits: str


_BYTES = _StorageType("uint8", "u1")  # torch.storage.UntypedStorage: numel counts bytes


@dataclass(frozen=True, slots=True)
class _Dtype:
    kind: _StorageType


@dataclass(frozen=True, slots=True)
class _Storage:
    kind: _StorageType
    key: str
    numel: int


@dataclass(frozen=True, slots=True)
class _Spec:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(type(v) is int for v in value):
        raise _Unsupported
    return value


def _rebuild(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any,
    hooks: Any,
    metadata: Any = None,
) -> _Spec:
    """Stands in for ``torch._utils._rebuild_tensor_v2``: records the view, builds nothing."""
    if not isinstance(storage, _Storage) or type(offset) is not int:
        raise _Unsupported
    if not isinstance(requires_grad, bool) or hooks or metadata:
        raise _Unsupported  # hooks or tensor metadata: leave it to torch
    shape, strides = _ints(size), _ints(stride)
    if len(shape) != len(strides):
        raise _Unsupported
    return _Spec(storage, offset, shape, strides)


def _rebuild_v3(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any,
    hooks: Any,
    dtype: Any,
    metadata: Any = None,
) -> _Spec:
    """Stands in for ``torch._utils._rebuild_tensor_v3`` (a dtype over an untyped storage)."""
    if not isinstance(storage, _Storage) or storage.kind != _BYTES or not isinstance(dtype, _Dtype):
        raise _Unsupported
    width = np.dtype(dtype.kind.bits).itemsize
    if storage.numel % width:
        raise _Unsupported
    typed = _Storage(dtype.kind, storage.key, storage.numel // width)
    return _rebuild(typed, offset, size, stride, requires_grad, hooks, metadata)


def _ordered_dict() -> dict[str, Any]:
    return {}


class _Unpickler(pickle.Unpickler):
    """Resolves the names of a plain tensor pickle and refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _rebuild
        if (module, name) == ("collections", "OrderedDict"):
            return _ordered_dict
        if (module, name) == ("torch._utils", "_rebuild_tensor_v3"):
            return _rebuild_v3
        if module == "torch" and name in _STORAGES:
            return _StorageType(*_STORAGES[name])
        if (module, name) == ("torch.storage", "UntypedStorage"):
            return _BYTES
        if module == "torch" and name in _DTYPES:
            return _Dtype(_StorageType(*_DTYPES[name]))
        raise _Unsupported

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _Unsupported
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or type(numel) is not int:
            raise _Unsupported
        if numel < 0 or not key.isalnum():
            raise _Unsupported
        return _Storage(kind, key, numel)


# data.pkl bytes -> their spec: every tensor of one shape and dtype pickles to the same
# bytes, so a dump of thousands of files has a few dozen distinct ones
_SPECS: dict[bytes, _Spec] = {}
_SPECS_MAX = 4096


def _parse(pickled: bytes) -> _Spec:
    spec = _SPECS.get(pickled)
    if spec is not None:
        return spec
    spec = _unpickle(pickled)
    if len(_SPECS) >= _SPECS_MAX:
        _SPECS.clear()
    _SPECS[pickled] = spec
    return spec


def _unpickle(pickled: bytes) -> _Spec:
    try:
        spec = _Unpickler(io.BytesIO(pickled)).load()
    except _Unsupported:
        raise
    except Exception as exc:  # any malformed pickle: torch gives the user-facing error
        raise _Unsupported from exc
    if not isinstance(spec, _Spec):
        raise _Unsupported
    return spec


def _members(data: Any) -> dict[str, tuple[int, int]]:
    """Name -> (local header offset, size) of every stored member (no zip64, no crypto)."""
    n = len(data)
    at = n - _END.size
    # torch writes no archive comment: the end record is the last 22 bytes (one page
    # touched); otherwise search the comment's 64 KiB
    if at < 0 or data[at : at + 4] != _END_MAGIC:
        lo = max(0, n - _END.size - _MAX_COMMENT)
        at = bytes(data[lo:]).rfind(_END_MAGIC)
        at = at if at < 0 else lo + at
    if at < 0 or at + _END.size > n:
        raise _Unsupported
    _, disk, _, _, count, cd_size, cd_offset, _ = _END.unpack_from(data, at)
    if disk != 0 or count == 0xFFFF or cd_offset == 0xFFFFFFFF or cd_offset + cd_size > at:
        raise _Unsupported  # multi-disk or zip64 archives: torch.load reads them
    out: dict[str, tuple[int, int]] = {}
    pos = cd_offset
    for _ in range(count):
        if pos + _CENTRAL.size > at:
            raise _Unsupported
        c = _CENTRAL.unpack_from(data, pos)
        flags, method, csize, usize, nlen, xlen, clen, local = (
            c[3], c[4], c[8], c[9], c[10], c[11], c[12], c[16]
        )  # fmt: skip
        if c[0] != _CENTRAL_MAGIC or flags & 0x1 or method != 0 or csize != usize:
            raise _Unsupported  # encrypted or compressed members
        if 0xFFFFFFFF in (csize, local):
            raise _Unsupported
        name = bytes(data[pos + _CENTRAL.size : pos + _CENTRAL.size + nlen]).decode("utf-8")
        out[name] = (local, csize)
        pos += _CENTRAL.size + nlen + xlen + clen
    return out


def _span(data: Any, member: tuple[int, int]) -> int:
    """Where a member's bytes start (after its local header); checked against the file."""
    local, size = member
    if local + _LOCAL.size > len(data):
        raise _Unsupported
    h = _LOCAL.unpack_from(data, local)
    begin = int(local + _LOCAL.size + h[9] + h[10])
    if h[0] != _LOCAL_MAGIC or begin + size > len(data):
        raise _Unsupported
    return begin


def _bytes(data: Any, member: tuple[int, int]) -> bytes:
    begin = _span(data, member)
    return bytes(data[begin : begin + member[1]])


def _view(spec: _Spec, data: Any, start: int) -> np.ndarray:
    """The tensor as a read-only numpy view of the mapped storage (bounds checked)."""
    dtype = np.dtype(spec.storage.kind.bits)
    if any(n < 0 for n in spec.size) or any(s < 0 for s in spec.stride) or spec.offset < 0:
        raise _Unsupported
    if math.prod(spec.size) == 0:
        return np.empty(spec.size, dtype=dtype)
    last = spec.offset + sum((n - 1) * s for n, s in zip(spec.size, spec.stride, strict=True))
    if last >= spec.storage.numel:
        raise _Unsupported
    storage = np.frombuffer(data, dtype=dtype, count=spec.storage.numel, offset=start)
    contiguous = tuple(int(math.prod(spec.size[i + 1 :])) for i in range(len(spec.size)))
    if all(s == c for n, s, c in zip(spec.size, spec.stride, contiguous, strict=True) if n > 1):
        count = math.prod(spec.size)
        return storage[spec.offset : spec.offset + count].reshape(spec.size)
    view = np.lib.stride_tricks.as_strided(
        storage[spec.offset :],
        shape=spec.size,
        strides=tuple(s * dtype.itemsize for s in spec.stride),
        writeable=False,
    )
    return view


def read_pt(path: Path) -> tuple[np.ndarray, str] | None:
    """The tensor of a ``torch.save`` file as ``(bits, dtype name)``, memory-mapped.

    ``bits`` has a numpy dtype of the tensor's width (``uint16`` for bfloat16, ``uint8``
    for float8), like :class:`~tensorsight.dumpformat.reader.RawTensor`; it is read-only and
    keeps the file mapped while it lives.

    Returns:
        ``None`` when the file is not a plain one-tensor zip archive (see the module
        docstring); the caller then uses ``torch.load(..., weights_only=True)``.
    """
    try:
        return _read_impl(path)
    except (_Unsupported, OSError, ValueError, TypeError, EOFError, struct.error):
        return None


def _read_impl(path: Path) -> tuple[np.ndarray, str]:
    data = _fs.map_file(path)
    members = _members(data)
    first = min(members.items(), key=lambda kv: kv[1][0])[0]
    prefix = first.split("/", 1)[0]
    pkl = members.get(f"{prefix}/data.pkl")
    if pkl is None or pkl[1] > _MAX_PICKLE_BYTES:
        raise _Unsupported
    order = members.get(f"{prefix}/byteorder")
    if order is not None and _bytes(data, order) != b"little":
        raise _Unsupported
    spec = _parse(_bytes(data, pkl))
    member = members.get(f"{prefix}/data/{spec.storage.key}")
    if member is None:
        raise _Unsupported
    if member[1] < spec.storage.numel * np.dtype(spec.storage.kind.bits).itemsize:
        raise _Unsupported
    return _view(spec, data, _span(data, member)), spec.storage.kind.dtype
