"""The op table on disk: an append-only JSONL log while a step runs, Parquet once it ends.

A log cut off by a crash keeps every complete line (a partial last line is dropped); a
Parquet file cut off by a crash would be unreadable, which is why it is written only at the
end of a step, under a temporary name, and the log removed only after the rename.

:class:`StepLog` is the writer's side: it keeps the rows in memory, so that the Parquet file
is built from memory when the step ends instead of by parsing the log again, and writes them
to the log as JSON lines (encoded from cached pieces, about twice as fast as ``json.dumps``
of a dict) at most :data:`LOG_SECS` after they arrive. A step that ends sooner goes straight
to Parquet and its rows are never encoded twice: the lines cost more than a third of the
writer's time, which the training thread then waits for on a busy machine. A crash loses at
most the last :data:`LOG_SECS` of rows of the running step.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from tensorsight._lazy import lazy_import
from tensorsight.dumpformat import _check, _fs, _parquet
from tensorsight.dumpformat.schema import COLUMNS, STAT_COLUMNS
from tensorsight.errors import DumpFormatError

__all__ = [
    "LOG_NAME",
    "PARQUET_NAME",
    "StepLog",
    "compact",
    "encode_line",
    "has_table",
    "preload",
    "read_columns",
    "read_rows",
    "table_file",
]

LOG_NAME = "ops.jsonl"
PARQUET_NAME = "ops.parquet"
# op tables with at least this many rows go through pyarrow, zstd-compressed with
# dictionaries and page statistics; smaller ones through tensorsight's own encoder
COMPRESS_ROWS = 4096
# A row reaches the log at most this long after it arrived. Encoding the lines costs about
# 40 % of the writer's CPU on a step longer than this, which two-core machines take from the
# training (50-layer MLP, 0.2-0.3 s steps: x1.35 -> x1.30 of the plain step at 0.5 s).
LOG_SECS = 0.5


_SCHEMA: list[Any] = []


def _schema() -> Any:
    if _SCHEMA:
        return _SCHEMA[0]
    pa = lazy_import("pyarrow", extra="parquet", needed_by="the dump op table")
    f64, i64, s = pa.float64(), pa.int64(), pa.string()
    types = {
        "index": i64,
        "shape": pa.list_(i64),
        "min": f64,
        "max": f64,
        "mean": f64,
        "norm": f64,
        "nan_count": i64,
        "posinf_count": i64,
        "neginf_count": i64,
    }
    _SCHEMA.append(pa.schema([(c, types.get(c, s)) for c in COLUMNS]))
    return _SCHEMA[0]


def preload() -> None:
    """Import pyarrow now (a writer calls this when it starts, on the caller's thread).

    Imported lazily by the writer thread instead, pyarrow (and pandas, which ``pa.array``
    imports on first use when it is installed) would hold the GIL for about a second in the
    middle of the first recorded steps.
    """
    pa = lazy_import("pyarrow", extra="parquet", needed_by="the dump op table")
    lazy_import("pyarrow.parquet", extra="parquet", needed_by="the dump op table")
    pa.array([0], type=_schema().field("index").type)


def read_log(path: _fs.AnyPath) -> list[dict[str, Any]]:
    """Rows of a JSONL log; a cut-off last line is ignored, a corrupt middle line is an error.

    Each line must be a JSON object (its columns are checked by ``TensorRecord.from_row``).
    """
    rows: list[dict[str, Any]] = []
    with _fs.open_read(path) as f:
        lines = f.read().split(b"\n")
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            if no == len(lines):  # the last line, without its newline: cut off mid-write
                break
            why = "nested too deeply" if isinstance(exc, RecursionError) else _check.reason(exc)
            msg = (
                f"Op table log {str(path)!r}: line {no} is not JSON ({why}). "
                "Expected one JSON object per line."
            )
            raise DumpFormatError(msg) from None
        if not isinstance(row, dict):
            msg = (
                f"Op table log {str(path)!r}: line {no} is a JSON {type(row).__name__}. "
                "Expected one JSON object per line."
            )
            raise DumpFormatError(msg)
        rows.append(row)
    return rows


def compact(
    step_dir: Path, rows: Sequence[Sequence[Any]] | None = None, *, log: bool = True
) -> None:
    """Write ``ops.parquet`` (atomically), then delete the log.

    ``rows`` are tuples in :data:`schema.COLUMNS` order (the writer keeps them in memory);
    ``None`` reads them back from ``ops.jsonl``. ``log=False``: there is no log to delete.
    """
    log_path = step_dir / LOG_NAME
    if rows is None:
        dicts = read_log(log_path) if _fs.exists(log_path) else []
        rows = [tuple(r.get(c) for c in COLUMNS) for r in dicts]
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in COLUMNS]
    if len(rows) < COMPRESS_ROWS and _parquet.NATIVE_OK:
        blob = _small_encoder().encode(columns)
    else:
        blob = _pyarrow_parquet(columns, big=len(rows) >= COMPRESS_ROWS)
    tmp = step_dir / (PARQUET_NAME + ".tmp")
    with _fs.open_write(tmp) as f:
        f.write(blob)
    tmp.replace(step_dir / PARQUET_NAME)
    if log:
        _fs.remove(log_path)


def _pyarrow_parquet(columns: Sequence[Sequence[Any]], *, big: bool) -> Any:
    """The Parquet bytes of a table through pyarrow (zstd, dictionaries and page statistics
    when ``big``)."""
    pa = lazy_import("pyarrow", extra="parquet", needed_by="the dump op table")
    pq = lazy_import("pyarrow.parquet", extra="parquet", needed_by="the dump op table")
    schema = _schema()
    arrays = [pa.array(col, type=field.type) for col, field in zip(columns, schema, strict=True)]
    # from_arrays, not pa.table(dict): the dict path imports pandas (most of a second)
    table = pa.Table.from_arrays(arrays, schema=schema)
    sink = pa.BufferOutputStream()  # into memory, then one write: a third less CPU
    pq.write_table(
        table, sink, compression="zstd" if big else "none", use_dictionary=big,
        write_statistics=big,
    )  # fmt: skip
    return sink.getvalue()


# Small tables (most steps of a training loop) go through tensorsight's own encoder: the
# fixed costs of a pyarrow file were most of the writer's time on a short step, and most
# columns repeat from one step to the next (see _parquet). One encoder per thread: each
# keeps the last table it wrote.
_ENCODERS = threading.local()
_KIND = {"index": "int64", "shape": "list_int64", **dict.fromkeys(STAT_COLUMNS[:4], "double")}
_KIND.update(dict.fromkeys(STAT_COLUMNS[4:], "int64"))


def _small_encoder() -> _parquet.SmallTableEncoder:
    enc: _parquet.SmallTableEncoder | None = getattr(_ENCODERS, "encoder", None)
    if enc is None:
        enc = _parquet.SmallTableEncoder([(c, _KIND.get(c, "string")) for c in COLUMNS])
        _ENCODERS.encoder = enc
    return enc


# ---------------------------------------------------------------- the log's lines
_STRINGS: dict[str, str] = {}


def _text(s: str | None) -> str:
    """JSON of a string (memoized: op names, module paths and tensor names repeat)."""
    if s is None:
        return "null"
    out = _STRINGS.get(s)
    if out is None:
        if len(_STRINGS) > 100_000:
            _STRINGS.clear()
        out = _STRINGS[s] = json.dumps(s)
    return out


def _number(x: float | None) -> str:
    """JSON of a float as ``json.dumps(allow_nan=True)`` writes it."""
    if x is None:
        return "null"
    if x - x == 0.0:  # finite
        return repr(x)
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _count(x: int | None) -> str:
    return "null" if x is None else str(int(x))


def encode_line(row: Sequence[Any]) -> str:
    """One log line (with its newline) for a row in :data:`schema.COLUMNS` order."""
    index, op, direction, module_path = row[:4]
    head, tail = _op_parts(index, op, direction, module_path, row[17], row[18], row[19])
    return head + _row_part(row[4:17]) + tail


# an op's line = head (its identity before the tensor columns) + row part + tail
_HEAD = '{"index": %d, "op": %s, "direction": %s, "module_path": %s, '
_ROW = (
    '"tensor": %s, "shape": [%s], "dtype": %s, "device": %s, "min": %s, "max": %s, '
    '"mean": %s, "norm": %s, "nan_count": %s, "posinf_count": %s, "neginf_count": %s, '
    '"fingerprint": %s, "data": %s'
)
_TAIL = ', "grad_fn": %s, "stack": %s, "args": %s}\n'
assert (_HEAD + _ROW + _TAIL).count('": ') == len(COLUMNS)


def _op_parts(
    index: int, op: str, direction: str, module_path: str, grad_fn: Any, stack: Any, args: Any
) -> tuple[str, str]:
    head = _HEAD % (index, _text(op), _text(direction), _text(module_path))
    return head, _TAIL % (_text(grad_fn), _text(stack), _text(args))


def _row_part(tail: Sequence[Any]) -> str:
    tensor, shape, dtype, device, mn, mx, mean, norm, nan, pinf, ninf, fp, data = tail
    return _ROW % (
        _text(tensor), ", ".join([str(int(d)) for d in shape]), _text(dtype), _text(device),
        _number(mn), _number(mx), _number(mean), _number(norm),
        _count(nan), _count(pinf), _count(ninf), _text(fp), _text(data),
    )  # fmt: skip


class StepLog:
    """One step's op table while the step runs: the rows in memory, and the JSONL log.

    Rows are encoded into the log by :meth:`flush`, which the writer calls once
    :attr:`due` has passed; :meth:`compact` writes the Parquet file from memory without
    encoding the rows the log did not get yet.

    The log file is created by the first :meth:`flush` that has rows to write, not with the
    step: a step that ends within :data:`LOG_SECS` never has one. On file systems where
    creating (and later deleting) a file costs most of a millisecond (network file systems,
    ext4 without a journal after many deletions), the log was a third of a short step's
    file-system work.

    Args:
        step_dir: The step's folder (the log goes in it).
    """

    def __init__(self, step_dir: Path) -> None:
        self.step_dir = step_dir
        self.rows: list[tuple[Any, ...]] = []
        self._file: IO[bytes] | None = None
        self._created = False  # the log file exists (compact() deletes it)
        self._closed = False  # close()d: flush() writes nothing more
        self._logged = 0  # rows[:_logged] are in the log
        self._due: float | None = None

    @property
    def due(self) -> float | None:
        """``time.monotonic()`` by which the rows not yet in the log must be (``None``: none)."""
        return self._due

    def append(self, row: tuple[Any, ...]) -> None:
        """Add a row (a tuple in :data:`schema.COLUMNS` order)."""
        self.append_op(row[0], row[1], row[2], row[3], row[17], row[18], [row[4:17]], row[19])

    def append_op(
        self,
        index: int,
        op: str,
        direction: str,
        module_path: str,
        grad_fn: str | None,
        stack: str | None,
        tails: Sequence[tuple[Any, ...]],
        args: str | None = None,
    ) -> None:
        """Add the rows of one op: ``tails`` hold the columns from ``tensor`` to ``data``."""
        if self._due is None:
            self._due = time.monotonic() + LOG_SECS
        self.rows.extend(
            (index, op, direction, module_path, *t, grad_fn, stack, args) for t in tails
        )

    def flush(self) -> None:
        """Write the rows not yet in the log (the OS has them; no fsync)."""
        rows, start = self.rows, self._logged
        if start < len(rows) and not self._closed:
            if self._file is None:
                self._file = _fs.open_append(self.step_dir / LOG_NAME)
                self._created = True
            lines: list[str] = []
            head_of: tuple[Any, ...] = ()
            head = tail = ""
            for row in rows[start:]:
                if row[:4] != head_of[:4] or row[17:] != head_of[17:]:  # a new op
                    head_of = row
                    head, tail = _op_parts(*row[:4], *row[17:20])
                lines.append(head + _row_part(row[4:17]) + tail)
            self._file.write("".join(lines).encode())
            self._file.flush()
            self._logged = len(rows)
        self._due = None

    def close(self) -> None:
        """Flush and close the log (the rows stay in memory)."""
        if not self._closed:
            try:
                self.flush()
            finally:
                self._closed = True
                f, self._file = self._file, None
                if f is not None:
                    f.close()

    def abandon(self) -> None:
        """Close the log after an error: write what is pending if the disk still takes it."""
        with contextlib.suppress(OSError):
            self.close()
        self._closed = True
        self._file = None

    def compact(self) -> None:
        """Write ``ops.parquet`` from the rows in memory, then drop the log.

        Rows still pending are written to the log only if the Parquet file cannot be.
        """
        try:
            compact(self.step_dir, self.rows, log=self._created)
        except BaseException:
            self.abandon()
            raise
        self._closed = True
        f, self._file = self._file, None
        if f is not None:
            f.close()


def has_table(step_dir: _fs.AnyPath) -> bool:
    """Whether a step folder holds an op table (Parquet or log)."""
    return _fs.exists(step_dir / PARQUET_NAME) or _fs.exists(step_dir / LOG_NAME)


def table_file(step_dir: _fs.AnyPath) -> _fs.AnyPath:
    """The file :func:`read_rows` reads: the Parquet file when present, else the log."""
    parquet = step_dir / PARQUET_NAME
    return parquet if _fs.exists(parquet) else step_dir / LOG_NAME


def read_rows(step_dir: _fs.AnyPath) -> list[dict[str, Any]]:
    """Rows of a step's op table: the Parquet file when present, else the log.

    The Parquet file's schema is checked first: every column of :data:`schema.COLUMNS` it
    has must have its type (``list<int64>`` for ``shape``, ``int64`` and ``double`` for the
    numbers, strings for the rest), and the identity columns must be there.
    """
    columns = read_columns(step_dir)
    if columns is not None:
        names = list(columns)
        return [
            dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)
        ]
    log = step_dir / LOG_NAME
    if _fs.exists(log):
        return read_log(log)
    msg = f"Step folder {str(step_dir)!r}: no op table. Expected {PARQUET_NAME} or {LOG_NAME}."
    raise DumpFormatError(msg)


def read_columns(step_dir: _fs.AnyPath) -> dict[str, list[Any]] | None:
    """The Parquet op table column by column (every column the file has, as Python lists
    of equal length), its schema checked as :func:`read_rows` says; ``None`` when the step
    has no Parquet file (a log, or nothing).

    Columns convert about three times faster than rows (``Table.to_pylist`` builds a dict
    per row), and the reader checks and builds its records from them in one pass.
    """
    parquet = step_dir / PARQUET_NAME
    if not _fs.exists(parquet):
        return None
    pa = lazy_import("pyarrow", extra="parquet", needed_by="the dump reader")
    source = f"Op table {str(parquet)!r}"
    # a URL: the whole (small) table in one GET; a missing object is an InputFileError
    where = (
        pa.BufferReader(_fs.read_bytes(parquet)) if isinstance(parquet, _fs.RemotePath) else parquet
    )
    try:
        table = _read_parquet(where)
        _check_schema(table.schema, source)
        columns: dict[str, list[Any]] = {}
        for name, column in zip(table.column_names, table.columns, strict=True):
            columns[name] = column.to_pylist()  # a repeated name: the last wins, as in rows
    except (pa.ArrowException, OSError, ValueError, MemoryError, IndexError) as exc:
        # a damaged file: pyarrow raises ArrowInvalid, OSError, ArrowNotImplementedError
        # (an unknown encoding or codec), ArrowCapacityError...; none leaves the reader
        why = _check.reason(exc)
        msg = (
            f"{source}: unreadable Parquet ({why}). Expected a file written by "
            "tensorsight; delete it to fall back to ops.jsonl."
        )
        raise DumpFormatError(msg) from None
    return columns


def _read_parquet(path: Any) -> Any:
    """The whole table of the local file ``path`` (a ``pyarrow.Table``), or of a
    ``pyarrow.BufferReader`` holding a remote object's bytes (through ``ParquetFile``).

    Through the reader class that ``pyarrow.parquet.ParquetFile`` opens when pyarrow has
    it: importing ``pyarrow.parquet`` also imports ``pyarrow.fs`` (ssl, the S3, GCS and
    Azure bindings), a twentieth of the CPU of a comparison of two small dumps, for a
    local file that needs none of it. ``ParquetFile``, not ``read_table``, otherwise:
    ``read_table`` goes through ``pyarrow.dataset``, whose import pulls in pandas.
    """
    if isinstance(path, Path):  # bytes in memory go to the public class
        try:  # what ParquetFile wraps (pyarrow >= 1)
            reader = importlib.import_module("pyarrow._parquet").ParquetReader()
            opened = False
            try:
                reader.open(str(path))
                opened = True
                return reader.read_all()
            finally:
                if opened:
                    reader.close()
        except (ImportError, AttributeError, TypeError):
            pass  # a pyarrow that moved or changed its private class: the public one below
    pq = lazy_import("pyarrow.parquet", extra="parquet", needed_by="the dump reader")
    with pq.ParquetFile(path) as pf:
        return pf.read()


_IDENTITY = ("index", "op", "direction", "tensor", "shape", "dtype")


def _check_schema(got: Any, source: str) -> None:
    """Raise DumpFormatError unless ``got`` (a pyarrow schema) has the op table's types."""
    want = _schema()
    for name in _IDENTITY:
        if got.get_field_index(name) < 0:
            msg = f"{source}: no column {name!r}. Expected the columns {', '.join(COLUMNS)}."
            raise DumpFormatError(msg)
    for f in got:
        i = want.get_field_index(f.name)
        if i < 0:
            continue  # a column a newer writer added: ignored
        expected = want.field(i).type
        if not _same_type(f.type, expected):
            msg = f"{source}: column {f.name[:80]!r} is {f.type}. Expected {expected}."
            raise DumpFormatError(msg)


def _same_type(got: Any, want: Any) -> bool:
    """Whether a column's type reads as ``want`` (list field names and nullability aside;
    an all-null column has type null)."""
    pa = lazy_import("pyarrow", extra="parquet", needed_by="the dump reader")
    if pa.types.is_null(got) or got.equals(want):
        return True
    if pa.types.is_list(want):
        return bool(
            (pa.types.is_list(got) or pa.types.is_large_list(got))
            and _same_type(got.value_type, want.value_type)
        )
    if pa.types.is_string(want):
        return bool(pa.types.is_large_string(got))
    return False
