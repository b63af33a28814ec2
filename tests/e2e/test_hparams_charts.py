"""Hover readout, legend and HParams view in chromium, on torch and tensorboardX logs.

Runs: ``train/fp32`` and ``train/bf16`` (torch, losses within a hair of each other, so bf16
hides under fp32), ``tbx`` (tensorboardX, apart), each with one ``add_hparams`` call (its
sub-run folds into the run), and ``sweep`` (torch, three ``add_hparams`` calls through one
writer: three trial runs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorboardX
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

STEPS = 300


def losses() -> dict[str, np.ndarray]:
    s = np.arange(STEPS)
    base = 2.0 * np.exp(-s / 80) + 0.3
    wiggle = 0.001 * np.sin(s / 3)
    return {"train/fp32": base, "train/bf16": base + wiggle, "tbx": 1.5 * np.exp(-s / 50) + 0.9}


def write_logs(logdir):
    loss = losses()
    params = {
        "train/fp32": {"lr": 0.1, "precision": "fp32", "batch": 64},
        "train/bf16": {"lr": 0.1, "precision": "bf16", "batch": 64},
        "tbx": {"lr": 0.3, "precision": "fp16", "batch": 32},
    }
    for run in ("train/fp32", "train/bf16"):
        with SummaryWriter(str(logdir / run)) as w:
            for s in range(STEPS):
                w.add_scalar("loss", float(loss[run][s]), s)
            w.add_hparams(params[run], {"hparam/final_loss": float(loss[run][-1])})
    with tensorboardX.SummaryWriter(str(logdir / "tbx")) as w:
        for s in range(STEPS):
            w.add_scalar("loss", float(loss["tbx"][s]), s)
        w.add_hparams(params["tbx"], {"hparam/final_loss": float(loss["tbx"][-1])})
    with SummaryWriter(str(logdir / "sweep")) as w:
        for i in range(3):
            w.add_hparams({"lr": 0.01 * (i + 1), "batch": 16}, {"hparam/final_loss": 1.0 - 0.1 * i})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("hp_logs")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def open_loss_chart(page, server):
    page.goto(server + "/#scalars")
    canvas = page.locator('.scalar-card[data-key="loss"] canvas')
    canvas.wait_for()
    page.wait_for_function(
        "() => document.querySelector('.scalar-card[data-key=\"loss\"] canvas')"
        "?.dataset.series === '3'"
    )
    return canvas


def test_folded_runs_in_the_run_list(page1280, server):
    page = page1280
    page.goto(server + "/#scalars")
    page.wait_for_selector("#run-list li.run")
    names = page.locator("#run-list .run-name").all_inner_texts()
    # the single add_hparams sub-runs folded away; the sweep's three trials stay runs
    assert [n for n in names if not n.startswith("sweep/")] == [
        "sweep",
        "tbx",
        "train/bf16",
        "train/fp32",
    ]
    assert sum(n.startswith("sweep/") for n in names) == 3
    assert not any(n.startswith(("train/", "tbx/")) and n.count("/") > 1 for n in names)


def test_hover_readout_and_legend(page1280, server):
    page = page1280
    canvas = open_loss_chart(page, server)
    legend = page.locator('.scalar-card[data-key="loss"] .chart-legend .legend-item')
    labels = legend.evaluate_all("items => items.map(i => i.dataset.label)")
    assert sorted(labels) == ["tbx", "train/bf16", "train/fp32"]
    assert "under train/fp32" in legend.nth(labels.index("train/bf16")).inner_text()
    # bf16 lies under fp32: its legend entry says so and the chart marks it covered
    covered = page.locator('.scalar-card[data-key="loss"] .legend-item.covered')
    assert covered.count() == 1
    assert covered.get_attribute("data-label") == "train/bf16"
    assert covered.get_attribute("data-under") == "train/fp32"
    assert canvas.get_attribute("data-covered") == "train/bf16"

    box = canvas.bounding_box()
    # plot area: 58 px left padding, 14 px right, 14 top, 28 bottom (core/chart.ts)
    px = box["x"] + 58 + (box["width"] - 72) * 0.5
    page.mouse.move(px, box["y"] + 16)  # near the top: the highest run is nearest
    tooltip = page.locator(".chart-tooltip:not([hidden])")
    tooltip.wait_for()
    rows = tooltip.locator("tr.tt-row")
    assert rows.count() == 3
    labels = [rows.nth(i).get_attribute("data-run") for i in range(3)]
    values = [float(rows.nth(i).get_attribute("data-value")) for i in range(3)]
    steps = {int(rows.nth(i).get_attribute("data-step")) for i in range(3)}
    assert values == sorted(values, reverse=True)
    assert labels[0] == "tbx"
    assert len(steps) == 1
    step = steps.pop()
    assert abs(step - (STEPS - 1) / 2) <= 3
    truth = losses()
    for label, value in zip(labels, values, strict=True):
        assert math.isclose(value, truth[label][step], rel_tol=1e-6)
    # smoothing is on by default: a smoothed column next to the raw value
    assert tooltip.locator("th").all_inner_texts()[1:] == [
        "run",
        "value",
        "smoothed",
        "step",
        "relative",
        "time",
    ]
    assert rows.nth(0).get_attribute("class") == "tt-row nearest"
    shot(page, "hparams-charts-hover-top")
    # near the bottom the lowest run is nearest
    page.mouse.move(px, box["y"] + box["height"] - 30)
    page.wait_for_function(
        "() => document.querySelector('.chart-tooltip:not([hidden]) tr.nearest')"
        "?.dataset.run?.startsWith('train/')"
    )
    shot(page, "hparams-charts-hover-bottom")
    # leaving the chart hides the readout
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 150)
    page.wait_for_selector(".chart-tooltip:not([hidden])", state="detached")
    # the legend brings bf16 to the front: fp32 is now the covered one
    page.locator('.scalar-card[data-key="loss"] .legend-item[data-label="train/bf16"]').click()
    page.wait_for_function(
        "() => document.querySelector('.scalar-card[data-key=\"loss\"] canvas')"
        "?.dataset.covered === 'train/fp32'"
    )


def test_hparams_view_sort_filter_columns(page1280, server):
    page = page1280
    page.goto(server + "/#hparams")
    table = page.locator("#hp-table")
    page.wait_for_selector('#hp-table[data-rows="6"]')
    heads = page.locator("#hp-table tr.hp-head th").all_inner_texts()
    assert heads[0].startswith("run")
    assert {"lr", "precision", "batch", "hparam/final_loss"} <= {h.split(" ")[0] for h in heads}

    def column(key):
        cells = page.locator(f'#hp-table tbody td[data-key="{key}"]')
        return [cells.nth(i).get_attribute("data-value") for i in range(cells.count())]

    def runs():
        return page.locator("#hp-table tbody tr.hp-row").evaluate_all(
            "rows => rows.map(r => r.dataset.run)"
        )

    # sort by the final loss, ascending then descending
    page.locator('#hp-table .hp-sort[data-key="m:hparam/final_loss"]').click()
    asc = [float(v) for v in column("m:hparam/final_loss")]
    assert asc == sorted(asc)
    truth = losses()
    assert runs()[0] == min(("train/fp32", "train/bf16"), key=lambda r: truth[r][-1])
    page.locator('#hp-table .hp-sort[data-key="m:hparam/final_loss"]').click()
    desc = [float(v) for v in column("m:hparam/final_loss")]
    assert desc == sorted(desc, reverse=True)
    assert desc[0] == 1.0  # the sweep's first trial
    assert runs()[0].startswith("sweep/")
    # filter: lr in [0.05, 0.2] keeps the two train runs
    page.fill('#hp-table input.hp-min[data-key="hp:lr"]', "0.05")
    page.fill('#hp-table input.hp-max[data-key="hp:lr"]', "0.2")
    page.wait_for_selector('#hp-table[data-rows="2"]')
    assert sorted(runs()) == ["train/bf16", "train/fp32"]
    assert page.locator("#hp-parallel").get_attribute("data-lines") == "2"
    assert "2 of 6 runs" in page.locator("#hp-status").inner_text()
    # a text filter on a string column narrows further
    page.fill('#hp-table input.hp-text[data-key="hp:precision"]', "bf")
    page.wait_for_selector('#hp-table[data-rows="1"]')
    assert runs() == ["train/bf16"]
    shot(page, "hparams-view-filtered")
    page.click("#hp-clear-filters")
    page.wait_for_selector('#hp-table[data-rows="6"]')
    # choose columns: hide batch
    page.click("details.hp-columns summary")
    page.locator('#hp-columns input[data-key="hp:batch"]').uncheck()
    assert page.locator('#hp-table th[data-key="hp:batch"]').count() == 0
    page.click("details.hp-columns summary")
    # the final value of another scalar tag as a metric column
    page.select_option("#hp-add-metric", "loss")
    page.click("#hp-add-metric-go")
    page.wait_for_selector('#hp-table th[data-key="m:loss"]')
    finals = dict(zip(runs(), column("m:loss"), strict=True))
    assert math.isclose(float(finals["tbx"]), truth["tbx"][-1], rel_tol=1e-6)
    shot(page, "hparams-view")
    # the sidebar's run selection drives the rows
    page.locator('#run-list input[data-run="tbx"]').uncheck()
    page.wait_for_selector('#hp-table[data-rows="5"]')
    assert "tbx" not in runs()
    assert table.is_visible()
