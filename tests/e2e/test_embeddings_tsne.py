"""The projector's t-SNE, numeric colour scale and 2-D pan/zoom in chromium at 1280x800.

Our writer's ``add_embedding`` of 200 points in four clusters with a numeric ``score``
column, and a tag of 1,500 points (over t-SNE's 1,000-point cap).
"""

from __future__ import annotations

import numpy as np
import pytest

from tensorsight import SummaryWriter
from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

N = 200
CLUSTERS = np.arange(N) % 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("tsne_e2e")
    rng = np.random.default_rng(4)
    centres = rng.normal(0, 8, (4, 24))
    mat = centres[CLUSTERS] + rng.normal(0, 0.5, (N, 24))
    meta = [[f"p{i}", f"cluster{c}", f"{i / 7:.3f}"] for i, c in enumerate(CLUSTERS)]
    big = rng.normal(0, 1, (1500, 8))
    with SummaryWriter(logdir / "run") as w:
        w.add_embedding(mat, meta, tag="clusters", metadata_header=["name", "cluster", "score"])
        w.add_embedding(big, [str(i) for i in range(1500)], tag="large")
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def attr(page, name):
    kebab = "".join(f"-{c.lower()}" if c.isupper() else c for c in name)
    return page.locator("#emb-canvas").get_attribute(f"data-{kebab}")


def wait_attr(page, name, value, timeout=30_000):
    page.wait_for_function(
        f"() => document.querySelector('#emb-canvas')?.dataset['{name}'] === '{value}'",
        timeout=timeout,
    )


def test_numeric_scale_zoom_pan_and_tsne(page1280, server):
    page = page1280
    page.goto(server + "/#embeddings")
    wait_attr(page, "points", str(N))
    assert page.locator("#emb-tag").input_value() == "clusters"
    assert attr(page, "colorScale") == "categories"  # the 4-value cluster column
    assert page.locator("#emb-colorbar").is_hidden()

    # a numeric column with 200 values: a continuous scale with a colour bar, no legend
    page.select_option("#emb-color", "2")
    wait_attr(page, "colorScale", "numeric")
    bar = page.locator("#emb-colorbar")
    assert bar.is_visible()
    assert bar.locator(".emb-colorbar-name").inner_text() == "score"
    assert bar.locator(".emb-colorbar-min").inner_text() == "0"
    assert float(bar.locator(".emb-colorbar-max").inner_text()) == pytest.approx(199 / 7, 1e-3)
    assert page.locator("#emb-legend .emb-legend-item").count() == 0
    shot(page, "embeddings_numeric_scale")

    # 2-D: the wheel zooms about the cursor, a drag pans, "reset view" undoes both
    box = page.locator("#emb-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    before = attr(page, "point0")
    px, py = (float(v) for v in before.split(","))
    page.mouse.move(box["x"] + px, box["y"] + py)  # zoom into point 0's cluster
    page.mouse.wheel(0, -400)
    page.wait_for_function("() => Number(document.querySelector('#emb-canvas').dataset.zoom) > 1.5")
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 30, cy + 15, steps=4)
    page.mouse.up()
    assert attr(page, "pan") != "0.0,0.0"
    assert attr(page, "point0") != before
    shot(page, "embeddings_zoomed")
    page.click("#emb-reset")
    wait_attr(page, "zoom", "1.000")
    assert attr(page, "pan") == "0.0,0.0"
    assert attr(page, "point0") == before

    # t-SNE in 2-D: runs in a worker, progress in the info line, the same 200 points
    page.select_option("#emb-color", "1")
    page.select_option("#emb-method", "tsne")
    wait_attr(page, "method", "tsne")
    wait_attr(page, "tsneIteration", "500", timeout=90_000)
    info = page.locator("#emb-info").inner_text()
    assert "t-SNE done: iteration 500 of 500" in info
    assert "PC1" not in info
    assert attr(page, "points") == str(N)
    assert attr(page, "dims") == "2"
    assert page.locator("#emb-progress").is_hidden()
    shot(page, "embeddings_tsne_2d")
    # hover and neighbours still work on the t-SNE layout
    x, y = (float(v) for v in attr(page, "point0").split(","))
    page.mouse.click(box["x"] + x, box["y"] + y)
    wait_attr(page, "neighbors", "10")

    # t-SNE in 3-D
    page.select_option("#emb-dims", "3")
    wait_attr(page, "dims", "3")
    wait_attr(page, "tsneIteration", "500", timeout=90_000)
    shot(page, "embeddings_tsne_3d")

    # UMAP, in the same worker: epochs in the info line, the same points, seeded
    page.select_option("#emb-dims", "2")
    wait_attr(page, "dims", "2")
    page.select_option("#emb-method", "umap")
    wait_attr(page, "method", "umap")
    wait_attr(page, "tsneIteration", "300", timeout=90_000)
    info = page.locator("#emb-info").inner_text()
    assert "UMAP done: epoch 300 of 300 (15 neighbours)" in info
    assert "t-SNE" not in info
    assert attr(page, "points") == str(N)
    assert page.locator("#emb-progress").is_hidden()
    first = attr(page, "point0")
    shot(page, "embeddings_umap_2d")
    x, y = (float(v) for v in first.split(","))
    page.mouse.click(box["x"] + x, box["y"] + y)
    wait_attr(page, "neighbors", "10")
    page.select_option("#emb-method", "tsne")
    wait_attr(page, "tsneIteration", "500", timeout=90_000)
    page.select_option("#emb-method", "umap")
    wait_attr(page, "tsneIteration", "300", timeout=90_000)
    assert attr(page, "point0") == first  # seeded: the same layout again

    # over the cap: 1,000 of 1,500 points, said so; switching back to PCA stops it
    page.select_option("#emb-method", "tsne")
    page.select_option("#emb-tag", "large")
    wait_attr(page, "points", "1000")
    assert "t-SNE runs on at most 1,000 points" in page.locator("#emb-info").inner_text()
    page.wait_for_function(
        "() => Number(document.querySelector('#emb-canvas').dataset.tsneIteration) >= 10",
        timeout=60_000,
    )
    assert page.locator("#emb-progress").is_visible()
    shot(page, "embeddings_tsne_capped")
    page.select_option("#emb-method", "pca")
    wait_attr(page, "points", "1500")
    assert "PC1" in page.locator("#emb-info").inner_text()
    assert page.locator("#emb-progress").is_hidden()
