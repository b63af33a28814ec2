"""The Monitor tab's ranks side by side in chromium: three ranks of one job watched by
tensorsight.watch into ``job/rank<r>``, rank 1 with a NaN at step 5, rank 2 an fp16 overflow
at step 9, rank 0 clean; the panel names rank 1 first and a click opens that rank's step."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser
BAD = {1: 5, 2: 9}  # rank -> the step it goes bad
STEPS = 14


def write_rank_logs(logdir: Path) -> None:
    import torch

    import tensorsight

    class Poison(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mode = ""

        def forward(self, x: Any) -> Any:
            if self.mode == "nan":
                return x * math.nan
            if self.mode == "overflow":
                return x.half() * 1e6  # past float16's range
            return x

    class Float(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.float()

    for rank in range(3):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 16), torch.nn.Tanh(), Poison(), Float(), torch.nn.Linear(16, 1)
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        gen = torch.Generator().manual_seed(rank)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with tensorsight.watch(model, opt, logdir / "job" / f"rank{rank}", every=1) as w:
                for step in range(STEPS):
                    bad = BAD.get(rank) == step
                    clean = {k: v.clone() for k, v in model.state_dict().items()}
                    model[2].mode = ("nan" if rank == 1 else "overflow") if bad else ""
                    opt.zero_grad()
                    loss = model(torch.randn(6, 4, generator=gen)).float().pow(2).mean()
                    loss.backward()
                    w.log_loss(loss)
                    opt.step()
                    if bad:  # one bad step, then training goes on from the weights before it
                        model.load_state_dict(clean)


@pytest.fixture(scope="module")
def ranks_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tensorsight.data import LogdirProvider

    logdir = tmp_path_factory.mktemp("monitor-ranks")
    write_rank_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def _rank_point(page: Any, rank_row: int, step: int) -> dict[str, float]:
    geo = json.loads(page.locator("#mon-ranks").get_attribute("data-geometry"))
    col = (step - geo["firstStep"]) // geo["bin"]
    return {"x": geo["left"] + (col + 0.5) * geo["colW"], "y": (rank_row + 0.5) * geo["rowH"]}


def test_ranks_side_by_side_name_the_first_rank_and_open_it(page1280, ranks_board):
    page = page1280
    page.goto(ranks_board + "/#monitor")
    page.wait_for_selector("#mon-ranks[data-cells]")
    page.select_option("#mon-run", "job/rank0")
    page.wait_for_function(
        "() => document.querySelector('#mon-meta').innerText.startsWith('job/rank0:')"
    )
    assert page.locator("#mon-ranks-panel").is_visible()
    note = page.locator("#mon-ranks-first").inner_text()
    assert note.startswith("3 ranks of job, 2 with findings; first: rank 1 at step 5, nan in 2")
    geo = json.loads(page.locator("#mon-ranks").get_attribute("data-geometry"))
    assert geo["ranks"] == [0, 1, 2]
    assert int(page.locator("#mon-ranks").get_attribute("data-cells")) >= 2

    page.hover("#mon-ranks", position=_rank_point(page, 2, BAD[2]))
    hover = page.locator("#mon-ranks-hover").inner_text()
    # the cell shows the worst finding there: the NaN the overflow led to downstream
    assert hover.startswith(f"rank 2 · step {BAD[2]}: step {BAD[2]}, nan in activation")
    assert "worst of" in hover
    body = page.evaluate(
        "async () => (await fetch('/api/views/monitor/ranks?run=job/rank0')).json()"
    )
    rank2 = body["ranks"][2]["first"]  # the rank's first finding: the overflow itself
    assert (rank2["step"], rank2["kind"], rank2["module"]) == (BAD[2], "overflow", "2")
    page.hover("#mon-ranks", position=_rank_point(page, 0, BAD[1]))
    assert page.locator("#mon-ranks-hover").inner_text() == f"rank 0 · step {BAD[1]}: no finding"
    shot(page, "monitor-ranks-1280")

    # a click on rank 1's cell opens rank 1's run at that step
    page.click("#mon-ranks", position=_rank_point(page, 1, BAD[1]))
    page.wait_for_function(
        "() => document.querySelector('#mon-meta').innerText.startsWith('job/rank1:')"
        " && document.querySelector('#mon-detail').dataset.step"
    )
    assert page.locator("#mon-run").input_value() == "job/rank1"
    assert page.locator("#mon-detail-title").inner_text().startswith(f"Step {BAD[1]}:")
    first_row = page.locator("#mon-findings tr").nth(1).inner_text()
    assert first_row.split("\t")[1:4] == ["nan", "2", "activation"]
    # hiding a kind hides its cells in the ranks panel too
    cells = int(page.locator("#mon-ranks").get_attribute("data-cells"))
    page.click("#mon-kind-nan")
    assert int(page.locator("#mon-ranks").get_attribute("data-cells")) < cells
    page.click("#mon-kind-nan")
    shot(page, "monitor-ranks-rank1-1280")


def test_a_run_without_ranks_has_no_ranks_panel(page1280, tmp_path):
    import torch

    import tensorsight
    from tensorsight.data import LogdirProvider

    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with tensorsight.watch(model, opt, tmp_path / "solo", every=1) as w:
        for _ in range(2):
            opt.zero_grad()
            loss = model(torch.ones(3, 2)).pow(2).mean()
            loss.backward()
            w.log_loss(loss)
            opt.step()
    with board_server(LogdirProvider(tmp_path)) as url:
        page1280.goto(url + "/#monitor")
        page1280.wait_for_selector("#mon-heat[data-cells]")
        page1280.wait_for_function(
            "() => document.querySelector('#mon-meta').innerText.startsWith('solo:')"
        )
        assert not page1280.locator("#mon-ranks-panel").is_visible()
