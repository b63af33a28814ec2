"""A minimal Parquet encoder for small op tables (below ``_table.COMPRESS_ROWS`` rows).

pyarrow spends about half a millisecond on the fixed parts of every file (converting each
column from Python objects, setting up the writer, the footer), which on a one-millisecond
training step is the writer's largest cost. Most of an op table is the same from one step to
the next (op names, module paths, tensor names, shapes, dtypes): this encoder writes each
column as one uncompressed data page and keeps the encoded bytes of the last table's
columns, so a column equal to the previous step's costs a tuple comparison, and the footer is
reused while the page sizes stay the same.

What it writes (Parquet format 2, readable by pyarrow, DuckDB, Polars, Spark): one row group,
one PLAIN data page (v1) per column, no compression, dictionary or statistics; every column
nullable, strings annotated UTF8/STRING, ``list<int64>`` columns as the standard three-level
LIST (``optional group <name> (LIST) { repeated group list { required int64 element } }``).
Big tables, where zstd, dictionaries and statistics pay off, stay with pyarrow.
"""

from __future__ import annotations

import array
import struct
from collections.abc import Sequence
from typing import Any

from tensorsight._version import __version__
from tensorsight._wire import varint as _varint

__all__ = ["KINDS", "NATIVE_OK", "SmallTableEncoder"]

# column kinds and their Parquet physical types (INT64 2, DOUBLE 5, BYTE_ARRAY 6)
KINDS = ("int64", "double", "string", "list_int64")
_PHYSICAL = {"int64": 2, "double": 5, "string": 6, "list_int64": 2}
_MAGIC = b"PAR1"

# thrift compact protocol type codes
_I32, _I64, _BINARY, _LIST, _STRUCT = 5, 6, 8, 9, 12


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


class _Struct:
    """A thrift compact struct being written (field ids must ascend)."""

    __slots__ = ("last", "out")

    def __init__(self) -> None:
        self.out = bytearray()
        self.last = 0

    def _field(self, fid: int, ttype: int) -> None:
        delta = fid - self.last
        if 0 < delta <= 15:
            self.out.append((delta << 4) | ttype)
        else:
            self.out.append(ttype)
            self.out += _zigzag(fid)
        self.last = fid

    def i32(self, fid: int, value: int) -> _Struct:
        self._field(fid, _I32)
        self.out += _zigzag(value)
        return self

    def i64(self, fid: int, value: int) -> _Struct:
        self._field(fid, _I64)
        self.out += _zigzag(value)
        return self

    def binary(self, fid: int, value: bytes) -> _Struct:
        self._field(fid, _BINARY)
        self.out += _varint(len(value)) + value
        return self

    def struct(self, fid: int, value: _Struct) -> _Struct:
        self._field(fid, _STRUCT)
        self.out += value.end()
        return self

    def list(self, fid: int, etype: int, items: Sequence[bytes]) -> _Struct:
        """A list field; ``items`` are encoded elements (for structs: :meth:`end` output)."""
        self._field(fid, _LIST)
        n = len(items)
        self.out.append((n << 4) | etype if n < 15 else 0xF0 | etype)
        if n >= 15:
            self.out += _varint(n)
        for item in items:
            self.out += item
        return self

    def end(self) -> bytes:
        return bytes(self.out) + b"\x00"


def _levels(values: Sequence[int], width: int) -> bytes:
    """The RLE/bit-packed hybrid encoding of ``values`` (``width`` bits each), with the
    4-byte length prefix of a v1 data page: one RLE run when all are equal, else one
    bit-packed run."""
    n = len(values)
    first = values[0] if n else 0
    if n == 0 or all(v == first for v in values):
        body = _varint(n << 1) + first.to_bytes((width + 7) // 8, "little")
    else:
        groups = (n + 7) // 8
        packed = 0
        for i, v in enumerate(values):
            packed |= v << (i * width)
        body = _varint((groups << 1) | 1) + packed.to_bytes(groups * width, "little")
    return struct.pack("<I", len(body)) + body


def _ones_run(n: int) -> bytes:
    body = _varint(n << 1) + b"\x01"
    return struct.pack("<I", len(body)) + body


_TEXT: dict[str, bytes] = {}


def _text(s: Any) -> bytes:
    """A PLAIN BYTE_ARRAY value: 4-byte length, UTF-8 bytes (memoized: values repeat)."""
    out = _TEXT.get(s)
    if out is None:
        if len(_TEXT) > 100_000:
            _TEXT.clear()
        # a lone surrogate (a file name decoded with surrogateescape, in a stack) is not
        # UTF-8: it is written as its escape, "\\udcff", so that readers still take the file
        raw = str(s).encode("utf-8", "backslashreplace")
        out = _TEXT[s] = struct.pack("<I", len(raw)) + raw
    return out


def _page_body(kind: str, values: Sequence[Any]) -> tuple[bytes, int]:
    """A data page's levels and values; returns (body, number of level entries)."""
    if kind == "list_int64":
        reps: list[int] = []
        defs: list[int] = []
        flat: list[int] = []
        for v in values:
            if v is None:
                reps.append(0)
                defs.append(0)
            elif len(v) == 0:
                reps.append(0)
                defs.append(1)
            else:
                reps.append(0)
                defs.append(2)
                reps.extend([1] * (len(v) - 1))
                defs.extend([2] * (len(v) - 1))
                flat.extend(v)
        body = _levels(reps, 1) + _levels(defs, 2) + array.array("q", flat).tobytes()
        return body, len(defs)
    n = len(values)
    if kind != "string":
        try:  # no nulls: one C loop (array refuses None)
            return _ones_run(n) + array.array("d" if kind == "double" else "q", values).tobytes(), n
        except TypeError:
            pass
    if None in values:
        present = [v for v in values if v is not None]
        levels = _levels([0 if v is None else 1 for v in values], 1)
    else:
        present = list(values)
        levels = _ones_run(n)
    if kind == "string":
        data = b"".join([_text(v) for v in present])
    elif kind == "double":
        data = array.array("d", [float(v) for v in present]).tobytes()
    else:  # integral floats (0.0 from a log written by hand) are ints here
        data = array.array("q", [int(v) for v in present]).tobytes()
    return levels + data, n


# array's native byte order must be Parquet's little-endian one
NATIVE_OK = struct.pack("=I", 1) == struct.pack("<I", 1) and array.array("q").itemsize == 8


_HEADERS: dict[tuple[int, int], bytes] = {}


def _page(kind: str, values: Sequence[Any]) -> tuple[bytes, int]:
    """One uncompressed v1 data page (header + body) and its number of values."""
    body, count = _page_body(kind, values)
    key = (len(body), count)
    header = _HEADERS.get(key)
    if header is None:
        if len(_HEADERS) > 10_000:
            _HEADERS.clear()
        header = _HEADERS[key] = (
            _Struct()
            .i32(1, 0)  # DATA_PAGE
            .i32(2, len(body))
            .i32(3, len(body))
            .struct(5, _Struct().i32(1, count).i32(2, 0).i32(3, 3).i32(4, 3))  # PLAIN; RLE x2
            .end()
        )
    return header + body, count


class SmallTableEncoder:
    """Encodes tables of a fixed schema to Parquet bytes, reusing unchanged columns.

    Args:
        schema: ``(name, kind)`` per column, ``kind`` one of :data:`KINDS`.
    """

    def __init__(self, schema: Sequence[tuple[str, str]]) -> None:
        if not NATIVE_OK:
            msg = "The Parquet encoder needs a little-endian machine."
            raise RuntimeError(msg)
        for name, kind in schema:
            if kind not in KINDS:
                msg = f"Column {name!r}: unknown kind {kind!r}. Expected one of {KINDS}."
                raise ValueError(msg)
        self.schema = tuple(schema)
        self._pages: list[tuple[Sequence[Any], bytes, int] | None] = [None] * len(schema)
        self._footer: tuple[tuple[Any, ...], bytes] | None = None
        self._schema_elements = self._encode_schema()

    def encode(self, columns: Sequence[Sequence[Any]]) -> bytes:
        """The Parquet file of one table given column by column (equal lengths)."""
        if len(columns) != len(self.schema):
            msg = f"Expected {len(self.schema)} columns, got {len(columns)}."
            raise ValueError(msg)
        rows = len(columns[0]) if columns else 0
        pages: list[bytes] = []
        counts: list[int] = []
        for i, ((name, kind), values) in enumerate(zip(self.schema, columns, strict=True)):
            if len(values) != rows:
                msg = f"Column {name!r} has {len(values)} values; expected {rows}."
                raise ValueError(msg)
            cached = self._pages[i]
            # doubles change every step, and == would take -0.0 for 0.0: never reused
            if cached is not None and kind != "double" and cached[0] == values:
                page, count = cached[1], cached[2]
            else:
                page, count = _page(kind, values)
                self._pages[i] = (values, page, count)
            pages.append(page)
            counts.append(count)
        key = (rows, *counts, *[len(p) for p in pages])
        last = self._footer
        if last is not None and last[0] == key:
            footer = last[1]
        else:
            footer = self._encode_footer(rows, pages, counts)
            self._footer = (key, footer)
        return b"".join([_MAGIC, *pages, footer, struct.pack("<I", len(footer)), _MAGIC])

    def _encode_schema(self) -> list[bytes]:
        elements = [_Struct().binary(4, b"schema").i32(5, len(self.schema)).end()]
        for name, kind in self.schema:
            raw = name.encode()
            if kind == "list_int64":
                elements.append(
                    _Struct()
                    .i32(3, 1)  # OPTIONAL
                    .binary(4, raw)
                    .i32(5, 1)
                    .i32(6, 3)  # converted type LIST
                    .struct(10, _Struct().struct(3, _Struct()))  # logical type LIST
                    .end()
                )
                elements.append(_Struct().i32(3, 2).binary(4, b"list").i32(5, 1).end())
                elements.append(_Struct().i32(1, 2).i32(3, 0).binary(4, b"element").end())
            elif kind == "string":
                elements.append(
                    _Struct()
                    .i32(1, 6)
                    .i32(3, 1)
                    .binary(4, raw)
                    .i32(6, 0)  # converted type UTF8
                    .struct(10, _Struct().struct(1, _Struct()))  # logical type STRING
                    .end()
                )
            else:
                elements.append(_Struct().i32(1, _PHYSICAL[kind]).i32(3, 1).binary(4, raw).end())
        return elements

    def _encode_footer(self, rows: int, pages: Sequence[bytes], counts: Sequence[int]) -> bytes:
        chunks: list[bytes] = []
        offset = len(_MAGIC)
        total = 0
        for (name, kind), page, count in zip(self.schema, pages, counts, strict=True):
            path = [name.encode()]
            if kind == "list_int64":
                path += [b"list", b"element"]
            meta = (
                _Struct()
                .i32(1, _PHYSICAL[kind])
                .list(2, _I32, [_zigzag(0), _zigzag(3)])  # PLAIN, RLE
                .list(3, _BINARY, [_varint(len(p)) + p for p in path])
                .i32(4, 0)  # UNCOMPRESSED
                .i64(5, count)
                .i64(6, len(page))
                .i64(7, len(page))
                .i64(9, offset)
            )
            chunks.append(_Struct().i64(2, offset).struct(3, meta).end())
            offset += len(page)
            total += len(page)
        row_group = _Struct().list(1, _STRUCT, chunks).i64(2, total).i64(3, rows).end()
        return (
            _Struct()
            .i32(1, 1)
            .list(2, _STRUCT, self._schema_elements)
            .i64(3, rows)
            .list(4, _STRUCT, [row_group])
            .binary(6, f"tensorsight version {__version__}".encode())
            .end()
        )
