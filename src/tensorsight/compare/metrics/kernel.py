"""The fused metric kernel: every built-in metric of one (bench, target) pair in one pass.

The pair is read in chunks of :data:`CHUNK_ELEMS` elements; each chunk is cast to float64 into
preallocated buffers (so peak memory is a few MiB whatever the tensor size) and every sum,
maximum and count is accumulated in float64. A chunk whose float64 sums are finite holds no
NaN or Inf and takes the fast path; any other chunk first applies msprobe's rule for
non-finite values (see ``docs/metrics.md``). KL divergence needs each side's global minimum
and maximum: pass them when they are known (a dump's statistics hold them), otherwise a
cheap min/max pass runs first.

Conventions: ``y`` is bench (the reference), ``x`` is target (the side under test), as in
MindStudio's ``ground_truth`` / ``my_output``.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from tensorsight.compare.metrics import _native
from tensorsight.compare.metrics._layout import ACCUMULATORS, INDEX, ROW
from tensorsight.errors import CompareError

__all__ = [
    "CHUNK_ELEMS",
    "KERNEL_KEYS",
    "PairMetrics",
    "compare_arrays",
    "dtype_precision",
    "value_range",
]

CHUNK_ELEMS = 1 << 16
EPS64 = float(np.finfo(np.float64).eps)  # MindStudio's FLOAT_EPSILON
EPS32 = float(np.finfo(np.float32).eps)  # KL's floor after min-max normalisation
THOUSANDTH = 1e-3
FIVE_THOUSANDTH = 5e-3

# Every key the kernel fills, in PRODUCT.md column order.
KERNEL_KEYS = (
    "cosine",
    "max_abs_err",
    "acc_rel_err",
    "rel_euclidean",
    "kl_div",
    "mean_bench",
    "std_bench",
    "mean_target",
    "std_target",
    "mae",
    "rmse",
    "max_rel_err",
    "mean_rel_err",
    "within_1e-3",
    "within_5e-3",
    "max_ulp",
)

# dtype name -> (fraction bits p, minimum normal exponent emin); ulp(v) = 2**(max(e, emin) - p)
_FLOAT_FORMATS: dict[str, tuple[int, int]] = {
    "float64": (52, -1022),
    "float32": (23, -126),
    "float16": (10, -14),
    "bfloat16": (7, -126),
    "float8_e4m3fn": (3, -6),
    "float8_e4m3fnuz": (3, -7),
    "float8_e5m2": (2, -14),
    "float8_e5m2fnuz": (2, -15),
}


def dtype_precision(dtype: str) -> tuple[int, int] | None:
    """``(fraction bits, minimum normal exponent)`` of a float dtype name; ``None`` otherwise.

    Integer and bool dtypes return ``None``: their spacing is 1 everywhere.

    Example:
        >>> dtype_precision("bfloat16")
        (7, -126)
    """
    return _FLOAT_FORMATS.get(dtype.removeprefix("torch."))


@dataclass(frozen=True)
class PairMetrics:
    """What the kernel learned about one tensor pair.

    Attributes:
        values: Metric key -> value (``nan`` where the metric is undefined, see docs/metrics.md).
        numel: Elements compared.
        nonfinite_bench: NaN/Inf elements on the bench side.
        nonfinite_target: NaN/Inf elements on the target side.
        nonfinite_mismatch: NaN/Inf sit at different positions (or of different kinds) on the
            two sides; every error metric is then ``nan``.
        scale_fit: Least-squares ``a`` in ``target ~ a * bench`` (evidence for scale errors).
        sorted_equal: Left ``None`` by the kernel; the advisor may fill it.
    """

    values: dict[str, float]
    numel: int
    nonfinite_bench: int = 0
    nonfinite_target: int = 0
    nonfinite_mismatch: bool = False
    scale_fit: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)


def _flat(a: NDArray[Any]) -> NDArray[Any]:
    return a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1)


def _zero_nonfinite(v: NDArray[np.float64]) -> tuple[NDArray[np.int8], int]:
    """Classify (0 finite, 1 NaN, 2 +Inf, 3 -Inf) and zero the non-finite elements in place."""
    kind = np.zeros(v.shape, dtype=np.int8)
    kind[np.isnan(v)] = 1
    kind[np.isposinf(v)] = 2
    kind[np.isneginf(v)] = 3
    bad = kind != 0
    v[bad] = 0.0
    return kind, int(np.count_nonzero(bad))


def value_range(a: NDArray[Any], *, chunk: int | None = None) -> tuple[float, float]:
    """Minimum and maximum of ``a`` with NaN/Inf counted as 0 (msprobe's rule); empty -> nan."""
    flat = _flat(a)
    if flat.size == 0:
        return math.nan, math.nan
    with np.errstate(invalid="ignore"):
        lo, hi = float(flat.min()), float(flat.max())  # two SIMD passes, no copy
    if math.isfinite(lo) and math.isfinite(hi):
        return lo, hi
    step = chunk or CHUNK_ELEMS  # NaN/Inf somewhere: chunk by chunk, zeroing them
    lo, hi = math.inf, -math.inf
    buf = np.empty(min(step, flat.size), dtype=np.float64)
    for start in range(0, flat.size, step):
        part = flat[start : start + step]
        with np.errstate(invalid="ignore"):
            cmin, cmax = float(part.min()), float(part.max())
        if not (math.isfinite(cmin) and math.isfinite(cmax)):
            v = buf[: part.size]
            with np.errstate(invalid="ignore"):  # signalling NaNs raise it when cast
                np.copyto(v, part, casting="unsafe")
            _zero_nonfinite(v)
            cmin, cmax = float(v.min()), float(v.max())
        lo, hi = min(lo, cmin), max(hi, cmax)
    return lo, hi


class _Side:
    """Per-side accumulators: Chan's parallel mean/variance and the sum of squares."""

    __slots__ = ("m2", "mean", "n", "sq")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.sq = 0.0

    def merge(self, m: int, cmean: float, cm2: float, sq: float) -> None:
        delta = cmean - self.mean
        n = self.n + m
        self.mean += delta * m / n
        self.m2 += cm2 + delta * delta * self.n * m / n
        self.n = n
        self.sq += sq


class _Acc:
    """Every running sum, maximum and count of one pair (merged chunk by chunk)."""

    def __init__(self) -> None:
        self.bench, self.target = _Side(), _Side()
        self.sxy = self.sdd = self.sad = self.acc_rel = 0.0
        self.kl_s = self.kl_u = self.kl_d = 0.0  # sum u log(u/v), sum u, sum (v - u)
        self.max_abs = self.max_rel = self.max_ulp_q = 0.0
        self.within1 = self.within5 = 0.0
        self.nonfinite_b = self.nonfinite_t = 0
        self.mismatch = False


def compare_arrays(
    bench: NDArray[Any],
    target: NDArray[Any],
    *,
    target_dtype: str | None = None,
    bench_range: tuple[float, float] | None = None,
    target_range: tuple[float, float] | None = None,
    chunk: int | None = None,
    native: bool = True,
) -> PairMetrics:
    """Compute every built-in metric of a tensor pair in one pass over memory.

    Args:
        bench: Reference tensor (any real dtype numpy can cast to float64, bf16 included).
        target: Tensor under test, same shape as ``bench``.
        target_dtype: Dtype whose ulp ``max_ulp`` counts in; defaults to ``target.dtype``.
        bench_range: Known ``(min, max)`` of ``bench`` for KL (skips the min/max pass).
        target_range: Known ``(min, max)`` of ``target``.
        chunk: Elements per chunk (default :data:`CHUNK_ELEMS`; the C kernel uses at least
            :data:`NATIVE_CHUNK_ELEMS`).
        native: Use the compiled C kernel when it can be built (``False``: numpy only; the
            results agree to rounding).

    Returns:
        A :class:`PairMetrics` with every key of :data:`KERNEL_KEYS`.

    Raises:
        CompareError: The shapes differ.

    Example:
        >>> import numpy as np
        >>> m = compare_arrays(np.array([1.0, 2.0]), np.array([1.0, 2.01]))
        >>> round(m.values["max_abs_err"], 6), m.values["within_1e-3"]
        (0.01, 0.5)
    """
    if bench.shape != target.shape:
        msg = (
            f"Tensor pair: shapes differ. Expected equal shapes, got bench {bench.shape} and "
            f"target {target.shape}. Compare tensors of one shape (or map them explicitly)."
        )
        raise CompareError(msg)
    return _compare_impl(
        _flat(bench),
        _flat(target),
        ndim=bench.ndim,
        target_dtype=target_dtype or str(target.dtype),
        bench_range=bench_range,
        target_range=target_range,
        step=chunk or CHUNK_ELEMS,
        native=native,
    )


def _empty_values() -> dict[str, float]:
    return dict.fromkeys(KERNEL_KEYS, math.nan)


class _Params(NamedTuple):  # a tuple: made per tensor pair, a frozen dataclass cost more
    x_off: float
    x_scale: float
    y_off: float
    y_scale: float
    ulp_floor: float
    emin: int
    has_ulp: bool


NATIVE_CHUNK_ELEMS = 1 << 20
#: A float32/float64 pair of one chunk (most tensors of a model) is one direct call of the
#: C loop, without the thread split; ``False`` sends it the general way (the tests check
#: that both give the same bits).
ONE_CALL = True


def _compare_impl(
    y_all: NDArray[Any],
    x_all: NDArray[Any],
    *,
    ndim: int,
    target_dtype: str,
    bench_range: tuple[float, float] | None,
    target_range: tuple[float, float] | None,
    step: int,
    native: bool = True,
) -> PairMetrics:
    n_total = int(y_all.size)
    if n_total == 0:
        return PairMetrics(values=_empty_values(), numel=0)
    ylo, yhi = bench_range if bench_range is not None else value_range(y_all, chunk=step)
    xlo, xhi = target_range if target_range is not None else value_range(x_all, chunk=step)
    yr, xr = yhi - ylo, xhi - xlo
    precision = dtype_precision(target_dtype)
    frac_bits, emin = precision if precision is not None else (0, 0)
    # KL: u = max((v - lo) / range, eps32), or max(v, eps32) when the range is 0.
    # ulp: the binade floor 2**emin makes subnormals share the smallest normal's spacing.
    params = _Params(
        x_off=xlo if xr != 0 else 0.0,
        x_scale=1.0 / xr if xr != 0 else 1.0,
        y_off=ylo if yr != 0 else 0.0,
        y_scale=1.0 / yr if yr != 0 else 1.0,
        ulp_floor=2.0**emin,
        emin=emin,
        has_ulp=precision is not None,
    )
    acc = _Acc()
    lib = _native.load() if native else None
    if lib is not None and math.isfinite(xr) and math.isfinite(yr):
        _native_pass(lib, x_all, y_all, params, acc, max(step, NATIVE_CHUNK_ELEMS))
    else:
        m = min(step, n_total)
        bufs = tuple(np.empty(m, dtype=np.float64) for _ in range(6))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for start in range(0, n_total, step):
                xs, ys = x_all[start : start + step], y_all[start : start + step]
                _numpy_chunk(xs, ys, params, acc, bufs)
    return _result(acc, n_total, ndim, frac_bits, precision is not None)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            workers = int(os.environ.get("TENSORSIGHT_KERNEL_THREADS", 0)) or min(
                16, os.cpu_count() or 1
            )
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ts-kernel")
        return _POOL


def _native_pass(
    lib: _native.NativeKernel,
    x_all: NDArray[Any],
    y_all: NDArray[Any],
    p: _Params,
    acc: _Acc,
    step: int,
) -> None:
    """Chunks through the C kernel, in parallel threads (ctypes releases the GIL).

    float32/float64 pairs go to ``ts_chunks_*`` in one call per thread, each over a run of
    whole chunks; other dtypes are cast to float64 chunk by chunk first. Chunk results are
    merged in chunk order, so the result does not depend on the thread count. Chunks
    holding NaN/Inf go through :func:`_numpy_chunk`.
    """
    n_total = int(x_all.size)
    n_chunks = -(-n_total // step)
    out = np.zeros((n_chunks, len(ROW)), dtype=np.float64)
    same_float = x_all.dtype == y_all.dtype and x_all.dtype in (np.float32, np.float64)
    ptr_x, ptr_y = x_all.ctypes.data, y_all.ctypes.data
    ptr_out = out.ctypes.data  # row i at ptr_out + i * _ROW_BYTES (a slice's .ctypes: ~4 us)
    kl = (p.x_off, p.x_scale, p.y_off, p.y_scale)
    if same_float and n_chunks == 1 and ONE_CALL:
        # one chunk (most tensors of a model are small): one call here, no thread bounds
        fn = lib.chunks_f32 if x_all.dtype == np.float32 else lib.chunks_f64
        fn(ptr_x, ptr_y, n_total, step, *kl, p.ulp_floor, ptr_out)
        row = out.tolist()[0]
        if all(map(math.isfinite, row)):
            _merge_native(row, n_total, acc)
            return
        scratch = tuple(np.empty(n_total, dtype=np.float64) for _ in range(6))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            _numpy_chunk(x_all, y_all, p, acc, scratch)
        return
    if same_float:
        fn = lib.chunks_f32 if x_all.dtype == np.float32 else lib.chunks_f64
        width = x_all.dtype.itemsize
        workers = 1 if n_chunks == 1 else min(_pool()._max_workers, n_chunks)  # no lock
        bounds = [n_chunks * i // workers for i in range(workers + 1)]

        def run(i: int) -> None:  # chunks bounds[i] .. bounds[i + 1]
            first, stop = bounds[i] * step, min(bounds[i + 1] * step, n_total)
            x_ptr, y_ptr = ptr_x + first * width, ptr_y + first * width
            rows = ptr_out + bounds[i] * _ROW_BYTES
            fn(x_ptr, y_ptr, stop - first, step, *kl, p.ulp_floor, rows)
    else:

        def run(i: int) -> None:  # f16, ints, mixed dtypes: cast this chunk to float64 first
            xs = np.asarray(x_all[i * step : (i + 1) * step], dtype=np.float64)
            ys = np.asarray(y_all[i * step : (i + 1) * step], dtype=np.float64)
            ptrs = (xs.ctypes.data, ys.ctypes.data)
            lib.chunks_f64(*ptrs, xs.size, step, *kl, p.ulp_floor, ptr_out + i * _ROW_BYTES)

        workers = n_chunks
    if workers > 1:
        list(_pool().map(run, range(workers)))
    else:
        run(0)
    bufs: tuple[NDArray[np.float64], ...] = ()
    # as Python floats in one call: numpy's isfinite/all over a few rows cost more than this
    for i, row in enumerate(out.tolist()):
        start = i * step
        if all(map(math.isfinite, row)):
            _merge_native(row, min(step, n_total - start), acc)
            continue
        if not bufs:
            bufs = tuple(np.empty(min(step, n_total), dtype=np.float64) for _ in range(6))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            _numpy_chunk(x_all[start : start + step], y_all[start : start + step], p, acc, bufs)


_ROW_BYTES = len(ROW) * 8  # one chunk's results: float64 slots
_SUMS = tuple((name, INDEX[name]) for name, rule in ACCUMULATORS if rule == "sum")
_MAXES = tuple((name, INDEX[name]) for name, rule in ACCUMULATORS if rule == "max")
_SX, _SY, _SXX, _SYY = INDEX["sx"], INDEX["sy"], INDEX["sxx"], INDEX["syy"]
_SXX_RAW, _SYY_RAW, _KX, _KY = INDEX["sxx_raw"], INDEX["syy_raw"], INDEX["kx"], INDEX["ky"]


def _merge_native(row: list[float], k: int, acc: _Acc) -> None:
    """Fold one chunk's row of the C kernel (as Python floats) into ``acc``, slot by slot
    of ``_layout``."""
    sx, sy, sxx, syy = row[_SX], row[_SY], row[_SXX], row[_SYY]
    kx, ky = row[_KX], row[_KY]
    acc.target.merge(k, kx + sx / k, max(sxx - sx * sx / k, 0.0), row[_SXX_RAW])
    acc.bench.merge(k, ky + sy / k, max(syy - sy * sy / k, 0.0), row[_SYY_RAW])
    state = acc.__dict__  # the same fields as getattr/setattr, without their calls
    for name, i in _SUMS:
        state[name] += row[i]
    for name, i in _MAXES:
        state[name] = max(state[name], row[i])


def _numpy_chunk(
    xs: NDArray[Any],
    ys: NDArray[Any],
    p: _Params,
    acc: _Acc,
    bufs: tuple[NDArray[np.float64], ...],
) -> None:
    """One chunk in numpy (the reference path; also every chunk holding NaN/Inf)."""
    k = int(xs.size)
    xv, yv, dv, adv, ayv, tv = (b[:k] for b in bufs)
    np.copyto(xv, xs, casting="unsafe")
    np.copyto(yv, ys, casting="unsafe")
    sx, sy = float(xv.sum()), float(yv.sum())
    if not (math.isfinite(sx) and math.isfinite(sy)):
        kind_x, bad_x = _zero_nonfinite(xv)
        kind_y, bad_y = _zero_nonfinite(yv)
        acc.nonfinite_t += bad_x
        acc.nonfinite_b += bad_y
        if not np.array_equal(kind_x, kind_y):
            acc.mismatch = True
        sx, sy = float(xv.sum()), float(yv.sum())
    # products are summed with multiply + sum, not np.dot: BLAS threads stall on busy hosts
    for side, v, total in ((acc.target, xv, sx), (acc.bench, yv, sy)):
        np.subtract(v, total / k, out=tv)
        cm2 = float(np.multiply(tv, tv, out=tv).sum())
        side.merge(k, total / k, cm2, float(np.multiply(v, v, out=dv).sum()))
    acc.sxy += float(np.multiply(xv, yv, out=dv).sum())
    np.subtract(xv, yv, out=dv)
    acc.sdd += float(np.multiply(dv, dv, out=adv).sum())
    np.abs(dv, out=adv)
    acc.sad += float(adv.sum())
    acc.max_abs = max(acc.max_abs, float(adv.max()))
    np.abs(yv, out=ayv)
    # relative error |x/y - 1| = |d|/|y|; elements with |y| <= eps count 0 (MindStudio)
    small = ayv <= EPS64
    n_small = int(np.count_nonzero(small))
    np.copyto(tv, ayv)
    if n_small:
        tv[small] = math.inf
    np.divide(adv, tv, out=tv)
    acc.acc_rel += float(tv.sum())
    acc.max_rel = max(acc.max_rel, float(tv.max()))
    # msprobe's ratios: |d| < t |y| (the true ratio, also where |y| <= eps), and x = y is no
    # error (0 vs 0, and a subnormal |y| whose product t |y| rounds to 0)
    acc.within1 += _within(adv, ayv, THOUSANDTH, tv, n_small > 0)
    acc.within5 += _within(adv, ayv, FIVE_THOUSANDTH, tv, n_small > 0)
    if p.has_ulp:  # ulp of the target dtype at the bench value: 2**floor(log2|y|)
        np.bitwise_and(ayv.view(np.int64), 0x7FF0000000000000, out=tv.view(np.int64))
        np.maximum(tv, p.ulp_floor, out=tv)
        np.divide(adv, tv, out=tv)
        acc.max_ulp_q = max(acc.max_ulp_q, float(tv.max()))
    # KL divergence of the min-max normalised distributions
    np.subtract(xv, p.x_off, out=dv)
    dv *= p.x_scale
    np.maximum(dv, EPS32, out=dv)
    np.subtract(yv, p.y_off, out=adv)
    adv *= p.y_scale
    np.maximum(adv, EPS32, out=adv)
    acc.kl_u += float(dv.sum())
    np.subtract(dv, adv, out=tv)
    acc.kl_d -= float(tv.sum())  # sum(v - u), not sum v - sum u: see _finish
    # log(u/v) = log1p((u - v)/v): keeps its relative accuracy where u and v agree to many
    # digits (log u - log v would leave ~1e-16 absolute noise in every term)
    np.divide(tv, adv, out=tv)
    np.log1p(tv, out=tv)
    acc.kl_s += float(np.multiply(dv, tv, out=tv).sum())


def _within(
    adv: NDArray[np.float64],
    ayv: NDArray[np.float64],
    t: float,
    tv: NDArray[np.float64],
    small: bool,
) -> int:
    """Elements with ``|d| < t |y|`` or ``d = 0`` (the latter only matters where ``t |y|``
    is 0, so only where some ``|y| <= eps``: ``small``); ``tv`` is scratch."""
    np.multiply(ayv, t, out=tv)
    inside = int(np.count_nonzero(adv < tv))
    if small:
        inside += int(np.count_nonzero((adv == 0) & (tv == 0)))
    return inside


def _result(acc: _Acc, n_total: int, ndim: int, frac_bits: int, has_ulp: bool) -> PairMetrics:
    n = float(n_total)
    values = _empty_values()
    values["mean_bench"] = acc.bench.mean
    values["mean_target"] = acc.target.mean
    values["std_bench"] = math.sqrt(max(acc.bench.m2, 0.0) / n)
    values["std_target"] = math.sqrt(max(acc.target.m2, 0.0) / n)
    if not acc.mismatch:
        values.update(
            _finish(
                n=n,
                ndim=ndim,
                sxx=acc.target.sq,
                syy=acc.bench.sq,
                sxy=acc.sxy,
                sdd=acc.sdd,
                sad=acc.sad,
                acc_rel=acc.acc_rel,
                max_abs=acc.max_abs,
                max_rel=acc.max_rel,
                within=(acc.within1, acc.within5),
                max_ulp=acc.max_ulp_q * 2.0**frac_bits if has_ulp else acc.max_abs,
                kl=(acc.kl_s, acc.kl_u, acc.kl_d),
            )
        )
    syy = acc.bench.sq
    return PairMetrics(
        values=values,
        numel=n_total,
        nonfinite_bench=acc.nonfinite_b,
        nonfinite_target=acc.nonfinite_t,
        nonfinite_mismatch=acc.mismatch,
        scale_fit=acc.sxy / syy if syy > 0 else math.nan,
    )


def _finish(
    *,
    n: float,
    ndim: int,
    sxx: float,
    syy: float,
    sxy: float,
    sdd: float,
    sad: float,
    acc_rel: float,
    max_abs: float,
    max_rel: float,
    within: tuple[float, float],
    max_ulp: float,
    kl: tuple[float, float, float],
) -> dict[str, float]:
    out: dict[str, float] = {}
    nx, ny = math.sqrt(sxx), math.sqrt(syy)
    if ndim == 0:
        out["cosine"] = 1.0  # MindStudio: a scalar has no direction
    elif nx <= EPS64 and ny <= EPS64:
        out["cosine"] = 1.0
    elif nx == 0.0 or ny == 0.0:
        out["cosine"] = math.nan
    else:
        out["cosine"] = min(sxy / (nx * ny), 1.0)
    out["max_abs_err"] = max_abs
    out["acc_rel_err"] = acc_rel
    out["rel_euclidean"] = 0.0 if ny <= EPS64 else math.sqrt(sdd / syy)
    # KL = sum (u/ku) log((u/ku) / (v/kv)) = ks/ku + log(kv/ku), kv/ku = 1 + kd/ku; summing
    # v - u directly keeps the second term exact to rounding when the runs agree (two big
    # sums subtracted left ~1e-12 of noise in a KL of 1e-13)
    kl_s, kl_u, kl_d = kl
    kl_div = kl_s / kl_u + math.log1p(kl_d / kl_u)
    out["kl_div"] = 0.0 if abs(kl_div) < EPS64 else kl_div
    out["mae"] = sad / n
    out["rmse"] = math.sqrt(sdd / n)
    out["max_rel_err"] = max_rel
    out["mean_rel_err"] = acc_rel / n
    out["within_1e-3"] = within[0] / n
    out["within_5e-3"] = within[1] / n
    out["max_ulp"] = max_ulp
    return out
