"""An in-memory :class:`DataProvider`: for tests, notebooks and views built from computed data."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorsight.data.audio import AudioClip
from tensorsight.data.custom_scalars import ScalarLayout
from tensorsight.data.embeddings import EmbeddingData, EmbeddingEntry
from tensorsight.data.graphs import DataGraph, ModelGraph
from tensorsight.data.hparams import RunHParams
from tensorsight.data.provider import (
    DataProvider,
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

__all__ = ["InMemoryProvider"]


class InMemoryProvider(DataProvider):
    """A provider whose data is added by calls instead of read from files.

    Example:
        >>> p = InMemoryProvider()
        >>> p.add_scalars("train", "loss", steps=[0, 1], values=[1.0, 0.5], wall_times=[10, 11])
        >>> p.read_scalars("train", "loss").values.tolist()
        [1.0, 0.5]
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self._limits = limits or Limits()
        self._lock = threading.Lock()
        self._scalars: dict[tuple[str, str], ScalarSeries] = {}
        self._records: dict[tuple[str, str, str], list[Any]] = {}  # (kind, run, tag)
        self._models: dict[tuple[str, str, str], Any] = {}  # graphs, layouts, hparams, embeddings
        self._tags: dict[str, dict[str, list[str]]] = {}
        self._times: dict[str, tuple[float, float]] = {}
        self._generation = 0

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def generation(self) -> int:
        return self._generation

    def _touch(self, run: str, kind: str, tag: str, wall_times: Sequence[float]) -> None:
        tags = self._tags.setdefault(run, {}).setdefault(kind, [])
        if tag not in tags:
            tags.append(tag)
        if len(wall_times):
            lo, hi = float(min(wall_times)), float(max(wall_times))
            old = self._times.get(run)
            self._times[run] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        self._generation += 1

    def add_record(self, run: str, kind: str, tag: str, record: Any) -> None:
        """Append one record of ``kind`` (its ``read_records`` type, see ``data.provider``)."""
        with self._lock:
            self._records.setdefault((kind, run, tag), []).append(record)
            self._touch(run, kind, tag, [record.wall_time])

    def read_records(self, run: str, kind: str, tag: str) -> list[Any]:
        if kind == "embeddings":
            found = self._models[("embeddings", run, tag)]
            return [
                EmbeddingEntry(step, d.tensor_name, bool(d.columns), d.sprite_dim)
                for step, (d, _) in sorted(found.items())
            ]
        return list(self._records[(kind, run, tag)])

    def add_scalars(
        self,
        run: str,
        tag: str,
        *,
        steps: Sequence[int] | np.ndarray,
        values: Sequence[float] | np.ndarray,
        wall_times: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        """Append points to a scalar series (``wall_times`` default: the steps, in seconds)."""
        s = np.asarray(steps, dtype=np.int64)
        v = np.asarray(values, dtype=np.float64)
        w = np.asarray(s if wall_times is None else wall_times, dtype=np.float64)
        with self._lock:
            old = self._scalars.get((run, tag))
            if old is not None:
                s = np.concatenate([old.steps, s])
                w = np.concatenate([old.wall_times, w])
                v = np.concatenate([old.values, v])
            self._scalars[(run, tag)] = ScalarSeries(run, tag, s, w, v)
            self._touch(run, "scalars", tag, w.tolist()[-1:] + w.tolist()[:1])

    def add_histogram(self, run: str, tag: str, record: HistogramRecord) -> None:
        """Append one histogram record."""
        self.add_record(run, "histograms", tag, record)

    def add_image(self, run: str, tag: str, record: ImageRecord) -> None:
        """Append one image record."""
        self.add_record(run, "images", tag, record)

    def add_text(self, run: str, tag: str, record: TextRecord) -> None:
        """Append one text record."""
        self.add_record(run, "text", tag, record)

    def list_runs(self) -> list[RunInfo]:
        with self._lock:
            out = []
            for run in sorted(self._tags):
                first, last = self._times.get(run, (None, None))
                tags = {k: tuple(v) for k, v in self._tags[run].items()}
                out.append(RunInfo(run, first, last, tags))
            return out

    def run_info(self, run: str) -> RunInfo:
        with self._lock:
            kinds = self._tags[run]
            first, last = self._times.get(run, (None, None))
            return RunInfo(run, first, last, {k: tuple(v) for k, v in kinds.items()})

    def read_scalars(self, run: str, tag: str) -> ScalarSeries:
        return self._scalars[(run, tag)]

    def add_graph(self, graph: ModelGraph) -> None:
        """Set the computational graph ``graph.tag`` of run ``graph.run``."""
        with self._lock:
            self._models[("graphs", graph.run, graph.tag)] = graph
            self._touch(graph.run, "graphs", graph.tag, [graph.wall_time])

    def add_tensor(self, run: str, tag: str, value: TensorValue) -> None:
        """Append one tensor record (see :meth:`TensorValue.from_array`)."""
        self.add_record(run, "tensors", tag, value)

    def add_data_graph(self, run: str, tag: str, graph: DataGraph) -> None:
        """Append one data-pipeline graph."""
        self.add_record(run, "data_graphs", tag, graph)

    def add_landscape(self, run: str, tag: str, landscape: LandscapeData) -> None:
        """Append one loss landscape (see :meth:`LandscapeData.from_arrays`)."""
        self.add_record(run, "landscapes", tag, landscape)

    def add_hparams(self, hparams: RunHParams) -> None:
        """Set the hyperparameters of ``hparams.run`` (listed under the hparams kind)."""
        with self._lock:
            self._models[("hparams", hparams.run, "")] = hparams
            self._touch(hparams.run, "hparams", "_hparams_/session_start_info", [hparams.wall_time])

    def add_pr_curve(self, run: str, tag: str, curve: PrCurveData) -> None:
        """Append one PR curve."""
        self.add_record(run, "pr_curves", tag, curve)

    def add_audio(self, run: str, tag: str, clip: AudioClip) -> None:
        """Append one audio clip."""
        self.add_record(run, "audio", tag, clip)

    def add_embedding(
        self, run: str, tag: str, data: EmbeddingData, sprite: tuple[bytes, str] | None = None
    ) -> None:
        """Add (or replace) the embedding of ``tag`` at ``data.step``, with an optional
        sprite ``(bytes, media type)``."""
        with self._lock:
            found = self._models.setdefault(("embeddings", run, tag), {})
            found[data.step] = (data, sprite)
            self._touch(run, "embeddings", tag, [])

    def load_embedding(self, run: str, tag: str, step: int) -> EmbeddingData:
        data: EmbeddingData = self._models[("embeddings", run, tag)][step][0]
        return data

    def read_embedding_sprite(self, run: str, tag: str, step: int) -> tuple[bytes, str]:
        sprite: tuple[bytes, str] | None = self._models[("embeddings", run, tag)][step][1]
        if sprite is None:
            raise KeyError(tag)
        return sprite

    def add_scalar_layout(self, run: str, layout: ScalarLayout) -> None:
        """Set the custom-scalar layout of ``run`` (listed under the custom_scalars kind)."""
        with self._lock:
            self._models[("custom_scalars", run, "")] = layout
            self._touch(run, "custom_scalars", "custom_scalars__config__", [])

    def read_scalar_layout(self, run: str) -> ScalarLayout:
        found: ScalarLayout = self._models[("custom_scalars", run, "")]
        return found

    def read_hparams(self, run: str) -> RunHParams:
        found: RunHParams = self._models[("hparams", run, "")]
        return found

    def read_graph(self, run: str, tag: str) -> ModelGraph:
        graph: ModelGraph = self._models[("graphs", run, tag)]
        return graph
