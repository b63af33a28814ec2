"""The scale benchmark runs in quick mode: every executor finds the planted divergence."""

from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_scale

pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # starts a process pool, two Dask clusters and a local Ray


def test_quick_run_finds_the_same_first_divergence_on_every_executor():
    h = Harness("scale", repeat=1, quick=True)
    bench_scale.run(h)
    want = {"threads", "serial", "local (cold)", "local (warm)", "launcher (2 procs)"}
    assert want <= set(h.results)
    assert all(len(r.seconds) == 1 for r in h.results.values())
    assert h.lines[-1] == "same first divergence on every executor: yes"
    assert "planted bug at rank 12" in h.lines[-2]
