"""Write and memory-map safetensors files with numpy only.

The format (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
length ``N``, ``N`` bytes of JSON (``{"<key>": {"dtype": "F32", "shape": [..],
"data_offsets": [begin, end]}, "__metadata__": {..}}``, padded with spaces to a multiple of
8), then the raw little-endian tensor bytes. Writing it ourselves lets the background writer
stream each tensor's memory straight to the file (no serialization copy); the files open
with ``safetensors.safe_open`` unchanged (the tests check it).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight.dumpformat import _check, _fs
from tensorsight.errors import DumpFormatError

__all__ = [
    "DTYPE_CODES",
    "ShardEntry",
    "ShardFile",
    "ShardStream",
    "numpy_dtype",
    "to_float32",
    "write_shard",
]

# torch dtype name -> safetensors dtype code
DTYPE_CODES: dict[str, str] = {
    "float64": "F64",
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
    "bool": "BOOL",
}
_CODE_TO_NAME = {v: k for k, v in DTYPE_CODES.items()}
# dtype name -> numpy dtype holding its bits (bf16/fp8 have no numpy dtype: raw unsigned bits)
_NUMPY: dict[str, str] = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<f2",
    "bfloat16": "<u2",
    "float8_e4m3fn": "u1",
    "float8_e5m2": "u1",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint8": "u1",
    "uint16": "<u2",
    "uint32": "<u4",
    "uint64": "<u8",
    "bool": "?",
}
RAW_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def numpy_dtype(dtype: str) -> np.dtype[Any]:
    """The numpy dtype that holds ``dtype``'s bits (raw unsigned ints for bf16/fp8)."""
    try:
        return np.dtype(_NUMPY[dtype])
    except KeyError:
        msg = f"Dtype {dtype!r}: cannot be stored. Expected one of {sorted(_NUMPY)}."
        raise DumpFormatError(msg) from None


def _fp8_table(exp_bits: int, man_bits: int, bias: int, *, e4m3fn: bool) -> np.ndarray:
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    normal = (1.0 + man / (1 << man_bits)) * np.exp2(exp - bias)
    subnormal = (man / (1 << man_bits)) * np.exp2(1 - bias)
    values = sign * np.where(exp == 0, subnormal, normal)
    top = (1 << exp_bits) - 1
    if e4m3fn:  # no infinities; S.1111.111 is NaN
        values[(exp == top) & (man == (1 << man_bits) - 1)] = np.nan
    else:  # IEEE-like: top exponent is Inf/NaN
        values[(exp == top) & (man == 0)] = sign[(exp == top) & (man == 0)] * np.inf
        values[(exp == top) & (man != 0)] = np.nan
    table: np.ndarray = values.astype(np.float32)
    return table


_FP8_TABLES: dict[str, np.ndarray] = {}


def to_float32(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Convert raw bf16/fp8 bits to float32 exactly (every value of those dtypes fits)."""
    if dtype == "bfloat16":
        widened: np.ndarray = bits.astype(np.uint32) << 16
        return widened.view(np.float32)
    if dtype in ("float8_e4m3fn", "float8_e5m2"):
        table = _FP8_TABLES.get(dtype)
        if table is None:
            table = (
                _fp8_table(4, 3, 7, e4m3fn=True)
                if dtype == "float8_e4m3fn"
                else _fp8_table(5, 2, 15, e4m3fn=False)
            )
            _FP8_TABLES[dtype] = table
        out: np.ndarray = table[bits]
        return out
    msg = f"Dtype {dtype!r}: not a raw dtype. Expected one of {RAW_DTYPES}."
    raise DumpFormatError(msg)


@dataclass(frozen=True)
class ShardEntry:
    """One tensor to write: its key, dtype name, shape and contiguous bytes."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    data: memoryview


def write_shard(path: Path, entries: Sequence[ShardEntry], metadata: dict[str, str]) -> int:
    """Write ``entries`` as one safetensors file (via a temporary name); return bytes written."""
    header: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for e in entries:
        size = e.data.nbytes
        header[e.key] = {
            "dtype": DTYPE_CODES[e.dtype],
            "shape": list(e.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    tmp = path.with_name(path.name + ".tmp")
    with _fs.open_write(tmp) as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for e in entries:
            f.write(e.data)
    tmp.replace(path)
    return 8 + len(blob) + offset


class ShardStream:
    """A safetensors file written tensor by tensor, as the tensors arrive.

    The header must come first but is known only at the end, so ``reserve`` bytes are left
    for it: each tensor's bytes go straight to the file after that space, and
    :meth:`finish` writes the header, padded with spaces to fill the space exactly (the
    format allows trailing spaces), then renames the file from its temporary name. A process
    that dies before :meth:`finish` leaves only the temporary file.

    Args:
        path: The final ``.safetensors`` path.
        reserve: Bytes kept for the 8-byte length and the header (a multiple of 8).
    """

    def __init__(self, path: Path, reserve: int, *, direct: bool = False) -> None:
        self.path = path
        self.reserve = reserve
        self.data_bytes = 0
        self._tmp = path.with_name(path.name + ".tmp")
        self._file = _fs.open_write(self._tmp)
        self._file.seek(reserve)
        self._pos = reserve  # where the buffered file's next write goes
        self._parts: list[str] = []
        self._header_len = 2  # the braces
        self._direct: int | None = None
        if direct and reserve % _fs.DIRECT_ALIGN == 0:
            self._direct = _fs.open_direct(self._tmp)
        self.direct_bytes = 0  # bytes that went to the disk without the page cache

    def fits(self, key: str, dtype: str, shape: tuple[int, ...], nbytes: int) -> bool:
        """Whether one more tensor's header entry still fits the reserved space."""
        part = self._part(key, dtype, shape, nbytes)
        return self._header_len + len(part) + 1 + _META_ROOM <= self.reserve - 8

    def add(self, key: str, dtype: str, shape: tuple[int, ...], data: memoryview) -> None:
        """Append one tensor's bytes (call :meth:`fits` first)."""
        part = self._part(key, dtype, shape, data.nbytes)
        offset = self.reserve + self.data_bytes
        done = self._add_direct(data, offset) if self._direct is not None else 0
        if done < data.nbytes:
            if self._pos != offset + done:
                self._file.seek(offset + done)
            self._file.write(data[done:] if done else data)
            self._pos = offset + data.nbytes
        self._parts.append(part)
        self._header_len += len(part) + 1
        self.data_bytes += data.nbytes

    def _add_direct(self, data: memoryview, offset: int) -> int:
        """Write the block-aligned head of a large buffer with direct I/O; returns its bytes.

        Large tensors skip the page cache: the kernel neither copies them (CPU time the
        training would wait for on a small machine) nor holds gigabytes of dirty pages. Only
        a buffer whose address and file offset are both aligned qualifies (the arena aligns
        large copies; tensor sizes are usually multiples of 4 KiB, which keeps the offsets
        aligned); the tail and everything else go through the buffered file. A file system
        that refuses a direct write turns direct I/O off for the rest of the shard.
        """
        align = _fs.DIRECT_ALIGN
        n = data.nbytes - data.nbytes % align
        if n < DIRECT_MIN_BYTES or offset % align or _address(data) % align:
            return 0
        fd = self._direct
        assert fd is not None
        self._file.flush()  # buffered bytes before this range reach the OS first
        try:
            _fs.write_at(fd, data[:n], offset)
        except OSError as exc:
            if exc.errno not in _NO_DIRECT:
                raise
            self._close_direct()
            return 0
        self.direct_bytes += n
        return n

    def _close_direct(self) -> None:
        fd, self._direct = self._direct, None
        if fd is not None:
            os.close(fd)

    def _part(self, key: str, dtype: str, shape: tuple[int, ...], nbytes: int) -> str:
        entry = {
            "dtype": DTYPE_CODES[dtype],
            "shape": list(shape),
            "data_offsets": [self.data_bytes, self.data_bytes + nbytes],
        }
        return json.dumps(key) + ":" + json.dumps(entry, separators=(",", ":"))

    def finish(self, metadata: dict[str, str]) -> int:
        """Write the header, close and rename the file; return the bytes in it."""
        meta = '"__metadata__":' + json.dumps(metadata, separators=(",", ":"))
        blob = ("{" + ",".join([meta, *self._parts]) + "}").encode()
        room = self.reserve - 8
        if len(blob) > room:  # fits() keeps _META_ROOM free for the metadata
            msg = f"Tensor shard {str(self.path)!r}: header of {len(blob)} bytes > {room}."
            raise DumpFormatError(msg)
        blob += b" " * (room - len(blob))
        self._close_direct()
        f = self._file
        f.seek(0)
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        f.close()
        self._tmp.replace(self.path)
        return self.reserve + self.data_bytes

    def abandon(self) -> None:
        """Close without finishing (the temporary file stays, like after a crash)."""
        with contextlib.suppress(OSError):
            self._close_direct()
        with contextlib.suppress(OSError):
            self._file.close()


# errors of a file system that opens files for direct I/O but refuses the writes
_NO_DIRECT = frozenset(
    e
    for e in (errno.EINVAL, getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOTSUP", None))
    if e is not None
)


def _address(data: memoryview) -> int:
    """The address of a buffer's first byte."""
    return int(np.frombuffer(data, dtype=np.uint8).ctypes.data)


# Tensors from this size go to the disk with direct I/O (when aligned); smaller ones are
# cheaper through the page cache, whose write-back the kernel does in the background.
DIRECT_MIN_BYTES = 1 << 20
_META_ROOM = 512  # header bytes kept free for the "__metadata__" entry
# a longer header is damage (the safetensors library refuses the same)
MAX_HEADER_BYTES = 100_000_000


def _widths() -> dict[str, int]:
    """Bytes per element of every dtype code a shard may hold."""
    out = {}
    for code, name in _CODE_TO_NAME.items():
        with contextlib.suppress(DumpFormatError):
            out[code] = numpy_dtype(name).itemsize
    return out


_WIDTHS = _widths()


def _plain_entry(info: Any, room: int) -> dict[str, Any] | None:
    """:meth:`ShardFile._entry` of an entry made of plain ints inside ``room`` bytes, or
    ``None`` for any other (``_entry`` then checks it and names what is wrong)."""
    if type(info) is not dict:
        return None
    code, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if type(code) is not str or type(shape) is not list or type(offsets) is not list:
        return None
    width = _WIDTHS.get(code)
    if width is None or len(shape) > _check.MAX_DIMS or len(offsets) != 2:
        return None
    numel = 1
    for d in shape:
        if type(d) is not int or not 0 <= d <= _check.MAX_NUMEL:
            return None
        numel *= d
    begin, end = offsets
    if type(begin) is not int or type(end) is not int or numel > _check.MAX_NUMEL:
        return None
    if not 0 <= begin <= end <= room or end - begin != numel * width:
        return None
    return {"dtype": code, "shape": list(shape), "data_offsets": [begin, end]}


class ShardFile:
    """A memory-mapped safetensors file; :meth:`get` returns zero-copy numpy views.

    Args:
        path: The ``.safetensors`` file.

    Raises:
        DumpFormatError: The file is truncated, or its header is not safetensors JSON:
            an object of entries, each with a known dtype, a shape (non-negative integers)
            and ``data_offsets`` inside the file holding exactly the shape's bytes, and an
            optional ``__metadata__`` object of strings. Checked when the file opens.
    """

    def __init__(self, path: _fs.AnyPath) -> None:
        self.path = path
        # a URL: ranged reads (the header and what follows, then tensors on demand)
        self._remote = _fs.RangeReader(path) if isinstance(path, _fs.RemotePath) else None
        self._buf = _fs.map_file(path) if isinstance(path, Path) else memoryview(b"")
        size = len(self._buf) if self._remote is None else self._remote.size
        if size < 8:
            msg = (
                f"Tensor shard {str(path)!r}: truncated ({size} bytes). "
                "Expected a safetensors file."
            )
            raise DumpFormatError(msg)
        (n,) = struct.unpack("<Q", self._bytes(0, 8))
        if n > MAX_HEADER_BYTES:
            msg = (
                f"Tensor shard {str(path)!r}: header claims {n} bytes. Expected at most "
                f"{MAX_HEADER_BYTES} (the safetensors limit); the file is damaged."
            )
            raise DumpFormatError(msg)
        if 8 + n > size:
            msg = (
                f"Tensor shard {str(path)!r}: header claims {n} bytes but the file has {size}. "
                "Expected a complete safetensors file; it was probably cut off."
            )
            raise DumpFormatError(msg)
        source = f"Tensor shard {str(path)!r}"
        header = _check.load_json(bytes(self._bytes(8, 8 + n)), source, "a safetensors header")
        if not isinstance(header, dict):
            _check.fail(source, "the header", header, "an object of tensor entries")
        meta = header.pop("__metadata__", None) or {}
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            _check.fail(source, "'__metadata__'", meta, "an object of strings")
        self.metadata: dict[str, str] = meta
        self._start = 8 + n
        self._size = size
        room = size - self._start
        # the common entry passes _plain_entry's few type tests; any other goes through
        # _entry, which names what is wrong (thousands of entries a shard)
        self.header: dict[str, dict[str, Any]] = {
            key: _plain_entry(info, room) or self._entry(key, info) for key, info in header.items()
        }
        # key -> (numpy dtype, count, byte offset, shape, dtype name): get_raw's look-ups
        self._views: dict[str, tuple[np.dtype[Any], int, int, tuple[int, ...], str]] = {}

    def _bytes(self, begin: int, end: int) -> memoryview:
        """Bytes ``begin`` to ``end`` of the file (mapped, or a ranged read of a URL)."""
        if self._remote is None:
            return self._buf[begin:end]
        return self._remote.read(begin, end)

    def _entry(self, key: str, info: Any) -> dict[str, Any]:
        """One header entry, checked: a known dtype, a shape, offsets inside the file that
        hold exactly the shape's bytes."""
        source = f"Tensor shard {str(self.path)!r}"
        where = f"tensor {key[:80]!r}"
        if not isinstance(info, dict):
            _check.fail(source, where, info, "an object with dtype, shape and data_offsets")
        code = info.get("dtype")
        if not isinstance(code, str) or code not in _CODE_TO_NAME:
            _check.fail(
                source, f"{where} dtype", code, f"one of {', '.join(sorted(_CODE_TO_NAME))}"
            )
        shape = _check.shape(source, f"{where} shape", info.get("shape"))
        offsets = info.get("data_offsets")
        if not isinstance(offsets, list) or len(offsets) != 2:
            _check.fail(source, f"{where} data_offsets", offsets, "a list [begin, end]")
        room = self._size - self._start
        begin = _check.req_int(source, f"{where} data_offsets[0]", offsets[0], hi=room)
        end = _check.req_int(source, f"{where} data_offsets[1]", offsets[1], hi=1 << 62)
        if end > room:
            msg = (
                f"{source}: {where} is cut off. Expected {self._start + end} bytes, "
                f"got {self._size}."
            )
            raise DumpFormatError(msg)
        width = numpy_dtype(_CODE_TO_NAME[code]).itemsize
        numel = 1
        for d in shape:
            numel *= d
        if begin > end or end - begin != numel * width:
            msg = (
                f"{source}: {where} data_offsets [{begin}, {end}] hold {end - begin} bytes. "
                f"Expected {numel * width} for shape {list(shape)} of {code}."
            )
            raise DumpFormatError(msg)
        return {"dtype": code, "shape": list(shape), "data_offsets": [begin, end]}

    def keys(self) -> list[str]:
        """Tensor keys in the file."""
        return list(self.header)

    def dtype_name(self, key: str) -> str:
        """Dtype name (``bfloat16``) of one tensor."""
        code = str(self._info(key)["dtype"])
        return _CODE_TO_NAME.get(code, code)

    def _info(self, key: str) -> dict[str, Any]:
        try:
            return self.header[key]
        except KeyError:
            msg = (
                f"Tensor shard {str(self.path)!r}: no tensor {key!r}. "
                "Expected one of the op table's keys."
            )
            raise DumpFormatError(msg) from None

    def get(self, key: str) -> np.ndarray:
        """The stored bits of ``key`` as a read-only numpy array (raw uints for bf16/fp8)."""
        return self.get_raw(key)[0]

    def get_raw(self, key: str) -> tuple[np.ndarray, str]:
        """:meth:`get` and :meth:`dtype_name` of ``key`` with one look-up of its entry (a
        comparison reads thousands of small tensors: the look-ups were a tenth of it)."""
        view = self._views.get(key)
        if view is None:
            info = self._info(key)
            name = self.dtype_name(key)
            begin, end = (self._start + o for o in info["data_offsets"])
            np_dtype = numpy_dtype(name)
            view = (np_dtype, (end - begin) // np_dtype.itemsize, begin, tuple(info["shape"]), name)
            self._views[key] = view
        np_dtype, count, begin, shape, name = view
        if self._remote is not None:
            data = self._remote.read(begin, begin + count * np_dtype.itemsize)
            return np.frombuffer(data, dtype=np_dtype, count=count).reshape(shape), name
        arr = np.frombuffer(self._buf, dtype=np_dtype, count=count, offset=begin)
        return arr.reshape(shape), name

    def close(self) -> None:
        """Release the mapping (arrays returned by :meth:`get` must not be used after)."""
        if self._remote is not None:
            self._remote.close()
        buf = self._buf
        self._buf = memoryview(b"")
        with contextlib.suppress(BufferError):  # views still alive: the GC unmaps later
            buf.release()
