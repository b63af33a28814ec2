"""The data-pipeline view in chromium: a DataLoader chain with its parameter panel."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot
from tests.e2e.graphs_logs import model_board

pytestmark = pytest.mark.browser
__all__ = ["model_board"]


def test_data_pipeline_graph_and_parameters(page, model_board):
    page.goto(model_board + "/#data_graphs")
    page.wait_for_selector("#dg-host[data-loaded]")
    labels = page.locator("#dg-host .box").all_text_contents()
    assert any("TensorDataset" in t for t in labels)
    assert any("RandomSampler" in t for t in labels)
    assert page.locator("#dg-host path.edge").count() >= 3
    page.locator("#dg-host .box[data-id='d:loader']").click()
    panel = page.locator("#dg-panel").inner_text()
    assert "batch_size\t4" in panel
    shot(page, "data-graphs")


def test_mindspore_lineage_dataset_graph(page):
    """The dataset graph of a lineage file MindSpore 2.10.0 wrote (tests/fixtures/mindspore)."""
    from tensorsight.data import LogdirProvider
    from tests.conftest import ROOT
    from tests.e2e.conftest import board_server

    with board_server(LogdirProvider(ROOT / "tests" / "fixtures" / "mindspore")) as url:
        page.goto(url + "/#data_graphs")
        page.wait_for_selector("#dg-host[data-loaded='5']")
        labels = page.locator("#dg-host .box").all_text_contents()
        assert labels == ["Repeat", "Batch", "Shuffle", "Map", "GeneratorDataset"]
        assert page.locator("#dg-host path.edge").count() == 4
        # data flows up: the source is drawn at the top, the outermost op at the bottom
        ys = page.evaluate(
            """() => Object.fromEntries([...document.querySelectorAll('#dg-host .box')].map(
              b => [b.textContent, b.transform.baseVal.consolidate().matrix.f]))"""
        )
        assert ys["GeneratorDataset"] < ys["Map"] < ys["Shuffle"] < ys["Batch"] < ys["Repeat"]
        page.locator("#dg-host .box", has_text="Batch").click()
        panel = page.locator("#dg-panel").inner_text()
        assert "batch_size\t16" in panel
        assert "drop_remainder\ttrue" in panel
        page.locator("#dg-host .box", has_text="Map").click()
        assert "TypeCast" in page.locator("#dg-panel").inner_text()
        shot(page, "data-graphs-mindspore")
