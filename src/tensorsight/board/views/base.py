"""The :class:`View` base class: one board tab = one backend module + one front-end folder."""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

from tensorsight._wire import json_number
from tensorsight.board.errors import DeadlineExceeded, InvalidArgument, NotFound

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = [
    "WORK_DEADLINE_SECS",
    "FrontendMeta",
    "View",
    "ViewInfo",
    "float_param",
    "int_param",
    "json_number",
    "json_numbers",
    "lookup",
    "offload",
    "offload_json",
    "read_records",
    "record_at_step",
    "require_param",
    "tags_by_kind",
]


# How long one request's work may run before the client gets a 503 (``create_app`` sets it
# per application in ``app.state.work_deadline_secs``).
WORK_DEADLINE_SECS = 30.0

T = TypeVar("T")


async def offload(request: Request, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread, so the event loop keeps serving.

    Every handler whose work grows with the data (table building, filtering, slicing,
    encoding) calls it through here: while one request works, ``/api/runs`` and every other
    route still answer. Past the application's deadline the client gets a 503
    ``deadline_exceeded``; the thread is abandoned and finishes on its own (the work is
    bounded; nothing waits for it).
    """
    import anyio
    import anyio.to_thread

    state = getattr(request, "app", None)
    deadline = getattr(getattr(state, "state", None), "work_deadline_secs", WORK_DEADLINE_SECS)
    call = functools.partial(func, *args, **kwargs)
    with anyio.move_on_after(deadline):
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    msg = (
        f"The request ran past the board's {deadline:g} s deadline; narrow it "
        "(a shorter range, a simpler filter) and try again."
    )
    raise DeadlineExceeded(msg)


async def offload_json(
    request: Request, func: Callable[..., Any], /, *args: Any, **kwargs: Any
) -> Response:
    """:func:`offload`, the JSON encoding of the result included.

    A big body (500 histogram records of 600 buckets: 9 MB, 0.25 CPU-s to encode) encoded
    in the handler would hold the event loop, and with it ``/api/runs``, as long as that.
    """
    from starlette.responses import JSONResponse

    def work() -> Response:
        return JSONResponse(func(*args, **kwargs))

    return await offload(request, work)


@dataclass(frozen=True)
class ViewInfo:
    """How ``GET /api/views`` lists a view (SCHEMA_VERSION 1).

    ``module`` is the URL of the view's front-end ES module when the view ships its own
    (a third-party view), ``None`` when its front end is bundled with the board.
    """

    name: str
    title: str
    enabled: bool
    reason: str = ""
    module: str | None = None

    SCHEMA_VERSION = 1


@dataclass(frozen=True)
class FrontendMeta:
    """Where the shell finds a view's front end (SCHEMA_VERSION 1).

    ``es_module`` ``None`` (the default): the front end is bundled with the board, in
    ``web/src/views/<name>/`` and mapped by ``web/src/views/registry.ts``; every built-in view
    is one. A third-party view sets it to a self-contained JavaScript ES module file that its
    package ships: the board serves that file at ``/views/<name>/index.js``, lists the URL in
    ``GET /api/views`` and the shell imports it. The module exports, like a built-in one,
    ``render(el, ctx)`` returning ``{refresh(reason), dispose()}`` (see CONTRIBUTING.md).
    """

    es_module: Path | None = None

    SCHEMA_VERSION = 1


class View(abc.ABC):
    """A board view: a name, a tab title, routes under ``/api/views/<name>``, a front end.

    Subclasses keep the work in ``*_impl`` methods that take the provider and plain
    arguments and return plain data; their routes only parse parameters and respond.
    """

    name: str = ""
    title: str = ""
    kind: str = ""  # the data kind whose tags enable this view

    def __init__(self, provider: DataProvider) -> None:
        self.provider = provider

    @abc.abstractmethod
    def routes(self) -> Sequence[BaseRoute]:
        """Routes relative to ``/api/views/<name>``."""

    def frontend(self) -> FrontendMeta:
        """Where the shell loads this view's front end (default: bundled with the board)."""
        return FrontendMeta()

    def is_active(self) -> bool:
        """True when some run has data for this view (the tab is shown enabled)."""
        return any(run.tags.get(self.kind) for run in self.provider.list_runs())

    async def _tags(self, request: Request) -> Response:
        """``GET /tags?run=...``: the tags of :attr:`kind` in those runs (all when none); a
        view lists ``Route("/tags", self._tags)`` among its routes."""
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run") or None
        return JSONResponse({"tags": tags_by_kind(self.provider, self.kind, runs)})


def tags_by_kind(
    provider: DataProvider, kind: str, runs: Sequence[str] | None = None
) -> list[dict[str, object]]:
    """Tags of ``kind`` in the given runs (all when ``None``): ``[{tag, runs}]`` sorted by tag."""
    by_tag: dict[str, list[str]] = {}
    wanted = None if runs is None else set(runs)
    for info in provider.list_runs():
        if wanted is not None and info.name not in wanted:
            continue
        for tag in info.tags.get(kind, ()):
            by_tag.setdefault(tag, []).append(info.name)
    return [{"tag": t, "runs": by_tag[t]} for t in sorted(by_tag)]


class _Stepped(Protocol):
    @property
    def step(self) -> int: ...


R = TypeVar("R", bound=_Stepped)


def read_records(
    provider: DataProvider, kind: str, run: str, tag: str, *, what: str
) -> Sequence[Any]:
    """``provider.read_records(run, kind, tag)``, or NotFound for an unknown or empty tag."""
    try:
        records = provider.read_records(run, kind, tag)
    except KeyError:
        msg = f"Run {run[:200]!r} has no {what.lower()} tag {tag[:200]!r}."
        raise NotFound(msg) from None
    if not records:
        msg = f"{what} tag {tag[:200]!r} of run {run[:200]!r} has no records."
        raise NotFound(msg)
    return records


def record_at_step(records: Sequence[R], step: int | None, *, what: str, run: str, tag: str) -> R:
    """The last record at ``step`` (``None``: the last record), or NotFound naming it."""
    if step is None:
        return records[-1]
    found = [r for r in records if r.step == step]
    if not found:
        msg = f"{what} tag {tag[:200]!r} of run {run[:200]!r} has no record at step {step}."
        raise NotFound(msg)
    return found[-1]


def require_param(request: Request, name: str) -> str:
    """A required query parameter, or InvalidArgument."""
    value = request.query_params.get(name)
    if value is None or value == "":
        msg = f"Query parameter {name!r} is required."
        raise InvalidArgument(msg)
    return value


def json_numbers(values: np.ndarray) -> list[float | str]:
    """An array as a JSON list of :func:`json_number`; a Python loop only over non-finite
    entries."""
    out: list[float | str] = np.asarray(values, dtype=np.float64).tolist()
    for i in np.flatnonzero(~np.isfinite(values)).tolist():
        out[i] = json_number(float(values[i]))
    return out


def require_runs(request: Request, limit: int) -> list[str]:
    """The repeated ``run`` query parameter: at least one, at most ``limit``, or InvalidArgument."""
    runs = request.query_params.getlist("run")
    if not runs:
        msg = "Query parameter 'run' is required (repeat it for several runs)."
        raise InvalidArgument(msg)
    if len(runs) > limit:
        msg = (
            f"Query parameter 'run': at most {limit} runs per request, got {len(runs)}. "
            "Split the request."
        )
        raise InvalidArgument(msg)
    return runs


def float_param(request: Request, name: str) -> float | None:
    """An optional finite float query parameter."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        msg = f"Query parameter {name!r}: expected a finite number, got {raw[:40]!r}."
        raise InvalidArgument(msg)
    return value


def int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    """An optional int query parameter within ``[lo, hi]``."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = lo - 1
    if not lo <= value <= hi:
        msg = f"Query parameter {name!r}: expected an integer in [{lo}, {hi}], got {raw[:40]!r}."
        raise InvalidArgument(msg)
    return value


def lookup(provider: DataProvider, kind: str, run: str, tag: str) -> None:
    """Raise NotFound unless ``run`` has ``tag`` of ``kind``."""
    try:
        info = provider.run_info(run)
    except KeyError:
        msg = f"Run {run[:200]!r} does not exist."
        raise NotFound(msg) from None
    if tag not in info.tags.get(kind, ()):
        msg = f"Run {run[:200]!r} has no {kind} tag {tag[:200]!r}."
        raise NotFound(msg)
