"""Histograms: TensorBoard's ``HistogramProto`` built from values or given raw."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "HistogramRecord",
    "decode",
    "decode_legacy",
    "default_bins",
    "encode",
    "encode_raw",
]

KIND = "histograms"
PLUGIN_NAME = "histograms"  # TF2 tensor summaries; legacy values carry no plugin
SCHEMA_VERSION = 0


@lru_cache(maxsize=1)
def default_bins() -> NDArray[np.float64]:
    """TensorFlow's bucket edges: 0 and ±1e-12 * 1.1**k up to 1e20 (1549 edges)."""
    positive = []
    edge = 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    pos = np.array(positive, dtype=np.float64)
    return np.concatenate([-pos[::-1], [0.0], pos])


def encode(
    tag: str, values: object, bins: object = "tensorflow", max_bins: int | None = None
) -> Any:
    """A ``Summary.Value`` holding the histogram of ``values``.

    Args:
        tag: Series name.
        values: Any numeric array; flattened and converted to float64.
        bins: ``"tensorflow"`` (TensorFlow's exponential edges), a numpy bin strategy
            (``"auto"``, ``"fd"``, ``"sturges"``, ...), a bin count or explicit edges.
        max_bins: Merge neighbouring bins so that at most about this many remain.

    Raises:
        UsageError: ``values`` is empty, or ``bins`` is not understood by numpy.
    """
    array = to_numpy(values, what=f"Histogram {tag!r}").astype(np.float64).reshape(-1)
    if array.size == 0:
        msg = f"Histogram {tag!r}: got no values. Expected at least one number."
        raise UsageError(msg)
    edges: Any = default_bins() if isinstance(bins, str) and bins == "tensorflow" else bins
    finite = array[np.isfinite(array)]
    try:
        counts, limits = np.histogram(finite if finite.size else np.zeros(1), bins=edges)
    except (ValueError, TypeError) as exc:
        msg = f"Histogram {tag!r}: numpy cannot bin with bins={bins!r} ({exc})."
        raise UsageError(msg) from exc
    if not finite.size:
        counts = np.zeros_like(counts)
    if max_bins is not None and counts.size > max_bins:
        counts, limits = _merge_bins(counts, limits, max_bins)
    counts, limits = _trim_empty(counts, limits)
    return tb.Summary.Value(
        tag=tag,
        histo=tb.HistogramProto(
            min=float(array.min()),
            max=float(array.max()),
            num=float(array.size),
            sum=float(array.sum()),
            sum_squares=float(array.dot(array)),
            bucket_limit=limits.tolist(),
            bucket=counts.astype(np.float64).tolist(),
        ),
    )


def _merge_bins(
    counts: NDArray[Any], limits: NDArray[Any], max_bins: int
) -> tuple[NDArray[Any], NDArray[Any]]:
    group = counts.size // max_bins
    pad = (-counts.size) % group
    if pad:
        counts = np.concatenate([counts, np.zeros(pad, counts.dtype)])
    merged = counts.reshape(-1, group).sum(axis=1)
    new_limits = np.empty(merged.size + 1, limits.dtype)
    new_limits[:-1] = limits[:-1:group][: merged.size]
    new_limits[-1] = limits[-1]
    return merged, new_limits


def _trim_empty(counts: NDArray[Any], limits: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any]]:
    """Drop empty buckets at both ends, keeping one empty bucket before the first full one.

    The result has ``bucket[i]`` = count in ``(bucket_limit[i-1], bucket_limit[i]]``, the
    layout TensorBoard expects (its limits are right edges).
    """
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        return np.zeros(1, counts.dtype), limits[-1:]
    first, last = int(nonzero[0]), int(nonzero[-1])
    right_edges = limits[1:]
    if first > 0:
        return counts[first - 1 : last + 1], right_edges[first - 1 : last + 1]
    return np.concatenate([[0], counts[: last + 1]]), np.concatenate(
        [limits[:1], right_edges[: last + 1]]
    )


def encode_raw(
    tag: str,
    min: float,
    max: float,
    num: int,
    sum: float,
    sum_squares: float,
    bucket_limits: Sequence[float] | object,
    bucket_counts: Sequence[float] | object,
) -> Any:
    """A ``Summary.Value`` from precomputed histogram statistics (see ``add_histogram_raw``)."""
    limits = to_numpy(bucket_limits, what=f"Histogram {tag!r} bucket_limits").reshape(-1)
    counts = to_numpy(bucket_counts, what=f"Histogram {tag!r} bucket_counts").reshape(-1)
    if limits.size != counts.size:
        msg = (
            f"Histogram {tag!r}: bucket_limits has {limits.size} entries and bucket_counts "
            f"{counts.size}. Expected the same number (one upper limit per bucket)."
        )
        raise UsageError(msg)
    return tb.Summary.Value(
        tag=tag,
        histo=tb.HistogramProto(
            min=float(min),
            max=float(max),
            num=float(num),
            sum=float(sum),
            sum_squares=float(sum_squares),
            bucket_limit=limits.astype(np.float64).tolist(),
            bucket=counts.astype(np.float64).tolist(),
        ),
    )


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class HistogramRecord:
    """One histogram: ``len(edges) == len(counts) + 1``; bucket i spans edges[i]..edges[i+1].

    ``nan_count``/``pos_inf_count``/``neg_inf_count`` are set where the source records them
    (MindSpore), else ``None``. ``min``/``max``/``num``/``sum``/``sum_squares`` come from
    TensorBoard's legacy histogram (``None`` when absent).
    """

    step: int
    wall_time: float
    edges: NDArray[np.float64]
    counts: NDArray[np.float64]
    nan_count: int | None = None
    pos_inf_count: int | None = None
    neg_inf_count: int | None = None
    min: float | None = None
    max: float | None = None
    num: float | None = None
    sum: float | None = None
    sum_squares: float | None = None


def decode_legacy(step: int, wall_time: float, h: Any) -> HistogramRecord:
    """The record of a legacy ``HistogramProto`` (right edges; ``min`` is the first left)."""
    limits = np.asarray(h.bucket_limit, dtype=np.float64)
    counts = np.asarray(h.bucket, dtype=np.float64)
    if counts.size:
        edges = np.concatenate([[h.min], limits[:-1], [h.max]]).astype(np.float64)
    else:
        edges = np.empty(0, np.float64)
    return HistogramRecord(
        step, wall_time, edges, counts, min=h.min, max=h.max, num=h.num, sum=h.sum,
        sum_squares=h.sum_squares,
    )  # fmt: skip


def decode(raw: Raw) -> list[HistogramRecord]:
    """A TF2 ``histograms`` plugin tensor: ``(k, 3)`` rows of (left, right, count)."""
    _, _, arr = decode_tensor(raw.tensor)
    data = np.asarray(arr, dtype=np.float64).reshape(-1, 3)
    if data.shape[0] == 0:
        return [HistogramRecord(raw.step, raw.wall_time, np.empty(0), np.empty(0))]
    edges = np.concatenate([data[:, 0], data[-1:, 1]])
    return [HistogramRecord(raw.step, raw.wall_time, edges, data[:, 2].copy())]


SPEC = Kind(KIND, HistogramRecord, PLUGIN_NAME, decode)
