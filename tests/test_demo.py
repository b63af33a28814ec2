"""The demo tells the whole story: train with SummaryWriter, dump, compare, board data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tensorsight.demo import run_demo
from tensorsight.demo._shapes import CLASSES, make_shapes, prediction_grid
from tensorsight.demo._train import train_run
from tensorsight.errors import UsageError
from tensorsight.summary import read_logdir
from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def test_demo_trains_dumps_compares_and_finds_the_planted_bug(tmp_path):
    lines: list[str] = []
    result = run_demo(tmp_path / "demo", steps=12, say=lines.append)

    logdir = read_logdir(result.logdir)
    assert set(logdir.runs) >= {"train/fp32", "train/bf16"}
    tags = logdir.tags("train/bf16")
    for tag in ("loss/train", "loss/eval", "accuracy/train", "accuracy/eval", "lr"):
        assert tag in tags["scalars"]
    assert len(logdir.scalars("train/bf16", "loss/train").values) == 12
    # the bf16 run's gap to fp32, step by step, from the two runs' own losses
    gap = logdir.scalars("train/bf16", "loss/train_bf16_minus_fp32").values
    losses = {p: result.final[p].train_losses for p in ("fp32", "bf16")}
    np.testing.assert_allclose(gap, np.subtract(losses["bf16"], losses["fp32"]), atol=1e-6)
    assert "loss/train_bf16_minus_fp32" not in logdir.tags("train/fp32")["scalars"]
    assert {"weights/blocks.1.0.weight", "grads/head.3.weight"} <= set(tags["histograms"])
    assert tags["images"] == ["predictions"]
    picture = logdir.images("train/bf16", "predictions")[-1]
    assert picture.step == 12
    assert tags["landscapes"] == ["landscape/pca"]
    graph = logdir.graph("train/bf16")
    dtypes = {d for node in graph.nodes for d in node.dtypes}
    assert "bfloat16" in dtypes  # autocast ops recorded in reduced precision
    accuracy = logdir.scalars("train/fp32", "accuracy/eval").values
    assert result.final["fp32"].eval_accuracy == pytest.approx(accuracy[-1])

    assert result.healthy_agrees, result.healthy
    assert result.bug_first_divergence is not None
    assert result.bug_first_divergence.startswith("aten.native_batch_norm")
    assert result.bug_first_divergence.endswith("blocks.1.1")
    assert "eps=0.1" in result.bug
    report = json.loads((result.logdir / "compare" / "fp32-vs-bug" / "comparison.json").read_text())
    assert report["rows"]
    assert (result.logdir / "compare" / "fp32-vs-bug" / "report.html").stat().st_size > 0
    assert any("planted bug found" in line for line in lines)


def test_shapes_are_the_four_classes_with_noise():
    torch = pytest.importorskip("torch")
    images, labels = make_shapes(torch, 400, seed=3, noise=0.0)
    assert images.shape == (400, 1, 16, 16)
    assert set(labels.tolist()) == {0, 1, 2, 3}
    assert set(images.unique().tolist()) == {0.0, 1.0}  # clean shapes: ones on zeros
    area = images.sum(dim=(1, 2, 3))
    cross = area[labels == CLASSES.index("cross")].mean()
    square = area[labels == CLASSES.index("square")].mean()
    assert cross < square  # a cross covers less than a filled square of the same size
    noisy, same = make_shapes(torch, 400, seed=3)
    assert torch.equal(same, labels)
    assert 0.3 < float((noisy - images).std()) < 0.4


def test_prediction_grid_frames_right_green_and_wrong_red():
    images = np.zeros((7, 1, 16, 16), np.float32)
    labels = np.array([0, 1, 2, 3, 0, 1, 2])
    predicted = np.array([0, 1, 2, 3, 1, 1, 0])
    grid = prediction_grid(images, labels, predicted)
    assert grid.dtype == np.uint8
    assert grid.shape[2] == 3
    across, down = 16 * 4 + 2 * 3 + 6, 16 * 4 + 2 * 3 + 17 + 6  # tile + gap, tile + strip + gap
    frames = [tuple(grid[7, 7 + i * across]) for i in range(6)] + [tuple(grid[7 + down, 7])]
    green, red = (46, 160, 67), (215, 58, 73)
    assert frames == [green, green, green, green, red, green, red]
    strips = [grid[6 + 70 : 6 + 87, 6 + i * across : 6 + i * across + 70] for i in range(6)]
    has_red = [bool((strip == red).all(axis=2).any()) for strip in strips]
    assert has_red == [False, False, False, False, True, False]  # the wrong prediction's icon


def test_training_is_reproducible(tmp_path):
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runs = [
            train_run(torch, tmp_path / str(i), bf16=True, steps=3, landscape_grid=3, say=print)
            for i in range(2)
        ]
    finally:
        torch.set_num_threads(threads)
    assert runs[0] == runs[1]


def test_demo_refuses_a_non_empty_logdir(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        run_demo(tmp_path, steps=1)
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_demo_cli_reports_bad_input_in_one_line(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    result = run_cli("demo", "--logdir", str(tmp_path), "--no-serve")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: Demo logdir {str(tmp_path)!r}: not empty. Expected a new or empty folder. "
        "Pass --force to replace it."
    ]
