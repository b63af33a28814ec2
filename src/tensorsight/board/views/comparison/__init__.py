"""The comparison view: results of ``tensorsight.compare`` found under the logdir.

A slice of its own: this module holds the routes and the functions that answer them,
``table.py`` the rows' filtering, sorting, paging and module tree, ``trace.py`` (with
``trace_types.py``) the side-by-side trace, ``detail.py`` one row's drill-down; the data
layer's :class:`ComparisonStore` finds, caches and serves the comparisons (the
``Comparison`` objects, tensor pairs, replays) and keeps the table and trace this view
derives from them (:meth:`ComparisonStore.derived`).

Routes under ``/api/views/comparison`` (spec: ``docs/http_api/comparison.md``):
``/list``, ``/summary``, ``/rows`` (filter, sort, page), ``/tree`` (module hierarchy),
``/trace`` (bench and target op traces side by side), ``/detail`` (one row's tensors from
the dumps) and ``/replay`` (re-run one op). Data comes
from :meth:`DataProvider.comparisons`; non-finite numbers travel as ``"NaN"``,
``"Infinity"``, ``"-Infinity"``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import InvalidArgument, NotFound, PublicError
from tensorsight.board.views.base import (
    View,
    float_param,
    int_param,
    json_number,
    offload_json,
    require_param,
)
from tensorsight.board.views.comparison.detail import DetailLimits, OpDetail, build_detail
from tensorsight.board.views.comparison.table import ModuleNode, RowPage, RowQuery, Table
from tensorsight.board.views.comparison.trace import Trace
from tensorsight.board.views.comparison.trace_types import TraceQuery
from tensorsight.data import VERDICTS
from tensorsight.errors import TensorsightError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.board.views.comparison.trace_types import TracePage, Upstream
    from tensorsight.data import ComparisonStore, DataProvider

__all__ = [
    "MAX_PAGE",
    "CannotReplay",
    "ComparisonView",
    "detail",
    "detail_impl",
    "list_impl",
    "module_tree",
    "replay_impl",
    "rows",
    "rows_impl",
    "summary_impl",
    "table",
    "trace_impl",
    "trace_page",
    "tree_impl",
    "upstream",
]

MAX_PAGE = 1000
MAX_TRACE_PAGE = 1000
MAX_TOGGLES = 1000
FOLDS = ("clean", "none")
MAX_TOP = 200
MAX_CELLS = 128
DIRECTIONS = ("forward", "backward")
MATCHES = ("all", "matched", "unmatched")


class CannotReplay(PublicError):
    """The op of a row cannot be replayed from its dumps (HTTP 422)."""

    http_status = 422
    code = "failed_precondition"


def jsonable(obj: Any) -> Any:
    """Dataclasses, mappings and sequences as JSON values; non-finite floats as strings."""
    if isinstance(obj, float):
        return json_number(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def _store(provider: DataProvider) -> ComparisonStore:
    store = provider.comparisons()
    if store is None:
        msg = "This board serves no comparisons."
        raise NotFound(msg)
    return store


def _check(provider: DataProvider, name: str) -> ComparisonStore:
    store = _store(provider)
    try:
        info = store.info(name)
    except KeyError:
        msg = f"Comparison {name[:200]!r} does not exist."
        raise NotFound(msg) from None
    if info.error is not None:
        msg = f"Comparison {name[:200]!r} cannot be read: {info.error}"
        raise NotFound(msg)
    return store


def table(store: ComparisonStore, name: str) -> Table:
    """The rows of comparison ``name`` with their columnar copies, built on first use and
    kept with the file (:meth:`ComparisonStore.derived`).

    Raises:
        KeyError: Unknown comparison.
    """
    return store.derived(name, "comparison/table", lambda: _new_table(store, name))


def _new_table(store: ComparisonStore, name: str) -> Table:
    comparison = store.comparison(name)
    return Table(comparison.rows, comparison.metrics)


def rows(store: ComparisonStore, name: str, query: RowQuery | None = None) -> RowPage:
    """Filter, sort and page the rows of comparison ``name`` (see :class:`RowQuery`)."""
    return table(store, name).query(query or RowQuery())


def module_tree(
    store: ComparisonStore, name: str, *, metric: str | None = None, direction: str | None = None
) -> ModuleNode:
    """Rows grouped by module hierarchy; each scope carries its worst child's values."""
    higher = metric in store.info(name).higher_is_better
    return table(store, name).module_tree(metric, direction, higher_is_better=higher)


def detail(
    store: ComparisonStore, name: str, position: int, limits: DetailLimits | None = None
) -> OpDetail:
    """Drill-down of one row: both tensors' statistics, error histogram, heatmap, worst
    elements, the op's inputs against its output (error gain) and the advisor's evidence.

    Raises:
        KeyError: Unknown comparison or row.
    """
    t = table(store, name)
    row = t.row(position)

    def load(side: str, max_elements: int) -> tuple[Any, str] | str:
        return store.tensor(name, position, side, max_elements)

    return build_detail(row, position, t, store.info(name), load, limits)


def _row(store: ComparisonStore, name: str, position: int) -> Mapping[str, Any]:
    try:
        return table(store, name).row(position)
    except KeyError:
        msg = f"Comparison {name[:200]!r} has no row {position}."
        raise NotFound(msg) from None


def _trace(store: ComparisonStore, name: str) -> Trace:
    """The trace of comparison ``name``, built on first use and kept with the file."""
    return store.derived(name, "comparison/trace", lambda: Trace(table(store, name).dicts))


def trace_page(store: ComparisonStore, name: str, query: TraceQuery | None = None) -> TracePage:
    """The bench and target op traces side by side, grouped by module (one window).

    Raises:
        KeyError: Unknown comparison, or ``query.at`` names no row.
    """
    return _trace(store, name).page(query or TraceQuery())


def upstream(store: ComparisonStore, name: str, position: int) -> Upstream:
    """Ops that ran on one side only before row ``position``'s op (same rank).

    Raises:
        KeyError: Unknown comparison or row.
    """
    return _trace(store, name).upstream(table(store, name).check(position))


def list_impl(provider: DataProvider) -> dict[str, Any]:
    """Every comparison under the logdir (unreadable ones with ``error``)."""
    store = provider.comparisons()
    infos = store.list() if store is not None else []
    return {"comparisons": [jsonable(i) for i in infos]}


def summary_impl(provider: DataProvider, name: str) -> dict[str, Any]:
    """One comparison: its info, the first divergence row, the ops that ran on one side only
    before it, metric ranges, op names."""
    store = _check(provider, name)
    info = store.info(name)
    first = info.first_divergence
    return {
        "comparison": jsonable(info),
        "first_divergence_row": None if first is None else jsonable(_row(store, name, first)),
        "upstream": None if first is None else jsonable(upstream(store, name, first)),
        "metric_ranges": jsonable(table(store, name).ranges()),
        "ops": table(store, name).distinct("op"),
    }


def rows_impl(provider: DataProvider, name: str, query: RowQuery) -> dict[str, Any]:
    """One page of filtered, sorted rows."""
    store = _check(provider, name)
    try:
        page = rows(store, name, query)
    except KeyError as exc:
        msg = f"Column {str(exc.args[0])[:80]!r} does not exist in comparison {name[:200]!r}."
        raise InvalidArgument(msg) from None
    return jsonable(page)  # type: ignore[no-any-return]


def tree_impl(
    provider: DataProvider, name: str, metric: str | None, direction: str | None
) -> dict[str, Any]:
    """The module hierarchy with worst verdict and metric value per scope."""
    store = _check(provider, name)
    try:
        tree = module_tree(store, name, metric=metric, direction=direction)
    except KeyError:
        msg = f"Metric {str(metric)[:80]!r} does not exist in comparison {name[:200]!r}."
        raise InvalidArgument(msg) from None
    return {"metric": metric, "direction": direction, "tree": jsonable(tree)}


def trace_impl(provider: DataProvider, name: str, query: TraceQuery) -> dict[str, Any]:
    """One window of the side-by-side trace (bench and target ops grouped by module)."""
    store = _check(provider, name)
    try:
        page = trace_page(store, name, query)
    except KeyError:
        msg = f"Comparison {name[:200]!r} has no row {query.at}."
        raise NotFound(msg) from None
    return jsonable(page)  # type: ignore[no-any-return]


def parse_trace_query(request: Request) -> TraceQuery:
    """A :class:`TraceQuery` from the query string (see docs/http_api/comparison.md)."""
    params = request.query_params
    fold = params.get("fold") or "clean"
    if fold not in FOLDS:
        msg = f"Query parameter 'fold': expected one of {', '.join(FOLDS)}, got {fold[:40]!r}."
        raise InvalidArgument(msg)
    raw = params.get("toggle", "")
    parts = [p for p in raw.split(",") if p.strip()]
    if len(parts) > MAX_TOGGLES:
        msg = (
            f"Query parameter 'toggle': {len(parts)} header ids. Expected at most "
            f"{MAX_TOGGLES}; use fold=none to open every header."
        )
        raise InvalidArgument(msg)
    try:
        toggles = frozenset(int(p) for p in parts)
    except ValueError:
        msg = f"Query parameter 'toggle': expected comma-separated integers, got {raw[:40]!r}."
        raise InvalidArgument(msg) from None
    at = None
    if params.get("at"):
        at = int_param(request, "at", 0, 0, 10**9)

    return TraceQuery(
        directions=_choice(request, "direction", DIRECTIONS),
        fold=fold,
        toggles=toggles,
        offset=int_param(request, "offset", 0, 0, 10**9),
        limit=int_param(request, "limit", 200, 1, MAX_TRACE_PAGE),
        at=at,
    )


def detail_impl(
    provider: DataProvider, name: str, position: int, limits: DetailLimits | None = None
) -> dict[str, Any]:
    """The drill-down of one row (tensors read from the dumps, bounded by ``limits``)."""
    store = _check(provider, name)
    _row(store, name, position)
    try:
        found = detail(store, name, position, limits)
    except KeyError:
        msg = f"Comparison {name[:200]!r}: slice index out of range for row {position}."
        raise InvalidArgument(msg) from None
    return jsonable(found)  # type: ignore[no-any-return]


def replay_impl(provider: DataProvider, name: str, position: int) -> dict[str, Any]:
    """Re-run one row's op on the bench inputs in the target dtype and in float64."""
    store = _check(provider, name)
    _row(store, name, position)
    try:
        result = store.replay(name, position)
    except TensorsightError as exc:
        raise CannotReplay(str(exc).split(" (")[0].rstrip(".") + ".") from None
    return jsonable(result)  # type: ignore[no-any-return]


def _choice(request: Request, key: str, allowed: Sequence[str]) -> tuple[str, ...]:
    values = tuple(v for v in request.query_params.getlist(key) if v)
    bad = [v for v in values if v not in allowed]
    if bad:
        msg = f"Query parameter {key!r}: expected one of {', '.join(allowed)}, got {bad[0][:40]!r}."
        raise InvalidArgument(msg)
    return values


def parse_query(request: Request) -> RowQuery:
    """A :class:`RowQuery` from the query string (see docs/http_api/comparison.md)."""
    params = request.query_params
    ranges: dict[str, tuple[float | None, float | None]] = {}
    for key in params:
        prefix, _, column = key.partition(".")
        if prefix in ("min", "max") and column:
            lo, hi = ranges.get(column, (None, None))
            value = float_param(request, key)
            ranges[column] = (value, hi) if prefix == "min" else (lo, value)
    match = params.get("match") or "all"
    if match not in MATCHES:
        msg = f"Query parameter 'match': expected one of {', '.join(MATCHES)}, got {match[:40]!r}."
        raise InvalidArgument(msg)
    ranks = []
    for raw in params.getlist("rank"):
        if not raw.isdigit():
            msg = f"Query parameter 'rank': expected a non-negative integer, got {raw[:40]!r}."
            raise InvalidArgument(msg)
        ranks.append(int(raw))

    return RowQuery(
        verdicts=_choice(request, "verdict", VERDICTS),
        directions=_choice(request, "direction", DIRECTIONS),
        op=params.get("op", "")[:200],
        module=params.get("module", "")[:500],
        module_prefix=params.get("module_prefix"),
        match=match,
        ranks=tuple(ranks),
        ranges=ranges,
        sort=params.get("sort") or None,
        descending=params.get("desc", "") in ("1", "true"),
        offset=int_param(request, "offset", 0, 0, 10**9),
        limit=int_param(request, "limit", 100, 1, MAX_PAGE),
    )


def _limits(request: Request) -> DetailLimits:
    raw = request.query_params.get("slice", "")
    slice_index = None
    if raw:
        try:
            slice_index = tuple(int(p) for p in raw.split(","))
        except ValueError:
            msg = f"Query parameter 'slice': expected comma-separated integers, got {raw[:40]!r}."
            raise InvalidArgument(msg) from None

    return DetailLimits(
        top_n=int_param(request, "top", 20, 0, MAX_TOP),
        heatmap_cells=int_param(request, "cells", 64, 1, MAX_CELLS),
        bins=int_param(request, "bins", 40, 1, 200),
        slice_index=slice_index,
    )


class ComparisonView(View):
    """Comparison results: table, module overlay, drill-down and replay."""

    name = "comparison"
    title = "Comparison"

    def is_active(self) -> bool:
        store = self.provider.comparisons()
        return store is not None and bool(store.list())

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/list", self._list),
            Route("/summary", self._summary),
            Route("/rows", self._rows),
            Route("/tree", self._tree),
            Route("/trace", self._trace),
            Route("/detail", self._detail),
            Route("/replay", self._replay),
        ]

    async def _list(self, request: Request) -> Response:
        return await offload_json(request, list_impl, self.provider)

    async def _summary(self, request: Request) -> Response:
        name = require_param(request, "name")
        return await offload_json(request, summary_impl, self.provider, name)

    async def _rows(self, request: Request) -> Response:
        name = require_param(request, "name")
        return await offload_json(request, rows_impl, self.provider, name, parse_query(request))

    async def _tree(self, request: Request) -> Response:
        name = require_param(request, "name")
        direction = request.query_params.get("direction") or None
        if direction is not None and direction not in DIRECTIONS:
            msg = (
                "Query parameter 'direction': expected forward or backward, "
                f"got {direction[:40]!r}."
            )
            raise InvalidArgument(msg)
        metric = request.query_params.get("metric") or None
        return await offload_json(request, tree_impl, self.provider, name, metric, direction)

    async def _trace(self, request: Request) -> Response:
        name = require_param(request, "name")
        query = parse_trace_query(request)
        return await offload_json(request, trace_impl, self.provider, name, query)

    async def _detail(self, request: Request) -> Response:
        name = require_param(request, "name")
        require_param(request, "row")
        position = int_param(request, "row", 0, 0, 10**9)
        return await offload_json(
            request, detail_impl, self.provider, name, position, _limits(request)
        )

    async def _replay(self, request: Request) -> Response:
        name = require_param(request, "name")
        require_param(request, "row")
        position = int_param(request, "row", 0, 0, 10**9)
        return await offload_json(request, replay_impl, self.provider, name, position)
