"""The histograms view: every record of a tag with its buckets exactly as written.

No rebinning: the front end draws each source bucket as one segment between its edges
(see ``docs/http_api/histograms.md``). ``limit`` may thin the *records* (evenly spaced
steps, the newest always kept); the response says how many exist.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.views.base import (
    View,
    int_param,
    lookup,
    offload_json,
    require_param,
    tags_by_kind,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, HistogramRecord

__all__ = ["HistogramsView", "series_impl"]


def _num(v: float | None) -> float | str | None:
    if v is None or math.isfinite(v):
        return v
    if math.isnan(v):
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def _nums(values: tuple[float, ...]) -> list[float | str | None]:
    # a finite sum means every value is finite (inf and NaN propagate): no per-value check
    if math.isfinite(sum(values)):
        return list(values)
    return [_num(v) for v in values]


def _record(r: HistogramRecord) -> dict[str, Any]:
    return {
        "step": r.step,
        "wall_time": r.wall_time,
        "edges": _nums(r.edges),
        "counts": _nums(r.counts),
        "min": _num(r.min),
        "max": _num(r.max),
        "num": _num(r.num),
        "sum": _num(r.sum),
        "nan_count": r.nan_count,
        "pos_inf_count": r.pos_inf_count,
        "neg_inf_count": r.neg_inf_count,
    }


def series_impl(provider: DataProvider, run: str, tag: str, *, limit: int = 500) -> dict[str, Any]:
    """Histogram records of one tag, thinned to at most ``limit`` evenly spaced records."""
    lookup(provider, "histograms", run, tag)
    total, records = provider.sample_histograms(run, tag, limit)
    return {
        "run": run,
        "tag": tag,
        "total_records": total,
        "records": [_record(r) for r in records],
    }


class HistogramsView(View):
    """Histograms of a tag over steps: "front" (overlay) and "top" (offset) modes."""

    name = "histograms"
    title = "Histograms"
    kind = "histograms"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/series", self._series)]

    async def _tags(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run") or None
        return JSONResponse({"tags": tags_by_kind(self.provider, self.kind, runs)})

    async def _series(self, request: Request) -> Response:
        return await offload_json(
            request,
            series_impl,
            self.provider,
            require_param(request, "run"),
            require_param(request, "tag"),
            limit=int_param(request, "limit", 500, 2, 100_000),
        )
