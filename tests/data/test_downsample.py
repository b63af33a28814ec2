from __future__ import annotations

import numpy as np
import pytest

from tensorsight.data import downsample_indices
from tensorsight.data._downsample import evenly_spaced


def test_small_series_is_returned_whole():
    x = np.arange(10)
    y = np.linspace(0, 1, 10)
    assert downsample_indices(x, y, buckets=100).tolist() == list(range(10))


def test_empty_series():
    assert downsample_indices(np.array([]), np.array([]), buckets=10).size == 0


def test_million_points_reduce_to_about_four_per_bucket_and_keep_extremes():
    rng = np.random.default_rng(0)
    n = 1_000_000
    x = np.arange(n)
    y = np.cumsum(rng.standard_normal(n))
    idx = downsample_indices(x, y, buckets=500)
    assert 500 < idx.size <= 4 * 500 + 2
    assert np.all(np.diff(idx) > 0)
    # the global extremes survive, and so do the ends
    assert int(np.argmax(y)) in idx
    assert int(np.argmin(y)) in idx
    assert idx[0] == 0
    assert idx[-1] == n - 1


def test_every_non_finite_point_and_the_last_point_are_kept():
    n = 100_000
    x = np.arange(n)
    y = np.sin(x / 1000.0)
    bad = [10, 5000, 77_777]
    y[bad[0]] = np.nan
    y[bad[1]] = np.inf
    y[bad[2]] = -np.inf
    idx = set(downsample_indices(x, y, buckets=50).tolist())
    assert set(bad) <= idx
    assert n - 1 in idx


def test_visible_range_keeps_one_neighbour_each_side_and_the_last_point():
    x = np.arange(10_000)
    y = np.cos(x / 50.0)
    idx = downsample_indices(x, y, buckets=1000, x_min=1000, x_max=2000).tolist()
    assert idx[0] == 999
    assert 1000 in idx
    assert 2000 in idx
    assert 2001 in idx
    assert idx[-1] == 9999
    assert len(idx) == 1001 + 3  # the range is small enough to keep every point


def test_unsorted_x_is_sorted_and_the_last_written_point_kept():
    x = np.array([5, 1, 3, 2, 4, 0])
    y = np.array([0.5, 0.1, 0.3, 0.2, 0.4, 0.0])
    assert x[downsample_indices(x, y, buckets=2)].tolist() == [0, 1, 2, 3, 4, 5]
    # one bucket: first/last/min/max of the bucket, i.e. both ends
    assert x[downsample_indices(x, y, buckets=1)].tolist() == [0, 5]


def test_all_non_finite_window():
    x = np.arange(1000)
    y = np.full(1000, np.nan)
    idx = downsample_indices(x, y, buckets=10)
    assert idx.size == 1000


@pytest.mark.parametrize("buckets", [1, 7, 333])
def test_reversed_range_and_bucket_counts(buckets):
    x = np.arange(50_000, dtype=np.float64) * 0.5
    y = np.tanh(x - 100)
    a = downsample_indices(x, y, buckets=buckets, x_min=20_000, x_max=100)
    b = downsample_indices(x, y, buckets=buckets, x_min=100, x_max=20_000)
    assert a.tolist() == b.tolist()
    assert a.size <= 4 * buckets + 3


@pytest.mark.parametrize(("total", "limit"), [(0, 5), (3, 5), (5, 5), (6, 5), (1000, 7), (9, 2)])
def test_evenly_spaced_keeps_first_and_last_and_at_most_limit(total, limit):
    picks = evenly_spaced(total, limit)
    assert picks == sorted(set(picks))
    assert len(picks) == min(total, limit)
    if total:
        assert picks[0] == 0
        assert picks[-1] == total - 1
    gaps = np.diff(picks)
    assert gaps.size == 0 or gaps.max() - gaps.min() <= 1  # evenly spaced


def test_evenly_spaced_with_a_limit_of_one_keeps_the_newest():
    assert evenly_spaced(4, 1) == [3]
