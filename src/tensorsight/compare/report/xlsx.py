"""XLSX export: frozen header row, verdict cells coloured, autofilter (needs openpyxl)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.compare.report import ReportFormat, cell
from tensorsight.compare.report.csv import header
from tensorsight.compare.result import Comparison

__all__ = ["FORMAT", "VERDICT_FILLS", "render_xlsx"]

VERDICT_FILLS = {"pass": "C6EFCE", "warning": "FFEB9C", "error": "FFC7CE"}


def render_xlsx(comparison: Comparison, path: str | Path) -> Path:
    """Write the comparison as an Excel workbook (sheets ``rows`` and ``summary``)."""
    openpyxl = lazy_import("openpyxl", extra="compare", needed_by="XLSX export")
    styles = lazy_import("openpyxl.styles", extra="compare", needed_by="XLSX export")
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "rows"
    cols = header(comparison)
    ws.append(cols)
    bold = styles.Font(bold=True)
    for c in ws[1]:
        c.font = bold
    verdict_col = cols.index("verdict") + 1
    fills = {
        k: styles.PatternFill(start_color=v, end_color=v, fill_type="solid")
        for k, v in VERDICT_FILLS.items()
    }
    first = comparison.first_divergence_row
    for pos, row in enumerate(comparison.rows):
        data = row.to_dict()
        ws.append([_xl(cell(data.get(c))) for c in cols])
        r = ws.max_row
        ws.cell(row=r, column=verdict_col).fill = fills[row.verdict]
        if pos == first:
            for c in ws[r]:
                c.font = bold
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = ws.dimensions
    summary = wb.create_sheet("summary")
    for line in comparison.summary().splitlines():
        summary.append([line])
    if comparison.header_note:  # INCOMPLETE / NOT COMPARABLE: the workbook opens on it
        ws.title = "rows (INCOMPLETE)" if comparison.incomplete else "rows (NOT COMPARABLE)"
        wb.move_sheet(summary, offset=-1)
        wb.active = 0
    out = Path(path)
    wb.save(out)
    return out


def _xl(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


FORMAT = ReportFormat(
    "xlsx", ".xlsx", render_xlsx, "Excel workbook, verdicts coloured (openpyxl)", binary=True
)
