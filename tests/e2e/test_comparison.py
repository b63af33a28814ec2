"""The comparison view in Debian's chromium, on a planted-bug comparison made by the test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tensorsight.data import LogdirProvider
from tests.conftest import ROOT
from tests.data.test_comparisons import make_comparison_logdir
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

DOC_SHOT = ROOT / "docs" / "images" / "board-comparison.png"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    logdir: Path = tmp_path_factory.mktemp("cmp-e2e")
    make_comparison_logdir(logdir, summaries=True)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def in_viewport(page, selector: str) -> bool:
    box = page.locator(selector).bounding_box()
    vp = page.viewport_size
    return (
        box is not None
        and box["y"] >= 0
        and box["y"] + box["height"] <= vp["height"]
        and box["x"] + box["width"] <= vp["width"]
    )


def test_first_divergence_is_pinned_and_visible_without_scrolling(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-first.diverged .cmp-first-op")
    page.wait_for_selector("#cmp-table tbody tr")
    head = page.locator("#cmp-first").inner_text()
    assert "first divergence" in head.lower()
    assert "scaled by ~1.05" in head  # the advisor's sentence
    assert "Sequential.3.0" in head  # the planted bug: the second Linear's weight
    assert in_viewport(page, "#cmp-first")
    assert page.evaluate("document.querySelector('#content').scrollTop") == 0
    # the first-divergence row is marked in the table, and the colour scale is applied
    assert page.locator("#cmp-table tr.first").count() == 1
    coloured = page.locator('#cmp-table td.metric[data-metric="max_abs_err"]').evaluate_all(
        "tds => tds.filter(td => td.style.background && td.style.background !== 'transparent')"
        ".length"
    )
    assert coloured > 0
    # counts and the module overlay: the bug's scope is coloured as an error
    assert "error" in page.locator("#cmp-counts").inner_text()
    node = page.locator('#cmp-tree .cmp-node[data-path="Sequential.3"]')
    assert node.get_attribute("data-verdict") == "error"
    # both training runs' loss curves, overlaid next to the table
    page.wait_for_selector('#cmp-loss[data-series="2"]')
    assert "loss/train" in page.locator("#cmp-losses").inner_text()
    path = shot(page, "comparison-overview")
    if not DOC_SHOT.exists() or os.environ.get("TENSORSIGHT_UPDATE_SCREENSHOTS"):
        shutil.copyfile(path, DOC_SHOT)


def test_filter_sort_scope_and_direction(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-table tbody tr")
    total = page.locator("#cmp-status").inner_text()
    page.check('#cmp-filters input[data-verdict="error"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr')]"
        ".every(tr => tr.dataset.verdict === 'error')"
    )
    page.uncheck('#cmp-filters input[data-verdict="error"]')
    page.wait_for_function(f"() => document.querySelector('#cmp-status').innerText === {total!r}")
    # sort by max_abs_err, largest first
    page.click('#cmp-table th[data-col="max_abs_err"]')
    page.wait_for_selector('#cmp-table th[data-col="max_abs_err"]:has-text("▼")')
    # backward only
    page.click('#cmp-direction button[data-direction="backward"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr td:nth-child(4)')]"
        ".every(td => td.innerText === 'bwd')"
    )
    page.click('#cmp-direction button[data-direction=""]')
    # click a scope in the module tree: only its rows remain
    page.click('#cmp-tree .cmp-node[data-path="Sequential.3"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody td.module')]"
        ".every(td => td.innerText.startsWith('Sequential.3'))"
    )
    assert "Sequential.3" in page.locator(".cmp-scope").inner_text()
    # colour the tree by a metric
    page.select_option("#cmp-color-by", "max_abs_err")
    page.wait_for_selector('#cmp-tree .cmp-chip[title^="worst max_abs_err"]')
    # metric column chooser: drop cosine
    page.click("#cmp-columns summary")
    page.uncheck('#cmp-columns input[data-metric="cosine"]')
    page.wait_for_function("() => !document.querySelector('#cmp-table th[data-col=\"cosine\"]')")
    page.check('#cmp-columns input[data-metric="cosine"]')
    page.click("#cmp-columns summary")
    shot(page, "comparison-filtered")


def test_drill_down_and_replay(page, server) -> None:
    page.goto(server + "/#comparison")
    page.wait_for_selector("#cmp-first-open")
    page.click("#cmp-first-open")
    page.wait_for_selector("#cmp-detail #cmp-heat")
    detail = page.locator("#cmp-detail")
    assert in_viewport(page, "#cmp-detail .cmp-detail-head")
    assert "statistics" in detail.inner_text().lower()
    assert page.locator("#cmp-worst tbody tr").count() == 10
    assert int(page.locator("#cmp-hist").get_attribute("data-bins")) > 0
    shot(page, "comparison-detail")
    # an op output: replay it on the bench inputs
    page.click("#cmp-detail-close")
    page.fill("#cmp-op", "addmm")
    page.fill("#cmp-module", "3.0")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cmp-table tbody tr')].every(tr =>"
        " tr.querySelector('td.op').innerText.includes('addmm')"
        " && tr.querySelector('td.module').innerText.includes('3.0'))"
    )
    page.locator("#cmp-table tbody tr", has_text="output.0").first.click()
    page.wait_for_selector("#cmp-replay:not([disabled])")
    page.click("#cmp-replay")
    page.wait_for_selector("#cmp-replay-out table")
    assert "does not reproduce" in page.locator("#cmp-replay-out").inner_text()
    assert "error gain" in page.locator("#cmp-gain").inner_text()
    shot(page, "comparison-replay")
