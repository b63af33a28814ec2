"""The seam between stored summaries and the board's views: :class:`DataProvider`.

Views never open files. They ask a provider for runs, tags and series, and the provider
answers with the small immutable result types below. Every type that travels over the
wire carries ``SCHEMA_VERSION``; its docstring is the spec.

Keys:
    * a *run* is the folder holding event files, relative to the logdir (``"."`` for the
      logdir itself);
    * a *tag* names one series of one kind inside a run;
    * a *kind* is one of :data:`KINDS` (``scalars``, ``histograms``, ``images``, ``text``, ...):
      the reader's kinds (``tensorsight.summary.kinds.KINDS``, one module per kind) plus
      ``custom_scalars``.

Records:
    :meth:`DataProvider.read_scalars` returns a tag's arrays (the hot path);
    :meth:`DataProvider.read_records` returns any other kind's records of a tag, in step
    order. The record type of each kind:

    ================  ==========================================================
    ``histograms``    :class:`HistogramRecord` (buckets as tuples of floats)
    ``images``        :class:`ImageRecord`
    ``text``          :class:`TextRecord`
    ``tensors``       :class:`~tensorsight.data.TensorValue` (low precision widened)
    ``audio``         :class:`~tensorsight.data.AudioClip`
    ``pr_curves``     ``PrCurveData``, the kind's own ``PrCurveRecord``
    ``landscapes``    ``LandscapeData``, the kind's own ``LandscapeRecord``
    ``data_graphs``   ``DataGraph``, the kind's own ``DataGraphRecord``
    ``embeddings``    :class:`~tensorsight.data.EmbeddingEntry` (no paths)
    ================  ==========================================================

    The kinds whose stored record is what a view needs are served as that record type
    (defined once, in ``summary/kinds/<kind>.py``). Six have a served form here because it
    differs from the stored one, and each of those names is public (pinned in
    ``tests/test_public_api.py``) with its fields, so it stays: ``HistogramRecord`` has its
    buckets as tuples of Python floats (JSON; the stored record holds arrays, which
    :meth:`DataProvider.sample_histogram_arrays` hands over without a copy as
    ``HistogramArrays``); ``ImageRecord`` names a media type (``image/png``) where the stored
    record names a format; ``ImageRecord`` and ``AudioClip`` leave out values over
    :attr:`Limits.max_blob_bytes` and call their bytes and media type ``data`` and
    ``mime_type`` (the stored records: ``encoded``, ``format``/``content_type``);
    ``TextRecord`` is one string where the stored record holds a string tensor;
    ``TensorValue`` has low-precision floats widened to float32; ``EmbeddingEntry`` lists an
    embedding without the paths of its files (the board never shows a path).
    ``tests/data/test_read_records.py`` fails when another kind gains a served form. Graphs,
    hparams, custom-scalar layouts and embedding matrices are read through their own methods
    (one object per run or step).

Resolution and downsampling:
    Providers keep every point they were allowed to keep (see :class:`Limits`; whatever a
    limit drops is counted in :attr:`RunInfo.dropped` and shown by the board, never
    silently). :meth:`DataProvider.read_scalars` returns the full series; views downsample
    per request with :func:`tensorsight.data.downsample_indices` for the visible x range and
    pixel width, so zooming in re-queries the stored full resolution.

Threading:
    A provider may be reloaded from a background thread while requests are served; every
    method returns values that stay valid after a reload (arrays are never mutated in place).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from tensorsight.data.audio import AudioClip
    from tensorsight.data.comparisons import ComparisonStore
    from tensorsight.data.custom_scalars import ScalarLayout
    from tensorsight.data.embeddings import EmbeddingData, EmbeddingEntry
    from tensorsight.data.graphs import DataGraph, ModelGraph
    from tensorsight.data.hparams import RunHParams
    from tensorsight.data.tensors import TensorValue
    from tensorsight.summary.kinds.landscape import LandscapeRecord as LandscapeData
    from tensorsight.summary.kinds.pr_curve import PrCurveRecord as PrCurveData

__all__ = [
    "KINDS",
    "RECORD_LIMITS",
    "SCHEMA_VERSION",
    "DataProvider",
    "HistogramArrays",
    "HistogramRecord",
    "ImageRecord",
    "Limits",
    "RunInfo",
    "ScalarSeries",
    "TextRecord",
]

SCHEMA_VERSION = 1


def _kinds() -> tuple[str, ...]:
    from tensorsight.summary.kinds import KINDS as READER_KINDS

    names = list(READER_KINDS.names())
    # custom-scalar layouts are stored as a tensor; the board lists them as their own kind
    names.insert(names.index("data_graphs") + 1, "custom_scalars")
    return tuple(names)


#: Every kind a provider may list, in tab order.
KINDS: tuple[str, ...] = _kinds()

#: Kind -> the :class:`Limits` field that caps its values per tag (the one table of caps;
#: kinds not listed are uncapped).
RECORD_LIMITS: Mapping[str, str] = {
    "scalars": "max_points_per_scalar",
    "histograms": "max_records_per_histogram",
    "images": "max_records_per_image",
    "text": "max_records_per_text",
    "pr_curves": "max_records_per_pr_curve",
    "audio": "max_records_per_audio",
    "mesh": "max_records_per_mesh",
}


@dataclass(frozen=True)
class Limits:
    """Memory bounds of a provider; ``None`` means "no limit".

    The per-tag caps are applied while reading (the newest values are kept), so they bound
    memory; which field caps which kind is :data:`RECORD_LIMITS` (:meth:`per_kind`). Every
    run lists in :attr:`RunInfo.dropped` how many tags hit a cap, and the board shows it.
    Scalars are uncapped by default: full resolution is the point.

    Attributes:
        max_tags_per_run: Tags shown per run and kind (in sorted order); the rest are hidden
            and counted.
        max_points_per_scalar: Points kept per scalar tag (default ``None``: all of them).
        max_records_per_histogram: Records kept per histogram tag.
        max_records_per_image: Records kept per image tag.
        max_records_per_text: Records kept per text tag.
        max_records_per_pr_curve: Records (steps) kept per PR-curve tag.
        max_records_per_audio: Records (clips) kept per audio tag.
        max_records_per_mesh: Records (steps) kept per mesh part (``<name>_VERTEX``,
            ``_FACE``, ``_COLOR``); a mesh can hold millions of vertices, so the default
            is TensorBoard's mesh plugin's, 100.
        max_blob_bytes: Largest encoded image served, in bytes; larger ones are skipped.
    """

    max_tags_per_run: int | None = 10_000
    max_points_per_scalar: int | None = None
    max_records_per_histogram: int | None = 10_000
    max_records_per_image: int | None = 1_000
    max_records_per_text: int | None = 10_000
    max_records_per_pr_curve: int | None = 1_000
    max_records_per_audio: int | None = 1_000
    max_records_per_mesh: int | None = 100
    max_blob_bytes: int | None = 64 * 1024 * 1024

    def to_json(self) -> dict[str, int | None]:
        """The limits as a JSON object (the board shows them in its footer)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def per_kind(self) -> dict[str, int]:
        """Kind -> most values kept per tag, from :data:`RECORD_LIMITS` (uncapped left out)."""
        caps = ((kind, getattr(self, name)) for kind, name in RECORD_LIMITS.items())
        return {kind: cap for kind, cap in caps if cap is not None}


@dataclass(frozen=True)
class RunInfo:
    """One run as the run list shows it.

    Attributes:
        name: Run name (folder relative to the logdir, ``"."`` for the logdir itself).
        first_wall_time: Seconds since the epoch of the first record, ``None`` when empty.
        last_wall_time: Seconds since the epoch of the newest record, ``None`` when empty.
        tags: kind -> tag names, in first-seen order.
        dropped: What the provider's limits dropped or hid, as sentence -> count, e.g.
            ``{"scalars tags at the 1000-value limit (older values dropped)": 2}``; empty
            when nothing was dropped. The board shows it in the run list.
        is_active: Whether the run is still being written (``None``: unknown; the board
            then calls it active when its last write is under two minutes old).
    """

    name: str
    first_wall_time: float | None
    last_wall_time: float | None
    tags: Mapping[str, tuple[str, ...]]
    dropped: Mapping[str, int] = field(default_factory=dict)
    is_active: bool | None = None

    SCHEMA_VERSION = SCHEMA_VERSION

    @property
    def tag_count(self) -> int:
        """Number of tags over all kinds."""
        return sum(len(v) for v in self.tags.values())


@dataclass(frozen=True)
class ScalarSeries:
    """One scalar tag of one run at full resolution, in file order.

    Attributes:
        steps: int64 steps.
        wall_times: float64 seconds since the epoch.
        values: float64 values; NaN and +-Inf are kept as written.
    """

    run: str
    tag: str
    steps: NDArray[np.int64]
    wall_times: NDArray[np.float64]
    values: NDArray[np.float64]

    SCHEMA_VERSION = SCHEMA_VERSION

    def __len__(self) -> int:
        return int(self.steps.shape[0])


@dataclass(frozen=True)
class HistogramRecord:
    """One histogram at one step, with the source's buckets exactly as written.

    Bucket ``i`` covers ``(edges[i], edges[i+1]]``; ``len(edges) == len(counts) + 1``.
    TensorBoard's ``HistogramProto`` gives right edges only; the reader supplies the left
    edge of the first bucket. ``min`` .. ``sum_squares`` are ``None`` when absent. The
    ``nan_count``/``pos_inf_count``/``neg_inf_count`` fields are ``None`` when the source
    does not record them (only MindSpore does).
    """

    step: int
    wall_time: float
    edges: tuple[float, ...]
    counts: tuple[float, ...]
    min: float | None = None
    max: float | None = None
    num: float | None = None
    sum: float | None = None
    sum_squares: float | None = None
    nan_count: int | None = None
    pos_inf_count: int | None = None
    neg_inf_count: int | None = None

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True, eq=False)
class HistogramArrays:
    """A :class:`HistogramRecord` whose ``edges`` and ``counts`` are float64 arrays (read-only;
    no Python float per bucket): what the board encodes. Other fields as there."""

    step: int
    wall_time: float
    edges: NDArray[np.float64]
    counts: NDArray[np.float64]
    min: float | None = None
    max: float | None = None
    num: float | None = None
    sum: float | None = None
    nan_count: int | None = None
    pos_inf_count: int | None = None
    neg_inf_count: int | None = None

    SCHEMA_VERSION = SCHEMA_VERSION


def _arrays(r: HistogramRecord) -> HistogramArrays:
    return HistogramArrays(
        step=r.step,
        wall_time=r.wall_time,
        edges=np.asarray(r.edges, dtype=np.float64),
        counts=np.asarray(r.counts, dtype=np.float64),
        min=r.min,
        max=r.max,
        num=r.num,
        sum=r.sum,
        nan_count=r.nan_count,
        pos_inf_count=r.pos_inf_count,
        neg_inf_count=r.neg_inf_count,
    )


@dataclass(frozen=True)
class ImageRecord:
    """One encoded image at one step (``index`` orders several images of one step)."""

    step: int
    wall_time: float
    index: int
    width: int
    height: int
    data: bytes
    mime_type: str

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class TextRecord:
    """One text value (Markdown source) at one step."""

    step: int
    wall_time: float
    text: str

    SCHEMA_VERSION = SCHEMA_VERSION


class DataProvider(abc.ABC):
    """Read-only access to runs and their series; the only thing views talk to.

    Subclasses implement :meth:`list_runs`, :meth:`read_scalars` and :meth:`read_records`
    (plus the per-run methods they offer); unknown runs or tags raise :class:`KeyError` with
    the name (the board turns it into a 404).
    """

    @property
    def limits(self) -> Limits:
        """The memory bounds this provider applies."""
        return Limits()

    @property
    def generation(self) -> int:
        """A counter that grows whenever new data arrived (clients poll it to refresh)."""
        return 0

    @property
    def loading(self) -> bool:
        """True while the first read of the data runs (the run list may lack tags)."""
        return False

    def reload(self) -> bool:
        """Pick up new runs, tags and points; return whether anything changed."""
        return False

    @abc.abstractmethod
    def list_runs(self) -> list[RunInfo]:
        """Every run, sorted by name."""

    def run_info(self, run: str) -> RunInfo:
        """One run's :class:`RunInfo`; :class:`KeyError` when unknown."""
        for info in self.list_runs():
            if info.name == run:
                return info
        raise KeyError(run)

    def is_active(self, run: str, *, now: float, window_secs: float = 120.0) -> bool:
        """True when ``run`` was written to within ``window_secs`` of ``now``."""
        last = self.run_info(run).last_wall_time
        return last is not None and now - last <= window_secs

    @abc.abstractmethod
    def read_scalars(self, run: str, tag: str) -> ScalarSeries:
        """The full-resolution scalar series."""

    def read_records(self, run: str, kind: str, tag: str) -> list[Any]:
        """The records of ``tag`` of ``kind`` in step order, as the kind's record type (see
        the module docstring); :class:`KeyError` when the provider has no such tag (the
        default: it serves no records). Providers implement this one method for every
        record kind; :class:`~tensorsight.data.LogdirProvider` applies the caps of
        :meth:`Limits.per_kind` (the in-memory provider serves what it was given)."""
        raise KeyError(tag)

    def read_histograms(self, run: str, tag: str) -> list[HistogramRecord]:
        """Histogram records in step order (``read_records(run, "histograms", tag)``)."""
        return self.read_records(run, "histograms", tag)

    def sample_histograms(
        self, run: str, tag: str, limit: int
    ) -> tuple[int, list[HistogramRecord]]:
        """``(total, records)``: how many histogram records the tag has, and at most
        ``limit`` of them, evenly spaced, first and newest kept (:func:`evenly_spaced`).

        The default thins :meth:`read_histograms`. A provider that converts records as it
        reads them overrides it to convert only the kept ones: a live run's 10,000 records
        of 600 buckets took 1.3 s to convert, where the 500 sent take 0.07 s.
        """
        from tensorsight.data._downsample import evenly_spaced

        records = self.read_histograms(run, tag)
        return len(records), [records[i] for i in evenly_spaced(len(records), limit)]

    def sample_histogram_arrays(
        self, run: str, tag: str, limit: int
    ) -> tuple[int, list[HistogramArrays]]:
        """:meth:`sample_histograms` with the buckets as arrays. The default converts its
        records; a provider that stores arrays overrides it to hand them over as they are."""
        total, records = self.sample_histograms(run, tag, limit)
        return total, [_arrays(r) for r in records]

    # Per-kind names of read_records, kept for callers; providers implement read_records.
    def read_images(self, run: str, tag: str) -> list[ImageRecord]:
        """Image records in step order."""
        return self.read_records(run, "images", tag)

    def read_text(self, run: str, tag: str) -> list[TextRecord]:
        """Text records in step order."""
        return self.read_records(run, "text", tag)

    def read_tensors(self, run: str, tag: str) -> list[TensorValue]:
        """Tensor records of a tag in step order."""
        return self.read_records(run, "tensors", tag)

    def read_tensors_at(self, run: str, tag: str, step: int) -> list[TensorValue]:
        """The tensor records of a tag at one step, in file order (``[]``: none there).

        The default filters :meth:`read_tensors`; :class:`~tensorsight.data.LogdirProvider`
        keeps an index by step, so a view that answers one step (the Monitor tab's
        ``/step``) converts only that step's records. :class:`KeyError` as
        :meth:`read_records`.
        """
        return [r for r in self.read_tensors(run, tag) if r.step == step]

    def read_data_graphs(self, run: str, tag: str) -> list[DataGraph]:
        """Data-pipeline graphs of a tag in step order."""
        return self.read_records(run, "data_graphs", tag)

    def read_landscapes(self, run: str, tag: str) -> list[LandscapeData]:
        """Loss landscapes of a tag in step order."""
        return self.read_records(run, "landscapes", tag)

    def read_pr_curves(self, run: str, tag: str) -> list[PrCurveData]:
        """PR curves of a tag in step order."""
        return self.read_records(run, "pr_curves", tag)

    def read_audio(self, run: str, tag: str) -> list[AudioClip]:
        """Audio clips of a tag in step order."""
        return self.read_records(run, "audio", tag)

    def read_embeddings(self, run: str, tag: str) -> list[EmbeddingEntry]:
        """The projector embeddings of a tag (kind ``embeddings``) in step order."""
        return self.read_records(run, "embeddings", tag)

    # One object per run, graph or step: optional, KeyError when not offered.
    def read_graph(self, run: str, tag: str) -> ModelGraph:
        """The computational graph ``tag`` of ``run``."""
        raise KeyError(tag)

    def load_embedding(self, run: str, tag: str, step: int) -> EmbeddingData:
        """The points and labels of the embedding of ``tag`` at ``step``.

        Raises:
            KeyError: No such embedding.
            ValueError: Its matrix cannot be read (the message names the file and line).
        """
        raise KeyError(tag)

    def read_embedding_sprite(self, run: str, tag: str, step: int) -> tuple[bytes, str]:
        """The sprite image (bytes, media type) of an embedding; KeyError when it has none,
        ValueError when its file cannot be served."""
        raise KeyError(tag)

    def read_scalar_layout(self, run: str) -> ScalarLayout:
        """The custom-scalar layout of ``run`` (kind ``custom_scalars``); KeyError when none."""
        raise KeyError(run)

    def read_hparams(self, run: str) -> RunHParams:
        """The hyperparameters of ``run``; :class:`KeyError` when it has none."""
        raise KeyError(run)

    def comparisons(self) -> ComparisonStore | None:
        """Comparison results this provider serves (``None``: it serves none)."""
        return None
