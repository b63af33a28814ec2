"""A sweep of more runs than one request may name (issue 22: 1,000 runs): every chart draws
all of them, split into requests within the routes' limits, never an error card."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorsight.data import InMemoryProvider
from tests.e2e.conftest import board_server

pytestmark = pytest.mark.browser

RUNS, TAGS, STEPS = 600, 2, 10  # over the scalar routes' 500 runs per request


@pytest.fixture(scope="module")
def server():
    p = InMemoryProvider()
    steps = np.arange(STEPS)
    for r in range(RUNS):
        for t in range(TAGS):
            values = np.exp(-steps / (r + 1))
            p.add_scalars(f"sweep-{r:04d}", f"loss{t}", steps=steps, values=values)
    with board_server(p) as url:
        yield url


def test_every_selected_run_is_drawn_past_the_per_request_limit(browser, server, tmp_path: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    failed: list[str] = []
    page.on("response", lambda r: r.status < 400 or failed.append(f"{r.status} {r.url[:80]}"))
    try:
        page.goto(server + "/#scalars")
        page.wait_for_selector(f".scalar-card canvas[data-points='{RUNS * STEPS}']", timeout=60_000)
        page.screenshot(path=str(tmp_path / "sweep.png"))
        assert page.locator("#run-list").get_attribute("data-total") == str(RUNS)
        assert page.locator("#run-list .run").count() < 100  # a virtual list: rows in view
        cards = page.locator(".scalar-card")
        assert cards.count() == TAGS
        for i in range(TAGS):
            canvas = cards.nth(i).locator("canvas[data-points]").first
            want = [canvas.element_handle(), str(RUNS * STEPS)]
            page.wait_for_function("([el, n]) => el.dataset.points === n", arg=want)
        assert page.locator(".scalar-card .error-text").count() == 0
        assert failed == []
    finally:
        page.close()
