"""The watch benchmark runs in quick mode and notes the overhead ratio of each round, on both
clocks."""

from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_watch

pytest.importorskip("torch")


def test_quick_run_times_both_cases_and_notes_the_ratio():
    h = Harness("watch", repeat=2, quick=True)
    bench_watch.run(h)
    assert len(h.results["plain step"].seconds) == len(h.results["watched step"].seconds) == 2
    (note,) = h.lines
    assert note.startswith("watch overhead, training thread's CPU time: x")
    assert "process CPU time x" in note
    assert "anomalies seen: 0" in note  # a healthy model stays healthy under the watch
