"""``read_logdir`` and :class:`Logdir`: every point of every run below a folder.

A *run* is a folder holding event files, named by its path relative to the logdir
(``"."`` for the logdir itself). Files recognised (anywhere below the logdir):

* TensorBoard event files: ``*tfevents*`` (TensorFlow, torch.utils.tensorboard,
  tensorboardX, tensorsight's SummaryWriter),
* MindSpore summaries ``*_MS``, lineage files ``*_lineage``, graphs ``*.pb`` (MindSpore
  names them ``ms_output_*.pb``),
* ONNX model files ``*.onnx``, read as the graph ``<file name>`` of the run whose folder
  holds them (a folder holding only model files is a run too),
* the embedding projector's ``projector_config.pbtxt`` (``add_embedding``): kind
  ``embeddings``, one record per entry, the files it names read on demand
  (:mod:`tensorsight.summary.projector`).

A ``.pb`` or ``.onnx`` file that cannot be decoded is listed as a graph without nodes whose
``error`` says why.

:meth:`Logdir.reload` is incremental: it finds new runs and files, and reads only what
was appended to each file since the last call (a truncated last record waits for the next
call). Memory: every value is kept (24 bytes per scalar point, the encoded bytes of each
image/audio clip, each tensor's array); ``max_points`` caps any kind per tag, keeping the
newest values.
"""

from __future__ import annotations

import contextlib
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tensorsight.errors import InputFileError, UsageError
from tensorsight.summary import _fs
from tensorsight.summary._store import RunStore
from tensorsight.summary.mindspore import (
    MindSporeGraphFile,
    MindSporeLineageReader,
    MindSporeSummaryReader,
)
from tensorsight.summary.onnx_graph import OnnxGraphFile
from tensorsight.summary.projector import CONFIG_NAME, ProjectorConfigReader
from tensorsight.summary.reader import Batch, CorruptRecordWarning, EventFileReader
from tensorsight.summary.records import (
    KINDS,
    AudioRecord,
    DataGraphRecord,
    EmbeddingRecord,
    Graph,
    HistogramRecord,
    HParamsRecord,
    ImageRecord,
    LandscapeRecord,
    MeshRecord,
    PrCurveRecord,
    ScalarSeries,
    TensorRecord,
    TextRecord,
)

__all__ = ["Logdir", "ReloadResult", "RunInfo", "TagSummary", "file_format", "read_logdir"]

SCHEMA_VERSION = 1


# the fixed names of a TensorFlow SavedModel folder's protobuf files: never MindSpore graphs,
# and a SavedModel kept below a logdir must not become a run with a broken graph
_TF_SAVED_MODEL = frozenset({"saved_model.pb", "fingerprint.pb", "keras_metadata.pb"})


def _unreadable(path: str, exc: BaseException) -> str:
    """The problem sentence for a file whose reading failed in an unforeseen way."""
    return (
        f"File {path!r}: could not be read ({type(exc).__name__}: {exc}); skipped, the rest "
        "of the logdir was read."
    )


def file_format(name: str) -> str | None:
    """Which reader handles a file name: ``"tensorboard"``, ``"ms_summary"``,
    ``"ms_lineage"``, ``"ms_graph"`` (any ``*.pb`` but a TensorFlow SavedModel's
    ``saved_model.pb``, ``fingerprint.pb``, ``keras_metadata.pb``), ``"onnx_graph"``
    (``*.onnx``), ``"projector"`` (``projector_config.pbtxt``), or ``None`` for files that
    are not logs."""
    if "tfevents" in name:
        return "tensorboard"
    if name.endswith("_MS"):
        return "ms_summary"
    if name.endswith("_lineage"):
        return "ms_lineage"
    if name.endswith(".pb") and name not in _TF_SAVED_MODEL:
        return "ms_graph"
    if name.endswith(".onnx"):
        return "onnx_graph"
    if name == CONFIG_NAME:
        return "projector"
    return None


_READERS: dict[str, type[EventFileReader]] = {
    "tensorboard": EventFileReader,
    "ms_summary": MindSporeSummaryReader,
    "ms_lineage": MindSporeLineageReader,
    "ms_graph": MindSporeGraphFile,
    "onnx_graph": OnnxGraphFile,
    "projector": ProjectorConfigReader,
}


@dataclass(frozen=True)
class RunInfo:
    """What the board's run list shows about one run.

    ``is_active`` is true when a file of the run grew during the last reload (after having
    been read before) or was modified less than ``active_secs`` ago: wall time, never a
    partly written record alone (a stuck or corrupt tail does not keep a run active).
    """

    name: str
    first_wall_time: float | None
    last_wall_time: float | None
    is_active: bool
    files: tuple[str, ...]
    last_modified: float


@dataclass(frozen=True)
class TagSummary:
    """One row of ``tensorsight inspect``: a tag's kind, value count and step range."""

    run: str
    kind: str
    tag: str
    count: int
    first_step: int | None
    last_step: int | None


@dataclass(frozen=True)
class ReloadResult:
    """What one :meth:`Logdir.reload` changed.

    ``changed`` maps run -> kind -> tags with new (or purged) values; ``problems`` are the
    sentences of records skipped during this reload (also emitted as
    :class:`~tensorsight.summary.reader.CorruptRecordWarning`).
    """

    new_runs: tuple[str, ...] = ()
    new_files: tuple[str, ...] = ()
    changed: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    records: int = 0
    problems: tuple[str, ...] = ()

    @property
    def has_changes(self) -> bool:
        return bool(self.new_runs or self.changed)


class Logdir:
    """Everything read from one logdir; see :func:`read_logdir`.

    Args:
        path: The folder to scan recursively.
        check_data_crc: Verify the payload CRC of every record (default on; the length CRC
            is always checked).
        max_points: Kind -> most values kept per tag (newest kept); default unbounded.
        active_secs: A run modified within this many seconds counts as active.
        use_c: ``None`` uses the C scanner when available, ``False`` forces pure Python.
        workers: Threads reading files in parallel (default: up to 4).
    """

    def __init__(
        self,
        path: str | Any,
        *,
        check_data_crc: bool = True,
        max_points: Mapping[str, int] | None = None,
        active_secs: float | None = None,
        use_c: bool | None = None,
        workers: int | None = None,
    ) -> None:
        self.path = str(path)
        unknown = sorted(set(max_points or {}) - set(KINDS))
        if unknown:
            msg = f"max_points kind {unknown[0]!r}: unknown. Expected one of {', '.join(KINDS)}."
            raise UsageError(msg)
        self.check_data_crc = check_data_crc
        self.max_points = dict(max_points or {})
        self.active_secs = 120.0 if active_secs is None else float(active_secs)
        self.use_c = use_c
        self.workers = workers or 4
        self._runs: dict[str, RunStore] = {}
        self._grew: set[str] = set()
        self.problems: list[str] = []
        self._unlisted: set[str] = set()  # problems of the folders the last walk could not list
        if not _fs.is_dir(self.path):
            if _fs.exists(self.path):
                msg = (
                    f"Logdir {self.path!r}: not a folder. Expected a folder holding event "
                    "files, got a file. Pass the folder that contains it."
                )
            else:
                msg = (
                    f"Logdir {self.path!r}: not found. Expected a folder holding event "
                    "files. Check the path."
                )
            raise InputFileError(msg)

    # ------------------------------------------------------------ scanning
    def scan(self, *, lock: contextlib.AbstractContextManager[Any] | None = None) -> list[str]:
        """List the folders and register new runs and files without reading any record.

        Returns the new runs' names. The board calls it first so that its run list can be
        served while :meth:`reload` reads the records (which calls it too).
        """
        unlisted: list[str] = []
        return self._scan(contextlib.nullcontext() if lock is None else lock, unlisted)[0]

    def _scan(
        self, guard: contextlib.AbstractContextManager[Any], unlisted: list[str]
    ) -> tuple[list[str], list[str]]:
        new_runs: list[str] = []
        new_files: list[str] = []
        found = [(folder, list(names)) for folder, names in _fs.walk(self.path, unlisted)]
        with guard:
            for folder, names in found:
                for name in names:
                    fmt = file_format(name)
                    if fmt is None:
                        continue
                    run = _fs.relpath(folder, self.path)
                    store = self._runs.get(run)
                    if store is None:
                        store = self._runs[run] = RunStore(run, self.max_points)
                        new_runs.append(run)
                    full = _fs.join(folder, name)
                    if full not in store.readers:
                        store.readers[full] = _READERS[fmt](
                            full, plugins=store.plugins, check_data_crc=self.check_data_crc,
                            use_c=self.use_c,
                        )  # fmt: skip
                        new_files.append(full)
        return new_runs, new_files

    def reload(
        self,
        *,
        progress: Callable[[int], None] | None = None,
        lock: contextlib.AbstractContextManager[Any] | None = None,
    ) -> ReloadResult:
        """Pick up new runs, files and records; returns what changed.

        Args:
            progress: Called with the number of files read so far (for progress bars).
            lock: Held around each change to what the queries read (new runs and files,
                each ingested chunk, compaction) and only then: listing, reading and
                decoding files run without it. Another thread that queries under the same
                lock waits for one chunk's ingest at most, never for the disk or the
                decoder (the board's provider passes its lock; ``None``: no lock). Only one
                reload may run at a time.

        Raises:
            InputFileError: The logdir itself cannot be listed.
        """
        guard = contextlib.nullcontext() if lock is None else lock
        unlisted: list[str] = []
        new_runs, new_files = self._scan(guard, unlisted)
        seen_before = {
            id(r) for store in self._runs.values() for r in store.readers.values() if r.offset
        }
        changed: dict[str, dict[str, set[str]]] = {}
        grew: set[str] = set()
        ingest_lock = threading.Lock()

        def ingest(store: RunStore, reader: EventFileReader, batch: Batch) -> None:
            with ingest_lock, guard:  # one run's files may be read by several threads
                kinds = store.ingest(batch, reader)
            if kinds and id(reader) in seen_before:
                grew.add(store.name)
            with ingest_lock:
                for kind, tags in kinds.items():
                    changed.setdefault(store.name, {}).setdefault(kind, set()).update(tags)

        # in name order (the run list's): the board shows the first runs while the rest are read
        stores = [self._runs[name] for name in sorted(self._runs)]
        totals = self._read_all(stores, ingest, progress)
        with guard:
            self._grew = grew
            for run, kinds in changed.items():
                for tag in kinds.get("scalars", ()):
                    self._runs[run].scalars[tag].compact()
        # a folder that cannot be listed is a problem once, until it can be listed again
        fresh = [p for p in unlisted if p not in self._unlisted]
        self._unlisted = set(unlisted)
        problems = fresh + [p for t in totals for p in t.problems]
        records = sum(t.records for t in totals)
        for p in problems:
            warnings.warn(p, CorruptRecordWarning, stacklevel=2)
        self.problems.extend(problems)
        return ReloadResult(
            tuple(new_runs),
            tuple(new_files),
            {r: {k: tuple(sorted(t)) for k, t in kinds.items()} for r, kinds in changed.items()},
            records,
            tuple(problems),
        )

    def _read_all(
        self,
        stores: list[RunStore],
        ingest: Callable[[RunStore, EventFileReader, Batch], None],
        progress: Callable[[int], None] | None,
    ) -> list[Batch]:
        """Read every run; a run's files in name order (the restart rule needs it), runs in
        parallel threads (the C scanner releases the GIL). Chunks are ingested as they come,
        so memory holds one chunk per thread besides what is kept."""
        done = 0
        lock = threading.Lock()

        def one(store: RunStore) -> list[Batch]:
            nonlocal done
            totals = []
            for reader in list(store.readers.values()):

                def sink(batch: Batch, reader: EventFileReader = reader) -> None:
                    ingest(store, reader, batch)

                try:
                    totals.append(reader.read(sink=sink))
                except InputFileError as exc:
                    totals.append(Batch(problems=[str(exc)]))
                except Exception as exc:  # one damaged file never stops the rest
                    totals.append(Batch(problems=[_unreadable(reader.path, exc)]))
                if progress is not None:
                    with lock:
                        done += 1
                        progress(done)
            return totals

        if len(stores) <= 1 or self.workers <= 1:
            return [t for store in stores for t in one(store)]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(stores))) as pool:
            return [t for totals in pool.map(one, stores) for t in totals]

    def file_count(self) -> int:
        """How many log files are known (after the last reload)."""
        return sum(len(s.readers) for s in self._runs.values())

    # ------------------------------------------------------------ queries
    @property
    def runs(self) -> list[str]:
        """Run names, sorted (``"."`` is the logdir itself)."""
        return sorted(self._runs)

    def _run(self, run: str) -> RunStore:
        store = self._runs.get(run)
        if store is None:
            choices = ", ".join(repr(r) for r in self.runs) or "none"
            msg = f"Run {run!r}: not in logdir {self.path!r}. Expected one of: {choices}."
            raise UsageError(msg)
        return store

    def tags(self, run: str) -> dict[str, list[str]]:
        """Kind -> sorted tags of ``run``; every kind of :data:`KINDS` is present."""
        return self._run(run).tags()

    def run_info(self, run: str) -> RunInfo:
        """First/last wall time, whether the run is still being written, and its files."""
        store = self._run(run)
        last_modified = max((r.mtime for r in store.readers.values()), default=0.0)
        recent = time.time() - last_modified < self.active_secs
        return RunInfo(
            run,
            store.first_wall_time,
            store.last_wall_time,
            bool(run in self._grew or recent),
            tuple(store.readers),
            last_modified,
        )

    def describe(self) -> list[TagSummary]:
        """One :class:`TagSummary` per run, kind and tag (what ``tensorsight inspect`` lists)."""
        rows: list[TagSummary] = []
        for run in self.runs:
            store = self._runs[run]
            for kind, tags in store.tags().items():
                for tag in tags:
                    if kind == "scalars":
                        steps = store.scalars[tag].series().steps
                        first = int(steps.min()) if steps.size else None
                        last = int(steps.max()) if steps.size else None
                        rows.append(TagSummary(run, kind, tag, int(steps.size), first, last))
                    elif kind == "graphs":
                        g = store.graphs[tag]
                        rows.append(TagSummary(run, kind, tag, len(g.nodes), g.step, g.step))
                    else:
                        recs = store.records[kind][tag]
                        st = [r.step for r in recs]
                        rows.append(
                            TagSummary(run, kind, tag, len(recs), min(st, default=None),
                                       max(st, default=None))
                        )  # fmt: skip
        return rows

    def records(self, run: str, kind: str, tag: str) -> list[Any]:
        """The records of ``tag`` of ``kind`` in ``run``, in file order.

        One accessor for every kind of :data:`~tensorsight.summary.records.KINDS` but
        ``scalars`` (see :meth:`scalars`): each record is the kind's frozen record type
        (``HistogramRecord``, ``ImageRecord``, ...; for ``graphs``, a one-element list of the
        :class:`Graph`). The named accessors below (``histograms``, ``images``...) are this
        call with the kind filled in.

        Raises:
            UsageError: ``run``, ``kind`` or ``tag`` is unknown (the message lists the choices).
        """
        store = self._run(run)
        if kind == "graphs":
            return [self.graph(run, tag)]
        if kind not in store.records or kind == "scalars":
            choices = ", ".join(k for k in KINDS if k != "scalars")
            msg = (
                f"Kind {kind!r}: not a record kind. Expected one of: {choices} "
                "(scalars: use Logdir.scalars)."
            )
            raise UsageError(msg)
        recs = store.records[kind].get(tag)
        if recs is None:
            msg = (
                f"Tag {tag!r}: run {run!r} has no {kind} under this name. "
                f"Expected one of: {', '.join(self.tags(run)[kind]) or 'none'}."
            )
            raise UsageError(msg)
        return list(recs)

    def scalars(self, run: str, tag: str) -> ScalarSeries:
        """All points of a scalar tag (read-only numpy arrays, file order)."""
        store = self._run(run).scalars.get(tag)
        if store is None:
            msg = (
                f"Tag {tag!r}: run {run!r} has no scalars under this name. "
                f"Expected one of: {', '.join(self.tags(run)['scalars']) or 'none'}."
            )
            raise UsageError(msg)
        return store.series()

    def histograms(self, run: str, tag: str) -> list[HistogramRecord]:
        """Histogram records of a tag, in file order."""
        return self.records(run, "histograms", tag)

    def images(self, run: str, tag: str) -> list[ImageRecord]:
        """Image records (one per image; ``index`` numbers images of one step)."""
        return self.records(run, "images", tag)

    def audio(self, run: str, tag: str) -> list[AudioRecord]:
        """Audio records of a tag."""
        return self.records(run, "audio", tag)

    def text(self, run: str, tag: str) -> list[TextRecord]:
        """Text records of a tag."""
        return self.records(run, "text", tag)

    def tensors(self, run: str, tag: str) -> list[TensorRecord]:
        """Tensor records of a tag (bfloat16 kept as raw bits; see TensorRecord)."""
        return self.records(run, "tensors", tag)

    def pr_curves(self, run: str, tag: str) -> list[PrCurveRecord]:
        """Precision-recall curves of a tag."""
        return self.records(run, "pr_curves", tag)

    def hparams(self, run: str, tag: str) -> list[HParamsRecord]:
        """hparams-plugin records (and MindSpore lineage) of a tag."""
        return self.records(run, "hparams", tag)

    def landscapes(self, run: str, tag: str) -> list[LandscapeRecord]:
        """Loss landscapes of a tag."""
        return self.records(run, "landscapes", tag)

    def data_graphs(self, run: str, tag: str) -> list[DataGraphRecord]:
        """Data-pipeline graphs of a tag."""
        return self.records(run, "data_graphs", tag)

    def embeddings(self, run: str, tag: str) -> list[EmbeddingRecord]:
        """Projector embeddings of a tag (paths only; see ``summary.projector.load_embedding``)."""
        return self.records(run, "embeddings", tag)

    def mesh(self, run: str, tag: str) -> list[MeshRecord]:
        """One part of ``add_mesh`` meshes (tag ``<name>_VERTEX``, ``_FACE`` or ``_COLOR``)."""
        return self.records(run, "mesh", tag)

    def graph(self, run: str, tag: str | None = None) -> Graph | None:
        """The computational graph ``tag`` of ``run`` (default: ``"graph"``, else the first).

        Returns ``None`` when the run has no graph.
        """
        graphs = self._run(run).graphs
        if tag is None:
            if not graphs:
                return None
            return graphs.get("graph") or graphs[sorted(graphs)[0]]
        if tag not in graphs:
            msg = (
                f"Graph {tag!r}: run {run!r} has no graph under this name. "
                f"Expected one of: {', '.join(sorted(graphs)) or 'none'}."
            )
            raise UsageError(msg)
        return graphs[tag]


def read_logdir(
    path: str | Any,
    *,
    check_data_crc: bool = True,
    max_points: Mapping[str, int] | None = None,
    active_secs: float | None = None,
    use_c: bool | None = None,
    workers: int | None = None,
) -> Logdir:
    """Read every run below ``path`` (recursively), keeping every point.

    Args:
        path: A folder (``str`` or ``os.PathLike``).
        check_data_crc: Verify each record's payload CRC (default on).
        max_points: Kind -> most values kept per tag (newest kept); default unbounded.
        active_secs: A run modified within this many seconds is reported active (120).
        use_c: ``None`` uses the C scanner when available; ``False`` forces pure Python.
        workers: Threads reading files in parallel (default up to 4).

    Returns:
        A :class:`Logdir`; call :meth:`Logdir.reload` to pick up new data.

    Raises:
        InputFileError: ``path`` is missing or not a folder.

    Example:
        >>> import tempfile
        >>> from tensorboardX import SummaryWriter
        >>> logdir = tempfile.mkdtemp()
        >>> with SummaryWriter(logdir + "/train") as w:
        ...     w.add_scalar("loss", 0.5, 1)
        >>> log = read_logdir(logdir)
        >>> log.runs, log.tags("train")["scalars"], log.scalars("train", "loss").values
        (['train'], ['loss'], array([0.5]))
    """
    logdir = Logdir(
        path, check_data_crc=check_data_crc, max_points=max_points, active_secs=active_secs,
        use_c=use_c, workers=workers,
    )  # fmt: skip
    logdir.reload()
    return logdir
