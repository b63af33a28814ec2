"""The shell's header fits at 1280x800 and 1920x1080: one row of tabs, arrows to the tabs that
do not fit, status text never lost."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logs")
    for name in ["baseline", "bf16"]:
        with SummaryWriter(str(logdir / name)) as w:
            for s in range(20):
                w.add_scalar("loss", float(np.exp(-s / 5)), s)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_header_fits_one_row(browser, server, tmp_path: Path, width: int, height: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(server)
        page.wait_for_selector("#tabs button.selected")
        page.wait_for_function("document.getElementById('status').textContent.includes('runs')")
        page.screenshot(path=str(tmp_path / f"header-{width}.png"))

        buttons = page.locator("#tabs button")
        assert buttons.count() >= 10
        tops = {
            round(b["y"]) for b in (buttons.nth(i).bounding_box() for i in range(buttons.count()))
        }
        assert len(tops) == 1, f"tabs wrap onto {len(tops)} rows"
        tabs_box = page.locator("#tabs").bounding_box()
        header_box = page.locator("header").bounding_box()
        first_box = buttons.first.bounding_box()
        assert tabs_box["height"] <= header_box["height"] < 2 * first_box["height"]

        # Tabs that do not fit are announced: an arrow on the side they are hidden, which
        # pages the strip there; none when every tab fits.
        strip = page.locator("#tabs")
        hidden = strip.evaluate("el => el.scrollWidth - el.clientWidth")
        left, right = page.locator("#tabs-left"), page.locator("#tabs-right")
        off = "el => el.classList.contains('off')"
        assert left.evaluate(off)  # at the start nothing is hidden on the left
        if hidden > 1:
            assert not right.evaluate(off), "tabs are hidden but nothing says so"
            assert "more-right" in (page.locator("#tabbar").get_attribute("class") or "")
            for _ in range(20):
                if right.evaluate(off):
                    break
                # not .click(): under load the smooth scroll may end (and hide the arrow)
                # between the check above and the click, which then waits for it forever
                right.dispatch_event("click")
                page.wait_for_timeout(400)  # smooth scrolling
            assert right.evaluate(off), "the right arrow never reached the last tab"
            assert not left.evaluate(off)
            assert strip.evaluate("el => el.scrollLeft") >= hidden - 1
            last = buttons.nth(buttons.count() - 1).bounding_box()
            strip_box = strip.bounding_box()
            assert last["x"] + last["width"] <= strip_box["x"] + strip_box["width"] + 1
            page.screenshot(path=str(tmp_path / f"header-{width}-end.png"))
            left.click()
            page.wait_for_timeout(400)
            assert strip.evaluate("el => el.scrollLeft") < hidden - 1
        else:
            assert right.evaluate(off)

        # Every enabled tab is reachable: scrolled into view and clicked, it becomes selected.
        for i in range(buttons.count()):
            button = buttons.nth(i)
            if button.is_disabled():
                continue
            button.click()
            assert "selected" in (button.get_attribute("class") or "")
            assert button.is_visible()

        status = page.locator("#status")
        text = status.text_content() or ""
        fits = status.evaluate("el => el.scrollWidth <= el.clientWidth")
        assert fits or status.get_attribute("title") == text
        status_box = status.bounding_box()
        assert status_box["x"] + status_box["width"] <= width
    finally:
        context.close()
