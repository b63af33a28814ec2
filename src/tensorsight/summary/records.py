"""What :class:`~tensorsight.summary.Logdir` returns: one frozen type per data kind.

Each type is defined once, in its kind's module (``summary/kinds/<kind>.py``), and re-exported
here under the names users import. These are the read side's contract with the board and with
users; each docstring is the spec. Every record carries ``step`` (int) and ``wall_time``
(float seconds since the epoch); scalars come as one :class:`ScalarSeries` of numpy arrays
instead of per-point objects.
"""

from __future__ import annotations

from tensorsight.summary.kinds import KINDS as _REGISTRY
from tensorsight.summary.kinds.audio import AudioRecord
from tensorsight.summary.kinds.data_graph import DataGraphRecord
from tensorsight.summary.kinds.embedding import EmbeddingRecord
from tensorsight.summary.kinds.graph import Graph, GraphNode
from tensorsight.summary.kinds.histogram import HistogramRecord
from tensorsight.summary.kinds.hparams import HParamsRecord
from tensorsight.summary.kinds.image import ImageRecord
from tensorsight.summary.kinds.landscape import LandscapeRecord
from tensorsight.summary.kinds.mesh import MeshRecord
from tensorsight.summary.kinds.pr_curve import PrCurveRecord
from tensorsight.summary.kinds.scalar import ScalarSeries
from tensorsight.summary.kinds.tensor import TensorRecord
from tensorsight.summary.kinds.text import TextRecord

__all__ = [
    "KINDS",
    "SCHEMA_VERSION",
    "AudioRecord",
    "DataGraphRecord",
    "EmbeddingRecord",
    "Graph",
    "GraphNode",
    "HParamsRecord",
    "HistogramRecord",
    "ImageRecord",
    "LandscapeRecord",
    "MeshRecord",
    "PrCurveRecord",
    "ScalarSeries",
    "TensorRecord",
    "TextRecord",
]

SCHEMA_VERSION = 1

#: Every kind ``Logdir.tags(run)`` reports, in this order (the names of
#: :data:`tensorsight.summary.kinds.KINDS`).
KINDS: tuple[str, ...] = tuple(_REGISTRY.names())
