"""An example third-party board view: how many tags each selected run holds per data kind.

The board finds it through the entry point ``tag_counts`` in the group ``tensorsight.views``
(see ``pyproject.toml``); :meth:`TagCountsView.frontend` names the ES module the shell
imports, ``frontend.js`` beside this file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import InvalidArgument, NotFound
from tensorsight.board.views.base import FrontendMeta, View

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

__all__ = ["TagCountsView"]

MAX_RUNS = 1000


class TagCountsView(View):
    """Tag counts per run and data kind, in a table."""

    name = "tag_counts"
    title = "Tag counts"

    def frontend(self) -> FrontendMeta:
        return FrontendMeta(es_module=Path(__file__).with_name("frontend.js"))

    def is_active(self) -> bool:
        return bool(self.provider.list_runs())

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/counts", self._counts)]

    def counts_impl(self, runs: Sequence[str]) -> dict[str, Any]:
        """``{kinds, runs: [{run, counts: {kind: n}}]}`` for ``runs``, in the order given."""
        by_name = {info.name: info for info in self.provider.list_runs()}
        rows = []
        kinds: set[str] = set()
        for run in runs:
            info = by_name.get(run)
            if info is None:
                msg = f"Run {run[:200]!r} does not exist."
                raise NotFound(msg)
            counts = {kind: len(tags) for kind, tags in info.tags.items() if tags}
            kinds.update(counts)
            rows.append({"run": run, "counts": counts})
        return {"kinds": sorted(kinds), "runs": rows}

    async def _counts(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run")
        if len(runs) > MAX_RUNS:
            msg = f"Query parameter 'run': at most {MAX_RUNS} runs, got {len(runs)}."
            raise InvalidArgument(msg)
        return JSONResponse(self.counts_impl(runs))
