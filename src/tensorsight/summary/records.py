"""What :class:`~tensorsight.summary.Logdir` returns: one frozen type per data kind.

These are the read side's contract with the board and with users; each docstring is the
spec. Every record carries ``step`` (int) and ``wall_time`` (float seconds since the epoch);
scalars come as one :class:`ScalarSeries` of numpy arrays instead of per-point objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

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
    "PrCurveRecord",
    "ScalarSeries",
    "TensorRecord",
    "TextRecord",
]

SCHEMA_VERSION = 1

#: Every kind ``Logdir.tags(run)`` reports, in this order.
KINDS: tuple[str, ...] = (
    "scalars",
    "histograms",
    "images",
    "audio",
    "text",
    "tensors",
    "pr_curves",
    "hparams",
    "graphs",
    "landscapes",
    "data_graphs",
    "embeddings",
)


@dataclass(frozen=True, eq=False)
class ScalarSeries:
    """All points of one scalar tag, in file order (NaN and ±Inf kept as written).

    Attributes:
        steps: int64 array.
        wall_times: float64 array (seconds since the epoch).
        values: float64 array (float32 sources are widened exactly).
    """

    steps: NDArray[np.int64]
    wall_times: NDArray[np.float64]
    values: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass(frozen=True, eq=False)
class HistogramRecord:
    """One histogram: ``len(edges) == len(counts) + 1``; bucket i spans edges[i]..edges[i+1].

    ``nan_count``/``pos_inf_count``/``neg_inf_count`` are set where the source records them
    (MindSpore), else ``None``. ``min``/``max``/``num``/``sum``/``sum_squares`` come from
    TensorBoard's legacy histogram (``None`` when absent).
    """

    step: int
    wall_time: float
    edges: NDArray[np.float64]
    counts: NDArray[np.float64]
    nan_count: int | None = None
    pos_inf_count: int | None = None
    neg_inf_count: int | None = None
    min: float | None = None
    max: float | None = None
    num: float | None = None
    sum: float | None = None
    sum_squares: float | None = None


@dataclass(frozen=True, eq=False)
class ImageRecord:
    """One encoded image; ``index`` numbers the images logged at the same step (0, 1, ...).

    ``format`` is ``"png"``, ``"jpeg"``, ``"gif"``, ``"webp"``, ``"bmp"`` or ``"unknown"``
    (from the image's magic bytes). ``width``/``height`` are 0 when the source omits them.
    """

    step: int
    wall_time: float
    encoded: bytes
    width: int
    height: int
    format: str
    index: int = 0


@dataclass(frozen=True, eq=False)
class AudioRecord:
    """One encoded audio clip (usually WAV) with its sample rate (0.0 when unknown)."""

    step: int
    wall_time: float
    encoded: bytes
    sample_rate: float
    content_type: str
    index: int = 0
    label: str = ""


@dataclass(frozen=True, eq=False)
class TextRecord:
    """Text logged at one step: ``values`` holds every string of the tensor, ``shape`` its shape.

    ``text`` is the single string of a scalar text summary (the elements joined by newlines
    otherwise).
    """

    step: int
    wall_time: float
    values: tuple[str, ...]
    shape: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(self.values)


@dataclass(frozen=True, eq=False)
class TensorRecord:
    """One tensor, stored exactly as written.

    ``dtype`` is the source dtype name (``"float32"``, ``"bfloat16"``, ``"float16"``,
    ``"int64"``, ``"string"``...). ``data`` is a numpy array of ``shape``; numpy has no
    bfloat16, so bfloat16 tensors keep their raw bits as ``uint16`` (``dtype == "bfloat16"``)
    and :meth:`to_float32` gives the exact float32 values. String tensors hold ``bytes``
    objects (numpy ``object`` array).
    """

    step: int
    wall_time: float
    dtype: str
    shape: tuple[int, ...]
    data: NDArray[Any]

    def to_float32(self) -> NDArray[np.float32]:
        """The values as float32 (exact for bfloat16, float16 and float8).

        float8 tensors (raw ``uint8`` bytes named e.g. ``"float8_e4m3fn"``) need the
        ``ml_dtypes`` package to convert.

        Raises:
            MissingDependencyError: A float8 tensor without ``ml_dtypes`` installed.
        """
        if self.dtype == "bfloat16":
            bits = self.data.astype(np.uint32) << np.uint32(16)
            return bits.view(np.float32).reshape(self.shape)
        if self.dtype.startswith("float8"):
            try:
                import ml_dtypes
            except ImportError as exc:
                from tensorsight.errors import MissingDependencyError

                msg = (
                    f"Tensor dtype {self.dtype}: needs ml_dtypes to convert: pip install ml_dtypes"
                )
                raise MissingDependencyError(msg) from exc
            view = self.data.view(getattr(ml_dtypes, self.dtype))
            return np.asarray(view, dtype=np.float32).reshape(self.shape)
        return np.asarray(self.data, dtype=np.float32)


@dataclass(frozen=True, eq=False)
class PrCurveRecord:
    """One precision-recall curve: arrays of length ``num_thresholds`` each."""

    step: int
    wall_time: float
    thresholds: NDArray[np.float64]
    true_positives: NDArray[np.float64]
    false_positives: NDArray[np.float64]
    true_negatives: NDArray[np.float64]
    false_negatives: NDArray[np.float64]
    precision: NDArray[np.float64]
    recall: NDArray[np.float64]


@dataclass(frozen=True)
class EmbeddingRecord:
    """One embedding of the projector (``add_embedding``), listed from ``projector_config.pbtxt``.

    Only paths and names: the matrix, labels and sprite are read on demand with
    :func:`tensorsight.summary.projector.load_embedding` (a matrix can take hundreds of MB).
    Paths are absolute; ``metadata_path``/``sprite_path`` are ``None`` when the entry has none.
    ``wall_time`` is 0.0: the files carry no training time. ``sprite_dim`` is the (width,
    height) of one thumbnail.
    """

    step: int
    wall_time: float
    tensor_name: str
    tensor_path: str
    metadata_path: str | None = None
    sprite_path: str | None = None
    sprite_dim: tuple[int, int] | None = None


@dataclass(frozen=True, eq=False)
class HParamsRecord:
    """One hparams-plugin message.

    ``part`` is ``"experiment"`` (the hparams and metrics declared for the experiment),
    ``"session_start"`` (the hparam values of one run: ``hparams``) or ``"session_end"``
    (``status``). ``metrics`` lists metric tags declared by an experiment.
    """

    step: int
    wall_time: float
    part: str
    hparams: dict[str, Any] = field(default_factory=dict)
    metrics: tuple[str, ...] = ()
    status: int | None = None


@dataclass(frozen=True, eq=False)
class LandscapeRecord:
    """A loss landscape on a grid: ``values[i, j]`` is the loss at ``(x[j], y[i])``.

    Non-finite losses are NaN. ``path`` is an ``(n, 2)`` or ``(n, 3)`` array of the training
    path (x, y[, loss]) or ``None``; ``metadata`` holds whatever else the writer stored.
    """

    step: int
    wall_time: float
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    values: NDArray[np.float64]
    path: NDArray[np.float64] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class DataGraphRecord:
    """A data-pipeline graph: nodes ``{"id", "type", "label", "params"}``, ``(src, dst)`` edges."""

    step: int
    wall_time: float
    nodes: tuple[dict[str, Any], ...]
    edges: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class GraphNode:
    """One node of a computational graph.

    ``shapes``/``dtypes`` describe each output (empty when unknown; an unknown dimension is
    -1); ``module_path`` is the dotted nn.Module (or MindSpore scope) path; ``attrs`` holds
    the remaining attributes as plain Python values.
    """

    name: str
    op: str
    inputs: tuple[str, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: tuple[str, ...] = ()
    module_path: str = ""
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@dataclass(frozen=True, eq=False)
class Graph:
    """A computational graph: ``nodes`` in file order; ``source`` names the format.

    ``error`` is set (and ``nodes`` empty) for a graph file that could not be decoded: the
    sentence says why.
    """

    step: int
    wall_time: float
    nodes: tuple[GraphNode, ...]
    source: str = "tensorboard"
    name: str = "graph"
    error: str = ""

    def node(self, name: str) -> GraphNode | None:
        """The node called ``name``, or ``None``."""
        for n in self.nodes:
            if n.name == name:
                return n
        return None
