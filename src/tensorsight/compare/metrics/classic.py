"""The built-in metrics: MindStudio's ten classic metrics, msprobe's ratios and ``max_ulp``.

Each function here is the public, single-metric entry point; all of them are computed
together by the fused kernel, which is what the comparison engine calls. Formulas and edge
cases: ``docs/metrics.md``.
"""

from __future__ import annotations

from typing import Any

from numpy.typing import NDArray

from tensorsight.compare.metrics.base import register_metric
from tensorsight.compare.metrics.kernel import KERNEL_KEYS, compare_arrays

__all__ = ["BUILTIN_KEYS", "HIGHER_IS_BETTER"]

HIGHER_IS_BETTER = {"cosine": True, "within_1e-3": True, "within_5e-3": True}
# mean/std per side describe one side each; they are neither better high nor low.
BUILTIN_KEYS = KERNEL_KEYS  # every built-in metric is filled by the one-pass kernel

_DOCS = {
    "cosine": "Cosine similarity of the flattened tensors.",
    "max_abs_err": "Largest absolute difference |target - bench|.",
    "acc_rel_err": "Sum of |target/bench - 1| over elements with |bench| > eps.",
    "rel_euclidean": "||target - bench||_2 / ||bench||_2.",
    "kl_div": "KL(target || bench) of the min-max normalised tensors.",
    "mean_bench": "Mean of the bench tensor.",
    "std_bench": "Population standard deviation of the bench tensor.",
    "mean_target": "Mean of the target tensor.",
    "std_target": "Population standard deviation of the target tensor.",
    "mae": "Mean absolute error.",
    "rmse": "Root mean square error.",
    "max_rel_err": "Largest |target/bench - 1| over elements with |bench| > eps.",
    "mean_rel_err": "acc_rel_err divided by the element count.",
    "within_1e-3": "Share of elements whose relative error is below 0.1 %.",
    "within_5e-3": "Share of elements whose relative error is below 0.5 %.",
    "max_ulp": "Largest |target - bench| in units in the last place of the target dtype.",
}


def _make(key: str) -> None:
    def metric(bench: NDArray[Any], target: NDArray[Any]) -> float:
        return compare_arrays(bench, target).values[key]

    metric.__name__ = key.replace("-", "_").replace(".", "_")
    metric.__doc__ = _DOCS[key]
    register_metric(key, higher_is_better=HIGHER_IS_BETTER.get(key, False), builtin=True)(metric)


for _key in BUILTIN_KEYS:
    _make(_key)
