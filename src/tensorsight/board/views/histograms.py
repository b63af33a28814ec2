"""The histograms view: every record of a tag with its buckets exactly as written.

No rebinning: the front end draws each source bucket as one segment between its edges
(see ``docs/http_api/histograms.md``). ``limit`` may thin the *records* (evenly spaced
steps, the newest always kept); the response says how many exist.

The route encodes its answer with :func:`series_json`, not ``json.dumps``, straight from
the provider's stored arrays (:meth:`DataProvider.sample_histogram_arrays`): a live run's
500 records of 600 buckets were 8 MB of JSON and 75 % of the board's GIL time under load,
spent making a Python float of every bucket and writing each 17-digit edge with
``float.__repr__``. Now a request without ``limit`` gets :data:`LIMIT` records (what the
chart shows), each distinct bucket set is written once per response (writers use one fixed
bucket set, as TensorBoard's default buckets) and each distinct number once
(:func:`_texts`).
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

__all__ = ["LIMIT", "HistogramsView", "series_impl", "series_json"]

# Records sent when the request has no ``limit``: what the chart can show. Its "top" mode
# offsets records over 133 CSS pixels (60 % of a 222-pixel plot), one pixel row apart at
# most on a 1.5x screen; overlaid ("front"), more records only darken the same lines. The
# front end sends its own figure.
LIMIT = 200


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


def series_impl(
    provider: DataProvider, run: str, tag: str, *, limit: int = LIMIT
) -> dict[str, Any]:
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


def _texts(values: np.ndarray) -> list[str]:
    """The JSON text of each value of a float64 array, each distinct value formatted once.

    ``np.unique`` over the values' 64 bits (so ``-0.0`` and each NaN stay apart) finds the
    distinct ones; only they become Python floats and strings. Whole numbers below 2^53 are
    written without ``.0`` (the same number to a JSON parser, fewer bytes); non-finite values
    as :func:`json_number`'s strings.
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    uniq, inverse = np.unique(bits, return_inverse=True)
    texts = []
    for v in uniq.view(np.float64).tolist():
        if v.is_integer() and abs(v) < 2**53:
            texts.append(str(int(v)) if v or math.copysign(1.0, v) > 0 else "-0.0")
        elif math.isfinite(v):
            texts.append(repr(v))
        else:
            texts.append(_dumps(json_number(v)))
    table = np.array(texts, dtype=object)
    out: list[str] = table[inverse.reshape(-1)].tolist()
    return out


def _arrays_json(arrays: Sequence[np.ndarray]) -> list[str]:
    """Each array as a JSON array, from one :func:`_texts` over all of them."""
    if not arrays:
        return []
    sizes = [len(a) for a in arrays]
    texts = _texts(np.concatenate(arrays)) if sum(sizes) else []
    out, at = [], 0
    for n in sizes:
        out.append("[" + ",".join(texts[at : at + n]) + "]")
        at += n
    return out


def series_json(provider: DataProvider, run: str, tag: str, *, limit: int = LIMIT) -> bytes:
    """:func:`series_impl`'s answer as JSON bytes (the same values, written faster; see the
    module docstring)."""
    lookup(provider, "histograms", run, tag)
    total, records = provider.sample_histogram_arrays(run, tag, limit)
    # the edges of a tag repeat from record to record: each distinct bucket set once
    edge_sets: list[np.ndarray] = []
    edge_of: list[int] = []
    for r in records:
        last = edge_sets[-1] if edge_sets else None
        if last is None or not (last is r.edges or np.array_equal(last, r.edges, equal_nan=True)):
            edge_sets.append(r.edges)
        edge_of.append(len(edge_sets) - 1)
    edges = _arrays_json(edge_sets)
    counts = _arrays_json([r.counts for r in records])
    parts = []
    for k, r in enumerate(records):
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
        parts.append(f'{head[:-1]},"edges":{edges[edge_of[k]]},"counts":{counts[k]},{tail[1:]}')
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
            limit=int_param(request, "limit", LIMIT, 2, 100_000),
        )
        return Response(body, media_type="application/json")
