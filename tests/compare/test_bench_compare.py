from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_compare

pytest.importorskip("torch")


@pytest.mark.slow
def test_benchmark_runs_quick(monkeypatch):
    monkeypatch.delenv("MSPROBE_PYTHONPATH", raising=False)
    h = Harness("compare", repeat=1, quick=True)
    bench_compare.run(h)
    table = h.table()
    assert "kernel: 16 metrics, ranges known" in table
    assert "tensorsight compare" in table
    assert any("% of numpy.sum" in line for line in h.lines)
