from __future__ import annotations

import math

import numpy as np

from tensorsight.compare.metrics import compare_arrays, compare_fingerprints, compare_stats
from tensorsight.dumpformat.schema import TensorStats


def _stats(a):
    a = np.asarray(a, dtype=np.float64)
    return TensorStats(float(a.min()), float(a.max()), float(a.mean()), float(np.linalg.norm(a)))


def test_stat_differences_are_lower_bounds_of_tensor_metrics():
    rng = np.random.default_rng(0)
    b = rng.standard_normal(500)
    t = b + rng.standard_normal(500) * 0.05
    s = compare_stats(_stats(b), _stats(t))
    full = compare_arrays(b, t).values
    assert s.values["stat_abs_diff"] <= full["max_abs_err"]
    assert s.values["norm_rel_diff"] <= full["rel_euclidean"]
    assert s.values["mean_bench"] == b.mean()
    assert not s.nonfinite_mismatch


def test_nonfinite_counts_and_missing_values():
    b = TensorStats(None, None, None, None)
    t = TensorStats(0.0, 1.0, math.nan, math.inf, nan_count=1, posinf_count=1)
    s = compare_stats(b, t)
    assert s.nonfinite_mismatch
    assert s.values["nonfinite_target"] == 2.0
    assert math.isnan(s.values["stat_abs_diff"])
    assert math.isnan(s.values["norm_rel_diff"])


def test_zero_bench_norm():
    z = TensorStats(0.0, 0.0, 0.0, 0.0)
    assert compare_stats(z, z).values["norm_rel_diff"] == 0.0
    assert compare_stats(z, TensorStats(0.0, 1.0, 0.5, 1.0)).values["norm_rel_diff"] == math.inf


def test_fingerprints():
    assert compare_fingerprints("abcd0123", "ABCD0123") is True
    assert compare_fingerprints("abcd0123", "abcd0124") is False
    assert compare_fingerprints(None, "abcd0124") is None
