"""Incremental reader of one event file: resumes at its last complete record.

:class:`EventFileReader` remembers the byte offset after the last complete record it read;
each :meth:`~EventFileReader.read` picks up what was appended since (tail mode). Rules:

* Both CRC-32C checks are on by default; ``check_data_crc=False`` skips the payload CRC
  (the length CRC is always checked, so framing errors are still caught).
* A truncated last record is not an error: it is left for the next read. A header whose
  length could not be a tail (over ``TENSORSIGHT_MAX_RECORD_MIB``, or followed by a
  complete valid record) is corruption and is skipped like a CRC mismatch.
* A corrupt record in the middle is skipped: the reader searches forward for the next
  position holding a valid record, and reports the skipped byte range as a *problem*
  (a sentence naming the file and offsets) instead of raising.
* A payload that is not a valid message, a value whose data does not match its declared
  layout, or one whose sizes are over a limit of ``_limits.py``, is skipped with a problem
  too; no exception of any type (``MemoryError`` included) leaves a record's decoding.

Scalar events are decoded by the C scanner when it is available (see ``_scan.py``); all
other events go through protobuf and ``_tbdecode``. :class:`MindSporeFileReader` (in
``mindspore.py``) reuses the framing with MindSpore's messages.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tensorsight.errors import SchemaVersionError
from tensorsight.summary import _fs
from tensorsight.summary._limits import SizeLimitError, max_record_bytes
from tensorsight.summary._proto import tb
from tensorsight.summary._record import masked_crc32c
from tensorsight.summary._scan import Points, Scanner
from tensorsight.summary._tbdecode import Item, decode_event

__all__ = ["Batch", "CorruptRecordWarning", "EventFileReader", "iter_events"]

CHUNK_BYTES = 16 << 20
STALE_TAIL_SECS = 120.0  # an incomplete last record this old is reported once
_HEADER = struct.Struct("<QI")


class CorruptRecordWarning(UserWarning):
    """A record of an event file was skipped (bad CRC, bad message); reading went on."""


@dataclass
class Batch:
    """What one :meth:`EventFileReader.read` found.

    ``points`` are C-decoded scalars whose ``tag`` ids index ``tag_names``; ``items`` are
    everything else, in record order; ``problems`` are sentences for skipped data.
    """

    points: list[Points] = field(default_factory=list)
    tag_names: list[str] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    records: int = 0
    bytes_read: int = 0


class EventFileReader:
    """Reads one TensorBoard event file incrementally.

    Args:
        path: The event file.
        plugins: Tag -> plugin name map shared by the files of one run (TF2 writers send
            the plugin metadata with a tag's first value only).
        check_data_crc: Verify the payload CRC of each record (default on).
        use_c: ``None`` uses the C scanner when available; ``False`` forces pure Python.
        chunk_bytes: How much is read at a time (bounds the reader's own memory).

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "events.out.tfevents.1.host")
        >>> open(path, "wb").close()
        >>> reader = EventFileReader(path)
        >>> reader.read().records, reader.offset
        (0, 0)
    """

    format = "tensorboard"

    def __init__(
        self,
        path: str,
        *,
        plugins: dict[str, str] | None = None,
        check_data_crc: bool = True,
        use_c: bool | None = None,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self.path = path
        self.plugins = plugins if plugins is not None else {}
        self.check_data_crc = check_data_crc
        self.chunk_bytes = chunk_bytes
        self.offset = 0
        self.size = 0
        self.mtime = 0.0
        self.pending_bytes = 0
        self._probe_from = 0
        self._stale_tail_at = -1
        self._open_bad: tuple[int, str] | None = None
        self.records = 0
        self.seen_tags: set[tuple[str, str]] = set()
        self._scanner = Scanner(fast_scalars=self._fast_scalars(), use_c=use_c)

    def _fast_scalars(self) -> bool:
        return True

    def decode(self, payload: bytes, seq: int) -> list[Item]:
        """Items of one record payload (subclasses decode other formats)."""
        event = tb.Event.FromString(payload)
        return decode_event(event, seq, self.plugins)

    def read(self, sink: Callable[[Batch], None] | None = None) -> Batch:
        """Read every complete record appended since the last call.

        Args:
            sink: When given, called with each chunk's batch as soon as it is decoded (so
                memory stays bounded by one chunk); the returned batch then carries only
                the totals (``records``, ``bytes_read``, ``problems``).

        Raises:
            InputFileError: The file cannot be read (permissions, deleted).
        """
        total = Batch()
        info = _fs.stat(self.path)
        self.mtime = info.mtime
        if info.size < self.offset:
            total.problems.append(
                f"Event file {self.path!r}: shrank from {self.offset} to {info.size} bytes "
                "(rewritten?); only data appended after the old size will be read."
            )
            self.size = info.size
            return total
        self.size = info.size
        while True:
            self._read_chunks(info.size, total, sink)
            if self.offset >= info.size or not self._skip_stuck_header(info.size, total):
                break
        self.pending_bytes = info.size - self.offset
        stale = time.time() - info.mtime > STALE_TAIL_SECS  # the file is no longer growing
        if self.pending_bytes and stale and self._stale_tail_at != self.offset:
            self._stale_tail_at = self.offset
            total.problems.append(
                f"Event file {self.path!r}: ends with an incomplete record at byte offset "
                f"{self.offset} ({self.pending_bytes} bytes) and has not grown for "
                f"{STALE_TAIL_SECS:.0f} s; the writer stopped mid-record (it is read if "
                "the file grows)."
            )
        total.tag_names = self._scanner.tag_names
        return total

    def _read_chunks(self, size: int, total: Batch, sink: Callable[[Batch], None] | None) -> None:
        """Scan and decode from ``offset`` until the end or an incomplete record."""
        info_size = size
        while self.offset < info_size:
            want = min(self.chunk_bytes, info_size - self.offset)
            buf = _fs.read_range(self.path, self.offset, want)
            if not buf:
                break
            chunk = Batch()
            consumed = self._scan_buffer(buf, chunk, more=self.offset + len(buf) < info_size)
            if consumed == 0:
                need = self._whole_record_size(buf)
                if need is not None and len(buf) < need and self.offset + need <= info_size:
                    buf = _fs.read_range(self.path, self.offset, need)
                    consumed = self._scan_buffer(buf, chunk)
            self.offset += consumed
            chunk.bytes_read = consumed
            chunk.tag_names = self._scanner.tag_names
            total.records += chunk.records
            total.bytes_read += consumed
            if sink is not None:
                total.problems.extend(chunk.problems)
                if chunk.records or chunk.items:
                    sink(chunk)
            else:
                total.points.extend(chunk.points)
                total.items.extend(chunk.items)
                total.problems.extend(chunk.problems)
            if consumed == 0 or len(buf) < want:
                break  # a truncated last record waits for the writer
        if self._open_bad is not None:
            first, why = self._open_bad
            self._open_bad = None
            total.problems.append(self._bad_problem(first, self.offset, why))

    def _skip_stuck_header(self, size: int, total: Batch) -> bool:
        """Whether the incomplete record at ``offset`` was corruption, now skipped.

        A header whose length runs past the end of the file is a record still being
        written, unless a complete valid record (both CRCs) starts after it: a writer
        appends records whole and in order, so nothing valid can follow a true tail. The
        bytes after the header are searched once each (``_probe_from``), so polling a
        growing file stays linear.
        """
        pos = max(self.offset + 1, self._probe_from)
        undecided = -1  # the first header that may still complete: searched again next time
        while pos < size:
            buf = _fs.read_range(self.path, pos, min(self.chunk_bytes, size - pos))
            if len(buf) < 12:
                break
            q = 0
            while True:
                q = self._scanner.find_header(buf, q)
                if q < 0:
                    break
                state = self._valid_record_at(buf, q, pos + q, size)
                if state == 1:
                    where = pos + q
                    total.problems.append(
                        f"Event file {self.path!r}: corrupt record at byte offset "
                        f"{self.offset} (its length runs past the end of the file but a "
                        f"valid record follows); skipped {where - self.offset} bytes, "
                        f"resumed at offset {where}."
                    )
                    self.offset = self._probe_from = where
                    return True
                if state == 2 and undecided < 0:
                    undecided = pos + q
                q += 1
            if pos + len(buf) >= size:
                break
            pos += len(buf) - 11  # a header may straddle the two reads
        self._probe_from = undecided if undecided >= 0 else max(self.offset + 1, size - 11)
        return False

    def _valid_record_at(self, buf: bytes, q: int, where: int, size: int) -> int:
        """1: a complete record with both CRCs valid at file offset ``where``; 2: one that
        runs past the end of the file (undecided); 0: not a record."""
        length = int(_HEADER.unpack_from(buf, q)[0])
        end = q + 16 + length
        if where + 16 + length > size:
            return 2
        record = buf[q:end] if end <= len(buf) else _fs.read_range(self.path, where, end - q)
        if len(record) < 16 + length:
            return 2
        payload = record[12 : 12 + length]
        ok = masked_crc32c(payload) == struct.unpack_from("<I", record, 12 + length)[0]
        return 1 if ok else 0

    @staticmethod
    def _whole_record_size(buf: bytes) -> int | None:
        if len(buf) < 12:
            return None
        length, length_crc = _HEADER.unpack_from(buf, 0)
        if masked_crc32c(buf[:8]) != length_crc:
            return None
        return int(length) + 16

    def _bad_problem(self, start: int, end: int, why: str) -> str:
        return (
            f"Event file {self.path!r}: corrupt record at byte offset {start} ({why}); "
            f"skipped {end - start} bytes, resumed at offset {end}."
        )

    def _scan_buffer(self, buf: bytes, batch: Batch, *, more: bool = False) -> int:
        out = self._scanner.scan(buf, seq0=self.records, check_data_crc=self.check_data_crc)
        self.records += out.records
        batch.records += out.records
        batch.points.extend(out.points)
        bad = [(self.offset + a, self.offset + b, _why_bad(buf, a)) for a, b in out.bad]
        if self._open_bad is not None:  # a range that ran to the end of the last chunk
            first, why = self._open_bad
            self._open_bad = None
            if bad and bad[0][0] == self.offset:
                bad[0] = (first, bad[0][1], why)
            else:
                bad.insert(0, (first, self.offset, why))
        if (
            bad
            and more
            and out.consumed >= len(buf) - 11
            and bad[-1][1] == self.offset + out.consumed
        ):
            first, _, why = bad.pop()  # it may go on in the next chunk: one problem for all
            self._open_bad = (first, why)
        for first, end, why in bad:
            batch.problems.append(self._bad_problem(first, end, why))
        for off, length, seq in out.others:
            payload = buf[off : off + length]
            try:
                batch.items.extend(self.decode(payload, seq))
            except Exception as exc:  # any failure of one record is a problem
                if isinstance(exc, SchemaVersionError | SizeLimitError):
                    reason = str(exc)
                else:
                    reason = f"{type(exc).__name__}: {exc}"
                batch.problems.append(
                    f"Event file {self.path!r}: record at byte offset {self.offset + off - 12} "
                    f"could not be decoded ({reason}); skipped."
                )
        return out.consumed


def _why_bad(buf: bytes, start: int) -> str:
    """Why the record at ``start`` was skipped: a CRC, or a length no record may have."""
    if len(buf) - start >= 12:
        length, length_crc = _HEADER.unpack_from(buf, start)
        limit = max_record_bytes()
        if masked_crc32c(buf[start : start + 8]) == length_crc and length > limit:
            return (
                f"length {length} over the limit of {limit >> 20} MiB, TENSORSIGHT_MAX_RECORD_MIB"
            )
    return "CRC mismatch"


def iter_events(path: str, *, check_data_crc: bool = True) -> Any:
    """Yield each parsed ``Event`` message of a TensorBoard event file (debugging aid).

    Corrupt records are skipped; a truncated last record is ignored.
    """
    reader = _RawReader(path, check_data_crc=check_data_crc)
    reader.read()
    yield from reader.events


class _RawReader(EventFileReader):
    def __init__(self, path: str, *, check_data_crc: bool) -> None:
        super().__init__(path, check_data_crc=check_data_crc)
        self.events: list[Any] = []

    def _fast_scalars(self) -> bool:
        return False

    def decode(self, payload: bytes, seq: int) -> list[Item]:
        self.events.append(tb.Event.FromString(payload))
        return []


ReaderFactory = Callable[..., EventFileReader]
