"""The graphs view on a 20,000-node graph: time to open it and to expand scopes.

Cases (headless chromium through Playwright, Debian's /usr/bin/chromium):

* *open*: from navigating to ``/#graphs`` to the collapsed graph drawn (``#graph-host``
  has ``data-loaded``); includes fetching the compact graph JSON and building the scope
  hierarchy in the page. Goal: < 3 s.
* *unfold x24*: double-click the folded group of the 24 identical layers until the 24 layer
  scopes are drawn.
* *expand layer*: double-click one of the 24 layer scopes until its cluster is drawn.
* *expand big scope*: expand a scope holding 420 ops and 84 parameters (every one laid out).
  Goal: < 300 ms.

Every case ends when the new drawing is in the DOM *and* the browser has painted it (two
animation frames later), so style, layout and paint of the SVG count too.

The graph is synthetic but shaped like the ATen graph of a 24-layer transformer: 24 layer
scopes x (attention, mlp, two norms) with chains of ops, parameters and bf16/fp32 dtypes.
``--quick``: 2 layers (~1,700 nodes). There is no anchor: TensorBoard's and MindInsight's
graph views refuse scopes with more than ~1,500 children, so the goals are absolute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import Harness

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def synthetic_graph(layers: int) -> Any:
    """A ModelGraph of ``layers`` transformer-like layers (~1,000 nodes each)."""
    from tensorsight.data import GraphNodeData, ModelGraph

    nodes: list[GraphNodeData] = [
        GraphNodeData("input/input.0", "IO Node", (), ((8, 512, 1024),), ("float32",))
    ]
    prev = nodes[0].name
    k = 0
    for layer in range(layers):
        for scope, count in (("norm1", 40), ("attn", 420), ("norm2", 40), ("mlp", 330)):
            base = f"layers.{layer}/{scope}"
            module = base.replace("/", ".")
            residual = prev
            for i in range(count):
                op = ("aten::addmm", "aten::_to_copy", "aten::view", "aten::gelu", "aten::add")[
                    i % 5
                ]
                name = f"{base}/{op}_{k}"
                inputs: tuple[str, ...] = (prev,)
                if op == "aten::addmm":  # each linear has its own weight
                    w = f"{base}/weight_{k}"
                    nodes.append(
                        GraphNodeData(w, "Parameter", (), ((1024, 1024),), ("float32",), module)
                    )
                    inputs = (prev, w)
                elif op == "aten::add":  # a residual connection
                    inputs = (prev, residual)
                    residual = name
                dtype = "bfloat16" if op != "aten::add" else "float32"
                nodes.append(
                    GraphNodeData(
                        name, op, inputs, ((8, 512, 1024),), (dtype,), base.replace("/", ".")
                    )
                )
                prev = name
                k += 1
    nodes.append(
        GraphNodeData("output/output.0", "IO Node", (prev,), ((8, 512, 1024),), ("float32",))
    )
    return ModelGraph("bench", "graph", "tensorsight", 0, 0.0, tuple(nodes))


def run(h: Harness) -> None:
    if not Path(CHROMIUM).exists():
        h.note("skipped: /usr/bin/chromium is missing")
        return
    from playwright.sync_api import sync_playwright
    from tests.e2e.conftest import board_server

    from tensorsight.data import InMemoryProvider

    layers = 2 if h.quick else 24
    graph = synthetic_graph(layers)
    provider = InMemoryProvider()
    provider.add_graph(graph)
    h.note(f"{len(graph.nodes)} nodes in {layers} layer scopes; goals: open < 3 s, expand < 300 ms")
    with board_server(provider) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})

        def painted() -> None:
            page.evaluate(
                "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
            )

        def open_graph() -> None:
            page.goto("about:blank")
            page.goto(url + "/#graphs")
            page.wait_for_selector("#graph-host[data-loaded]", timeout=60_000)
            painted()

        def unfold() -> None:
            page.locator(".box[data-id='g:layers.0']").dispatch_event("dblclick")
            page.wait_for_selector(".box[data-id='s:layers.1']", timeout=60_000)
            painted()

        def expand(scope: str) -> None:
            page.locator(f".box[data-id='s:{scope}']").dispatch_event("dblclick")
            page.wait_for_selector(f".cluster[data-id='s:{scope}']", timeout=60_000)
            painted()

        def open_unfolded() -> None:
            open_graph()
            unfold()

        def open_layer() -> None:
            open_unfolded()
            expand("layers.1")

        h.measure("open (collapsed)", open_graph)
        h.measure("unfold x24", unfold, setup=open_graph)
        h.measure("expand layer", lambda: expand("layers.1"), setup=open_unfolded)
        h.measure("expand big scope (420 ops)", lambda: expand("layers.1/attn"), setup=open_layer)
        ms = page.get_attribute("#graph-host", "data-layout-ms")
        dagre = page.get_attribute("#graph-host", "data-dagre-ms")
        h.note(
            f"last redraw in the page: {ms} ms (hierarchy + layout + drawing), layout {dagre} ms"
        )
        browser.close()
