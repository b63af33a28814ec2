"""The text view: the Markdown source of every text record of a tag.

The server sends source text only; the front end renders a safe Markdown subset by
escaping everything first (no raw HTML passes through), and the board's
Content-Security-Policy forbids inline scripts as a second wall.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.views.base import (
    View,
    lookup,
    offload_json,
    require_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["TextView", "series_impl"]


def series_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """Every text record of one tag, in step order."""
    lookup(provider, "text", run, tag)
    return {
        "run": run,
        "tag": tag,
        "records": [
            {"step": r.step, "wall_time": r.wall_time, "text": r.text}
            for r in provider.read_records(run, "text", tag)
        ],
    }


class TextView(View):
    """Text summaries rendered as safe Markdown."""

    name = "text"
    title = "Text"
    kind = "text"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/series", self._series)]

    async def _series(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, series_impl, self.provider, run, tag)
