"""The monitor's verdicts on given statistics (numpy only, no torch)."""

from __future__ import annotations

import math

import numpy as np

from tensorsight.monitor._checks import Checker, Series


def _check(checker, step, pairs):
    ids = np.array([checker.add(s) for s, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=np.float64)
    return checker.check(step, ids, values)


def test_each_kind_is_named_for_its_tensor_in_the_order_given():
    c = Checker(dead_steps=1)
    half = Series("activation", "fc1", "output.0", "float16", "amax")
    full = Series("activation", "fc2", "output.0", "float32", "amax")
    sat = Series("activation", "fc3", "output.0", "bfloat16", "amax")
    sub = Series("activation", "fc4", "output.0", "float16", "amax")
    zero = Series("grad", "fc5.weight", "grad", "float32", "norm")
    nan = Series("loss", "loss", "loss", "float32", "value")
    found = _check(
        c,
        7,
        [
            (half, math.inf),
            (full, math.inf),
            (sat, 3.3895313892515355e38),
            (sub, 1e-6),
            (zero, 0.0),
            (nan, math.nan),
        ],
    )
    assert [(a.where, a.kind) for a in found] == [
        ("fc1", "overflow"),
        ("fc2", "inf"),
        ("fc3", "overflow"),
        ("fc4", "underflow"),
        ("fc5.weight", "dead"),
        ("loss", "nan"),
    ]
    assert all(a.step == 7 for a in found)
    assert (
        found[0].describe() == "step 7: overflow in activation 'fc1' output.0 (float16, amax inf)"
    )


def test_healthy_values_give_nothing():
    c = Checker()
    s = Series("activation", "", "output.0", "float16", "amax")
    g = Series("grad", "w", "grad", "float16", "norm")
    for step in range(30):
        assert _check(c, step, [(s, 1.0 + 0.1 * (step % 3)), (g, 100.0)]) == []


def test_spike_against_the_running_median_and_nan_stays_out_of_history():
    c = Checker(spike_factor=10, min_history=5)
    g = Series("grad", "w", "grad", "float32", "norm")
    for step in range(5):
        assert _check(c, step, [(g, 1.0)]) == []
    (nan,) = _check(c, 5, [(g, math.nan)])
    assert nan.kind == "nan"
    assert _check(c, 6, [(g, 9.0)]) == []  # below 10x the median
    (spike,) = _check(c, 7, [(g, 11.0)])
    assert (spike.kind, spike.reference) == ("spike", 1.0)
    assert "median 1" in spike.describe()


def test_dead_is_reported_once_per_run_of_zero_steps_and_not_for_states():
    c = Checker(dead_steps=2)
    a = Series("activation", "relu", "output.0", "float32", "amax")
    s = Series("state", "w", "exp_avg", "float32", "amax")
    kinds = [[x.kind for x in _check(c, step, [(a, 0.0), (s, 0.0)])] for step in range(4)]
    assert kinds == [[], ["dead"], [], []]
    assert _check(c, 4, [(a, 1.0)]) == []
    assert [x.kind for x in _check(c, 5, [(a, 0.0)])] == []
    assert [x.kind for x in _check(c, 6, [(a, 0.0)])] == ["dead"]


def test_the_running_median_is_nanmedian_over_the_values_seen():
    from tensorsight.monitor._checks import _running_median

    rng = np.random.default_rng(0)
    history = np.full((4, 6), np.nan)
    counts = np.array([1, 2, 5, 9])  # 9 > the window: the row is full (wrapped)
    for row, n in enumerate(counts):
        history[row, : min(n, 6)] = rng.random(min(n, 6))
    np.testing.assert_array_equal(
        _running_median(history, counts, 6), np.nanmedian(history, axis=1)
    )
