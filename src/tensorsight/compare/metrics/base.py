"""Metric specs and the metric registry (entry-point group ``tensorsight.metrics``).

A metric is a function ``(bench, target) -> float`` over two numpy arrays of one shape,
registered under its public key (the snake_case column name of the comparison rows)::

    from tensorsight.compare.metrics import register_metric

    @register_metric("max_abs_log_err", higher_is_better=False)
    def max_abs_log_err(bench, target):
        return float(abs(np.log1p(abs(target)) - np.log1p(abs(bench))).max())

The built-in metrics are all computed together by the fused kernel
(:mod:`tensorsight.compare.metrics.kernel`); a registered function is what a user or a
third party adds, and is called on the whole pair.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from numpy.typing import NDArray

from tensorsight._registry import Registry
from tensorsight.errors import RegistryError

__all__ = ["METRICS", "MetricFunc", "MetricSpec", "get_metric", "register_metric"]

MetricFunc = Callable[[NDArray[Any], NDArray[Any]], float]


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its key, which direction is better, and how to compute it.

    Attributes:
        key: Public key, e.g. ``"cosine"``; the column name in reports.
        higher_is_better: ``True`` for similarities (cosine, within ratios).
        func: ``(bench, target) -> float``.
        doc: One line for ``--help`` and reports (the first line of the docstring).
        builtin: Computed by the fused kernel (``func`` then delegates to it).
    """

    key: str
    higher_is_better: bool
    func: MetricFunc
    doc: str = ""
    builtin: bool = False


METRICS: Registry[MetricSpec] = Registry("metric", entry_point_group="tensorsight.metrics")

_SPEC_ATTR = "__tensorsight_metric__"


def register_metric(
    key: str, *, higher_is_better: bool, builtin: bool = False
) -> Callable[[MetricFunc], MetricFunc]:
    """Decorator registering ``func(bench, target) -> float`` under ``key``.

    The function is returned unchanged (it stays callable). A module named by an
    entry point of the group ``tensorsight.metrics`` uses the same decorator.

    Args:
        key: Public metric key (snake_case; appears in reports and ``--metrics``).
        higher_is_better: Whether larger values mean closer agreement.
        builtin: Reserved for the built-in metrics computed by the fused kernel.

    Raises:
        RegistryError: ``key`` is already registered.

    Example:
        >>> import numpy as np
        >>> @register_metric("doc_example_max_err", higher_is_better=False)
        ... def doc_example_max_err(bench, target):
        ...     return float(np.abs(target - bench).max())
        >>> get_metric("doc_example_max_err").func(np.zeros(2), np.ones(2))
        1.0
    """

    def decorator(func: MetricFunc) -> MetricFunc:
        doc = (func.__doc__ or "").strip().splitlines()
        spec = MetricSpec(key, higher_is_better, func, doc[0] if doc else "", builtin)
        setattr(func, _SPEC_ATTR, spec)
        # registered entries only: scanning the entry points costs ~30 ms at import
        if key in METRICS._entries:
            # An entry point names this key: loading it imports this module, which lands here.
            existing = METRICS._entries.get(key)
            if not isinstance(existing, str):
                msg = f"Metric {key!r} is registered twice. Pick another key."
                raise RegistryError(msg)
            return func
        METRICS.add(key, spec)
        return func

    return decorator


def get_metric(key: str) -> MetricSpec:
    """The :class:`MetricSpec` registered under ``key`` (built-in or third-party).

    Raises:
        RegistryError: Unknown key (with a close-match hint) or a broken extension.
    """
    obj: object = METRICS.get(key)
    if isinstance(obj, MetricSpec):
        return obj
    spec = getattr(obj, _SPEC_ATTR, None)
    if isinstance(spec, MetricSpec):
        return spec
    if callable(obj):  # a bare function named by an entry point
        return MetricSpec(key, False, obj, (obj.__doc__ or "").strip()[:80])
    msg = f"Metric {key!r}: entry point gives {type(obj).__name__}. Expected a metric function."
    raise RegistryError(msg)
