"""The landscapes view in chromium: landscapes computed on a tiny MLP, written by SummaryWriter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser
CHECKPOINTS = 8


def write_landscape_logs(logdir: Path) -> None:
    import torch

    import tensorsight.landscape as tl
    from tensorsight import SummaryWriter

    torch.manual_seed(0)
    x = torch.randn(64, 2)
    y = ((x[:, :1] * x[:, 1:]) > 0).float()
    loss = torch.nn.functional.binary_cross_entropy_with_logits
    for run, lr in (("sgd", 0.3), ("sgd-slow", 0.1)):
        model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        ckpts = []
        for _ in range(CHECKPOINTS):
            for _ in range(5):
                idx = torch.randint(0, 64, (8,))
                opt.zero_grad()
                loss(model(x[idx]), y[idx]).backward()
                opt.step()
            ckpts.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        pca = tl.compute(model, loss, [(x, y)], directions="pca", grid=25, checkpoints=ckpts)
        rnd = tl.compute(model, loss, [(x, y)], grid=21, seed=1)
        with SummaryWriter(str(logdir / run)) as w:
            pca.write(w, "landscape/pca", step=40)
            rnd.write(w, "landscape/random", step=40)


@pytest.fixture(scope="module")
def landscape_board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from tensorsight.data import LogdirProvider

    logdir = tmp_path_factory.mktemp("landscape-logs")
    write_landscape_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def test_contour_3d_and_side_by_side(page, landscape_board):
    page.goto(landscape_board + "/#landscapes")
    page.wait_for_selector("#ls-contour-a[data-isolines]")
    page.select_option("#ls-pick-a", '["sgd","landscape/pca"]')
    page.wait_for_function("() => document.querySelector('#ls-contour-a').dataset.path === '8'")
    assert int(page.locator("#ls-contour-a").get_attribute("data-isolines")) >= 5
    meta = page.locator("#ls-meta").inner_text()
    assert "pca directions" in meta
    assert "25 \u00d7 25 grid" in meta
    assert "training path of 8 points" in meta
    page.hover("#ls-contour-a", position={"x": 300, "y": 250})
    assert "loss" in page.locator("#ls-hover-a").inner_text()
    shot(page, "landscape-contour")

    page.click("#ls-mode-3d")
    page.wait_for_selector("#ls-surface[data-gl]")
    if page.locator("#ls-surface").get_attribute("data-gl") == "webgl":
        assert int(page.locator("#ls-surface").get_attribute("data-triangles")) == 24 * 24 * 2
        coloured = page.evaluate(
            """() => {
              const src = document.querySelector('#ls-surface');
              const c = document.createElement('canvas');
              c.width = src.width; c.height = src.height;
              const g = c.getContext('2d'); g.drawImage(src, 0, 0);
              const d = g.getImageData(0, 0, c.width, c.height).data;
              let n = 0;
              for (let i = 0; i < d.length; i += 4) if (d[i] < 240 || d[i + 1] < 240) n++;
              return n;
            }"""
        )
        assert coloured > 20_000  # the surface covers a good part of the canvas
        box = page.locator("#ls-surface").bounding_box()
        page.mouse.move(box["x"] + 300, box["y"] + 250)
        page.mouse.down()
        page.mouse.move(box["x"] + 380, box["y"] + 230)
        page.mouse.up()
    else:
        assert "WebGL is not available" in page.locator("#ls-nogl").inner_text()
        assert page.locator("#ls-contour-a").is_visible()
    shot(page, "landscape-3d")

    page.click("#ls-mode-side")
    page.select_option("#ls-pick-b", '["sgd-slow","landscape/pca"]')
    page.wait_for_function(
        "() => document.querySelector('#ls-contour-b').dataset.tag === 'landscape/pca'"
        " && document.querySelector('#ls-title-b').innerText.startsWith('sgd-slow')"
    )
    assert page.locator("#ls-contour-a").is_visible()
    assert page.locator("#ls-contour-b").is_visible()
    assert page.locator("#ls-contour-b").get_attribute("data-path") == "8"
    assert "shared colour scale" in page.locator("#ls-meta").inner_text()
    shot(page, "landscape-side-by-side")

    # the log scale redraws both; the random-direction landscape has no path
    page.check("#ls-log")
    page.select_option("#ls-pick-a", '["sgd","landscape/random"]')
    page.wait_for_function("() => document.querySelector('#ls-contour-a').dataset.path === '0'")
    assert "random directions" in page.locator("#ls-meta").inner_text()
