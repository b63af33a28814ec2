"""The board in Debian's chromium, on logs written by the test with torch's SummaryWriter."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import LogdirProvider
from tests.conftest import ROOT
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

README_SHOT = ROOT / "docs" / "images" / "board-scalars.png"


def write_logs(logdir: Path) -> None:
    rng = np.random.default_rng(0)
    steps = np.arange(2000)
    for r, name in enumerate(["baseline", "bf16"]):
        loss = 2.5 * np.exp(-steps / (350 + 150 * r)) + 0.04 * rng.standard_normal(2000) + 0.1
        if name == "bf16":
            loss[1500] = np.nan
            loss[1700] = np.inf
        with SummaryWriter(str(logdir / name)) as w:
            for s in steps.tolist():
                w.add_scalar("loss/train", float(loss[s]), s)
                w.add_scalar("lr", 0.1 * 0.999**s, s)
                if s % 10 == 0:
                    w.add_scalar("accuracy", float(1 - loss[s] / 3), s)
            for s in range(0, 2000, 250):
                w.add_histogram("weights/fc1", rng.standard_normal(2000) * (1 + s / 1000), s)
            for s in range(3):
                img = np.full((3, 8, 12), 60 * s + 40, dtype=np.uint8)
                img[0, :, : 4 * (s + 1)] = 250
                w.add_image("samples", img, s * 100)
            w.add_text(
                "notes",
                "# Run notes\n**bold** `code`\n\n<script>window.__xss = 1</script>"
                '<img src=x onerror="window.__xss = 2">\n\n[bad](javascript:window.__xss=3)',
                0,
            )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("logs")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def card(page, tag):
    return page.locator(f'.scalar-card[data-key="{tag}"]')


def canvas_data(page, tag, key):
    return card(page, tag).locator("canvas").get_attribute(f"data-{key}")


def wait_drawn(page, tag, key, value):
    page.wait_for_function(
        "([tag, key, value]) => document.querySelector("
        '`.scalar-card[data-key="${tag}"] canvas`)?.dataset[key] === value',
        arg=[tag, key, value],
    )


def test_run_list_and_scalars_controls(page, server, tmp_path):
    page.goto(server + "/#scalars")
    page.wait_for_selector('.scalar-card[data-key="loss/train"] canvas[data-points]')
    # run list: both runs, just written (active), 6 tags each
    runs = page.locator("#run-list li.run")
    assert runs.count() == 2
    assert "active 6 tags" in runs.nth(0).inner_text()
    assert page.locator(".scalar-card").count() == 3
    wait_drawn(page, "loss/train", "series", "2")
    # NaN and +Inf of bf16 are markers
    assert canvas_data(page, "loss/train", "nonfinite") == "2"
    # every point: 2000 per run, under the pixel width budget
    info = card(page, "loss/train").locator(".chart-info").inner_text()
    assert "of 4000 points drawn" in info
    # run regex filter and selection
    page.fill("#run-filter", "^bf")
    assert runs.count() == 1
    page.fill("#run-filter", "[")
    assert "invalid" in page.locator(".sidebar .error-text").inner_text()
    page.fill("#run-filter", "")
    page.uncheck('input[type=checkbox][data-run="baseline"]')
    wait_drawn(page, "loss/train", "series", "1")
    page.check('input[type=checkbox][data-run="baseline"]')
    wait_drawn(page, "loss/train", "series", "2")
    # colour
    page.locator('li.run[data-run="bf16"] input[type=color]').evaluate(
        "el => { el.value = '#d62728'; el.dispatchEvent(new Event('input')); }"
    )
    # tag regex
    page.fill("#tag-filter", "^l")
    assert page.locator(".scalar-card").count() == 2
    page.fill("#tag-filter", "")
    # smoothing off and on
    page.locator("#smoothing").fill("0")
    wait_drawn(page, "lr", "smoothed", "false")
    page.locator("#smoothing").fill("0.9")
    wait_drawn(page, "lr", "smoothed", "true")
    # log y
    page.select_option("#y-scale", "log")
    wait_drawn(page, "lr", "ylog", "true")
    page.select_option("#y-scale", "linear")
    wait_drawn(page, "lr", "ylog", "false")
    # x axis modes
    page.select_option("#x-axis", "wall_time")
    page.wait_for_function(
        "() => Number(document.querySelector('.scalar-card[data-key=\"lr\"] canvas')"
        ".dataset.xlo) > 1e9"
    )
    page.select_option("#x-axis", "relative")
    page.wait_for_function(
        "() => Number(document.querySelector('.scalar-card[data-key=\"lr\"] canvas')"
        ".dataset.xlo) < 1e6"
    )
    page.select_option("#x-axis", "step")
    wait_drawn(page, "lr", "xhi", "1999")
    shot(page, "scalars-overview")

    # box-select zoom, twice; step back; restore
    loss = card(page, "loss/train")
    box = loss.locator("canvas").bounding_box()
    x0, y0 = box["x"] + box["width"] * 0.4, box["y"] + 30
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + box["width"] * 0.3, box["y"] + box["height"] - 40, steps=5)
    page.mouse.up()
    page.wait_for_function(
        "() => document.querySelector('.scalar-card[data-key=\"loss/train\"]').dataset.zoom === '1'"
    )
    xlo1 = float(canvas_data(page, "loss/train", "xlo"))
    xhi1 = float(canvas_data(page, "loss/train", "xhi"))
    assert 500 < xlo1 < xhi1 < 1800
    # the zoomed range is re-queried at full resolution: every point inside comes back
    assert "points drawn" in loss.locator(".chart-info").inner_text()
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + box["width"] * 0.2, y0 + 2, steps=3)  # flat box: x-only zoom
    page.mouse.up()
    page.wait_for_function(
        "() => document.querySelector('.scalar-card[data-key=\"loss/train\"]').dataset.zoom === '2'"
    )
    assert float(canvas_data(page, "loss/train", "xhi")) < xhi1
    shot(page, "scalars-zoomed")
    loss.locator(".zoom-back").click()
    page.wait_for_function(
        "() => document.querySelector('.scalar-card[data-key=\"loss/train\"]').dataset.zoom === '1'"
    )
    assert float(canvas_data(page, "loss/train", "xhi")) == pytest.approx(xhi1)
    loss.locator(".zoom-reset").click()
    wait_drawn(page, "loss/train", "xhi", "1999")

    # threshold: two conditions joined by AND, remembered per tag across reloads
    loss.locator(".thr-1").fill("> 1.5")
    loss.locator(".thr-1").dispatch_event("change")
    page.wait_for_function(
        "() => Number(document.querySelector('.scalar-card[data-key=\"loss/train\"]')"
        ".dataset.matched) > 0"
    )
    loss.locator(".thr-2").fill("< 2")
    loss.locator(".thr-2").dispatch_event("change")
    page.wait_for_function(
        "() => Number(document.querySelector('.scalar-card[data-key=\"loss/train\"] canvas')"
        ".dataset.highlighted) > 0"
    )
    # compose two tags with two y axes
    page.select_option("#compose-a", "loss/train")
    page.select_option("#compose-b", "lr")
    page.click("#compose-add")
    composed = page.locator('.scalar-card[data-key="compose:loss/train|lr"]')
    composed.locator("canvas[data-axes='2']").wait_for()
    assert composed.locator("canvas").get_attribute("data-series") == "4"
    composed.scroll_into_view_if_needed()
    page.evaluate("() => document.querySelector('#content').scrollTo(0, 0)")
    path = shot(page, "scalars-controls")
    if not README_SHOT.exists() or os.environ.get("TENSORSIGHT_UPDATE_SCREENSHOTS"):
        README_SHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, README_SHOT)

    both = int(loss.get_attribute("data-matched"))
    loss.locator(".thr-join").select_option("or")
    page.wait_for_function(
        f"() => Number(document.querySelector('.scalar-card[data-key=\"loss/train\"]')"
        f".dataset.matched) > {both}"
    )

    # downloads: full resolution CSV and JSON
    with page.expect_download() as dl:
        card(page, "loss/train").locator(".dl-csv").first.click()
    lines = Path(dl.value.path()).read_text().splitlines()
    assert lines[0] == "step,wall_time,value"
    assert len(lines) == 2001
    with page.expect_download() as dl:
        card(page, "loss/train").locator(".dl-json").nth(1).click()
    assert '"NaN"' in Path(dl.value.path()).read_text()

    page.reload()
    page.wait_for_selector('.scalar-card[data-key="loss/train"] canvas[data-points]')
    assert card(page, "loss/train").locator(".thr-1").input_value() == "> 1.5"
    assert card(page, "loss/train").locator(".thr-join").input_value() == "or"


def test_histograms_images_and_text(page, server):
    page.goto(server + "/#histograms")
    page.wait_for_selector(".hist-card canvas[data-records='8']")
    assert page.locator(".hist-card").count() == 2
    shot(page, "histograms-front")
    page.select_option("#hist-mode", "top")
    page.wait_for_selector(".hist-card canvas[data-mode='top']")
    page.select_option("#hist-y", "relative")
    shot(page, "histograms-top")
    page.select_option("#hist-height", "count")
    page.wait_for_selector(".hist-card canvas[data-height='count']")
    page.select_option("#hist-height", "density")
    page.wait_for_selector(".hist-card canvas[data-height='density']")

    page.click("button[data-view=images]")
    page.wait_for_selector(".image-card img[data-step='200']")
    assert page.locator(".image-card").count() == 2
    first = page.locator(".image-card").first
    first.locator(".img-step").fill("0")
    first.locator("img[data-step='0']").wait_for()
    page.locator("#img-global-step").fill("1")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.image-card img')]"
        ".every(i => i.dataset.step === '100')"
    )
    page.locator("#img-brightness").fill("2")
    page.locator("#img-contrast").fill("0.5")
    assert "brightness(2)" in first.locator("img").get_attribute("style")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.image-card img')]"
        ".every(i => i.complete && i.naturalWidth > 0)"
    )
    assert first.locator("img").evaluate("i => i.naturalWidth") == 12
    page.check("#img-actual")
    assert first.locator("img").evaluate("i => i.getBoundingClientRect().width") == 12
    page.uncheck("#img-actual")
    assert first.locator("img").evaluate("i => i.getBoundingClientRect().width") > 12
    shot(page, "images")

    page.click("button[data-view=text]")
    page.wait_for_selector(".text-card .markdown h1")
    md = page.locator(".text-card .markdown").first
    assert md.locator("strong").inner_text() == "bold"
    assert "<script>" in md.inner_text()
    assert md.locator("script, img").count() == 0
    assert md.locator("a").count() == 0
    assert page.evaluate("() => window.__xss") is None
    shot(page, "text")


def test_live_reload_shows_new_runs_and_points(page, tmp_path):
    with SummaryWriter(str(tmp_path / "first")) as w:
        for s in range(10):
            w.add_scalar("loss", 1.0 / (s + 1), s)
    with board_server(LogdirProvider(tmp_path), reload_interval_secs=0.2) as url:
        page.goto(url + "/?poll=250#scalars")
        page.wait_for_selector('.scalar-card[data-key="loss"] canvas[data-points]')
        with SummaryWriter(str(tmp_path / "first")) as w:
            for s in range(10, 30):
                w.add_scalar("loss", 1.0 / (s + 1), s)
            w.add_scalar("grad_norm", 3.0, 29)
        with SummaryWriter(str(tmp_path / "second")) as w:
            w.add_scalar("loss", 0.5, 0)
        page.wait_for_selector('#run-list li.run[data-run="second"]', timeout=10_000)
        page.wait_for_selector('.scalar-card[data-key="grad_norm"]', timeout=10_000)
        page.wait_for_function(
            "() => document.querySelector('.scalar-card[data-key=\"loss\"] .chart-info')"
            ".textContent.includes('of 31 points')",
            timeout=10_000,
        )
        assert page.locator("#run-list li.run .badge.active").count() == 2
        shot(page, "live-reload")
