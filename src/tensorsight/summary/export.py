"""Export every scalar point of a logdir to CSV or Parquet (``tensorsight export``).

Columns: ``run``, ``tag``, ``step`` (int64), ``wall_time`` (float64), ``value`` (float64),
one row per point, runs and tags sorted, points in file order. CSV writes floats with
Python's shortest round-trip repr (``nan``, ``inf``, ``-inf`` for non-finite values), so
reading the file back gives the exact values. Parquet needs pyarrow.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from dataclasses import dataclass

from tensorsight._lazy import lazy_import
from tensorsight.errors import InputFileError, UsageError
from tensorsight.summary.logdir import Logdir

__all__ = ["FORMATS", "ExportResult", "export_scalars"]

FORMATS = ("csv", "parquet")
COLUMNS = ("run", "tag", "step", "wall_time", "value")


@dataclass(frozen=True)
class ExportResult:
    """Where the export went and how much it wrote."""

    path: str
    format: str
    rows: int
    series: int


def export_scalars(
    logdir: Logdir,
    out: str | os.PathLike[str],
    *,
    format: str | None = None,
    force: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write every scalar point of ``logdir`` to ``out``.

    Args:
        logdir: A loaded :class:`Logdir`.
        out: Output file.
        format: ``"csv"`` or ``"parquet"``; default from the file suffix, else CSV.
        force: Overwrite an existing ``out``.
        progress: Called with the number of series written after each one.

    Raises:
        UsageError: Unknown format, or ``out`` exists and ``force`` is false.
        MissingDependencyError: Parquet without pyarrow.
    """
    path = os.fspath(out)
    fmt = format or ("parquet" if path.endswith((".parquet", ".pq")) else "csv")
    if fmt not in FORMATS:
        msg = f"Export format {fmt!r}: unknown. Expected one of {', '.join(FORMATS)}."
        raise UsageError(msg)
    if os.path.exists(path) and not force:
        msg = (
            f"Output {path!r}: already exists. Expected a new file name. "
            "Pass --force to overwrite it."
        )
        raise UsageError(msg)
    series = [(run, tag) for run in logdir.runs for tag in logdir.tags(run)["scalars"]]
    try:
        if fmt == "csv":
            rows = _write_csv(logdir, series, path, progress)
        else:
            rows = _write_parquet(logdir, series, path, progress)
    except OSError as exc:
        msg = f"Output {path!r}: cannot write it ({exc.strerror or exc}). Check the folder."
        raise InputFileError(msg) from exc
    return ExportResult(path, fmt, rows, len(series))


def _write_csv(
    logdir: Logdir,
    series: list[tuple[str, str]],
    path: str,
    progress: Callable[[int], None] | None,
) -> int:
    rows = 0
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for i, (run, tag) in enumerate(series):
            s = logdir.scalars(run, tag)
            n = len(s)
            w.writerows(
                zip(
                    [run] * n, [tag] * n, s.steps.tolist(), s.wall_times.tolist(),
                    s.values.tolist(), strict=True,
                )
            )  # fmt: skip
            rows += n
            if progress is not None:
                progress(i + 1)
    return rows


def _write_parquet(
    logdir: Logdir,
    series: list[tuple[str, str]],
    path: str,
    progress: Callable[[int], None] | None,
) -> int:
    pa = lazy_import("pyarrow", extra="parquet", needed_by="Parquet export")
    pq = lazy_import("pyarrow.parquet", extra="parquet", needed_by="Parquet export")
    schema = pa.schema(
        [("run", pa.string()), ("tag", pa.string()), ("step", pa.int64()),
         ("wall_time", pa.float64()), ("value", pa.float64())]
    )  # fmt: skip
    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for i, (run, tag) in enumerate(series):
            s = logdir.scalars(run, tag)
            n = len(s)
            table = pa.table(
                {
                    "run": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), [run]),
                    "tag": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), [tag]),
                    "step": s.steps, "wall_time": s.wall_times, "value": s.values,
                }
            )  # fmt: skip
            writer.write_table(table.cast(schema))
            rows += n
            if progress is not None:
                progress(i + 1)
    return rows
