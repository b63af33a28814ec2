"""Loss landscapes: a 2-D grid of loss values, optionally with the training path over it.

Spec (docs/formats/summaries.md, "landscapes"): plugin ``tensorsight.landscape``, a DT_STRING
scalar of UTF-8 JSON ``{"version": 1, "x": [...], "y": [...], "values": [[...]...] (row = y
index), "path": [[x, y(, loss)], ...] | null, "metadata": {...}}``; non-finite values are null.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorsight.errors import UsageError
from tensorsight.summary.kinds._convert import to_numpy
from tensorsight.summary.kinds._json_tensor import finite_or_none, json_value

__all__ = ["KIND", "PLUGIN_NAME", "SCHEMA_VERSION", "encode"]

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
