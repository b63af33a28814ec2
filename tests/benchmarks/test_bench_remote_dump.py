"""The remote-dump benchmark runs in quick mode: S3 and local compares agree."""

from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_remote_dump

pytest.importorskip("torch")
pytest.importorskip("moto.server")
pytest.importorskip("s3fs")
pytestmark = pytest.mark.slow  # starts an S3 server process and compares 67 MB twice a case


def test_quick_run_reads_the_same_comparison_from_s3():
    h = Harness("remote_dump", repeat=1, quick=True)
    bench_remote_dump.run(h)
    assert set(h.results) == {"local", "s3 (moto)", "s3 GET only"}
    assert "same rows and first divergence: yes" in h.lines[-3]
    assert "first divergence (1, " in h.lines[-3]
