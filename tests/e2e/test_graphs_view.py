"""The graphs view in chromium: a bf16 transformer graph, collapsed, expanded, searched."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot
from tests.e2e.graphs_logs import model_board

pytestmark = pytest.mark.browser
__all__ = ["model_board"]


def test_graph_expand_search_and_node_panel(page, model_board):
    page.goto(model_board + "/#graphs")
    page.wait_for_selector("#graph-host[data-loaded='bf16/graph']")
    host = page.locator("#graph-host")
    # scopes collapsed: input, the two encoder layers and output
    top = page.locator(".box.scope")
    assert sorted(top.all_text_contents())[0].startswith("+ input")
    assert top.count() == 4
    # the two identical encoder layers are marked as a repeated group
    layers = page.locator(".box.scope.repeat")
    assert layers.count() == 2
    assert "1 of 2 identical" in layers.first.text_content()
    collapsed = int(host.get_attribute("data-visible"))
    shot(page, "graphs-collapsed")

    page.locator(".box.scope[data-id='s:layers.0']").dblclick()
    page.wait_for_selector(".cluster[data-id='s:layers.0']")
    assert int(host.get_attribute("data-visible")) > collapsed
    # the scope's panel follows: it offers to collapse it now
    assert page.locator("#graph-expand").inner_text() == "collapse"
    assert "identical siblings\t2" in page.locator("#graph-panel").inner_text()
    shot(page, "graphs-expanded")

    # search by op regex expands to the first hit and opens its panel
    page.fill("#graph-search", "addmm")
    page.press("#graph-search", "Enter")
    page.wait_for_selector("#graph-panel h3")
    panel = page.locator("#graph-panel")
    page.wait_for_function(
        "() => document.querySelector('#graph-panel').innerText.includes('addmm')"
    )
    text = panel.inner_text()
    assert "module path" in text
    assert "bfloat16" in text
    assert page.locator(".box.selected").count() == 1
    shot(page, "graphs-search")

    # zoom with the wheel, then collapse the scope again from its cluster label
    before = float(page.locator(".graph-stage").get_attribute("data-scale"))
    page.mouse.move(500, 400)
    page.mouse.wheel(0, 400)
    page.wait_for_function(
        f"() => Number(document.querySelector('.graph-stage').dataset.scale) < {before}"
    )
    page.locator(".cluster[data-id='s:layers.0'] .cluster-label").click()
    page.wait_for_function(
        f"() => Number(document.querySelector('#graph-host').dataset.visible) === {collapsed}"
    )

    # a bad regex says so
    page.fill("#graph-search", "(")
    page.press("#graph-search", "Enter")
    assert "Invalid regex" in page.locator("#graph-hits").inner_text()
