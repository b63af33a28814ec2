"""Statistics and fingerprints of numpy arrays (no torch): used by ONNX dumps and writers."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from tensorsight.dumpformat import _stats_native
from tensorsight.dumpformat.schema import TensorStats

__all__ = ["array_bytes", "array_stats", "fingerprint", "stats_columns", "stats_from_values"]


def stats_columns(values: Sequence[float]) -> tuple[float, float, float, float, int, int, int]:
    """``[min, max, sum, sumsq, nan, +inf, -inf, numel]`` -> the op table's statistics columns
    ``(min, max, mean, norm, nan_count, posinf_count, neginf_count)``."""
    mn, mx, s, sq, nan, pinf, ninf, n = values
    norm = math.sqrt(sq) if sq == sq else sq  # NaN stays NaN
    return (float(mn), float(mx), s / n, norm, int(nan), int(pinf), int(ninf))


def stats_from_values(values: Sequence[float]) -> TensorStats:
    """``[min, max, sum, sumsq, nan, +inf, -inf, numel]`` -> :class:`TensorStats`."""
    mn, mx, mean, norm, nan, pinf, ninf = stats_columns(values)
    return TensorStats(
        min=mn,
        max=mx,
        mean=mean,
        norm=norm,
        nan_count=nan,
        posinf_count=pinf,
        neginf_count=ninf,
    )


def array_stats(a: np.ndarray, *, native: bool = True) -> list[float] | None:
    """The stats list of :func:`stats_from_values` with float64 accumulation (None if empty).

    C-contiguous arrays in native byte order go through the C kernel of
    :mod:`._stats_native` (one read); ``native=False``, other arrays and machines without a
    compiler use numpy (same statistics to rounding).
    """
    n = a.size
    if n == 0 or a.dtype.kind not in "biuf":
        return None
    if native and a.flags.c_contiguous and a.dtype.isnative:
        fns = _stats_native.load()
        fn = None if fns is None else fns.get(a.dtype.name)
        if fn is not None:
            return _stats_native.buffer_stats(fn, a.ctypes.data, n)
    # invalid: signalling NaNs (uninitialised memory) raise it when cast; inf - inf;
    # over: squares past DBL_MAX
    with np.errstate(over="ignore", invalid="ignore"):
        x = a.astype(np.float64, copy=False).reshape(-1)
        mn, mx = float(x.min()), float(x.max())
        s = float(x.sum())
        sq = float(np.dot(x, x))
    counts = [0.0, 0.0, 0.0]
    if not (math.isfinite(mn) and math.isfinite(mx)):
        counts = [
            float(np.isnan(x).sum()),
            float(np.count_nonzero(x == np.inf)),
            float(np.count_nonzero(x == -np.inf)),
        ]
    return [mn, mx, s, sq, *counts, float(n)]


def array_bytes(a: np.ndarray) -> memoryview:
    """Contiguous little-endian bytes of an array."""
    c = np.ascontiguousarray(a)
    if c.dtype.byteorder == ">":
        c = c.astype(c.dtype.newbyteorder("<"))
    return memoryview(c.reshape(-1).view(np.uint8))  # type: ignore[arg-type]


def fingerprint(a: np.ndarray) -> str:
    """CRC-32 of the array's bytes, 8 hex digits (the dump's ``md5`` mode)."""
    return f"{zlib.crc32(array_bytes(a)) & 0xFFFFFFFF:08x}"
