"""PR curves and custom-scalar layouts in chromium at 1280x800, on torch and tensorboardX logs.

Runs: ``torch`` (torch's SummaryWriter: a PR curve that sharpens over three steps, a layout
with a multiline and a margin chart, and a closed category) and ``tbx`` (tensorboardX: one PR
curve at one step, its own layout category, a loss curve).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorboardX
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

PR_STEPS = (0, 50, 100)


def scores(step: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    labels = rng.integers(0, 2, n)
    sharp = 0.2 + step / 200  # the classifier improves with the step
    pred = np.clip(0.5 + sharp * (labels - 0.5) + rng.normal(0, 0.2, n), 0, 1)
    return labels, pred


def write_logs(logdir):
    with SummaryWriter(str(logdir / "torch")) as w:
        w.add_custom_scalars(
            {
                "Losses": {"train vs eval": ["Multiline", [r"^loss/"]]},
                "Accuracy band": {"acc ± std": ["Margin", ["acc/mean", "acc/low", "acc/high"]]},
            }
        )
        for s in range(60):
            w.add_scalar("loss/train", 2.0 * np.exp(-s / 20) + 0.1, s)
            w.add_scalar("loss/eval", 2.2 * np.exp(-s / 25) + 0.2, s)
            acc = 1 - np.exp(-s / 15)
            w.add_scalar("acc/mean", acc, s)
            w.add_scalar("acc/low", acc - 0.1 * np.exp(-s / 30), s)
            w.add_scalar("acc/high", acc + 0.1 * np.exp(-s / 30), s)
        for s in PR_STEPS:
            labels, pred = scores(s)
            w.add_pr_curve("pr/positive", labels, pred, s)
    with tensorboardX.SummaryWriter(str(logdir / "tbx")) as w:
        w.add_custom_scalars_multilinechart(["loss/train"], category="tbx only", title="tbx loss")
        for s in range(40):
            w.add_scalar("loss/train", 1.5 * np.exp(-s / 10) + 0.4, s)
        labels, pred = scores(7)
        w.add_pr_curve("pr/positive", labels, pred, 20)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("pr_cs_logs")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def card_points(page, selector):
    return int(page.locator(f"{selector} canvas").get_attribute("data-points") or "0")


def test_pr_curves_step_slider_threshold_hover_and_run_selection(page1280, server):
    page = page1280
    page.goto(server + "/#pr_curves")
    card = page.locator('.pr-card[data-tag="pr/positive"]')
    card.wait_for()
    page.wait_for_function("() => document.querySelector('.pr-card')?.dataset.runs === 'tbx|torch'")
    canvas = card.locator("canvas")
    assert canvas.get_attribute("data-series") == "2"
    assert int(canvas.get_attribute("data-points")) == 2 * 127
    # the last step of each run; the threshold ring marks one point per curve
    assert card.get_attribute("data-steps") == "20|100"
    assert canvas.get_attribute("data-highlighted") == "2"
    rows = card.locator(".pr-at tr.pr-row")
    assert rows.count() == 2
    torch_row = card.locator('.pr-at tr.pr-row[data-run="torch"]')
    assert float(torch_row.get_attribute("data-threshold")) == pytest.approx(0.5, abs=0.005)
    p_last = float(torch_row.get_attribute("data-precision"))
    shot(page, "pr_curves_last_step")

    # step slider: back to the first step (union of steps 0, 20, 50, 100)
    slider = card.locator("input.pr-step")
    assert slider.get_attribute("max") == "3"
    slider.fill("0")
    page.wait_for_function("() => document.querySelector('.pr-card')?.dataset.step === '0'")
    # step 0: torch at 0; tbx has nothing at or before 0, so it shows its first curve
    assert card.get_attribute("data-steps") == "20|0"
    p_first = float(torch_row.get_attribute("data-precision"))
    assert p_first < p_last  # the classifier sharpened between step 0 and 100
    assert "0 (4 steps)" in card.locator(".pr-step-label").inner_text()

    # threshold slider moves the marked point along the curve
    thr = card.locator("input.pr-threshold")
    thr.fill("0.9")
    assert card.get_attribute("data-threshold") == "0.90"
    assert float(torch_row.get_attribute("data-threshold")) == pytest.approx(0.9, abs=0.005)
    assert float(torch_row.get_attribute("data-recall")) < 0.5

    # hover: one readout row per run with threshold, precision and recall
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 58 + (box["width"] - 72) * 0.7, box["y"] + 40)
    tooltip = page.locator(".chart-tooltip:not([hidden])")
    tooltip.wait_for()
    tips = tooltip.locator("tr.pr-row")
    assert tips.count() == 2
    assert {tips.nth(i).get_attribute("data-run") for i in range(2)} == {"tbx", "torch"}
    for i in range(2):
        assert abs(float(tips.nth(i).get_attribute("data-recall")) - 0.7) < 0.1
        assert 0 <= float(tips.nth(i).get_attribute("data-threshold")) <= 1
    assert tooltip.locator(".nearest").count() == 1
    shot(page, "pr_curves_hover_step0")
    page.mouse.move(5, 5)

    # run selection: unticking tbx leaves torch alone on the chart
    page.locator('#run-list input[data-run="tbx"]').uncheck()
    page.wait_for_function("() => document.querySelector('.pr-card')?.dataset.runs === 'torch'")
    assert card.locator("canvas").get_attribute("data-series") == "1"


def test_custom_scalars_categories_multiline_and_margin(page1280, server):
    page = page1280
    page.goto(server + "/#custom_scalars")
    cats = page.locator("details.cs-category")
    cats.first.wait_for()
    titles = [cats.nth(i).get_attribute("data-title") for i in range(cats.count())]
    assert titles == ["tbx only", "Losses", "Accuracy band"]
    multi = '.cs-card[data-title="train vs eval"]'
    page.wait_for_function(
        f"() => document.querySelector('{multi}')?.dataset.series === "
        "'tbx/loss/train|torch/loss/eval|torch/loss/train'"
    )
    # the regex matches both torch losses and tbx's loss (all selected runs)
    assert card_points(page, multi) == 60 + 60 + 40
    margin = '.cs-card[data-title="acc ± std"]'
    page.wait_for_function(f"() => document.querySelector('{margin}')?.dataset.series === 'torch'")
    mcanvas = page.locator(f"{margin} canvas")
    assert mcanvas.get_attribute("data-bands") == "60"  # the band spans every step
    assert "tbx lacks acc/mean" in page.locator(f"{margin} .chart-info").inner_text()
    shot(page, "custom_scalars_open")
    page.locator(margin).scroll_into_view_if_needed()
    shot(page, "custom_scalars_margin")

    # fold a category: its charts hide; unfold it: they come back drawn
    losses = page.locator('details.cs-category[data-title="Losses"]')
    losses.locator("summary").click()
    assert losses.get_attribute("open") is None
    assert not page.locator(multi).is_visible()
    page.locator("#cs-collapse").click()
    assert all(cats.nth(i).get_attribute("open") is None for i in range(3))
    shot(page, "custom_scalars_collapsed")
    losses.locator("summary").click()
    page.locator(multi).wait_for(state="visible")
    assert card_points(page, multi) == 160

    # run selection: without torch the margin chart has no band and says why
    page.locator("#cs-expand").click()
    page.locator('#run-list input[data-run="torch"]').uncheck()
    page.wait_for_function(
        "() => [...document.querySelectorAll('details.cs-category')].map(d => d.dataset.title)"
        ".join('|') === 'tbx only'"
    )
    tbx = '.cs-card[data-title="tbx loss"]'
    page.wait_for_function(f"() => document.querySelector('{tbx}')?.dataset.series === 'tbx'")
    assert card_points(page, tbx) == 40
