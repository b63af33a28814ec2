"""Result type for the board's landscapes view: one loss landscape at one step (SCHEMA 1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["LandscapeData"]


@dataclass(frozen=True, eq=False)
class LandscapeData:
    """A loss landscape of a tag at one step: ``values[i, j]`` is the loss at ``(x[j], y[i])``.

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
    metadata: Mapping[str, Any] = field(default_factory=dict)

    SCHEMA_VERSION = 1

    @staticmethod
    def from_arrays(
        step: int,
        wall_time: float,
        x: Any,
        y: Any,
        values: Any,
        path: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> LandscapeData:
        """Build from array-likes, as read-only float64 arrays.

        Example:
            >>> LandscapeData.from_arrays(0, 0.0, [0, 1], [0], [[1.0, 2.0]]).values.shape
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
        return LandscapeData(int(step), float(wall_time), xs, ys, grid, pts, dict(metadata or {}))
