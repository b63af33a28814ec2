"""The op table on disk: an append-only JSONL log while a step runs, Parquet once it ends.

A log cut off by a crash keeps every complete line (a partial last line is dropped); a
Parquet file cut off by a crash would be unreadable, which is why it is written only at the
end of a step, under a temporary name, and the log removed only after the rename.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.capture import _fs
from tensorsight.capture.schema import COLUMNS
from tensorsight.errors import DumpFormatError

__all__ = ["LOG_NAME", "PARQUET_NAME", "compact", "read_rows"]

LOG_NAME = "ops.jsonl"
PARQUET_NAME = "ops.parquet"


def _schema() -> Any:
    pa = lazy_import("pyarrow", extra="torch", needed_by="the dump op table")
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
    return pa.schema([(c, types.get(c, s)) for c in COLUMNS])


def read_log(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL log; a cut-off last line is ignored, a corrupt middle line is an error."""
    rows: list[dict[str, Any]] = []
    with _fs.open_read(path) as f:
        lines = f.read().split(b"\n")
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as exc:
            if no == len(lines):  # the last line, without its newline: cut off mid-write
                break
            msg = (
                f"Op table log {str(path)!r}: line {no} is not JSON ({exc}). "
                "Expected one JSON object per line."
            )
            raise DumpFormatError(msg) from exc
    return rows


def compact(step_dir: Path) -> None:
    """Turn ``ops.jsonl`` into ``ops.parquet`` (atomically), then delete the log."""
    log = step_dir / LOG_NAME
    rows = read_log(log) if _fs.exists(log) else []
    pa = lazy_import("pyarrow", extra="torch", needed_by="the dump op table")
    pq = lazy_import("pyarrow.parquet", extra="torch", needed_by="the dump op table")
    schema = _schema()
    columns = {c: [r.get(c) for r in rows] for c in COLUMNS}
    table = pa.table(columns, schema=schema)
    tmp = step_dir / (PARQUET_NAME + ".tmp")
    pq.write_table(table, tmp, compression="zstd")
    tmp.replace(step_dir / PARQUET_NAME)
    _fs.remove(log)


def read_rows(step_dir: Path) -> list[dict[str, Any]]:
    """Rows of a step's op table: the Parquet file when present, else the log."""
    parquet = step_dir / PARQUET_NAME
    if _fs.exists(parquet):
        pq = lazy_import("pyarrow.parquet", extra="torch", needed_by="the dump reader")
        pa = lazy_import("pyarrow", extra="torch", needed_by="the dump reader")
        try:
            table = pq.read_table(parquet)
        except (pa.ArrowInvalid, OSError) as exc:
            msg = (
                f"Op table {str(parquet)!r}: unreadable Parquet ({exc}). "
                "Expected a file written by tensorsight; delete it to fall back to ops.jsonl."
            )
            raise DumpFormatError(msg) from exc
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows
    log = step_dir / LOG_NAME
    if _fs.exists(log):
        return read_log(log)
    msg = f"Step folder {str(step_dir)!r}: no op table. Expected {PARQUET_NAME} or {LOG_NAME}."
    raise DumpFormatError(msg)
