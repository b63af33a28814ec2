"""Metrics of a (bench, target) tensor pair: the fused kernel, the registry, statistics.

Public names: :func:`compare_arrays` (every built-in metric in one pass),
:func:`register_metric` / :func:`get_metric` / :data:`METRICS` (the registry, entry-point
group ``tensorsight.metrics``), :func:`compare_stats` (statistics-mode dumps) and
:func:`compare_fingerprints` (md5-mode dumps).
"""

from __future__ import annotations

from tensorsight.compare.metrics.base import METRICS, MetricSpec, get_metric, register_metric
from tensorsight.compare.metrics.classic import BUILTIN_KEYS, HIGHER_IS_BETTER
from tensorsight.compare.metrics.kernel import KERNEL_KEYS, PairMetrics, compare_arrays
from tensorsight.compare.metrics.stats import (
    STATS_KEYS,
    StatsSummary,
    compare_fingerprints,
    compare_stats,
)

__all__ = [
    "BUILTIN_KEYS",
    "HIGHER_IS_BETTER",
    "KERNEL_KEYS",
    "METRICS",
    "STATS_KEYS",
    "MetricSpec",
    "PairMetrics",
    "StatsSummary",
    "compare_arrays",
    "compare_fingerprints",
    "compare_stats",
    "get_metric",
    "register_metric",
]

# Built-in metrics outside the fused kernel, one line each (CONTRIBUTING.md, "Adding a
# metric"): METRICS.add("<key>", "tensorsight.compare.metrics.<name>:SPEC"), imported on use.
