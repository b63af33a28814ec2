"""The board while ``tensorsight board`` still reads the logdir (issue 22, 1,000 runs): the
run list comes first with its runs marked "reading", the charts when the read is done, with
no reload of the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorsight import SummaryWriter
from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

RUNS = 45  # more than the legend lists and the downloads show inline


def test_run_list_first_then_charts(page1280, tmp_path: Path):
    for r in range(RUNS):
        with SummaryWriter(str(tmp_path / f"run{r:02d}")) as w:
            for s in range(5):
                w.add_scalar("loss", 1.0 / (s + 1 + r), s)
                w.add_scalar("acc", s / 5, s)
    provider = LogdirProvider(tmp_path, read=False)
    with board_server(provider) as url:
        page = page1280
        page.goto(url + "/#scalars")
        page.wait_for_selector("#run-list li.run .badge.loading")
        assert page.locator("#run-list li.run").count() == RUNS
        page.wait_for_selector("#scalars-message:has-text('Reading the logdir')")
        assert "reading the logdir" in page.locator("#status").inner_text()
        assert page.locator(".scalar-card").count() == 0
        provider.start_reading().join(timeout=60)
        # the page polls often while loading: the charts come without a reload
        page.wait_for_selector(
            f".scalar-card[data-key='loss'] canvas[data-points='{RUNS * 5}']", timeout=20_000
        )
        assert page.locator("#run-list .badge.loading").count() == 0
        assert page.locator("#run-list .badge.active, #run-list .badge.finished").count() == RUNS
        assert "updated" in page.locator("#status").inner_text()
        card = page.locator(".scalar-card[data-key='loss']")
        # 45 series: the legend lists 40 and says how many more; the downloads wait behind
        # a toggle, made when it is opened
        assert card.locator(".legend-item").count() == 40
        assert "and 5 more" in card.locator(".legend-more").inner_text()
        assert card.locator(".dl-csv").count() == 0
        card.locator(".dl-more summary").click()
        # the links are made on the details' toggle event, which fires after the click
        page.wait_for_selector(".scalar-card[data-key='loss'] .dl-csv")
        assert card.locator(".dl-csv").count() == RUNS
        # a selection change updates the rows in place, keeping every row
        page.locator('#run-list input[data-run="run03"]').uncheck()
        page.wait_for_selector(
            f".scalar-card[data-key='loss'] canvas[data-points='{(RUNS - 1) * 5}']"
        )
        assert page.locator("#run-list li.run").count() == RUNS
        shot(page, "board-loading-done")


def test_the_top_chart_draws_the_runs_read_so_far(page1280, tmp_path: Path):
    """A sweep's first chart comes from the first runs read; the rest fill in after."""
    import threading

    for r in range(RUNS):
        with SummaryWriter(str(tmp_path / f"run{r:02d}")) as w:
            for s in range(5):
                w.add_scalar("loss", 1.0 / (s + 1 + r), s)
                w.add_scalar("acc", s / 5, s)
    provider = LogdirProvider(tmp_path, read=False)
    provider._logdir.workers = 1  # one file at a time, in name order
    release = threading.Event()
    make = provider._publisher

    def paused():
        publish = make()

        def call(done):
            publish(done)
            if done == 1:  # the first run is shown; the read waits here until released
                release.wait(60)

        return call

    provider._publisher = paused
    with board_server(provider) as url:
        page = page1280
        page.goto(url + "/#scalars")
        reading = provider.start_reading()
        try:
            # the top chart ("acc") draws run00, the only run read; the page says it reads
            page.wait_for_selector(
                ".scalar-card[data-key='acc'] canvas[data-points='5']", timeout=20_000
            )
            assert provider.loading
            assert "reading the logdir" in page.locator("#status").inner_text()
            # the run list refreshes on its own poll, after or before the chart: wait for it
            page.wait_for_function(
                "n => document.querySelectorAll('#run-list .badge.loading').length === n",
                arg=RUNS - 1,
                timeout=20_000,
            )
            # the other charts wait for the read's end: their requests would slow it
            loss = page.locator(".scalar-card[data-key='loss'] canvas")
            assert loss.get_attribute("data-points") in (None, "0")
            info = page.locator(".scalar-card[data-key='loss'] .chart-info")
            assert info.inner_text() == "drawn when the logdir is read…"
            shot(page, "board-loading-partial")
        finally:
            release.set()
        reading.join(timeout=60)
        for tag in ("acc", "loss"):
            page.wait_for_selector(
                f".scalar-card[data-key='{tag}'] canvas[data-points='{RUNS * 5}']",
                timeout=20_000,
            )
        assert page.locator("#run-list .badge.loading").count() == 0
