"""Loss landscapes: a 2-D grid of loss values, optionally with the training path over it.

Spec (docs/formats/summaries.md, "landscapes"): plugin ``tensorsight.landscape``, a DT_STRING
scalar of UTF-8 JSON ``{"version": 1, "x": [...], "y": [...], "values": [[...]...] (row = y
index), "path": [[x, y(, loss)], ...] | null, "metadata": {...}}``; non-finite values are null.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary.kinds._convert import to_numpy
from tensorsight.summary.kinds._json_tensor import finite_or_none, json_value, load_versioned_json
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "LandscapeRecord",
    "decode",
    "decode_landscape",
    "encode",
]

KIND = "landscapes"
PLUGIN_NAME = "tensorsight.landscape"
SCHEMA_VERSION = 1


def encode(
    tag: str,
    values: object,
    x_coords: object,
    y_coords: object,
    path: Sequence[Sequence[float]] | object | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Any:
    """A ``Summary.Value`` holding one landscape.

    Args:
        tag: Series name.
        values: 2-D array, ``values[j][i]`` = loss at ``(x_coords[i], y_coords[j])``.
        x_coords: 1-D coordinates of the columns.
        y_coords: 1-D coordinates of the rows.
        path: Optional training path: points ``(x, y)`` or ``(x, y, loss)`` in order.
        metadata: Optional JSON-serialisable dict (how the grid was made, directions, ...).

    Raises:
        UsageError: Shapes disagree, a path point has the wrong length, or metadata is not JSON.
    """
    grid = to_numpy(values, what=f"Landscape {tag!r} values").astype(np.float64)
    xs = to_numpy(x_coords, what=f"Landscape {tag!r} x_coords").astype(np.float64).reshape(-1)
    ys = to_numpy(y_coords, what=f"Landscape {tag!r} y_coords").astype(np.float64).reshape(-1)
    if grid.ndim != 2 or grid.shape != (ys.size, xs.size) or grid.size == 0:
        msg = (
            f"Landscape {tag!r}: values has shape {tuple(grid.shape)}. Expected "
            f"(len(y_coords), len(x_coords)) = ({ys.size}, {xs.size}), non-empty."
        )
        raise UsageError(msg)
    points = None
    if path is not None:
        array = to_numpy(path, what=f"Landscape {tag!r} path").astype(np.float64)
        if array.ndim != 2 or array.shape[1] not in (2, 3):
            msg = (
                f"Landscape {tag!r}: path has shape {tuple(array.shape)}. Expected a list of "
                "(x, y) or (x, y, loss) points."
            )
            raise UsageError(msg)
        points = [[finite_or_none(v) for v in row] for row in array.tolist()]
    meta = dict(metadata or {})
    try:
        json.dumps(meta, allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = f"Landscape {tag!r}: metadata is not JSON-serialisable ({exc}). Expected a JSON dict."
        raise UsageError(msg) from exc
    payload = {
        "version": SCHEMA_VERSION,
        "x": [finite_or_none(v) for v in xs.tolist()],
        "y": [finite_or_none(v) for v in ys.tolist()],
        "values": [[finite_or_none(v) for v in row] for row in grid.tolist()],
        "path": points,
        "metadata": meta,
    }
    return json_value(tag, PLUGIN_NAME, payload)


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class LandscapeRecord:
    """A loss landscape on a grid: ``values[i, j]`` is the loss at ``(x[j], y[i])``.

    Non-finite losses are NaN. ``path`` is an ``(n, 2)`` or ``(n, 3)`` array of the training
    path (x, y[, loss]) or ``None``; ``metadata`` holds whatever else the writer stored.
    """

    step: int
    wall_time: float
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    values: NDArray[np.float64]
    path: NDArray[np.float64] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


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


def decode(raw: Raw) -> list[LandscapeRecord]:
    """A ``tensorsight.landscape`` value (the JSON payload in a string scalar)."""
    _, _, arr = decode_tensor(raw.tensor)
    payload = bytes(arr.reshape(-1)[0])
    return [decode_landscape(payload, step=raw.step, wall_time=raw.wall_time, tag=raw.tag)]


SPEC = Kind(KIND, LandscapeRecord, PLUGIN_NAME, decode)
