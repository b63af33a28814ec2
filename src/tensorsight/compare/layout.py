"""The ``layout-transpose`` mechanism: a diverging tensor that holds the bench's values in
another order (a transposed weight, a permuted layout, NHWC against NCHW).

The engine measures every pair with the metric kernel; a pair whose relative error is large
but whose moments match (:func:`may_be_permuted`, free: the kernel has them) is a candidate,
and only candidates on ``error`` rows are sorted and compared (:func:`sorted_equal`, a copy
and O(n log n) per side), at most :data:`CHECKS_MAX` per rank. The advisor turns the
mechanism into advice.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "CANDIDATE",
    "CHECKS_MAX",
    "CHECK_MAX_ELEMS",
    "CHECK_MIN_ERROR",
    "MECHANISM",
    "may_be_permuted",
    "sorted_equal",
    "tolerance",
]

MECHANISM = "layout-transpose"
CHECK_MIN_ERROR = 0.05
CHECK_MAX_ELEMS = 1 << 24
CHECKS_MAX = 64  # sorted comparisons per rank
CANDIDATE = "layout?"  # a row's mechanism until the engine's resolve_layout decides it


def tolerance(rel: float) -> float:
    return min(1e-2, 0.1 * rel)


def may_be_permuted(values: dict[str, float], rel: float) -> bool:
    """A necessary condition for :func:`sorted_equal`, from the moments the kernel has.

    If the sorted tensors differ by ``d = ||sort(t) - sort(b)|| < tol ||b||``, the means
    differ by at most ``d / sqrt(n)`` and, centring being a projection, the standard
    deviations too; ``||b|| / sqrt(n)`` is the bench's root mean square. So a pair whose
    means or standard deviations differ by more than ``tol * rms(b)`` is not a permutation,
    and the sort (a copy and O(n log n) per side, most of a comparison's time when every op
    after a real bug diverges) is skipped. The slack covers rounding of the moments.
    """
    mb, mt = values["mean_bench"], values["mean_target"]
    sb, st = values["std_bench"], values["std_target"]
    bound = tolerance(rel) * math.sqrt(mb * mb + sb * sb) * (1 + 1e-6) + 1e-300
    return abs(mt - mb) <= bound and abs(st - sb) <= bound


def sorted_equal(bench: np.ndarray, target: np.ndarray, rel: float) -> bool:
    """Whether the two tensors hold the same values in another order (layout, transpose).

    Two float32 tensors are sorted as they are (half the memory and time of float64
    copies; sorting is exact in any dtype); squares and their sums are float64 (einsum
    casts block by block: no float64 copy, no float32 overflow), and a float32 difference is
    off by one rounding, far below the tolerance of 0.5 % or more."""
    common = np.float32 if bench.dtype == target.dtype == np.float32 else np.float64
    b = np.sort(bench.astype(common, copy=False).ravel())
    t = np.sort(target.astype(common, copy=False).ravel())
    norm = math.sqrt(float(np.einsum("i,i->", b, b, dtype=np.float64, casting="safe")))
    if norm == 0 or not math.isfinite(norm):
        return False
    d = np.subtract(t, b, out=t)
    diff = math.sqrt(float(np.einsum("i,i->", d, d, dtype=np.float64, casting="safe"))) / norm
    return diff < tolerance(rel)
