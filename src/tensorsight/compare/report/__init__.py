"""Renderers of a :class:`~tensorsight.compare.result.Comparison`, one format per module.

Each module only turns a finished comparison into text or a file: ``console`` (summary),
``csv``, ``xlsx`` (openpyxl), ``html`` (standalone page) and ``node_data`` (Model Explorer
node data).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["cell"]


def cell(value: Any) -> Any:
    """One value as a report cell: shapes joined, ``None`` empty, floats kept."""
    if value is None:
        return ""
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value
