"""The custom scalars view: the user's ``add_custom_scalars`` layout, chart by chart.

``GET /layout`` is the union of the selected runs' layouts (categories and charts by title,
first one wins). A multiline chart asks ``GET /multiline`` with its regular expressions: every
scalar tag of the selected runs that one of them matches (``re.search``, TensorBoard's rule),
downsampled like the scalars view. A margin chart asks ``GET /margin`` with its value, lower
and upper tags: the value series downsampled, the bounds at the same steps. See
``docs/http_api/custom_scalars.md``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.errors import InvalidArgument
from tensorsight.board.views.base import (
    View,
    int_param,
    json_numbers,
    offload,
    require_param,
    require_runs,
)
from tensorsight.board.views.scalars import MAX_WIDTH, X_AXES, series_impl
from tensorsight.data import merge_layouts

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = [
    "MAX_CHARTS",
    "MAX_RUNS",
    "MAX_SERIES",
    "CustomScalarsView",
    "layout_impl",
    "margin_impl",
    "multiline_impl",
]

MAX_CHARTS = 500  # charts in one layout answer (the rest are counted)
MAX_SERIES = 100  # series in one multiline chart (the rest are counted)
MAX_RUNS = 200  # runs per request
MAX_REGEXES = 32
MAX_REGEX_CHARS = 1000


def layout_impl(provider: DataProvider, runs: Sequence[str] | None = None) -> dict[str, Any]:
    """The merged layout of ``runs`` (all when ``None``) that have one.

    Returns:
        ``{"runs": [run with a layout], "categories": [{title, closed, charts: [{title, kind,
        tags, margins: [{value, lower, upper}]}]}], "hidden_charts": n}``.
    """
    wanted = None if runs is None else set(runs)
    layouts = []
    have = []
    for info in provider.list_runs():
        if (wanted is not None and info.name not in wanted) or not info.tags.get("custom_scalars"):
            continue
        try:
            layouts.append(provider.read_scalar_layout(info.name))
        except KeyError:
            continue
        have.append(info.name)
    merged = merge_layouts(layouts)
    budget = MAX_CHARTS
    hidden = 0
    categories = []
    for cat in merged.categories:
        shown = cat.charts[: max(0, budget)]
        hidden += len(cat.charts) - len(shown)
        budget -= len(shown)
        charts = [
            {
                "title": c.title,
                "kind": c.kind,
                "tags": list(c.tags),
                "margins": [
                    {"value": m.value, "lower": m.lower, "upper": m.upper} for m in c.margins
                ],
            }
            for c in shown
        ]
        categories.append({"title": cat.title, "closed": cat.closed, "charts": charts})
    return {"runs": have, "categories": categories, "hidden_charts": hidden}


def multiline_impl(
    provider: DataProvider,
    patterns: Sequence[str],
    runs: Sequence[str],
    *,
    x_axis: str = "step",
    width: int = 1000,
) -> dict[str, Any]:
    """Every scalar tag of ``runs`` matched by one of ``patterns``, downsampled to ``width``.

    Returns:
        ``{"series": [scalars series + tag], "matched": n, "truncated": n, "invalid":
        [{pattern, error}]}``; series are ordered by run, then tag.
    """
    compiled = []
    invalid = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            invalid.append({"pattern": p, "error": str(exc)})
    pairs: list[tuple[str, str]] = []
    for run in runs:
        try:
            tags = provider.run_info(run).tags.get("scalars", ())
        except KeyError:
            continue
        pairs.extend((run, t) for t in sorted(tags) if any(c.search(t) for c in compiled))
    series = [
        series_impl(provider, run, tag, x_axis=x_axis, width=width)
        for run, tag in pairs[:MAX_SERIES]
    ]
    return {
        "series": series,
        "matched": len(pairs),
        "truncated": max(0, len(pairs) - MAX_SERIES),
        "invalid": invalid,
    }


def _at_steps(provider: DataProvider, run: str, tag: str, steps: np.ndarray) -> np.ndarray:
    """``tag``'s value at each of ``steps`` (the last point of a step; NaN where absent)."""
    s = provider.read_scalars(run, tag)
    out = np.full(steps.shape, np.nan)
    if not len(s):
        return out
    order = np.argsort(s.steps, kind="stable")
    sorted_steps = s.steps[order]
    pos = np.searchsorted(sorted_steps, steps, side="right") - 1
    ok = (pos >= 0) & (sorted_steps[np.clip(pos, 0, None)] == steps)
    out[ok] = s.values[order][pos[ok]]
    return out


def margin_impl(
    provider: DataProvider,
    value: str,
    lower: str,
    upper: str,
    runs: Sequence[str],
    *,
    width: int = 1000,
) -> dict[str, Any]:
    """The value tag of each run downsampled to ``width``, with ``lower``/``upper`` at its steps.

    Returns:
        ``{"series": [{run, tag, step, wall_time, value, lower, upper, first_wall_time,
        total_points, returned_points}], "missing": [{run, tags}]}``: a run lacking one of
        the three tags is listed in ``missing`` with the tags it lacks.
    """
    series = []
    missing = []
    for run in runs:
        try:
            have = set(provider.run_info(run).tags.get("scalars", ()))
        except KeyError:
            have = set()
        absent = [t for t in (value, lower, upper) if t not in have]
        if absent:
            missing.append({"run": run, "tags": absent})
            continue
        one = series_impl(provider, run, value, width=width)
        steps = np.asarray(one["step"], dtype=np.int64)
        one["lower"] = json_numbers(_at_steps(provider, run, lower, steps))
        one["upper"] = json_numbers(_at_steps(provider, run, upper, steps))
        series.append(one)
    return {"series": series, "missing": missing}


def _runs(request: Request) -> list[str]:
    return require_runs(request, MAX_RUNS)


class CustomScalarsView(View):
    """The user's chart groups: multiline charts of regex-matched tags and margin charts."""

    name = "custom_scalars"
    title = "Custom Scalars"
    kind = "custom_scalars"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/layout", self._layout),
            Route("/multiline", self._multiline),
            Route("/margin", self._margin),
        ]

    async def _layout(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run") or None
        return JSONResponse(await offload(request, layout_impl, self.provider, runs))

    async def _multiline(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        patterns = request.query_params.getlist("tag_regex")
        if not patterns:
            msg = "Query parameter 'tag_regex' is required (one or more)."
            raise InvalidArgument(msg)
        if len(patterns) > MAX_REGEXES or any(len(p) > MAX_REGEX_CHARS for p in patterns):
            msg = (
                f"Query parameter 'tag_regex': at most {MAX_REGEXES} patterns of at most "
                f"{MAX_REGEX_CHARS} characters."
            )
            raise InvalidArgument(msg)
        x_axis = request.query_params.get("x", "step")
        if x_axis not in X_AXES:
            msg = f"Query parameter 'x': expected one of {list(X_AXES)}, got {x_axis[:40]!r}."
            raise InvalidArgument(msg)
        runs = _runs(request)
        width = int_param(request, "width", 1000, 1, MAX_WIDTH)
        return JSONResponse(
            await offload(
                request, multiline_impl, self.provider, patterns, runs, x_axis=x_axis, width=width
            )
        )

    async def _margin(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        tags = [require_param(request, k) for k in ("value", "lower", "upper")]
        runs = _runs(request)
        width = int_param(request, "width", 1000, 1, MAX_WIDTH)
        return JSONResponse(
            await offload(request, margin_impl, self.provider, *tags, runs, width=width)
        )
