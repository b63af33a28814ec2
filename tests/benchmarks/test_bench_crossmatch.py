"""The cross-framework pairing benchmark runs in quick mode and pairs every pairable output."""

from __future__ import annotations

from benchmarks.harness import Harness

from benchmarks import bench_crossmatch


def test_quick_run_times_both_cases_and_pairs_every_computed_output():
    h = Harness("crossmatch", repeat=1, quick=True)
    bench_crossmatch.run(h)
    assert len(h.results) == 2
    (note,) = h.lines
    # 20 layers x 6 outputs; LayerNorm's saved mean and 1/std (2 a layer) have no counterpart
    assert note.startswith("20 layers; 80 of 120 bench outputs paired")
