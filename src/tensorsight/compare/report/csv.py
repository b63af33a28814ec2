"""CSV export: one row per tensor, the columns of :data:`~tensorsight.compare.result.COLUMNS`."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from tensorsight.compare.report import ReportFormat, cell
from tensorsight.compare.result import COLUMNS, Comparison, _row_values

__all__ = ["FORMAT", "header", "render_csv"]

_NAMES = frozenset(COLUMNS)
_SHAPES = tuple(i for i, c in enumerate(COLUMNS) if c.startswith("shape_"))


def header(comparison: Comparison) -> list[str]:
    """Column names: :data:`COLUMNS` then every custom metric key, in first-seen order."""
    extra: dict[str, None] = {}
    for row in comparison.rows:
        extra.update(dict.fromkeys(k for k in row.custom if k not in _NAMES))
    return [*COLUMNS, *extra]  # a custom key that is a column fills that column


def render_csv(comparison: Comparison, path: str | Path | None = None) -> str:
    """Render the rows as CSV (floats with full precision); also write it to ``path``.

    A comparison that cannot "agree" (incomplete input, not comparable) starts with one
    comment line, ``# INCOMPLETE: <why>`` or ``# NOT COMPARABLE: <why>``.

    The cells are those of :func:`~tensorsight.compare.report.cell` (floats as ``repr``),
    read straight off each row's fields and metrics: a comparison has ~50 columns per row,
    and going through :meth:`OpComparison.get` per cell was most of the report's time.
    """
    cols = header(comparison)
    extra = cols[len(COLUMNS) :]
    lines: list[list[object]] = []
    for row in comparison.rows:
        values = list(_row_values(row).values())
        custom = row.custom
        if custom and not custom.keys().isdisjoint(COLUMNS):  # as get(): custom values win
            values = [custom.get(c, v) for c, v in zip(COLUMNS, values, strict=True)]
        values.extend(custom.get(c) for c in extra)  # a key other rows have: empty here
        # the csv module writes None as "" and a float as its repr ("nan", "inf"): only
        # the shapes (and anything cell() would change) need converting
        for i in _SHAPES:
            if type(values[i]) is tuple:
                values[i] = cell(values[i])
        if custom:
            values = [_text(v) for v in values]
        lines.append(values)
    buf = io.StringIO()
    if comparison.header_note:  # "INCOMPLETE: ..." before the header (read with comment="#")
        buf.write(f"# {comparison.header_note}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    writer.writerows(lines)
    text = buf.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _text(value: object) -> object:
    """:func:`cell`, then floats as their ``repr`` (full precision)."""
    if type(value) is float:
        return "nan" if math.isnan(value) else repr(value)
    if value is None:
        return ""
    return _text(c) if isinstance(c := cell(value), float) else c


FORMAT = ReportFormat("csv", ".csv", render_csv, "one row per tensor, every column")
