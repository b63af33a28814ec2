"""The tensors view: one tensor of a tag at a step, sliced on the server, with statistics.

A numpy-like slice query selects at most two free dimensions (``"0, 2:5"``, ``"-1, :, ::2"``,
``"..., 0"``); the server answers with at most :data:`MAX_ROWS` x :data:`MAX_COLS` cells
(more are cut off and the response says so), statistics of the whole tensor (min, max,
mean, std over the finite values; NaN, +Inf, -Inf and zero counts) and a histogram of its
finite values. bfloat16/float16 tensors arrive widened to float32 exactly. See
``docs/http_api/tensors.md``.
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
    json_number,
    offload_json,
    read_records,
    record_at_step,
    require_param,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, TensorValue

__all__ = ["MAX_COLS", "MAX_ROWS", "TensorsView", "default_query", "parse_slice", "slice_impl"]

MAX_ROWS = 1000
MAX_COLS = 200
HIST_BINS = 30
_INT = r"[+-]?\d+"
_SLICE_RE = re.compile(rf"^({_INT})?:({_INT})?(?::({_INT})?)?$")


def default_query(ndim: int) -> str:
    """The query the view starts with: the last two dimensions of the first matrix."""
    if ndim == 0:
        return ""
    if ndim == 1:
        return ":"
    return ", ".join(["0"] * (ndim - 2) + [":", ":"])


def _bad(query: str, what: str) -> InvalidArgument:
    return InvalidArgument(f"Slice {query[:80]!r}: {what}")


def parse_slice(query: str, shape: tuple[int, ...]) -> tuple[tuple[int | slice, ...], int]:
    """Parse ``query`` for a tensor of ``shape``: (index tuple, number of free dimensions).

    Raises:
        InvalidArgument: A malformed item, an index out of range, too many items or more
            than two free dimensions; the message names the item and the expected form.
    """
    text = query.strip()
    items = [t.strip() for t in text.split(",")] if text else []
    if items and items[-1] == "" and len(items) > 1:
        items.pop()  # a trailing comma, as numpy allows
    if items.count("...") > 1:
        raise _bad(query, "'...' may appear only once. Expected e.g. '..., 0'.")
    explicit = len(items) - items.count("...")
    if explicit > len(shape):
        msg = (
            f"{explicit} indices for a tensor with {len(shape)} dimensions {list(shape)}. "
            "Expected at most one index per dimension."
        )
        raise _bad(query, msg)
    if "..." in items:
        at = items.index("...")
        items = items[:at] + [":"] * (len(shape) - explicit) + items[at + 1 :]
    items += [":"] * (len(shape) - len(items))
    index: list[int | slice] = []
    free = 0
    for dim, (item, size) in enumerate(zip(items, shape, strict=True)):
        if re.fullmatch(_INT, item):
            i = int(item)
            if not -size <= i < size:
                msg = (
                    f"index {i} is out of range for dimension {dim} of size {size}. "
                    f"Expected {-size} <= index < {size}."
                )
                raise _bad(query, msg)
            index.append(i)
            continue
        m = _SLICE_RE.match(item)
        if m is None:
            msg = (
                f"item {item[:40]!r} of dimension {dim} is neither an integer nor a "
                "start:stop:step slice. Expected e.g. '0, 2:5' or '-1, :'."
            )
            raise _bad(query, msg)
        start, stop, step = (int(g) if g else None for g in m.groups())
        if step == 0:
            raise _bad(query, f"the step of dimension {dim} is 0. Expected a non-zero step.")
        index.append(slice(start, stop, step))
        free += 1
    if free > 2:
        msg = (
            f"selects {free} free dimensions of shape {list(shape)}. Expected at most 2: "
            "fix the others with integers, e.g. '0, :, :'."
        )
        raise _bad(query, msg)
    return tuple(index), free


def _num(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (bytes, np.bytes_)):
        return bytes(v)[:200].decode("utf-8", "replace")
    if isinstance(v, (int, np.integer)):
        return int(v)
    return json_number(float(v))


def stats(values: NDArray[Any]) -> dict[str, Any]:
    """min/max/mean/std over finite values and NaN/+Inf/-Inf/zero counts, plus a histogram."""
    out: dict[str, Any] = {"count": int(values.size)}
    if values.dtype.kind not in "biuf":
        return out
    with np.errstate(invalid="ignore"):  # signalling NaNs raise it when cast
        x = values.astype(np.float64).ravel()
    finite = x[np.isfinite(x)]
    out.update(
        nan_count=int(np.isnan(x).sum()),
        pos_inf_count=int(np.isposinf(x).sum()),
        neg_inf_count=int(np.isneginf(x).sum()),
        zero_count=int((x == 0).sum()),
        finite_count=int(finite.size),
    )
    if finite.size:
        counts, edges = np.histogram(finite, bins=HIST_BINS)
        out.update(
            min=float(finite.min()),
            max=float(finite.max()),
            mean=float(finite.mean()),
            std=float(finite.std()),
            histogram={"edges": edges.tolist(), "counts": counts.tolist()},
        )
    return out


def _records(provider: DataProvider, run: str, tag: str) -> Sequence[TensorValue]:
    return read_records(provider, "tensors", run, tag, what="Tensors")


def steps_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """The steps of a tensors tag with each record's dtype and shape."""
    records = _records(provider, run, tag)
    return {
        "run": run,
        "tag": tag,
        "records": [
            {"step": r.step, "wall_time": r.wall_time, "dtype": r.dtype, "shape": list(r.shape)}
            for r in records
        ],
    }


def slice_impl(
    provider: DataProvider, run: str, tag: str, *, step: int | None = None, query: str | None = None
) -> dict[str, Any]:
    """The record at ``step`` (default: the last), sliced by ``query`` (default: see above)."""
    records = _records(provider, run, tag)
    rec = record_at_step(records, step, what="Tensors", run=run, tag=tag)
    q = default_query(len(rec.shape)) if query is None else query
    index, free = parse_slice(q, rec.shape)
    part = np.asarray(rec.values[index])
    if free == 0:
        part = part.reshape(1, 1)
    elif free == 1:
        part = part.reshape(-1, 1)  # one free dimension: a column
    full_rows, full_cols = part.shape
    cut = part[:MAX_ROWS, :MAX_COLS]
    return {
        "run": run,
        "tag": tag,
        "step": rec.step,
        "wall_time": rec.wall_time,
        "dtype": rec.dtype,
        "shape": list(rec.shape),
        "query": q,
        "free_dims": free,
        "slice_shape": [full_rows, full_cols],
        "truncated": bool(full_rows > MAX_ROWS or full_cols > MAX_COLS),
        "values": [[_num(v) for v in row] for row in cut.tolist()],
        "stats": stats(rec.values),
        "slice_stats": stats(part),
    }


class TensorsView(View):
    """Tensors of ``add_tensor`` (and MindSpore tensor summaries), sliced and summarized."""

    name = "tensors"
    title = "Tensors"
    kind = "tensors"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/steps", self._steps),
            Route("/slice", self._slice),
        ]

    async def _steps(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, steps_impl, self.provider, run, tag)

    async def _slice(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        raw_step = request.query_params.get("step")
        step = None if raw_step in (None, "") else int_param(request, "step", 0, -(2**62), 2**62)
        query = request.query_params.get("q")
        if query is not None and len(query) > 1000:
            msg = "Query parameter 'q': longer than 1000 characters. Expected a short slice."
            raise InvalidArgument(msg)
        return await offload_json(
            request, slice_impl, self.provider, run, tag, step=step, query=query
        )
