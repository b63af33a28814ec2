"""JSON export: the comparison's own codec (:meth:`Comparison.to_json`, spec in ``result.py``)."""

from __future__ import annotations

from pathlib import Path

from tensorsight.compare.report import ReportFormat
from tensorsight.compare.result import Comparison

__all__ = ["FORMAT", "render_json"]


def render_json(comparison: Comparison, path: str | Path | None = None) -> str:
    """:meth:`Comparison.to_json` (the board and ``Comparison.from_json`` read it back)."""
    return comparison.to_json(path)


FORMAT = ReportFormat("json", ".json", render_json, "the whole result; the board reads it")
