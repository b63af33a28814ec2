"""The PR curves view: precision against recall per run at a chosen step, with thresholds.

Serves ``add_pr_curve`` / ``add_pr_curve_raw`` curves of torch's writer, tensorboardX and
ours. ``GET /curves`` answers one tag for several runs at once: each run's curve at the
newest step at or before ``step`` (the last one when ``step`` is absent), its steps, and the
counts behind every threshold. See ``docs/http_api/pr_curves.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.views.base import (
    View,
    int_param,
    json_numbers,
    offload,
    require_param,
    require_runs,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, PrCurveData

__all__ = ["MAX_RUNS", "MAX_STEPS", "MAX_THRESHOLDS", "PrCurvesView", "curves_impl"]

MAX_RUNS = 64  # runs per request
MAX_THRESHOLDS = 1024  # longer curves are thinned by a stride (torch's writer stops at 127)
MAX_STEPS = 10_000  # steps listed per run (the newest)
FIELDS = (
    ("thresholds", "thresholds"),
    ("precision", "precision"),
    ("recall", "recall"),
    ("true_positives", "true_positives"),
    ("false_positives", "false_positives"),
    ("true_negatives", "true_negatives"),
    ("false_negatives", "false_negatives"),
)


def _at_step(records: Sequence[PrCurveData], step: int | None) -> PrCurveData:
    if step is None:
        return records[-1]
    before = [r for r in records if r.step <= step]
    return before[-1] if before else records[0]


def _curve(run: str, records: Sequence[PrCurveData], step: int | None) -> dict[str, Any]:
    rec = _at_step(records, step)
    n = int(rec.thresholds.size)
    stride = max(1, math.ceil(n / MAX_THRESHOLDS))
    keep = np.arange(0, n, stride)
    if n and keep[-1] != n - 1:
        keep = np.append(keep, n - 1)  # the last threshold (recall's low end) stays
    steps = sorted({r.step for r in records})
    out: dict[str, Any] = {
        "run": run,
        "step": rec.step,
        "wall_time": rec.wall_time,
        "steps": steps[-MAX_STEPS:],
        "num_thresholds": n,
        "downsampled": stride > 1,
    }
    for key, attr in FIELDS:
        out[key] = json_numbers(np.asarray(getattr(rec, attr))[keep])
    return out


def curves_impl(
    provider: DataProvider, tag: str, runs: Sequence[str], step: int | None = None
) -> dict[str, Any]:
    """The curve of ``tag`` in each of ``runs`` at ``step``; runs without the tag are listed.

    Returns:
        ``{"tag", "curves": [curve], "missing": [run]}``; a curve is ``{run, step, wall_time,
        steps, num_thresholds, downsampled, thresholds, precision, recall, true_positives,
        false_positives, true_negatives, false_negatives}`` (parallel arrays, thresholds
        ascending).
    """
    curves = []
    missing = []
    for run in runs:
        try:
            info = provider.run_info(run)
            records = (
                provider.read_records(run, "pr_curves", tag)
                if tag in info.tags.get("pr_curves", ())
                else []
            )
        except KeyError:
            records = []
        if not records:
            missing.append(run)
            continue
        curves.append(_curve(run, records, step))
    return {"tag": tag, "curves": curves, "missing": missing}


class PrCurvesView(View):
    """Precision-recall curves per tag: runs overlaid, a step slider, a threshold readout."""

    name = "pr_curves"
    title = "PR Curves"
    kind = "pr_curves"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/curves", self._curves)]

    async def _curves(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        tag = require_param(request, "tag")
        runs = require_runs(request, MAX_RUNS)
        raw = request.query_params.get("step")
        step = None if raw in (None, "") else int_param(request, "step", 0, -(2**62), 2**62)
        return JSONResponse(await offload(request, curves_impl, self.provider, tag, runs, step))
