"""The histograms view: every record of a tag with its buckets exactly as written.

No rebinning: the front end draws each source bucket as one segment between its edges
(see ``docs/http_api/histograms.md``). ``limit`` may thin the *records* (evenly spaced
steps, the newest always kept); the response says how many exist.

The route encodes its answer with :func:`series_json`, not ``json.dumps``: 500 records of
600 buckets are 600,000 numbers, and writing each 17-digit edge with ``float.__repr__``
took 0.22 s of a 0.3 s request (GIL held: under load every request waits for it). The
edges of a tag repeat from record to record (writers use one fixed bucket set, as
TensorBoard's default buckets), so each distinct value is written once per response.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.views.base import (
    View,
    int_param,
    json_number,
    lookup,
    offload,
    require_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, HistogramRecord

__all__ = ["HistogramsView", "series_impl", "series_json"]


def _num(v: float | None) -> float | str | None:
    return None if v is None else json_number(v)


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


def _dumps(value: Any) -> str:
    # what starlette's JSONResponse writes
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _floats_json(values: Sequence[float], memo: dict[int, str]) -> str:
    """``values`` as a JSON array, written as :func:`_nums` and ``json.dumps`` write them.

    ``memo`` maps a value's 64 bits (so ``-0.0`` and each NaN stay apart) to its text, and
    is shared by every array of one response.
    """
    keys = np.asarray(values, dtype=np.float64).view(np.int64).tolist()
    parts = list(map(memo.get, keys))
    i = -1
    while True:  # the values not in memo yet (few: list.index scans in C)
        try:
            i = parts.index(None, i + 1)
        except ValueError:
            break
        text = memo.get(keys[i])
        if text is None:
            text = memo[keys[i]] = _dumps(_num(values[i]))
        parts[i] = text
    return "[" + ",".join(parts) + "]"  # type: ignore[arg-type]  # no None is left


def series_json(provider: DataProvider, run: str, tag: str, *, limit: int = 500) -> bytes:
    """:func:`series_impl`'s answer as the JSON bytes ``JSONResponse`` would send (the same
    bytes), written in a fraction of the time (see the module docstring)."""
    lookup(provider, "histograms", run, tag)
    total, records = provider.sample_histograms(run, tag, limit)
    memo: dict[int, str] = {}
    parts = []
    for r in records:
        head = _dumps({"step": r.step, "wall_time": r.wall_time})
        tail = _dumps(
            {
                "min": _num(r.min),
                "max": _num(r.max),
                "num": _num(r.num),
                "sum": _num(r.sum),
                "nan_count": r.nan_count,
                "pos_inf_count": r.pos_inf_count,
                "neg_inf_count": r.neg_inf_count,
            }
        )
        parts.append(
            f'{head[:-1]},"edges":{_floats_json(r.edges, memo)},'
            f'"counts":{_floats_json(r.counts, memo)},{tail[1:]}'
        )
    head = _dumps({"run": run, "tag": tag, "total_records": total})
    return f'{head[:-1]},"records":[{",".join(parts)}]}}'.encode()


class HistogramsView(View):
    """Histograms of a tag over steps: "front" (overlay) and "top" (offset) modes."""

    name = "histograms"
    title = "Histograms"
    kind = "histograms"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/series", self._series)]

    async def _series(self, request: Request) -> Response:
        from starlette.responses import Response

        body = await offload(
            request,
            series_json,
            self.provider,
            require_param(request, "run"),
            require_param(request, "tag"),
            limit=int_param(request, "limit", 500, 2, 100_000),
        )
        return Response(body, media_type="application/json")
