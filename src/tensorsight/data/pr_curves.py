"""``PrCurveData``: one precision-recall curve at one step (``DataProvider.read_pr_curves``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["PrCurveData"]


@dataclass(frozen=True, eq=False)
class PrCurveData:
    """One PR curve: parallel float64 arrays, one entry per threshold (ascending thresholds).

    ``precision[i]`` and ``recall[i]`` are the classifier's at ``thresholds[i]``: predictions
    at or above it count as positive. Counts are weighted when the writer had weights.
    """

    step: int
    wall_time: float
    thresholds: NDArray[np.float64]
    true_positives: NDArray[np.float64]
    false_positives: NDArray[np.float64]
    true_negatives: NDArray[np.float64]
    false_negatives: NDArray[np.float64]
    precision: NDArray[np.float64]
    recall: NDArray[np.float64]

    SCHEMA_VERSION = 1
