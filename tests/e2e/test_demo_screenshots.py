"""The demo in chromium at 1440x900: the README's screenshots, taken from the demo itself.

Without ``TENSORSIGHT_UPDATE_SCREENSHOTS`` the demo runs in a quick mode (fewer steps) and
each test checks that its view draws real content: both runs, the expected tags, non-empty
charts and canvases, the planted bug as the first divergence. With
``TENSORSIGHT_UPDATE_SCREENSHOTS=1`` the full demo runs (as ``tensorsight demo`` does) and
the screenshots are written to ``docs/images/demo-*.png``, the files README.md and the
guides show, so they always show what ``make demo`` produces.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tensorsight.data import LogdirProvider
from tensorsight.demo import DemoResult, run_demo
from tests.conftest import ROOT
from tests.e2e.conftest import board_server, shot

pytestmark = pytest.mark.browser

UPDATE = bool(os.environ.get("TENSORSIGHT_UPDATE_SCREENSHOTS"))
IMAGES = ROOT / "docs" / "images"
QUICK_STEPS = 36
VIEWPORT = {"width": 1440, "height": 900}
RUNS = ("train/bf16", "train/fp32")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, DemoResult]]:
    # run where `make demo` runs it, `--logdir tensorsight-demo` relative to the working
    # folder, so the paths the board shows are the ones a user sees
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path_factory.mktemp("demo"))
        result = run_demo("tensorsight-demo", steps=None if UPDATE else QUICK_STEPS)
        with board_server(LogdirProvider(result.logdir)) as url:
            yield url, result


@pytest.fixture
def board(page: Any, demo: tuple[str, DemoResult]) -> Any:
    page.set_viewport_size(VIEWPORT)
    page.goto(demo[0] + "/#scalars")
    page.wait_for_selector("#run-list li.run")
    runs = page.locator("#run-list li.run").all_inner_texts()
    assert [text.split()[0] for text in runs] == list(RUNS)  # hparams sub-runs folded in
    return page


def open_view(page: Any, view: str) -> None:
    page.click(f"button[data-view={view}]")


def save(page: Any, name: str) -> None:
    path = shot(page, name)
    if UPDATE:
        IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, IMAGES / f"{name}.png")


def painted(page: Any, selector: str) -> int:
    """Pixels of the canvas at ``selector`` that are not white or transparent."""
    return int(
        page.evaluate(
            """(sel) => {
              const src = document.querySelector(sel);
              const c = document.createElement('canvas');
              c.width = src.width; c.height = src.height;
              const g = c.getContext('2d'); g.drawImage(src, 0, 0);
              const d = g.getImageData(0, 0, c.width, c.height).data;
              let n = 0;
              for (let i = 0; i < d.length; i += 4)
                if (d[i + 3] > 0 && (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235)) n++;
              return n;
            }""",
            selector,
        )
    )


def test_scalars_overlay_both_runs_and_the_bf16_gap(board, demo) -> None:
    board.fill("#tag-filter", "^(loss/|accuracy/eval)")
    board.locator("#smoothing").fill("0.3")  # the eval curves have 13 points: little smoothing
    board.locator("#smoothing").blur()
    tags = ["accuracy/eval", "loss/eval", "loss/train", "loss/train_bf16_minus_fp32"]
    for tag in tags[:3]:
        board.wait_for_selector(f'.scalar-card[data-key="{tag}"] canvas[data-series="2"]')
    board.wait_for_selector(f'.scalar-card[data-key="{tags[3]}"] canvas[data-series="1"]')
    assert board.locator(".scalar-card").evaluate_all("cs => cs.map(c => c.dataset.key)") == tags
    legend = board.locator('.scalar-card[data-key="loss/train"]').inner_text()
    assert all(run in legend for run in RUNS)
    steps = demo[1].final["fp32"].train_losses
    info = board.locator('.scalar-card[data-key="loss/train"] .chart-info').inner_text()
    assert f"{2 * len(steps)} of {2 * len(steps)} points drawn" in info
    for tag in tags:
        assert painted(board, f'.scalar-card[data-key="{tag}"] canvas') > 500
    save(board, "demo-scalars")


def test_images_show_predictions_of_both_runs(board) -> None:
    open_view(board, "images")
    board.wait_for_selector(".image-card img")
    board.check("#img-actual")
    board.wait_for_function(
        "() => { const im = [...document.querySelectorAll('.image-card img')];"
        " return im.length === 2 && im.every(i => i.complete && i.naturalWidth > 300); }"
    )
    titles = board.locator(".image-card").all_inner_texts()
    assert [t.splitlines()[0] for t in titles] == [f"predictions \u00b7 {run}" for run in RUNS]
    save(board, "demo-images")


def test_comparison_pins_the_planted_bug(board, demo) -> None:
    open_view(board, "comparison")
    board.wait_for_selector("#cmp-select")
    if board.locator("#cmp-select").input_value() != "compare/fp32-vs-bug":
        board.select_option("#cmp-select", "compare/fp32-vs-bug")
    board.wait_for_selector("#cmp-first.diverged .cmp-first-op")
    board.wait_for_selector("#cmp-table tr.first")
    head = board.locator("#cmp-first").inner_text()
    assert "native_batch_norm" in head
    assert "blocks.1.1" in head
    assert "eps=0.1 (target)" in head
    assert demo[1].bug_first_divergence is not None
    assert demo[1].bug_first_divergence.endswith("ShapesNet.blocks.1.1")
    board.wait_for_selector('#cmp-loss[data-series="2"]')
    assert "tensorsight-demo/dumps/fp32" in board.locator(".cmp-bar").inner_text()
    first_row = board.locator("#cmp-table tr.first")
    assert "ShapesNet.blocks.1.1" in first_row.inner_text()
    first_row.scroll_into_view_if_needed()
    save(board, "demo-comparison")
    # the drill-down: the inputs agree exactly, so all of the error is this op's
    board.click("#cmp-first-open")
    board.wait_for_selector("#cmp-detail #cmp-heat")
    gain = board.locator("#cmp-detail #cmp-gain").inner_text()
    assert "inputs agree exactly" in gain
    save(board, "demo-comparison-detail")


def test_graphs_show_the_bf16_model_with_dtypes(board) -> None:
    open_view(board, "graphs")
    board.wait_for_selector("#graph-host[data-loaded]")
    if "bf16" not in (board.locator("#graph-host").get_attribute("data-loaded") or ""):
        board.select_option("#graph-pick", label="train/bf16 \u00b7 graph")
    board.wait_for_selector("#graph-host[data-loaded^='train/bf16']")
    board.locator(".box.scope[data-id='s:blocks.1.0']").dblclick()
    board.wait_for_selector(".cluster[data-id='s:blocks.1.0']")
    conv = board.locator(".box.op.reduced", has_text="convolution")
    assert "bfloat16[8, 32, 8, 8]" in conv.text_content()  # autocast ran the conv in bf16
    conv.click()
    board.wait_for_selector("#graph-panel >> text=bfloat16")
    save(board, "demo-graphs")


def test_landscapes_side_by_side(board) -> None:
    open_view(board, "landscapes")
    board.wait_for_selector("#ls-contour-a[data-isolines]")
    board.click("#ls-mode-side")
    board.select_option("#ls-pick-a", '["train/fp32","landscape/pca"]')
    board.select_option("#ls-pick-b", '["train/bf16","landscape/pca"]')
    board.check("#ls-log")
    board.wait_for_function(
        "() => document.querySelector('#ls-title-a').innerText.startsWith('train/fp32')"
        " && document.querySelector('#ls-title-b').innerText.startsWith('train/bf16')"
    )
    for side in "ab":
        assert int(board.locator(f"#ls-contour-{side}").get_attribute("data-path")) >= 2
        assert painted(board, f"#ls-contour-{side}") > 20_000
    assert "pca directions" in board.locator("#ls-meta").inner_text()
    save(board, "demo-landscape")
