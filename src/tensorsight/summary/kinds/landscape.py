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
    """A loss landscape of a tag at one step: ``values[i, j]`` is the loss at ``(x[j], y[i])``.

    What ``Logdir.records(run, "landscapes", tag)`` and the board's data layer
    (``tensorsight.data.LandscapeData`` is this type) return.

    Attributes:
        step: Step.
        wall_time: Seconds since the epoch.
        x: float64 column coordinates (first direction).
        y: float64 row coordinates (second direction).
        values: float64 ``(len(y), len(x))`` losses, NaN where the loss was not finite.
        path: float64 ``(n, 2)`` or ``(n, 3)`` training path ``(x, y[, loss])`` in training
            order, or ``None``.
        metadata: What the writer stored (``directions``, ``span``, MindSpore's
            ``decomposition``/``unit``...).
    """

    step: int
    wall_time: float
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    values: NDArray[np.float64]
    path: NDArray[np.float64] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    SCHEMA_VERSION = 1  # of the record (the payload's is the module's SCHEMA_VERSION)

    @staticmethod
    def from_arrays(
        step: int,
        wall_time: float,
        x: Any,
        y: Any,
        values: Any,
        path: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> LandscapeRecord:
        """Build from array-likes, as read-only float64 arrays (copies).

        Raises:
            ValueError: ``values`` is not ``(len(y), len(x))`` or ``path`` not ``(n, 2|3)``.

        Example:
            >>> LandscapeRecord.from_arrays(0, 0.0, [0, 1], [0], [[1.0, 2.0]]).values.shape
            (1, 2)
        """
        arrays = [np.array(a, dtype=np.float64) for a in (x, y, values)]
        xs, ys, grid = arrays[0].reshape(-1), arrays[1].reshape(-1), arrays[2]
        if grid.shape != (ys.size, xs.size):
            msg = (
                f"Landscape values shape {grid.shape} does not match (len(y), len(x)) = "
                f"({ys.size}, {xs.size})."
            )
            raise ValueError(msg)
        pts = None if path is None else np.array(path, dtype=np.float64)
        if pts is not None and (pts.ndim != 2 or pts.shape[1] not in (2, 3)):
            msg = f"Landscape path shape {pts.shape}: expected (n, 2) or (n, 3) points."
            raise ValueError(msg)
        for a in (xs, ys, grid) + (() if pts is None else (pts,)):
            a.setflags(write=False)
        return LandscapeRecord(int(step), float(wall_time), xs, ys, grid, pts, dict(metadata or {}))


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
