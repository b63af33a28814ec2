"""CSV export: one row per tensor, the columns of :data:`~tensorsight.compare.result.COLUMNS`."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from tensorsight.compare.report import cell
from tensorsight.compare.result import COLUMNS, Comparison

__all__ = ["header", "render_csv"]


def header(comparison: Comparison) -> list[str]:
    """Column names: :data:`COLUMNS` then every custom metric key, in first-seen order."""
    extra: dict[str, None] = {}
    for row in comparison.rows:
        extra.update(dict.fromkeys(row.custom))
    return [*COLUMNS, *extra]


def render_csv(comparison: Comparison, path: str | Path | None = None) -> str:
    """Render the rows as CSV (floats with full precision); also write it to ``path``."""
    cols = header(comparison)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    for row in comparison.rows:
        data = row.to_dict()
        writer.writerow([_text(cell(data.get(c))) for c in cols])
    text = buf.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _text(value: object) -> object:
    if isinstance(value, float):
        return repr(value)
    return value
