"""The transformer benchmark runs end to end on its small model (--quick)."""

from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_dump, bench_transformer

pytest.importorskip("torch")


@pytest.mark.slow
def test_benchmark_runs_quick_and_the_healthy_pair_has_no_error_rows():
    h = Harness("transformer", repeat=1, quick=True)
    bench_transformer.run(h)
    assert not bench_dump._LEFTOVERS  # its statistics dumps are deleted when it ends
    table = h.table()
    assert "tensorsight compare (csv+json)" in table
    assert bench_transformer.ANCHOR in table
    assert "GPT tensorsight statistics" in table
    dumps = next(line for line in h.lines if line.startswith("dumps:"))
    assert " 0 error rows" in dumps  # fp32 vs bf16 autocast is healthy
    assert any("goal <= x1.5" in line for line in h.lines)
    assert any("goal >= 1 GB/s" in line for line in h.lines)
    cpu = next(line for line in h.lines if "blocks of" in line)
    assert "CPU (process) x" in cpu
    assert "; wall x" in cpu
    assert "IQR" in cpu
    assert "torch threads" in cpu
