"""compare: pair two dumps op by op, measure every tensor pair, judge and explain.

Reading order: ``metrics/`` (the kernel and the registry), ``result.py`` (the output
shapes), ``match.py``, ``budget.py``, ``engine.py``, ``advisor.py``, ``report/``, ``cli.py``.
Public names resolve lazily so ``import tensorsight.compare`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tensorsight.compare.engine import compare
    from tensorsight.compare.metrics import register_metric
    from tensorsight.compare.result import Comparison, OpComparison, Verdict

__all__ = ["Comparison", "OpComparison", "Verdict", "compare", "register_metric"]

_LAZY = {
    "compare": "tensorsight.compare.engine",
    "Comparison": "tensorsight.compare.result",
    "OpComparison": "tensorsight.compare.result",
    "Verdict": "tensorsight.compare.result",
    "register_metric": "tensorsight.compare.metrics",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'tensorsight.compare' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(importlib.import_module(module), name)
