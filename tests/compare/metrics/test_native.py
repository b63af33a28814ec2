"""The compiled C kernel agrees with the numpy kernel (the reference) to rounding."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tensorsight.compare.metrics import KERNEL_KEYS, _native, compare_arrays
from tensorsight.compare.metrics.kernel import NATIVE_CHUNK_ELEMS

pytestmark = pytest.mark.skipif(_native.load() is None, reason="no C compiler here")


def _agree(bench, target, **kw):
    c = compare_arrays(bench, target, **kw)
    n = compare_arrays(bench, target, native=False, **kw)
    for key in KERNEL_KEYS:
        a, b = c.values[key], n.values[key]
        if math.isnan(b):
            assert math.isnan(a), key
        else:
            assert a == pytest.approx(b, rel=1e-9, abs=1e-13), key
    assert (c.nonfinite_bench, c.nonfinite_target) == (n.nonfinite_bench, n.nonfinite_target)
    assert c.nonfinite_mismatch == n.nonfinite_mismatch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_matches_numpy_over_several_chunks(dtype):
    rng = np.random.default_rng(5)
    n = 2 * NATIVE_CHUNK_ELEMS + 123
    bench = (rng.standard_normal(n) * 3 + 10).astype(dtype)
    target = (bench * (1 + rng.standard_normal(n) * 1e-3)).astype(dtype)
    target[::1000] = 0
    bench[5::1000] = 0
    _agree(bench, target)


def test_native_handles_mixed_dtypes_and_a_chunk_with_nan():
    rng = np.random.default_rng(6)
    n = NATIVE_CHUNK_ELEMS + 50
    bench = rng.standard_normal(n).astype(np.float32)
    target = bench.astype(ml_dtypes.bfloat16)
    _agree(bench, target)
    bench[-3] = np.nan
    target[-3] = np.nan
    _agree(bench, target)
    target[-4] = np.inf
    _agree(bench, target)


def test_numpy_can_be_forced(monkeypatch):
    monkeypatch.setenv("TENSORSIGHT_KERNEL", "numpy")
    saved = dict(_native._STATE)
    _native._STATE.clear()
    try:
        assert _native.load() is None
    finally:
        _native._STATE.clear()
        _native._STATE.update(saved)
