"""Per-request downsampling of a full-resolution series (M4 buckets).

The visible x range is cut into ``buckets`` equal-width buckets (one or two per pixel). From
each bucket the first, last, lowest and highest finite points are kept (the "M4"
aggregation: a line drawn through them covers exactly the pixels the full series covers).
Every non-finite point (NaN, +-Inf) and the last point of the series are always kept, and so
is the nearest point just outside each end of the range, so lines run to the chart edge.

Everything is vectorised with numpy: a 1,000,000-point series reduces in a few milliseconds.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["downsample_indices", "evenly_spaced"]


def _first_per_group(idx: NDArray[np.intp], group: NDArray[np.intp]) -> NDArray[np.intp]:
    """``idx`` entries that start a new ``group`` value (both sorted by group)."""
    if idx.size == 0:
        return idx
    keep = np.ones(idx.size, dtype=bool)
    keep[1:] = group[1:] != group[:-1]
    return idx[keep]


def _last_per_group(idx: NDArray[np.intp], group: NDArray[np.intp]) -> NDArray[np.intp]:
    if idx.size == 0:
        return idx
    keep = np.ones(idx.size, dtype=bool)
    keep[:-1] = group[1:] != group[:-1]
    return idx[keep]


def downsample_indices(
    x: NDArray[np.floating] | NDArray[np.integer],
    y: NDArray[np.floating],
    *,
    buckets: int,
    x_min: float | None = None,
    x_max: float | None = None,
) -> NDArray[np.intp]:
    """Indices into ``x``/``y`` of the points to draw, sorted by ``x`` (ties in file order).

    Args:
        x: x coordinates (step, relative or wall time), any order.
        y: values, same length; NaN/Inf allowed.
        buckets: number of buckets over the visible range (>= 1).
        x_min: left end of the visible range (``None``: the smallest x).
        x_max: right end of the visible range (``None``: the largest x).

    Returns:
        Indices of the kept points. When the range holds no more than ``4 * buckets``
        points, every point in it is kept (no downsampling).
    """
    n = int(x.shape[0])
    if n == 0:
        return np.empty(0, dtype=np.intp)
    xf = np.asarray(x, dtype=np.float64)
    yf = np.asarray(y, dtype=np.float64)
    order: NDArray[np.intp] | None = None  # None: x is already sorted (the usual case)
    if n > 1 and bool(np.any(xf[1:] < xf[:-1])):
        order = np.argsort(xf, kind="stable")
    xs = xf if order is None else xf[order]
    lo = xs[0] if x_min is None else float(x_min)
    hi = xs[-1] if x_max is None else float(x_max)
    if hi < lo:
        lo, hi = hi, lo
    start = int(np.searchsorted(xs, lo, side="left"))
    stop = int(np.searchsorted(xs, hi, side="right"))
    # one neighbour outside each end, so the line reaches the chart edge
    edge = []
    if start > 0:
        edge.append(start - 1)
    if stop < n:
        edge.append(stop)
    last_written = n - 1 if order is None else int(np.flatnonzero(order == n - 1)[0])
    extra = np.array([*edge, last_written], dtype=np.intp)

    window = np.arange(start, stop, dtype=np.intp)
    ys = yf if order is None else yf[order]
    if window.size <= 4 * max(buckets, 1):
        kept = np.concatenate([window, extra])
    else:
        yw = ys[start:stop]
        finite = np.isfinite(yw)
        nonfinite = window[~finite]
        fidx = window[finite]
        if fidx.size:
            width = (hi - lo) or 1.0
            bucket = np.minimum(((xs[fidx] - lo) / width * buckets).astype(np.intp), buckets - 1)
            yv = ys[fidx]
            firsts = _first_per_group(fidx, bucket)
            lasts = _last_per_group(fidx, bucket)
            # bucket is non-decreasing (x is sorted): reduce each run of equal buckets
            starts = np.flatnonzero(np.r_[True, bucket[1:] != bucket[:-1]])
            counts = np.diff(np.r_[starts, bucket.size])
            low = np.repeat(np.minimum.reduceat(yv, starts), counts)
            high = np.repeat(np.maximum.reduceat(yv, starts), counts)
            is_low = yv == low
            is_high = yv == high
            mins = _first_per_group(fidx[is_low], bucket[is_low])
            maxs = _first_per_group(fidx[is_high], bucket[is_high])
            kept = np.concatenate([firsts, lasts, mins, maxs, nonfinite, extra])
        else:
            kept = np.concatenate([nonfinite, extra])
    result: NDArray[np.intp] = np.unique(kept)
    return result if order is None else order[result]


def evenly_spaced(total: int, limit: int) -> list[int]:
    """Indices of at most ``limit`` of ``total`` records, evenly spaced, first and last kept.

    Every index when ``total <= limit``; ``limit`` of 1 keeps the last (newest) record.

    Example:
        >>> evenly_spaced(10, 4)
        [0, 3, 6, 9]
    """
    if total <= limit:
        return list(range(total))
    if limit <= 1:
        return [total - 1] if limit == 1 else []
    return sorted({round(i * (total - 1) / (limit - 1)) for i in range(limit)})
