"""The seam between stored summaries and the board: providers and their result types.

``LandscapeData``, ``PrCurveData`` and ``DataGraph`` are the kinds' own record types
(``summary/kinds/<kind>.py``), re-exported under the names views use.

Views read only through a :class:`DataProvider`; :class:`LogdirProvider` serves a logdir
of event files, :class:`InMemoryProvider` data added by calls (tests, notebooks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tensorsight.data._downsample import downsample_indices
from tensorsight.data.audio import AudioClip
from tensorsight.data.custom_scalars import (
    LayoutCategory,
    LayoutChart,
    MarginSeries,
    ScalarLayout,
    merge_layouts,
)
from tensorsight.data.embeddings import EmbeddingData, EmbeddingEntry
from tensorsight.data.graphs import DataGraph, GraphNodeData, ModelGraph
from tensorsight.data.hparams import RunHParams
from tensorsight.data.provider import (
    KINDS,
    SCHEMA_VERSION,
    DataProvider,
    HistogramArrays,
    HistogramRecord,
    ImageRecord,
    Limits,
    RunInfo,
    ScalarSeries,
    TextRecord,
)
from tensorsight.data.tensors import TensorValue
from tensorsight.summary.kinds.landscape import LandscapeRecord as LandscapeData
from tensorsight.summary.kinds.pr_curve import PrCurveRecord as PrCurveData

if TYPE_CHECKING:
    from tensorsight.data.comparisons import (
        VERDICTS,
        AdviceInfo,
        ComparisonInfo,
        ComparisonStore,
        ReplayInfo,
    )
    from tensorsight.data.logdir import LogdirProvider
    from tensorsight.data.memory import InMemoryProvider

#: Names imported on first use (``tensorsight board`` starts without them): the summary
#: reader behind LogdirProvider, the comparison store and its types, the in-memory provider.
_LAZY: dict[str, str] = {
    "LogdirProvider": "tensorsight.data.logdir",
    "InMemoryProvider": "tensorsight.data.memory",
    **dict.fromkeys(
        ("VERDICTS", "AdviceInfo", "ComparisonInfo", "ComparisonStore", "ReplayInfo"),
        "tensorsight.data.comparisons",
    ),
}

__all__ = [
    "KINDS",
    "SCHEMA_VERSION",
    "VERDICTS",
    "AdviceInfo",
    "AudioClip",
    "ComparisonInfo",
    "ComparisonStore",
    "DataGraph",
    "DataProvider",
    "EmbeddingData",
    "EmbeddingEntry",
    "GraphNodeData",
    "HistogramArrays",
    "HistogramRecord",
    "ImageRecord",
    "InMemoryProvider",
    "LandscapeData",
    "LayoutCategory",
    "LayoutChart",
    "Limits",
    "LogdirProvider",
    "MarginSeries",
    "ModelGraph",
    "PrCurveData",
    "ReplayInfo",
    "RunHParams",
    "RunInfo",
    "ScalarLayout",
    "ScalarSeries",
    "TensorValue",
    "TextRecord",
    "downsample_indices",
    "merge_layouts",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        import importlib

        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value
    msg = f"module 'tensorsight.data' has no attribute {name!r}"
    raise AttributeError(msg)
