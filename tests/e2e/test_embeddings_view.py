"""The embeddings projector in chromium at 1280x800 on torch's SummaryWriter output.

Run ``torch``: ``add_embedding`` of 300 points in four clusters (metadata columns ``name`` and
``cluster``, thumbnails as a sprite) and a second tag with one label column.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter

from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

N = 300
CLUSTERS = np.arange(N) % 4


def write_logs(logdir):
    rng = np.random.default_rng(1)
    centres = rng.normal(0, 6, (4, 16))
    mat = centres[CLUSTERS] + rng.normal(0, 0.5, (N, 16))
    meta = [[f"c{c}-{i}", f"cluster{c}"] for i, c in enumerate(CLUSTERS)]
    images = torch.zeros(N, 3, 10, 10)
    for c in range(4):
        images[np.equal(CLUSTERS, c), c % 3] = 1.0  # each cluster's thumbnails one colour
    with SummaryWriter(str(logdir / "torch")) as w:
        w.add_embedding(
            torch.from_numpy(mat), meta, images, 10, "features", metadata_header=["name", "cluster"]
        )
        w.add_embedding(torch.from_numpy(mat[:50, :3]), [str(i) for i in range(50)], tag="small")
        w.add_scalar("loss", 1.0, 0)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("embed_e2e")
    write_logs(logdir)
    with board_server(LogdirProvider(logdir)) as url:
        yield url


def attr(page, name):
    kebab = "".join(f"-{c.lower()}" if c.isupper() else c for c in name)
    return page.locator("#emb-canvas").get_attribute(f"data-{kebab}")


def wait_attr(page, name, value):
    page.wait_for_function(
        f"() => document.querySelector('#emb-canvas')?.dataset['{name}'] === '{value}'"
    )


def point0(page):
    box = page.locator("#emb-canvas").bounding_box()
    x, y = (float(v) for v in attr(page, "point0").split(","))
    return box["x"] + x, box["y"] + y


def test_projector_colour_hover_neighbours_search_and_3d(page1280, server):
    page = page1280
    page.goto(server + "/#embeddings")
    wait_attr(page, "points", str(N))
    assert page.locator("#emb-tag").input_value() == "features"
    assert attr(page, "total") == str(N)
    assert attr(page, "dims") == "2"
    assert f"{N} of {N} points" in page.locator("#emb-info").inner_text()
    assert "PC1" in page.locator("#emb-info").inner_text()
    # colour by: the cluster column (4 values) is chosen at first; the legend lists them
    assert attr(page, "colorBy") == "1"
    legend = page.locator("#emb-legend .emb-legend-item")
    assert legend.count() == 4
    assert legend.first.inner_text() == "cluster0 (75)"
    shot(page, "embeddings_2d")
    page.select_option("#emb-color", "0")  # names: 300 values -> 19 colours + (other)
    wait_attr(page, "colorBy", "0")
    assert legend.count() == 20
    assert legend.last.get_attribute("data-value") == "(other)"
    page.select_option("#emb-color", "-1")
    wait_attr(page, "colorBy", "-1")
    assert legend.count() == 0
    page.select_option("#emb-color", "1")
    wait_attr(page, "colorBy", "1")

    # hover: the point's labels and its thumbnail
    x, y = point0(page)
    page.mouse.move(x, y)
    tooltip = page.locator(".emb-tooltip:not([hidden])")
    tooltip.wait_for()
    index = int(tooltip.get_attribute("data-index"))
    cluster = index % 4
    assert f"cluster{cluster}" in tooltip.inner_text()
    assert tooltip.locator(".emb-thumb").count() == 1
    shot(page, "embeddings_hover")

    # click: the point is selected, its 10 nearest neighbours listed (same cluster) and ringed
    page.mouse.click(x, y)
    page.locator(f'.emb-selected[data-index="{index}"]').wait_for()
    wait_attr(page, "neighbors", "10")
    assert attr(page, "selected") == str(index)
    items = page.locator(".emb-neighbors li[data-index]")
    assert items.count() == 10
    for i in range(10):
        assert int(items.nth(i).get_attribute("data-index")) % 4 == cluster
        assert items.nth(i).locator(".emb-nb-label").inner_text().startswith(f"c{cluster}-")
    shot(page, "embeddings_neighbours")
    # euclidean neighbours of the same point, then a neighbour becomes the selection
    page.select_option("#emb-metric", "euclidean")
    page.wait_for_function(
        "() => document.querySelector('#emb-panel h4')?.textContent.includes('euclidean')"
    )
    wait_attr(page, "neighbors", "10")
    first = page.locator(".emb-neighbors li[data-index]").first
    other = first.get_attribute("data-index")
    first.click()
    wait_attr(page, "selected", other)

    # search: labels matching the regex are highlighted
    page.fill("#emb-search", f"^c{cluster}-")
    wait_attr(page, "matches", str(N // 4))
    shot(page, "embeddings_search")
    page.fill("#emb-search", "")
    wait_attr(page, "matches", "0")

    # thumbnails: every point drawn as its sprite image
    page.check("#emb-thumbs")
    wait_attr(page, "thumbs", str(N))
    shot(page, "embeddings_thumbnails")

    # 3-D: drag rotates the cloud
    page.select_option("#emb-dims", "3")
    wait_attr(page, "dims", "3")
    before = attr(page, "rotation")
    box = page.locator("#emb-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 80, cy + 30, steps=5)
    page.mouse.up()
    assert attr(page, "rotation") != before
    assert attr(page, "points") == str(N)
    shot(page, "embeddings_3d")

    # another tag: one label column, no header, nothing to colour by
    page.select_option("#emb-tag", "small")
    wait_attr(page, "points", "50")
    assert page.locator("#emb-legend .emb-legend-item").count() == 0
    assert attr(page, "selected") == ""
    assert page.locator("#emb-thumbs").is_disabled()  # no sprite: no thumbnails
    assert attr(page, "thumbs") == "0"


CONTROLS = ("#emb-run", "#emb-tag", "#emb-step", "#emb-method", "#emb-dims", "#emb-reset",
            "#emb-color", "#emb-label",
            "#emb-search", "#emb-thumbs", "#emb-k", "#emb-metric")  # fmt: skip


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (1920, 1080)])
def test_layout_fits_and_no_control_is_covered(browser, server, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        page.goto(server + "/#embeddings")
        wait_attr(page, "points", str(N))
        canvas = page.locator("#emb-canvas").bounding_box()
        panel = page.locator("#emb-panel").bounding_box()
        assert canvas["x"] + canvas["width"] <= panel["x"]  # the panel beside the chart
        assert panel["x"] + panel["width"] <= width
        assert canvas["y"] + canvas["height"] <= height  # the whole scatter on screen
        for control in CONTROLS:
            box = page.locator(control).bounding_box()
            assert box["x"] >= 0
            assert box["x"] + box["width"] <= width, control
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            hit = page.evaluate(
                f"() => document.elementFromPoint({x}, {y}) === document.querySelector('{control}')"
            )
            assert hit, f"{control} is covered"
        # the hover readout never covers the point it describes
        x, y = point0(page)
        page.mouse.move(x, y)
        tip = page.locator(".emb-tooltip:not([hidden])")
        tip.wait_for()
        box = tip.bounding_box()
        assert not (
            box["x"] <= x <= box["x"] + box["width"] and box["y"] <= y <= box["y"] + box["height"]
        )
        shot(page, f"embeddings_layout_{width}")
    finally:
        context.close()
