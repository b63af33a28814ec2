"""Precision-recall curves: TensorBoard's ``pr_curves`` plugin, a 6 x T float tensor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata, to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "MAX_THRESHOLDS",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "PrCurveRecord",
    "decode",
    "encode",
    "encode_raw",
]

KIND = "pr_curves"
PLUGIN_NAME = "pr_curves"
SCHEMA_VERSION = 0
MAX_THRESHOLDS = 127  # torch's writer caps num_thresholds here
_MIN_COUNT = 1e-7  # denominators never drop below this (TensorBoard's convention)


def _thresholds(num_thresholds: int, tag: str) -> int:
    if int(num_thresholds) < 2:
        msg = f"PR curve {tag!r}: num_thresholds is {num_thresholds}. Expected at least 2."
        raise UsageError(msg)
    return min(int(num_thresholds), MAX_THRESHOLDS)


def compute_curve(
    labels: NDArray[Any], predictions: NDArray[Any], num_thresholds: int, weights: object = None
) -> NDArray[np.float64]:
    """Rows tp, fp, tn, fn, precision, recall at ``num_thresholds`` evenly spaced thresholds."""
    w = 1.0 if weights is None else to_numpy(weights, what="PR curve weights").astype(np.float64)
    buckets = np.floor(predictions.astype(np.float64) * (num_thresholds - 1)).astype(np.int64)
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * w)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - positive) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MIN_COUNT, tp + fp)
    recall = tp / np.maximum(_MIN_COUNT, tp + fn)
    return np.stack([tp, fp, tn, fn, precision, recall])


def _value(tag: str, data: NDArray[Any], num_thresholds: int) -> Any:
    content = tb.PrCurvePluginData(
        version=SCHEMA_VERSION, num_thresholds=num_thresholds
    ).SerializeToString()
    tensor = tb.TensorProto(
        dtype=tb.DataType["DT_FLOAT"],
        float_val=data.astype(np.float32).reshape(-1).tolist(),
        tensor_shape=tb.TensorShapeProto(
            dim=[tb.TensorShapeProto.Dim(size=int(n)) for n in data.shape]
        ),
    )
    return tb.Summary.Value(tag=tag, tensor=tensor, metadata=plugin_metadata(PLUGIN_NAME, content))


def encode(
    tag: str,
    labels: object,
    predictions: object,
    num_thresholds: int = 127,
    weights: object = None,
) -> Any:
    """A ``Summary.Value`` with the PR curve of binary ``labels`` vs ``predictions`` in [0, 1]."""
    n = _thresholds(num_thresholds, tag)
    y = to_numpy(labels, what=f"PR curve {tag!r} labels").reshape(-1)
    p = to_numpy(predictions, what=f"PR curve {tag!r} predictions").reshape(-1)
    if y.size != p.size:
        msg = (
            f"PR curve {tag!r}: {y.size} labels but {p.size} predictions. Expected one "
            "prediction per label."
        )
        raise UsageError(msg)
    return _value(tag, compute_curve(y, p, n, weights), n)


def encode_raw(
    tag: str,
    true_positive_counts: object,
    false_positive_counts: object,
    true_negative_counts: object,
    false_negative_counts: object,
    precision: object,
    recall: object,
    num_thresholds: int = 127,
) -> Any:
    """A ``Summary.Value`` from precomputed counts (each of length ``num_thresholds``)."""
    n = _thresholds(num_thresholds, tag)
    parts = [true_positive_counts, false_positive_counts, true_negative_counts]
    parts += [false_negative_counts, precision, recall]
    rows = [to_numpy(x, what=f"PR curve {tag!r}").astype(np.float64).reshape(-1) for x in parts]
    if len({r.size for r in rows}) != 1:
        sizes = [r.size for r in rows]
        msg = f"PR curve {tag!r}: the six inputs have lengths {sizes}. Expected equal lengths."
        raise UsageError(msg)
    return _value(tag, np.stack(rows), n)


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class PrCurveRecord:
    """One PR curve: parallel float64 arrays, one entry per threshold (ascending thresholds).

    ``precision[i]`` and ``recall[i]`` are the classifier's at ``thresholds[i]``: predictions
    at or above it count as positive. Counts are weighted when the writer had weights. What
    ``Logdir.records(run, "pr_curves", tag)`` and the board's data layer
    (``tensorsight.data.PrCurveData`` is this type) return.
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

    SCHEMA_VERSION = 1  # of the record (the payload's is the module's SCHEMA_VERSION)


def decode(raw: Raw) -> list[PrCurveRecord]:
    """A ``pr_curves`` plugin tensor: 6 rows (TP, FP, TN, FN, precision, recall) x T."""
    _, _, arr = decode_tensor(raw.tensor)
    data = np.asarray(arr, dtype=np.float64).reshape(6, -1)
    n = data.shape[1]
    thresholds = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(n)
    return [PrCurveRecord(raw.step, raw.wall_time, thresholds, *(data[i].copy() for i in range(6)))]


SPEC = Kind(KIND, PrCurveRecord, PLUGIN_NAME, decode)
