"""The landscapes view: loss landscapes as a contour map with the training path, and in 3-D.

Serves ``add_landscape`` landscapes (and MindSpore ``loss_landscape`` summaries): the grid
of one record with its coordinates, the training path, finite min/max and the steps of the
tag. Grids larger than :data:`MAX_SIDE` per axis are thinned by a stride (the response says
so). See ``docs/http_api/landscapes.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.views.base import (
    View,
    int_param,
    offload_json,
    read_records,
    record_at_step,
    require_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, LandscapeData

__all__ = ["MAX_SIDE", "LandscapesView", "landscape_impl"]

MAX_SIDE = 256


def _f(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _records(provider: DataProvider, run: str, tag: str) -> Sequence[LandscapeData]:
    return read_records(provider, "landscapes", run, tag, what="Landscapes")


def landscape_impl(
    provider: DataProvider, run: str, tag: str, *, step: int | None = None
) -> dict[str, Any]:
    """The landscape at ``step`` (default: the last record) as JSON-ready data."""
    records = _records(provider, run, tag)
    rec = record_at_step(records, step, what="Landscapes", run=run, tag=tag)
    sy = max(1, math.ceil(rec.y.size / MAX_SIDE))
    sx = max(1, math.ceil(rec.x.size / MAX_SIDE))
    values = rec.values[::sy, ::sx]
    finite = values[np.isfinite(values)]
    path = None
    if rec.path is not None:
        path = [[_f(v) for v in row] for row in rec.path.tolist()]
    return {
        "run": run,
        "tag": tag,
        "step": rec.step,
        "wall_time": rec.wall_time,
        "steps": [r.step for r in records],
        "x": [_f(v) for v in rec.x[::sx].tolist()],
        "y": [_f(v) for v in rec.y[::sy].tolist()],
        "values": [[_f(v) for v in row] for row in values.tolist()],
        "shape": [int(rec.y.size), int(rec.x.size)],
        "downsampled": bool(sx > 1 or sy > 1),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
        "nan_count": int(values.size - finite.size),
        "path": path,
        "metadata": dict(rec.metadata),
    }


class LandscapesView(View):
    """Loss landscapes: contour map with the training path, 3-D surface, side by side."""

    name = "landscapes"
    title = "Landscapes"
    kind = "landscapes"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/landscape", self._landscape)]

    async def _landscape(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        raw = request.query_params.get("step")
        step = None if raw in (None, "") else int_param(request, "step", 0, -(2**62), 2**62)
        return await offload_json(request, landscape_impl, self.provider, run, tag, step=step)
