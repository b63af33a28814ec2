"""The write benchmark runs in quick mode (timings are printed, never asserted)."""

from __future__ import annotations

import pytest

from benchmarks import bench_write, harness

pytest.importorskip("torch.utils.tensorboard")


def test_bench_write_quick_runs_both_writers():
    h = harness.Harness("write", repeat=1, quick=True)
    bench_write.run(h)
    assert set(h.results) == {"torch add_scalar", "tensorsight add_scalar"}
    assert all(r.seconds for r in h.results.values())
    assert "add_histogram" in h.table()
