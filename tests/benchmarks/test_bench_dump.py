"""The dump benchmark's helpers: interleaved rounds, ratio notes, msprobe's path, syncing."""

from __future__ import annotations

import os
import shutil

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_dump

torch = pytest.importorskip("torch")


def test_interleaved_rounds_time_every_case_and_note_each_rounds_ratio():
    h = Harness("dump", repeat=2, quick=True)
    x = torch.randn(8, 8, requires_grad=True)

    def step():
        (x @ x).sum().backward()

    plain, (stats,) = bench_dump._interleaved(h, "tiny", step, 2, 3, {"statistics": {}})
    kept = list(bench_dump._LEFTOVERS)  # each round's dump stays until the run ends
    assert len(kept) == 2
    assert all(os.path.isdir(f) for f in kept)
    for folder in kept:
        shutil.rmtree(folder)
    bench_dump._LEFTOVERS.clear()
    assert len(plain.seconds) == len(stats.seconds) == 6
    ratios = [float(r) for r in stats.notes["round_ratios"].split()]
    assert len(ratios) == 2
    assert all(r > 0 for r in ratios)
    note = bench_dump._ratio_note(stats, plain)
    capture = stats.notes["capture"]
    assert capture in ("native", "python")
    assert note.startswith(f"tiny tensorsight statistics ({capture} capture): x")
    assert "median of the rounds' ratios" in note


def test_msprobe_path_goes_first_and_sync_reaches_every_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MSPROBE_PYTHONPATH", "/opt/mslib")
    monkeypatch.setenv("PYTHONPATH", "/x")
    assert bench_dump._msprobe_env()["PYTHONPATH"] == os.pathsep.join(["/opt/mslib", "/x"])
    monkeypatch.delenv("MSPROBE_PYTHONPATH")
    assert bench_dump._msprobe_env()["PYTHONPATH"] == "/x"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.bin").write_bytes(b"x" * 10)
    bench_dump._sync_tree(str(tmp_path))  # fdatasync on each file; raises if one is missing
    assert bench_dump._bytes_in(str(tmp_path)) == 10


def test_create_cost_probe_keeps_its_files_until_the_run_ends(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_dump.tempfile, "tempdir", str(tmp_path))
    cost = bench_dump._create_cost()
    assert cost > 0
    (probe,) = bench_dump._LEFTOVERS
    assert len(os.listdir(probe)) == bench_dump._PROBE_FOLDERS  # deleting them now would
    bench_dump._LEFTOVERS.clear()  # slow the next creations on journal-less ext4
