"""Comparisons without tensors: statistics-mode dumps and md5-mode (fingerprint) dumps.

Statistics give *lower bounds* on the tensor metrics, which is what makes a verdict from
them sound: ``|max_t - max_b|``, ``|min_t - min_b|`` and ``|mean_t - mean_b|`` are each at most
``max_abs_err``, and ``| ||t|| - ||b|| | / ||b||`` is at most ``rel_euclidean`` (triangle
inequality). A difference found here is therefore real; agreement here does not prove the
tensors agree (a permutation keeps every statistic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

__all__ = ["STATS_KEYS", "StatsLike", "StatsSummary", "compare_fingerprints", "compare_stats"]

# Keys compare_stats fills (extra report columns, after the PRODUCT.md metrics).
STATS_KEYS = (
    "min_bench",
    "min_target",
    "max_bench",
    "max_target",
    "norm_bench",
    "norm_target",
    "nonfinite_bench",
    "nonfinite_target",
    "stat_abs_diff",
    "norm_rel_diff",
)


class StatsLike(Protocol):
    """Anything with a dump's per-tensor statistics (``dumpformat.schema.TensorStats`` fits)."""

    @property
    def min(self) -> float | None: ...
    @property
    def max(self) -> float | None: ...
    @property
    def mean(self) -> float | None: ...
    @property
    def norm(self) -> float | None: ...
    @property
    def nan_count(self) -> int: ...
    @property
    def posinf_count(self) -> int: ...
    @property
    def neginf_count(self) -> int: ...


@dataclass(frozen=True)
class StatsSummary:
    """The outcome of comparing two sets of statistics.

    Attributes:
        values: Key -> value for :data:`STATS_KEYS` plus ``mean_bench``/``mean_target``
            (``nan`` where a side lacks the statistic).
        nonfinite_mismatch: The NaN, +Inf or -Inf counts differ.
    """

    values: dict[str, float]
    nonfinite_mismatch: bool


def _f(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _absdiff(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:  # also equal infinities
        return 0.0
    return abs(a - b)


def compare_stats(bench: StatsLike, target: StatsLike) -> StatsSummary:
    """Compare min/max/mean/L2 norm and NaN/Inf counts of two tensors.

    Args:
        bench: Statistics of the reference tensor.
        target: Statistics of the tensor under test.

    Returns:
        A :class:`StatsSummary`. ``stat_abs_diff`` is the largest of the min, max and mean
        differences (a lower bound of ``max_abs_err``); ``norm_rel_diff`` is
        ``|norm_t - norm_b| / norm_b`` (a lower bound of ``rel_euclidean``; 0 when both norms
        are 0, ``inf`` when only the bench norm is 0).

    Example:
        >>> from types import SimpleNamespace as S
        >>> counts = dict(nan_count=0, posinf_count=0, neginf_count=0)
        >>> b = S(min=-1.0, max=1.0, mean=0.0, norm=2.0, **counts)
        >>> t = S(min=-1.0, max=1.5, mean=0.1, norm=2.2, **counts)
        >>> s = compare_stats(b, t)
        >>> s.values["stat_abs_diff"], round(s.values["norm_rel_diff"], 3)
        (0.5, 0.1)
    """
    v: dict[str, float] = {}
    for name in ("min", "max", "mean", "norm"):
        v[f"{name}_bench"] = _f(getattr(bench, name))
        v[f"{name}_target"] = _f(getattr(target, name))
    counts_b = (bench.nan_count, bench.posinf_count, bench.neginf_count)
    counts_t = (target.nan_count, target.posinf_count, target.neginf_count)
    v["nonfinite_bench"] = float(sum(counts_b))
    v["nonfinite_target"] = float(sum(counts_t))
    diffs = [_absdiff(v[f"{k}_target"], v[f"{k}_bench"]) for k in ("min", "max", "mean")]
    known = [d for d in diffs if not math.isnan(d)]
    v["stat_abs_diff"] = max(known) if known else math.nan
    nb, nt = v["norm_bench"], v["norm_target"]
    if math.isnan(nb) or math.isnan(nt) or math.isinf(nb) or math.isinf(nt):
        v["norm_rel_diff"] = math.nan
    elif nb == 0.0:
        v["norm_rel_diff"] = 0.0 if nt == 0.0 else math.inf
    else:
        v["norm_rel_diff"] = abs(nt - nb) / nb
    return StatsSummary(values=v, nonfinite_mismatch=counts_b != counts_t)


def compare_fingerprints(bench: str | None, target: str | None) -> bool | None:
    """Whether two tensor fingerprints (md5-mode dumps) are equal; ``None`` if one is missing.

    Example:
        >>> compare_fingerprints("1a2b3c4d", "1A2B3C4D"), compare_fingerprints("00", None)
        (True, None)
    """
    if not bench or not target:
        return None
    return bench.strip().lower() == target.strip().lower()
