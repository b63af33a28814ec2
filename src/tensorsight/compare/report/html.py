"""Standalone HTML report: summary, advice and a sortable, filterable table, no network."""

from __future__ import annotations

import html
import math
from pathlib import Path

from tensorsight.compare.report import ReportFormat, cell
from tensorsight.compare.report.console import render_summary
from tensorsight.compare.report.csv import header
from tensorsight.compare.result import COLUMNS, Comparison

__all__ = ["FORMAT", "render_html"]

_SHOWN = (
    "index",
    "op",
    "module_path",
    "direction",
    "tensor",
    "dtype_bench",
    "dtype_target",
    "cosine",
    "rel_euclidean",
    "max_abs_err",
    "max_ulp",
    "error",
    "budget",
    "error_gain",
    "verdict",
    "reason",
)

_STYLE = """
body{font:13px system-ui,sans-serif;margin:1.5em;color:#222}
pre{background:#f6f6f6;padding:.8em;white-space:pre-wrap}
table{border-collapse:collapse}th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
th{background:#eee;position:sticky;top:0;cursor:pointer}
tr.pass td.v{background:#c6efce}tr.warning td.v{background:#ffeb9c}tr.error td.v{background:#ffc7ce}
tr.first{outline:2px solid #b3261e}
p.note{background:#ffc7ce;padding:.5em;font-weight:bold}
tr.one-sided td.v{background:#eee}
"""

_SCRIPT = """
function filt(v){document.querySelectorAll('tbody tr').forEach(function(r){
 r.style.display=(v==='all'||r.className.split(' ')[0]===v)?'':'none';});}
document.querySelectorAll('th').forEach(function(th,i){th.onclick=function(){
 var tb=th.closest('table').tBodies[0],rows=[].slice.call(tb.rows),asc=th.dataset.asc!=='1';
 th.dataset.asc=asc?'1':'0';rows.sort(function(a,b){var x=a.cells[i].textContent,
 y=b.cells[i].textContent,nx=parseFloat(x),ny=parseFloat(y);
 var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c;});
 rows.forEach(function(r){tb.appendChild(r);});};});
"""


def _fmt(v: object) -> str:
    v = cell(v)
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def render_html(comparison: Comparison, path: str | Path | None = None) -> str:
    """Render the report as one self-contained HTML page; also write it to ``path``.

    The table shows the main columns, each custom metric (``--metric-script``, registered
    metrics) after ``max_ulp``.
    """
    custom = header(comparison)[len(COLUMNS) :]
    at = _SHOWN.index("max_ulp") + 1
    shown = (*_SHOWN[:at], *custom, *_SHOWN[at:])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in shown)
    body = []
    first = comparison.first_divergence_row
    for pos, row in enumerate(comparison.rows):
        data = row.to_dict()
        cls = ("one-sided" if row.one_sided else row.verdict) + (" first" if pos == first else "")
        cells = "".join(
            f"<td{' class=v' if c == 'verdict' else ''}>{html.escape(_fmt(data.get(c)))}</td>"
            for c in shown
        )
        body.append(f'<tr class="{cls}">{cells}</tr>')
    options = "".join(
        f'<option value="{v}">{v}</option>'
        for v in ("all", "error", "warning", "pass", "one-sided")
    )
    note = ""
    if comparison.header_note:
        note = f'<p class="note" id="header-note">{html.escape(comparison.header_note)}</p>'
    doc = (
        "<!doctype html><html><head><meta charset=utf-8>"
        "<title>tensorsight comparison</title>"
        f"<style>{_STYLE}</style></head><body><h1>tensorsight comparison</h1>{note}"
        f"<pre>{html.escape(render_summary(comparison, top=10))}</pre>"
        f'<label>show <select onchange="filt(this.value)">{options}</select></label>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        f"<script>{_SCRIPT}</script></body></html>"
    )
    if path is not None:
        Path(path).write_text(doc, encoding="utf-8")
    return doc


FORMAT = ReportFormat("html", ".html", render_html, "standalone page, sortable table")
