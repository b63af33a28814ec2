from __future__ import annotations

import pytest
from benchmarks.harness import Harness

from benchmarks import bench_kernels
from tensorsight import _cbuild
from tensorsight.compare.metrics import _native


def test_times_every_loop_the_cpu_runs_and_names_the_cpu():
    features = _native.features()
    if features is None:
        pytest.skip("no C compiler here")
    h = Harness("kernels", repeat=1, quick=True)
    bench_kernels.run(h)
    loops = [p for p in _cbuild.KERNEL_PATHS if not _cbuild.missing_features(p, features)]
    assert "portable" in loops
    for isa in loops:
        assert any(line.startswith(f"metric kernel {isa}: ") for line in h.lines), isa
        assert f"stats kernel, float32, {isa}" in h.results
    cpu = next(line for line in h.lines if line.startswith("CPU: "))
    for feature in ("avx2", "fma", "avx512f", "avx512dq"):
        assert f"{feature} {'yes' if feature in features else 'no'}" in cpu
    assert any(line.startswith("auto runs ") for line in h.lines)
