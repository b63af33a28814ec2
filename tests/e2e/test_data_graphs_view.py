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
