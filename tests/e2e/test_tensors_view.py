"""The tensors view in chromium: a bf16 tensor over steps, sliced, with statistics."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import shot
from tests.e2e.graphs_logs import model_board

pytestmark = pytest.mark.browser
__all__ = ["model_board"]


def test_tensor_slider_slice_query_and_stats(page, model_board):
    page.goto(model_board + "/#tensors")
    page.wait_for_selector("#tensor-table[data-cells]")
    # the last step (2) is shown first: the default slice is the first 6 x 8 matrix
    assert page.locator("#tensor-step-label").inner_text() == "2"
    assert page.input_value("#tensor-query") == "0, :, :"
    assert page.locator("#tensor-table").get_attribute("data-cells") == "48"
    assert "bfloat16[4, 6, 8]" in page.locator("#tensor-meta").inner_text()
    first = page.locator("#tensor-table tbody tr").first.locator("td")
    assert first.nth(0).inner_text() == "NaN"
    assert first.nth(1).inner_text() == "+Inf"
    stats = page.locator("#tensor-stats").inner_text()
    assert "NaN\t1" in stats
    assert "+Inf\t1" in stats
    shot(page, "tensors-step2")

    # the step slider moves to step 0; a numpy-like query with negative indices
    page.locator("#tensor-step").fill("0")
    page.wait_for_function("() => document.querySelector('#tensor-step-label').innerText === '0'")
    page.fill("#tensor-query", "-1, 2:5")
    page.press("#tensor-query", "Enter")
    page.wait_for_function("() => document.querySelector('#tensor-table').dataset.cells === '24'")
    # element [3, 2, 0] of arange/10 in bf16 is 16.0
    assert page.locator("#tensor-table tbody tr").first.locator("td").first.inner_text() == "16"
    shot(page, "tensors-query")

    page.fill("#tensor-query", "0, 9")
    page.press("#tensor-query", "Enter")
    page.wait_for_function(
        "() => document.querySelector('#tensor-error').innerText.includes('out of range')"
    )
    assert "Expected -6 <= index < 6" in page.locator("#tensor-error").inner_text()
