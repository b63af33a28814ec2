"""The data-pipeline graph view: ``add_data_graph`` graphs and MindSpore dataset graphs.

Each record is a small DAG of pipeline stages (datasets, transforms, samplers, the
DataLoader) with a flat parameter object per stage; the front end lays it out with dagre
and shows the parameters of the stage you click. See ``docs/http_api/data_graphs.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import NotFound
from tensorsight.board.views.base import View, offload_json, require_param
from tensorsight.board.views.graphs import json_value

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["DataGraphsView", "graph_impl"]


def graph_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """Every record of a data-graph tag: nodes with JSON-safe params, and edges."""
    try:
        records = provider.read_records(run, "data_graphs", tag)
    except KeyError:
        msg = f"Run {run[:200]!r} has no data graph {tag[:200]!r}."
        raise NotFound(msg) from None
    out = []
    for r in records:
        ids = {str(n.get("id", "")) for n in r.nodes}
        nodes = [
            {
                "id": str(n.get("id", "")),
                "type": str(n.get("type", "")),
                "label": str(n.get("label") or n.get("type") or n.get("id", "")),
                "params": json_value(dict(n.get("params") or {})),
            }
            for n in r.nodes
        ]
        edges = [[a, b] for a, b in r.edges if a in ids and b in ids]
        out.append({"step": r.step, "wall_time": r.wall_time, "nodes": nodes, "edges": edges})
    return {"run": run, "tag": tag, "records": out}


class DataGraphsView(View):
    """Data pipelines as graphs with a parameter panel."""

    name = "data_graphs"
    title = "Data pipeline"
    kind = "data_graphs"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/tags", self._tags), Route("/graph", self._graph)]

    async def _graph(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, graph_impl, self.provider, run, tag)
