"""The scalars view: tags per run, downsampled series per request, full-resolution downloads.

Non-finite values travel as the JSON strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``
(JSON has no literal for them); everything else is a plain number. See
``docs/http_api/scalars.md``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.errors import InvalidArgument
from tensorsight.board.views.base import (
    View,
    float_param,
    int_param,
    json_number,
    json_numbers,
    lookup,
    offload,
    offload_json,
    require_param,
    require_runs,
    tags_by_kind,
)
from tensorsight.data import downsample_indices

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["X_AXES", "ScalarsView", "download_impl", "multi_impl", "series_impl", "tags_impl"]

X_AXES = ("step", "relative", "wall_time")
MAX_WIDTH = 20_000
MAX_RUNS_PER_REQUEST = 500
FIELDS = ("step", "wall_time", "value")


def tags_impl(provider: DataProvider, runs: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Scalar tags of the given runs (all runs when ``None``): ``[{tag, runs}]`` by tag."""
    return tags_by_kind(provider, "scalars", runs)


def series_impl(
    provider: DataProvider,
    run: str,
    tag: str,
    *,
    x_axis: str = "step",
    x_min: float | None = None,
    x_max: float | None = None,
    width: int = 1000,
    fields: Sequence[str] = FIELDS,
) -> dict[str, Any]:
    """One series downsampled to ``width`` pixel buckets over ``[x_min, x_max]``.

    At most ``4 * width`` finite points come back, plus every non-finite point, the last
    point and one neighbour outside each end of the range. ``fields`` picks which of the
    parallel arrays ``step``, ``wall_time``, ``value`` are sent (all by default).
    """
    lookup(provider, "scalars", run, tag)
    series = provider.read_scalars(run, tag)
    n = len(series)
    first_wall = float(series.wall_times.min()) if n else 0.0
    if x_axis == "step":
        x: np.ndarray = series.steps
    elif x_axis == "relative":
        x = series.wall_times - first_wall
    else:
        x = series.wall_times
    idx = downsample_indices(x, series.values, buckets=width, x_min=x_min, x_max=x_max)
    nonfinite = int(np.count_nonzero(~np.isfinite(series.values)))
    out: dict[str, Any] = {
        "run": run,
        "tag": tag,
        "x_axis": x_axis,
        "total_points": n,
        "returned_points": int(idx.size),
        "nonfinite_points": nonfinite,
        "downsampled": bool(idx.size < n),
        "first_wall_time": first_wall,
        "x_extent": [float(x.min()), float(x.max())] if n else None,
    }
    if "step" in fields:
        out["step"] = series.steps[idx].tolist()
    if "wall_time" in fields:
        out["wall_time"] = series.wall_times[idx].tolist()
    if "value" in fields:
        out["value"] = json_numbers(series.values[idx])
    return out


def multi_impl(
    provider: DataProvider,
    runs: Sequence[str],
    tag: str,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """:func:`series_impl` for several runs of one tag (one request per chart)."""
    return [series_impl(provider, run, tag, **kwargs) for run in runs]


def download_impl(provider: DataProvider, run: str, tag: str, fmt: str) -> tuple[str, str]:
    """The full-resolution series as ``(body, media_type)``; ``fmt`` is ``csv`` or ``json``."""
    lookup(provider, "scalars", run, tag)
    series = provider.read_scalars(run, tag)
    if fmt == "json":
        body = json.dumps(
            {
                "run": run,
                "tag": tag,
                "step": series.steps.tolist(),
                "wall_time": series.wall_times.tolist(),
                "value": json_numbers(series.values),
            }
        )
        return body, "application/json"
    buf = io.StringIO()
    buf.write("step,wall_time,value\n")
    for s, w, v in zip(
        series.steps.tolist(), series.wall_times.tolist(), series.values.tolist(), strict=True
    ):
        buf.write(f"{s},{w!r},{json_number(v)}\n")
    return buf.getvalue(), "text/csv; charset=utf-8"


def _safe_filename(*parts: str) -> str:
    name = "_".join(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-.") for p in parts)
    return name[:120] or "series"


class ScalarsView(View):
    """Scalar charts: one per tag, selected runs overlaid."""

    name = "scalars"
    title = "Scalars"
    kind = "scalars"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/series", self._series),
            Route("/multi", self._multi),
            Route("/download", self._download),
        ]

    async def _tags(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run") or None
        return JSONResponse({"tags": await offload(request, tags_impl, self.provider, runs)})

    async def _series(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(
            request, series_impl, self.provider, run, tag, **self._series_args(request)
        )

    def _series_args(self, request: Request) -> dict[str, Any]:
        x_axis = request.query_params.get("x", "step")
        if x_axis not in X_AXES:
            msg = f"Query parameter 'x': expected one of {list(X_AXES)}, got {x_axis[:40]!r}."
            raise InvalidArgument(msg)
        fields = tuple(f for f in request.query_params.get("fields", ",".join(FIELDS)).split(","))
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            msg = (
                f"Query parameter 'fields': unknown field {unknown[0][:40]!r}. "
                f"Expected a comma-separated subset of {list(FIELDS)}."
            )
            raise InvalidArgument(msg)
        return {
            "fields": fields,
            "x_axis": x_axis,
            "x_min": float_param(request, "xmin"),
            "x_max": float_param(request, "xmax"),
            "width": int_param(request, "width", 1000, 1, MAX_WIDTH),
        }

    async def _multi(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        tag = require_param(request, "tag")
        runs = require_runs(request, MAX_RUNS_PER_REQUEST)
        args = self._series_args(request)
        return JSONResponse(
            {"series": await offload(request, multi_impl, self.provider, runs, tag, **args)}
        )

    async def _download(self, request: Request) -> Response:
        from starlette.responses import Response

        run, tag = require_param(request, "run"), require_param(request, "tag")
        fmt = request.query_params.get("format", "csv")
        if fmt not in ("csv", "json"):
            msg = f"Query parameter 'format': expected 'csv' or 'json', got {fmt[:40]!r}."
            raise InvalidArgument(msg)
        body, media = await offload(request, download_impl, self.provider, run, tag, fmt)
        filename = f"{_safe_filename(run, tag)}.{fmt}"
        headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
        return Response(body, media_type=media, headers=headers)
