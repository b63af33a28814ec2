"""Golden cases for every built-in metric of the fused kernel (docs/metrics.md)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tensorsight.compare.metrics import KERNEL_KEYS, compare_arrays
from tensorsight.compare.metrics.kernel import value_range
from tensorsight.errors import CompareError

EPS = np.finfo(np.float64).eps


def reference(bench, target, target_dtype=np.float32):
    """Straightforward whole-array formulas (MindStudio's definitions), for cross-checks."""
    y = np.asarray(bench, dtype=np.float64).ravel()
    x = np.asarray(target, dtype=np.float64).ravel()
    out = {}
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    out["cosine"] = min(float((x / nx * (y / ny)).sum()), 1.0)
    out["max_abs_err"] = float(np.abs(x - y).max())
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(np.abs(y) > EPS, np.abs(x / y - 1), 0.0)
    out["acc_rel_err"] = float(r.sum())
    out["max_rel_err"] = float(r.max())
    out["mean_rel_err"] = float(r.mean())
    out["rel_euclidean"] = math.sqrt(((x - y) ** 2).sum() / (y**2).sum())

    def norm01(v):
        rg = v.max() - v.min()
        v = (v - v.min()) / rg if rg != 0 else v
        return np.maximum(v, np.finfo(np.float32).eps)

    p, q = norm01(x), norm01(y)
    p, q = p / p.sum(), q / q.sum()
    out["kl_div"] = float((p * np.log(p / q)).sum())
    out["mean_bench"], out["std_bench"] = float(y.mean()), float(y.std())
    out["mean_target"], out["std_target"] = float(x.mean()), float(x.std())
    out["mae"] = float(np.abs(x - y).mean())
    out["rmse"] = math.sqrt(((x - y) ** 2).mean())
    yb, xb = y.copy(), x.copy()
    zero = yb == 0
    yb[zero] += EPS
    xb[zero] += EPS
    rr = np.abs((xb - yb) / yb)
    out["within_1e-3"] = float((rr < 1e-3).mean())
    out["within_5e-3"] = float((rr < 5e-3).mean())
    spacing = np.spacing(np.abs(y).astype(target_dtype)).astype(np.float64)
    out["max_ulp"] = float((np.abs(x - y) / spacing).max())
    return out


def test_hand_computed_golden_case():
    bench = np.array([1.0, 2.0, 3.0, 4.0])
    target = np.array([1.0, 2.0, 3.0, 5.0])
    v = compare_arrays(bench, target, target_dtype="float32").values
    assert set(v) == set(KERNEL_KEYS)
    assert v["cosine"] == pytest.approx(34 / math.sqrt(30 * 39), rel=1e-15)
    assert v["max_abs_err"] == 1.0
    assert v["acc_rel_err"] == pytest.approx(0.25)
    assert v["rel_euclidean"] == pytest.approx(1 / math.sqrt(30))
    assert v["mae"] == pytest.approx(0.25)
    assert v["rmse"] == pytest.approx(0.5)
    assert v["max_rel_err"] == pytest.approx(0.25)
    assert v["mean_rel_err"] == pytest.approx(0.0625)
    assert v["within_1e-3"] == 0.75
    assert v["within_5e-3"] == 0.75
    assert v["mean_bench"] == 2.5
    assert v["std_bench"] == pytest.approx(math.sqrt(1.25))
    assert v["mean_target"] == 2.75
    assert v["std_target"] == pytest.approx(np.std([1.0, 2.0, 3.0, 5.0]))
    # ulp of float32 at 4.0 is 2**-21: an error of 1 is 2**21 ulp
    assert v["max_ulp"] == 2.0**21
    assert v["kl_div"] == pytest.approx(reference(bench, target)["kl_div"], rel=1e-12)


@pytest.mark.parametrize("chunk", [7, 1 << 16])
def test_matches_reference_on_random_fp32(chunk):
    rng = np.random.default_rng(0)
    bench = rng.standard_normal(5000).astype(np.float32)
    target = (bench + rng.standard_normal(5000).astype(np.float32) * 1e-3).astype(np.float32)
    target[10] = 0.0
    bench[11] = 0.0
    got = compare_arrays(bench, target, chunk=chunk).values
    want = reference(bench, target)
    for key in KERNEL_KEYS:
        assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-15), key


def test_bf16_target_rounding_is_half_an_ulp_at_most():
    rng = np.random.default_rng(1)
    bench = rng.standard_normal(4096).astype(np.float32)
    target = bench.astype(ml_dtypes.bfloat16)
    m = compare_arrays(bench, target)
    assert m.values["max_ulp"] <= 0.5
    assert 0 < m.values["rel_euclidean"] < 2.0**-8
    assert m.values["cosine"] > 0.9999
    want = reference(bench, target.astype(np.float32), target_dtype=ml_dtypes.bfloat16)
    assert m.values["max_ulp"] == pytest.approx(want["max_ulp"])


def test_nonfinite_at_equal_positions_are_zeroed():
    bench = np.array([1.0, np.nan, np.inf, -np.inf, 2.0])
    target = np.array([1.0, np.nan, np.inf, -np.inf, 2.5])
    m = compare_arrays(bench, target)
    assert not m.nonfinite_mismatch
    assert (m.nonfinite_bench, m.nonfinite_target) == (3, 3)
    assert m.values["max_abs_err"] == 0.5
    assert m.values["mae"] == pytest.approx(0.1)
    assert m.values["within_1e-3"] == pytest.approx(0.8)


def test_nonfinite_at_different_positions_makes_error_metrics_nan():
    bench = np.array([1.0, 2.0, np.inf])
    target = np.array([1.0, np.nan, -np.inf])
    m = compare_arrays(bench, target)
    assert m.nonfinite_mismatch
    for key in ("cosine", "max_abs_err", "rel_euclidean", "kl_div", "within_1e-3", "max_ulp"):
        assert math.isnan(m.values[key]), key
    assert m.values["mean_bench"] == 1.0  # per-side moments stay defined (zeroed elements)


def test_zero_tensors():
    z = np.zeros(4)
    both = compare_arrays(z, z).values
    assert both["cosine"] == 1.0
    assert both["rel_euclidean"] == 0.0
    assert both["kl_div"] == 0.0
    assert both["within_1e-3"] == 1.0  # 0/0 counts as no relative error (msprobe)
    one = compare_arrays(z, np.ones(4)).values
    assert math.isnan(one["cosine"])
    assert one["rel_euclidean"] == 0.0  # MindStudio: bench norm 0 -> 0 (documented blind spot)
    assert one["within_1e-3"] == 0.0
    assert one["acc_rel_err"] == 0.0  # elements with |bench| <= eps are skipped


def test_empty_tensors_give_nan_and_numel_zero():
    m = compare_arrays(np.zeros((0, 3)), np.zeros((0, 3)))
    assert m.numel == 0
    assert all(math.isnan(v) for v in m.values.values())


def test_shape_mismatch_raises():
    with pytest.raises(CompareError, match=r"shapes differ.*\(2,\).*\(3,\)"):
        compare_arrays(np.zeros(2), np.zeros(3))


def test_scalar_cosine_is_one_like_mindstudio():
    m = compare_arrays(np.array(2.0), np.array(-2.0))
    assert m.values["cosine"] == 1.0
    assert m.values["max_abs_err"] == 4.0


def test_integer_target_counts_ulp_as_one():
    m = compare_arrays(np.array([1, 5, 9]), np.array([1, 7, 9]))
    assert m.values["max_ulp"] == 2.0


def test_known_range_gives_same_kl_as_range_pass():
    rng = np.random.default_rng(2)
    b = rng.standard_normal(1000)
    t = b * 1.01
    free = compare_arrays(b, t).values["kl_div"]
    given = compare_arrays(b, t, bench_range=value_range(b), target_range=value_range(t))
    assert given.values["kl_div"] == free


def test_blind_spots_are_real():
    """Cosine is scale-blind; KL after min-max normalisation is blind to scale and shift."""
    rng = np.random.default_rng(3)
    b = rng.random(1000) + 0.5
    scaled = compare_arrays(b, 3 * b).values
    assert scaled["cosine"] == pytest.approx(1.0)
    assert scaled["kl_div"] == pytest.approx(0.0, abs=1e-12)
    assert scaled["rel_euclidean"] == pytest.approx(2.0)
    shifted = compare_arrays(b, b + 7).values
    assert shifted["kl_div"] == pytest.approx(0.0, abs=1e-12)
    # accumulated relative error grows with n for the same per-element error
    small = compare_arrays(np.ones(10), np.full(10, 1.01)).values["acc_rel_err"]
    large = compare_arrays(np.ones(1000), np.full(1000, 1.01)).values["acc_rel_err"]
    assert large == pytest.approx(100 * small)


def test_value_range_ignores_nonfinite():
    assert value_range(np.array([np.nan, -3.0, np.inf, 2.0])) == (-3.0, 2.0)
    lo, hi = value_range(np.zeros(0))
    assert math.isnan(lo)
    assert math.isnan(hi)
