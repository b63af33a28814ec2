"""Walk the records of an event-file buffer: CRC checks, resync, and a C fast path.

:class:`Scanner` turns a buffer into three streams, numbered by a running record ``seq``:

* ``points``: scalar values decoded without protobuf (C only): tag id, step, wall time,
  value, and a flag (0 ``simple_value``, 1 scalar tensor with "scalars" plugin metadata,
  2 scalar DT_FLOAT tensor without metadata, whose kind depends on the tag's plugin),
* ``others``: (offset, length, seq) of every other payload, for the protobuf path,
* ``bad``: (start, end) byte ranges skipped as corrupt.

The C code (``_cscan.c``) is compiled on first use with the system C compiler into a cache
folder (``$TENSORSIGHT_CACHE_DIR`` or ``~/.cache/tensorsight``) and loaded with ctypes; it
needs no Python headers. Without a compiler, or with ``TENSORSIGHT_NO_C=1``, a pure-Python
scanner with the same results (every record goes to ``others``) takes over.
"""

from __future__ import annotations

import ctypes
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight._cbuild import load_c_library
from tensorsight.summary._limits import max_record_bytes
from tensorsight.summary._record import masked_crc32c

__all__ = ["Points", "ScanOut", "Scanner", "accelerated", "find_header"]

_log = logging.getLogger(__name__)
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_CAP_OTHERS = 1 << 16
_CAP_BAD = 1 << 10

_lib: ctypes.CDLL | None = None
_lib_tried = False


def _build() -> ctypes.CDLL | None:
    lib = load_c_library(Path(__file__).with_name("_cscan.c"), ["-O2"], name="_cscan")
    if lib is None:
        return None
    p = ctypes.c_void_p
    i64 = ctypes.c_int64
    lib.ts_tagtab_new.restype = p
    lib.ts_tagtab_free.argtypes = [p]
    lib.ts_tagtab_count.argtypes = [p]
    lib.ts_tagtab_count.restype = ctypes.c_int32
    lib.ts_tagtab_name.argtypes = [p, ctypes.c_int32, ctypes.c_char_p, ctypes.c_int32]
    lib.ts_tagtab_name.restype = ctypes.c_int32
    lib.ts_masked_crc32c.argtypes = [ctypes.c_char_p, i64]
    lib.ts_masked_crc32c.restype = ctypes.c_uint32
    lib.ts_hw_crc.restype = ctypes.c_int
    c_int = ctypes.c_int
    u64 = ctypes.c_uint64
    scan_args: list[Any] = [p, i64, c_int, c_int, p, i64, i64, p, p, p, i64, p, p, p, u64]
    lib.ts_scan.argtypes = scan_args
    lib.ts_scan.restype = ctypes.c_int
    lib.ts_find_header.argtypes = [p, i64, i64, u64]
    lib.ts_find_header.restype = i64
    lib.ts_tag_npoints.argtypes = [p, ctypes.c_int32]
    lib.ts_tag_npoints.restype = i64
    lib.ts_tag_take.argtypes = [p, ctypes.c_int32, p, p, p, p, p]
    lib.ts_tag_take.restype = None
    return lib


def _get_lib() -> ctypes.CDLL | None:
    global _lib, _lib_tried
    if not _lib_tried:
        _lib_tried = True
        if os.environ.get("TENSORSIGHT_NO_C", "") not in ("", "0"):
            return None
        try:
            _lib = _build()
        except OSError as exc:  # unwritable cache, unloadable library: fall back
            _log.info("C event scanner unavailable (%s); using the Python scanner", exc)
            _lib = None
    return _lib


def accelerated() -> bool:
    """True when the compiled C scanner is in use."""
    return _get_lib() is not None


@dataclass
class Points:
    """Scalar points of one tag decoded by the C scanner (parallel arrays, record order)."""

    tag: int
    step: NDArray[np.int64]
    wall: NDArray[np.float64]
    value: NDArray[np.float64]
    flag: NDArray[np.int8]
    seq: NDArray[np.int64]


@dataclass
class ScanOut:
    """What one :meth:`Scanner.scan` found; ``consumed`` bytes may be dropped from the buffer."""

    consumed: int
    records: int
    points: list[Points]
    others: list[tuple[int, int, int]]
    bad: list[tuple[int, int]]


class Scanner:
    """Scans buffers of one event file; keeps the tag ids of its scalar points.

    Args:
        fast_scalars: Decode scalar events in C (TensorBoard files only).
        use_c: ``None``: use C when available; ``False``: force the Python scanner.
    """

    def __init__(self, *, fast_scalars: bool = True, use_c: bool | None = None) -> None:
        self._lib = _get_lib() if use_c is not False else None
        self._fast = fast_scalars
        self.tag_names: list[str] = []
        self._tab: int | None = None
        if self._lib is not None:
            self._tab = self._lib.ts_tagtab_new()
            if not self._tab:
                self._lib = None

    def __del__(self) -> None:
        lib = getattr(self, "_lib", None)
        if lib is not None and self._tab:
            lib.ts_tagtab_free(self._tab)
            self._tab = None

    def scan(self, buf: bytes, *, seq0: int, check_data_crc: bool) -> ScanOut:
        """Scan ``buf`` from its start; stops before an incomplete last record.

        A header claiming more than ``max_record_bytes()`` is corrupt, never a tail.
        """
        if self._lib is None:
            return _scan_py(buf, seq0=seq0, check_data_crc=check_data_crc)
        return self._scan_c(buf, seq0=seq0, check_data_crc=check_data_crc)

    def find_header(self, buf: bytes, start: int) -> int:
        """First offset ``>= start`` of ``buf`` holding a header with a valid length CRC and
        a length within ``max_record_bytes()``; ``-1`` when there is none."""
        if self._lib is None:
            return find_header(buf, start)
        base = ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
        return int(self._lib.ts_find_header(base, len(buf), start, max_record_bytes()))

    def _scan_c(self, buf: bytes, *, seq0: int, check_data_crc: bool) -> ScanOut:
        lib = self._lib
        assert lib is not None
        n_total = len(buf)
        cap_o = min(_CAP_OTHERS, n_total // 16 + 16)
        o_off = np.empty(cap_o, np.int64)
        o_len = np.empty(cap_o, np.int64)
        o_seq = np.empty(cap_o, np.int64)
        b_start = np.empty(_CAP_BAD, np.int64)
        b_end = np.empty(_CAP_BAD, np.int64)
        counts = np.zeros(6, np.int64)
        base = ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value or 0
        out = ScanOut(0, 0, [], [], [])
        pos = 0
        max_len = max_record_bytes()
        while True:
            rc = lib.ts_scan(
                base + pos, n_total - pos, int(check_data_crc), int(self._fast), self._tab,
                seq0 + out.records,
                cap_o, o_off.ctypes.data, o_len.ctypes.data, o_seq.ctypes.data,
                _CAP_BAD, b_start.ctypes.data, b_end.ctypes.data, counts.ctypes.data, max_len,
            )  # fmt: skip
            if rc != 0:
                msg = "event scanner: out of memory"
                raise MemoryError(msg)
            consumed, n_p, n_o, n_b, n_rec, status = (int(c) for c in counts)
            if n_p:
                self._take_points(out)
            if n_o:
                offs = (o_off[:n_o] + pos).tolist()
                out.others.extend(
                    zip(offs, o_len[:n_o].tolist(), o_seq[:n_o].tolist(), strict=True)
                )
            for i in range(n_b):
                out.bad.append((int(b_start[i]) + pos, int(b_end[i]) + pos))
            out.records += n_rec
            pos += consumed
            if status == 0:
                break
        out.consumed = pos
        self._sync_tags()
        return out

    def _take_points(self, out: ScanOut) -> None:
        lib = self._lib
        assert lib is not None
        tab = self._tab
        sizes = [(i, int(lib.ts_tag_npoints(tab, i))) for i in range(lib.ts_tagtab_count(tab))]
        sizes = [(i, n) for i, n in sizes if n > 0]
        total = sum(n for _, n in sizes)
        # one block per column for every tag, taken in slices: a sweep's files hold 20 tags of
        # 50 points each, and five arrays (and five `.ctypes` lookups) per tag were most of
        # this function's time
        step = np.empty(total, np.int64)
        wall = np.empty(total, np.float64)
        value = np.empty(total, np.float64)
        flag = np.empty(total, np.int8)
        seq = np.empty(total, np.int64)
        p_step, p_wall, p_value = step.ctypes.data, wall.ctypes.data, value.ctypes.data
        p_flag, p_seq = flag.ctypes.data, seq.ctypes.data
        at = 0
        for tag_id, n in sizes:
            lib.ts_tag_take(
                tab, tag_id, p_step + 8 * at, p_wall + 8 * at, p_value + 8 * at,
                p_seq + 8 * at, p_flag + at,
            )  # fmt: skip
            end = at + n
            part = slice(at, end)
            out.points.append(
                Points(tag_id, step[part], wall[part], value[part], flag[part], seq[part])
            )
            at = end

    def _sync_tags(self) -> None:
        lib = self._lib
        assert lib is not None
        count = lib.ts_tagtab_count(self._tab)
        while len(self.tag_names) < count:
            i = len(self.tag_names)
            size = 256
            while True:
                out = ctypes.create_string_buffer(size)
                n = lib.ts_tagtab_name(self._tab, i, out, size)
                if n >= 0:
                    break
                size = -n
            self.tag_names.append(out.raw[:n].decode("utf-8", errors="replace"))


def _crc32c_table() -> NDArray[np.uint32]:
    poly = 0x82F63B78
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(poly), table >> 1).astype(np.uint32)
    return table


_TABLE = _crc32c_table()
_WINDOW = 1 << 20  # positions checked per numpy pass (bounds the temporary arrays)


def _header_hits(arr: NDArray[np.uint8], lo: int, hi: int) -> NDArray[np.intp]:
    """Positions ``p`` in ``[lo, hi)`` whose 8 bytes' masked CRC-32C equals the next 4 bytes
    (vectorised over all positions: one table lookup per byte, as in the C code)."""
    m = hi - lo
    crc = np.full(m, 0xFFFFFFFF, np.uint32)
    for k in range(8):
        byte = arr[lo + k : lo + k + m].astype(np.uint32)
        crc = _TABLE[(crc ^ byte) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)
    stored = np.zeros(m, np.uint32)
    for k in range(4):
        stored |= arr[lo + 8 + k : lo + 8 + k + m].astype(np.uint32) << np.uint32(8 * k)
    return np.flatnonzero(masked == stored) + lo


def find_header(buf: bytes, start: int) -> int:
    """Pure-Python (numpy) twin of the C ``ts_find_header``: see :meth:`Scanner.find_header`."""
    n = len(buf)
    limit = max_record_bytes()
    arr = np.frombuffer(buf, np.uint8)
    lo = max(0, start)
    while n - lo >= 12:
        hi = min(lo + _WINDOW, n - 11)
        for p in _header_hits(arr, lo, hi).tolist():
            if _HEADER.unpack_from(buf, p)[0] <= limit:
                return int(p)
        lo = hi
    return -1


def _record_at(buf: bytes, pos: int, check_data_crc: bool) -> tuple[int, int]:
    """(1 valid | 2 incomplete | 0 corrupt, payload length) for a record starting at ``pos``."""
    length, length_crc = _HEADER.unpack_from(buf, pos)
    if masked_crc32c(buf[pos : pos + 8]) != length_crc or length > max_record_bytes():
        return 0, 0
    end = pos + 12 + length
    if end + 4 > len(buf):
        return 2, length
    if check_data_crc and masked_crc32c(buf[pos + 12 : end]) != _U32.unpack_from(buf, end)[0]:
        return 0, length
    return 1, length


def _scan_py(buf: bytes, *, seq0: int, check_data_crc: bool) -> ScanOut:
    out = ScanOut(0, 0, [], [], [])
    n = len(buf)
    pos = 0
    while n - pos >= 12:
        state, length = _record_at(buf, pos, check_data_crc)
        if state == 2:
            break
        if state == 0:
            q = pos + 1
            while True:  # candidates from the vectorised header search, then both CRCs
                q = find_header(buf, q)
                if q < 0:
                    q = max(pos + 1, n - 11)  # fewer than 12 bytes left: a possible tail
                    break
                if _record_at(buf, q, check_data_crc)[0] != 0:
                    break
                q += 1
            out.bad.append((pos, q))
            pos = q
            continue
        out.others.append((pos + 12, length, seq0 + out.records))
        out.records += 1
        pos += 16 + length
    out.consumed = pos
    return out
