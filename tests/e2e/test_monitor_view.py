"""The monitor view in chromium: runs watched by tensorsight.watch with a planted NaN (and a
dump of the next step) and a planted float16 overflow, at 1280x800 and 1920x1080."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import _checked_page, board_server, shot

pytestmark = pytest.mark.browser
NAN_STEP = 7
OVERFLOW_STEP = 4


def write_monitor_logs(logdir: Path) -> None:
    import torch

    import tensorsight

    class Poison(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.armed = False

        def forward(self, x: Any) -> Any:
            return x * math.nan if self.armed else x

    for run, dtype in (("nan", torch.float32), ("fp16", torch.float16)):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Identity(),  # sees only the data: no gradient, a row that stays clean
            torch.nn.Linear(4, 32),
            torch.nn.Tanh(),
            torch.nn.Linear(32, 8),
            Poison(),
            torch.nn.Linear(8, 1),
        ).to(dtype)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(1)
        dump = logdir / "dumps" / run if run == "nan" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = tensorsight.watch(model, opt, logdir / run, every=1, dump_on_anomaly=dump)
            with w:
                for step in range(20):
                    bad = step == (NAN_STEP if run == "nan" else OVERFLOW_STEP)
                    clean = {k: v.clone() for k, v in model.state_dict().items()}
                    model[4].armed = run == "nan" and bad
                    if run == "fp16" and bad:
                        with torch.no_grad():
                            model[3].weight.mul_(2e5)  # stays finite in float16; its outputs do not
                    opt.zero_grad()
                    loss = model(torch.randn(6, 4, generator=gen).to(dtype)).float().pow(2).mean()
                    loss.backward()
                    w.log_loss(loss)
                    opt.step()
                    if bad:  # one bad step, then training goes on from the weights before it
                        model.load_state_dict(clean)


@pytest.fixture(scope="module")
def monitor_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tensorsight.data import LogdirProvider

    logdir = tmp_path_factory.mktemp("monitor-logs")
    write_monitor_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


@pytest.fixture
def page1920(browser: Any) -> Iterator[Any]:
    yield from _checked_page(browser, 1920, 1080)


def _geometry(page: Any) -> dict[str, Any]:
    return json.loads(page.locator("#mon-heat").get_attribute("data-geometry"))


def _cell_point(page: Any, module: str, step: int) -> dict[str, float]:
    geo = _geometry(page)
    row = geo["rows"].index(module)
    return {"x": geo["left"] + (step + 0.5) * geo["colW"], "y": (row + 0.5) * geo["rowH"]}


def _exercise(page: Any, url: str, size: str) -> None:
    page.goto(url + "/#monitor")
    page.wait_for_selector("#mon-heat[data-cells]")
    page.select_option("#mon-run", "nan")
    page.wait_for_function(
        "() => document.querySelector('#mon-meta').innerText.startsWith('nan:')"
        " && document.querySelector('#mon-detail').dataset.step"
    )
    meta = page.locator("#mon-meta").inner_text()
    assert "20 steps checked" in meta
    assert f"first at step {NAN_STEP}" in meta
    # the first step with findings opens by itself, with its dump folder
    assert page.locator("#mon-detail-title").inner_text().startswith(f"Step {NAN_STEP}:")
    assert f"Step {NAN_STEP + 1} was recorded to" in page.locator("#mon-dump").inner_text()
    first_row = page.locator("#mon-findings tr").nth(1).inner_text()
    assert first_row.split("\t")[1:4] == ["nan", "4", "activation"]
    geo = _geometry(page)
    assert geo["rows"][:7] == ["", "0", "1", "2", "3", "4", "5"]
    assert int(page.locator("#mon-heat").get_attribute("data-cols")) == 20

    # hover: the planted module at the planted step names the finding
    page.hover("#mon-heat", position=_cell_point(page, "4", NAN_STEP))
    hover = page.locator("#mon-hover").inner_text()
    assert hover.startswith(f"4 · step {NAN_STEP}: step {NAN_STEP}, nan in activation output.0")
    page.hover("#mon-heat", position=_cell_point(page, "4", 2))
    assert page.locator("#mon-hover").inner_text() == "4 · step 2: no finding"
    shot(page, f"monitor-nan-{size}")

    # hiding NaN findings hides their cells and markers; "only modules with findings" then
    # keeps the rows whose findings are of another kind
    cells = int(page.locator("#mon-heat").get_attribute("data-cells"))
    markers = int(page.locator("#mon-loss").get_attribute("data-markers"))
    assert markers >= 1
    page.click("#mon-kind-nan")
    assert page.locator("#mon-kind-nan").get_attribute("aria-pressed") == "false"
    assert int(page.locator("#mon-heat").get_attribute("data-cells")) < cells
    page.click("#mon-kind-nan")
    assert int(page.locator("#mon-heat").get_attribute("data-cells")) == cells

    # the fp16 run: click its loss marker, the overflow at the scaled layer
    page.select_option("#mon-run", "fp16")
    page.wait_for_function(
        "() => document.querySelector('#mon-meta').innerText.startsWith('fp16:')"
    )
    page.click("#mon-detail-close")
    assert page.locator("#mon-detail").inner_text() == ""
    xs = json.loads(page.locator("#mon-loss").get_attribute("data-marker-xs"))
    assert xs
    page.click("#mon-loss", position={"x": xs[0], "y": 40})
    page.wait_for_function("() => document.querySelector('#mon-detail').dataset.step")
    title = page.locator("#mon-detail-title").inner_text()
    assert title.startswith(f"Step {OVERFLOW_STEP}:")
    first_row = page.locator("#mon-findings tr").nth(1).inner_text()
    assert first_row.split("\t")[1:6] == ["overflow", "3", "activation", "output.0", "float16"]
    assert "No dump recorded" in page.locator("#mon-dump").inner_text()
    all_rows = int(page.locator("#mon-heat").get_attribute("data-rows"))
    page.check("#mon-flagged")
    assert 0 < int(page.locator("#mon-heat").get_attribute("data-rows")) < all_rows
    # a click on a heat-map cell opens that step as well
    page.click("#mon-detail-close")
    page.click("#mon-heat", position=_cell_point(page, "3", OVERFLOW_STEP))
    page.wait_for_function("() => document.querySelector('#mon-detail').dataset.step")
    assert page.locator("#mon-detail-title").inner_text().startswith(f"Step {OVERFLOW_STEP}:")
    shot(page, f"monitor-fp16-{size}")


def test_monitor_view_1280(page1280, monitor_board):
    _exercise(page1280, monitor_board, "1280")


def test_monitor_view_1920(page1920, monitor_board):
    _exercise(page1920, monitor_board, "1920")
