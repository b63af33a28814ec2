"""The drill-down of one comparison row: tensors read back from the dumps behind it (by
:meth:`tensorsight.data.ComparisonStore.tensor`, which reads the dumps for the view).

Only the one tensor pair of the row is loaded (memory-mapped, converted to float64); every
part of the answer is bounded by :class:`DetailLimits` (histogram bins, heatmap cells, top-N),
so a response stays a few kilobytes whatever the tensor's size. When a dump is missing, was
written without tensors, or the tensor is larger than ``max_elements``, the detail keeps the
row's own numbers and says why in :attr:`OpDetail.note`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tensorsight.board.views.comparison.table import Table
    from tensorsight.data import AdviceInfo, ComparisonInfo

__all__ = [
    "SCHEMA_VERSION",
    "DetailLimits",
    "ErrorHistogram",
    "Heatmap",
    "OpDetail",
    "TensorSummary",
    "WorstElement",
]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class DetailLimits:
    """Bounds of a drill-down answer.

    Attributes:
        max_elements: Largest tensor (elements) loaded; larger ones keep the row's numbers.
        top_n: Worst elements listed.
        heatmap_cells: Cells per side of the heatmap (blocks keep their largest error).
        bins: Bins of the error histogram.
        slice_index: Leading indices of the 2-D slice shown (``None``: the slice holding
            the worst element).
    """

    max_elements: int = 16_000_000
    top_n: int = 20
    heatmap_cells: int = 64
    bins: int = 40
    slice_index: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TensorSummary:
    """Statistics of one side's tensor (finite values only; non-finite ones are counted)."""

    shape: tuple[int, ...]
    dtype: str
    count: int
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    norm: float | None
    zeros: int
    nan: int
    pos_inf: int
    neg_inf: int

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class ErrorHistogram:
    """Histogram of ``log10(|target - bench|)`` over elements with a finite, non-zero error.

    ``len(edges) == len(counts) + 1``; ``zero`` elements agree exactly, ``nonfinite`` have
    NaN/Inf on one side only (or different infinities).
    """

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    zero: int
    nonfinite: int

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class Heatmap:
    """Element-wise ``|target - bench|`` of one 2-D slice, max-pooled into blocks.

    Attributes:
        slice_index: Indices of the leading dimensions selecting the slice.
        lead_shape: Sizes of the leading dimensions (``()`` for 1-D/2-D tensors).
        rows: Rows of the slice.
        cols: Columns of the slice.
        block: (rows, cols) of elements per cell.
        values: Largest error per cell, row-major; ``inf`` where an element is non-finite.
    """

    slice_index: tuple[int, ...]
    lead_shape: tuple[int, ...]
    rows: int
    cols: int
    block: tuple[int, int]
    values: tuple[tuple[float, ...], ...]

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class WorstElement:
    """One of the elements with the largest absolute error."""

    index: tuple[int, ...]
    bench: float
    target: float
    abs_err: float
    rel_err: float

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class OpDetail:
    """Everything the drill-down of one row shows.

    Attributes:
        position: The row's position in the comparison.
        row: The row (column -> value).
        bench: Bench tensor statistics, or ``None`` when it could not be loaded.
        target: Target tensor statistics, or ``None``.
        histogram: Error histogram, or ``None``.
        heatmap: Error heatmap of a 2-D slice, or ``None`` (scalars, shape mismatch).
        worst: The top-N elements by absolute error.
        op_rows: Every row of the same op (inputs then outputs), to read the error gain:
            output error against the inputs' error.
        advice: Advisor findings about this row.
        note: Why some part is missing, else ``None``.
    """

    position: int
    row: Mapping[str, Any]
    bench: TensorSummary | None
    target: TensorSummary | None
    histogram: ErrorHistogram | None
    heatmap: Heatmap | None
    worst: tuple[WorstElement, ...]
    op_rows: tuple[Mapping[str, Any], ...]
    advice: tuple[AdviceInfo, ...]
    note: str | None = None

    SCHEMA_VERSION = SCHEMA_VERSION


def _opt(v: float) -> float | None:
    return v if math.isfinite(v) else None


def summarize(a: np.ndarray, dtype: str) -> TensorSummary:
    """Statistics of ``a`` (float64) as :class:`TensorSummary`."""
    flat = a.ravel()
    finite = flat[np.isfinite(flat)]
    has = finite.size > 0
    return TensorSummary(
        shape=tuple(int(d) for d in a.shape),
        dtype=dtype,
        count=int(flat.size),
        min=float(finite.min()) if has else None,
        max=float(finite.max()) if has else None,
        mean=_opt(float(finite.mean())) if has else None,
        std=_opt(float(finite.std())) if has else None,
        norm=_opt(float(np.linalg.norm(finite))) if has else None,
        zeros=int(np.count_nonzero(flat == 0)),
        nan=int(np.count_nonzero(np.isnan(flat))),
        pos_inf=int(np.count_nonzero(flat == np.inf)),
        neg_inf=int(np.count_nonzero(flat == -np.inf)),
    )


def abs_error(b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``|t - b|``, 0 where both sides hold the same non-finite value, inf where they differ."""
    with np.errstate(invalid="ignore", over="ignore"):
        err: np.ndarray = np.asarray(np.abs(t - b))
    bad = ~np.isfinite(err)
    if bad.any():
        same = (np.isnan(b) & np.isnan(t)) | (b == t)
        err[bad] = np.where(same[bad], 0.0, np.inf)
    return err


def histogram(err: np.ndarray, bins: int) -> ErrorHistogram:
    """:class:`ErrorHistogram` of an error array."""
    flat = err.ravel()
    finite = np.isfinite(flat)
    pos = flat[finite & (flat > 0)]
    zero = int(np.count_nonzero(flat == 0))
    nonfinite = int(flat.size - np.count_nonzero(finite))
    if pos.size == 0:
        return ErrorHistogram((), (), zero, nonfinite)
    logs = np.log10(pos)
    lo, hi = math.floor(float(logs.min())), math.ceil(float(logs.max()))
    hi = max(hi, lo + 1)
    counts, edges = np.histogram(logs, bins=bins, range=(lo, hi))
    return ErrorHistogram(
        tuple(float(e) for e in edges), tuple(int(c) for c in counts), zero, nonfinite
    )


def heatmap(err: np.ndarray, cells: int, slice_index: tuple[int, ...] | None) -> Heatmap | None:
    """Max-pooled error of one 2-D slice (``None`` for scalars and empty tensors)."""
    if err.ndim == 0 or err.size == 0:
        return None
    plane = err.reshape(1, -1) if err.ndim == 1 else err
    lead_shape = tuple(int(d) for d in plane.shape[:-2])
    if slice_index is None:
        worst = np.unravel_index(int(np.argmax(plane)), plane.shape)
        idx = tuple(int(i) for i in worst[:-2])
    else:
        idx = tuple(slice_index)
        if len(idx) != len(lead_shape) or any(
            not 0 <= i < n for i, n in zip(idx, lead_shape, strict=True)
        ):
            raise KeyError(slice_index)
    s = plane[idx] if idx else plane
    rows, cols = int(s.shape[0]), int(s.shape[1])
    br, bc = max(1, math.ceil(rows / cells)), max(1, math.ceil(cols / cells))
    pooled = np.maximum.reduceat(s, np.arange(0, rows, br), axis=0)
    pooled = np.maximum.reduceat(pooled, np.arange(0, cols, bc), axis=1)
    values = tuple(tuple(float(v) for v in line) for line in pooled)
    return Heatmap(idx, lead_shape, rows, cols, (br, bc), values)


def worst_elements(b: np.ndarray, t: np.ndarray, err: np.ndarray, n: int) -> list[WorstElement]:
    """The ``n`` elements with the largest error, largest first."""
    flat = err.ravel()
    if flat.size == 0 or n <= 0:
        return []
    k = min(n, flat.size)
    part = np.argpartition(-flat, k - 1)[:k]
    part = part[np.argsort(-flat[part], kind="stable")]
    bf, tf = b.ravel(), t.ravel()
    out = []
    for i in part.tolist():
        e, ref = float(flat[i]), abs(float(bf[i]))
        rel = e / ref if ref > 0 else (0.0 if e == 0 else math.inf)
        index = tuple(int(x) for x in np.unravel_index(i, err.shape)) if err.ndim else ()
        out.append(WorstElement(index, float(bf[i]), float(tf[i]), e, rel))
    return out


def build_detail(
    row: Mapping[str, Any],
    position: int,
    table: Table,
    info: ComparisonInfo,
    load: Callable[[str, int], tuple[np.ndarray, str] | str],
    limits: DetailLimits | None,
) -> OpDetail:
    """Assemble :class:`OpDetail` for one row (see the module docstring).

    ``load(side, max_elements)`` is :meth:`ComparisonStore.tensor` for this row: the tensor
    (float64) and its dtype, or why it cannot be had (a one-line note).
    """
    lim = limits or DetailLimits()
    advice = tuple(a for a in info.advice if a.row == position)
    op_rows = tuple(table.op_rows(position))
    empty = OpDetail(position, row, None, None, None, None, (), op_rows, advice)
    if row.get("match") == "unmatched" or row.get("mode") != "tensor":
        why = "it is unmatched" if row.get("match") == "unmatched" else "no full tensors"
        return _with_note(empty, f"Element-wise detail is not available: {why}.")
    sides = []
    for label in ("bench", "target"):
        got = load(label, lim.max_elements)
        if isinstance(got, str):
            return _with_note(empty, got)
        sides.append(got)
    (b, b_dtype), (t, t_dtype) = sides
    sb, stt = summarize(b, b_dtype), summarize(t, t_dtype)
    if b.shape != t.shape:
        note = f"Shapes differ ({list(b.shape)} vs {list(t.shape)}): no element-wise error."
        return OpDetail(position, row, sb, stt, None, None, (), op_rows, advice, note)
    err = abs_error(b, t)
    return OpDetail(
        position,
        row,
        sb,
        stt,
        histogram(err, lim.bins),
        heatmap(err, lim.heatmap_cells, lim.slice_index),
        tuple(worst_elements(b, t, err, lim.top_n)),
        op_rows,
        advice,
    )


def _with_note(d: OpDetail, note: str) -> OpDetail:
    from dataclasses import replace

    return replace(d, note=note)
