"""The computational graph view: the whole graph in a compact form, details per node.

The server sends every node once (name, op, first output dtype and shape, input indices);
the front end builds the scope hierarchy from the ``/``-separated names, lays out only the
expanded part with dagre, and asks ``/node`` for the details of the node you click. See
``docs/http_api/graphs.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import NotFound
from tensorsight.board.views.base import View, offload_json, require_param
from tensorsight.data.readable import auxiliary_nodes

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, ModelGraph

__all__ = ["GraphsView", "graph_impl", "json_value", "load_graph", "node_impl", "split_input"]


def split_input(raw: str) -> tuple[str, bool]:
    """``("name", is_control)`` for an input as written (``^ctrl``, ``name:1``)."""
    control = raw.startswith("^")
    name = raw[1:] if control else raw
    head, sep, tail = name.rpartition(":")
    if sep and tail.isdigit():
        name = head
    return name, control


def json_value(v: Any, depth: int = 0) -> Any:
    """A JSON-safe, size-bounded copy of an attribute value."""
    if v is None or isinstance(v, bool | int | str):
        return v[:500] if isinstance(v, str) else v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, bytes):
        return v[:500].decode("utf-8", "replace")
    if isinstance(v, list | tuple) and depth < 3:
        return [json_value(x, depth + 1) for x in v[:64]]
    if isinstance(v, dict) and depth < 3:
        return {str(k)[:100]: json_value(x, depth + 1) for k, x in list(v.items())[:64]}
    return repr(v)[:200]


def load_graph(provider: DataProvider, run: str, tag: str) -> ModelGraph:
    """The graph, or NotFound naming the run and tag."""
    try:
        return provider.read_graph(run, tag)
    except KeyError:
        msg = f"Run {run[:200]!r} has no graph {tag[:200]!r}."
        raise NotFound(msg) from None


def graph_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """Every node in compact parallel arrays (see the API doc)."""
    g = load_graph(provider, run, tag)
    index = {n.name: i for i, n in enumerate(g.nodes)}
    inputs: list[list[int]] = []
    control: list[list[int]] = []
    for n in g.nodes:
        data: list[int] = []
        ctl: list[int] = []
        for raw in n.inputs:
            name, is_control = split_input(raw)
            j = index.get(name)
            if j is not None:
                (ctl if is_control else data).append(j)
        inputs.append(data)
        control.append(ctl)
    paths = [n.scoped_name for n in g.nodes]
    ops = [n.op for n in g.nodes]
    return {
        "run": run,
        "tag": tag,
        "source": g.source,
        "node_count": len(g.nodes),
        "paths": paths,
        "ops": ops,
        "dtypes": [n.dtypes[0] if n.dtypes else "" for n in g.nodes],
        "shapes": [list(n.shapes[0]) if n.shapes else None for n in g.nodes],
        "inputs": inputs,
        "control": control,
        "auxiliary": auxiliary_nodes(paths, ops, inputs, control),
        "error": g.error,
    }


def node_impl(provider: DataProvider, run: str, tag: str, name: str) -> dict[str, Any]:
    """One node (by name or scoped path): inputs with shapes/dtypes, consumers, attributes."""
    g = load_graph(provider, run, tag)
    by_name = {n.name: n for n in g.nodes}
    node = by_name.get(name)
    if node is None:  # the scoped path (differs from the name for MindSpore)
        node = next((n for n in g.nodes if n.path == name), None)
    if node is None:
        msg = f"Graph {tag[:200]!r} of run {run[:200]!r} has no node {name[:200]!r}."
        raise NotFound(msg)
    ins = []
    for raw in node.inputs:
        src, is_control = split_input(raw)
        p = by_name.get(src)
        ins.append(
            {
                "name": src,
                "op": p.op if p else "",
                "control": is_control,
                "shapes": [list(s) for s in p.shapes] if p else [],
                "dtypes": list(p.dtypes) if p else [],
            }
        )
    outs = [
        {"name": n.name, "op": n.op}
        for n in g.nodes
        if any(split_input(raw)[0] == name for raw in n.inputs)
    ]
    return {
        "name": node.name,
        "path": node.scoped_name,
        "op": node.op,
        "module_path": node.module_path,
        "shapes": [list(s) for s in node.shapes],
        "dtypes": list(node.dtypes),
        "attrs": {str(k): json_value(v) for k, v in sorted(node.attrs.items())},
        "inputs": ins,
        "outputs": outs[:500],
        "output_count": len(outs),
    }


class GraphsView(View):
    """Computational graphs: hierarchical, expandable, searchable."""

    name = "graphs"
    title = "Graphs"
    kind = "graphs"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/graph", self._graph),
            Route("/node", self._node),
        ]

    async def _graph(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, graph_impl, self.provider, run, tag)

    async def _node(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        name = require_param(request, "name")
        return await offload_json(request, node_impl, self.provider, run, tag, name)
