"""The demo tells the whole story: train with SummaryWriter, dump, compare, board data."""

from __future__ import annotations

import json

import pytest

from tensorsight.demo import run_demo
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
    assert "loss/train" in tags["scalars"]
    assert len(logdir.scalars("train/bf16", "loss/train").values) == 12
    assert tags["histograms"]
    assert tags["images"] == ["inputs"]
    graph = logdir.graph("train/bf16")
    dtypes = {d for node in graph.nodes for d in node.dtypes}
    assert "bfloat16" in dtypes  # autocast ops recorded in reduced precision

    assert result.healthy_agrees, result.healthy
    assert result.bug_first_divergence is not None
    assert "blocks.1" in result.bug_first_divergence
    report = json.loads((result.logdir / "compare" / "fp32-vs-bug" / "comparison.json").read_text())
    assert report["rows"]
    assert (result.logdir / "compare" / "fp32-vs-bug" / "report.html").stat().st_size > 0
    assert any("planted bug found" in line for line in lines)


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
