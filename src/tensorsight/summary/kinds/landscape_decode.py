"""Decode the ``tensorsight.landscape`` kind (read side).

Payload (the writer's contract): a DT_STRING scalar tensor holding UTF-8 JSON
``{"version": 1, "x": [...], "y": [...], "values": [[...]], "path": [[x, y, loss?]] | null,
"metadata": {}}``; ``values`` rows are indexed by y, ``null`` marks a non-finite loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorsight.summary.kinds._json_tensor import load_versioned_json
from tensorsight.summary.records import LandscapeRecord

__all__ = ["PLUGIN_NAME", "decode_landscape"]

PLUGIN_NAME = "tensorsight.landscape"
SCHEMA_VERSION = 1


def _floats(rows: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=np.float64)


def decode_landscape(payload: bytes, *, step: int, wall_time: float, tag: str) -> LandscapeRecord:
    """Parse one landscape JSON payload.

    Raises:
        ValueError: The payload is not the documented JSON.
        SchemaVersionError: ``version`` is newer than this reader knows.
    """
    doc = load_versioned_json(payload, what="Landscape", tag=tag, known=SCHEMA_VERSION)
    x = np.asarray(doc["x"], dtype=np.float64)
    y = np.asarray(doc["y"], dtype=np.float64)
    values = _floats(doc["values"]).reshape(len(y), len(x))
    path = doc.get("path")
    path_arr = None if path is None else _floats(path)
    meta = doc.get("metadata") or {}
    return LandscapeRecord(step, wall_time, x, y, values, path_arr, dict(meta))
