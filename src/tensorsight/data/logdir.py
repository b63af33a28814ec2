"""``LogdirProvider``: the board's view of a logdir, read by ``summary.read_logdir``.

The reader keeps every point; this provider adds what the board needs on top: the memory
bounds of :class:`~tensorsight.data.Limits` (and a count of what they drop), conversion to
the data layer's result types, a ``generation`` counter that grows when new data arrives,
and a lock so a background thread may :meth:`reload` while requests are served.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.data._downsample import evenly_spaced
from tensorsight.data.audio import AudioClip
from tensorsight.data.custom_scalars import ScalarLayout
from tensorsight.data.embeddings import EmbeddingData, EmbeddingEntry
from tensorsight.data.graphs import GraphNodeData, ModelGraph
from tensorsight.data.hparams import RunHParams, fold_hparams_runs, merge_hparams
from tensorsight.data.provider import (
    KINDS,
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
from tensorsight.summary.kinds.custom_scalars_decode import CONFIG_TAG, decode_layout
from tensorsight.summary.kinds.landscape import LandscapeRecord

if TYPE_CHECKING:
    from tensorsight.data.comparisons import ComparisonStore

__all__ = ["LogdirProvider"]

#: Seconds of the first read before the runs read so far are shown a second time (then 2x, 4x).
_FIRST_PUBLISH_SECS = 0.5

_MIME = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "bmp": "image/bmp",
}


def _opt(v: Any) -> float | None:
    return None if v is None else float(v)


def _text(record: Any) -> str:
    return str(record.text)


def _readonly(a: Any) -> NDArray[np.float64]:
    """A read-only float64 view of a stored array (a copy only if it is another dtype)."""
    out = np.asarray(a, dtype=np.float64).view()
    out.flags.writeable = False
    return out


def _histogram_arrays(r: Any) -> HistogramArrays:
    """A stored histogram with its buckets as they are stored (read-only, no conversion)."""
    return HistogramArrays(
        step=int(r.step),
        wall_time=float(r.wall_time),
        edges=_readonly(r.edges),
        counts=_readonly(r.counts),
        min=_opt(r.min),
        max=_opt(r.max),
        num=_opt(r.num),
        sum=_opt(r.sum),
        nan_count=r.nan_count,
        pos_inf_count=r.pos_inf_count,
        neg_inf_count=r.neg_inf_count,
    )


def _histogram(r: Any) -> HistogramRecord:
    """The data layer's record of one stored histogram (its buckets as Python floats)."""
    return HistogramRecord(
        step=int(r.step),
        wall_time=float(r.wall_time),
        # tolist() makes Python floats in C: a genexpr of float() per bucket cost
        # 1.8 s of a 2,000-record series of 600 buckets each
        edges=tuple(np.asarray(r.edges, dtype=np.float64).tolist()),
        counts=tuple(np.asarray(r.counts, dtype=np.float64).tolist()),
        min=_opt(r.min),
        max=_opt(r.max),
        num=_opt(r.num),
        sum=_opt(r.sum),
        sum_squares=_opt(r.sum_squares),
        nan_count=r.nan_count,
        pos_inf_count=r.pos_inf_count,
        neg_inf_count=r.neg_inf_count,
    )


def _images(records: Sequence[Any], limits: Limits) -> list[ImageRecord]:
    max_bytes = limits.max_blob_bytes
    return [
        ImageRecord(
            step=int(r.step),
            wall_time=float(r.wall_time),
            index=int(r.index),
            width=int(r.width),
            height=int(r.height),
            data=bytes(r.encoded),
            mime_type=_MIME.get(r.format, "application/octet-stream"),
        )
        for r in records
        if max_bytes is None or len(r.encoded) <= max_bytes
    ]


def _tensor(r: Any) -> TensorValue:
    numeric = r.dtype == "bfloat16" or r.dtype.startswith("float")
    values = r.to_float32() if numeric else r.data
    return TensorValue.from_array(r.step, r.wall_time, values, r.dtype)


def _audio(records: Sequence[Any], limits: Limits) -> list[AudioClip]:
    max_bytes = limits.max_blob_bytes
    return [
        AudioClip(
            int(r.step),
            float(r.wall_time),
            int(r.index),
            bytes(r.encoded),
            float(r.sample_rate),
            str(r.content_type or "audio/wav"),
            str(r.label),
        )
        for r in records
        if max_bytes is None or len(r.encoded) <= max_bytes
    ]


def _embeddings(records: Sequence[Any], limits: Limits) -> list[EmbeddingEntry]:
    by_step = {r.step: r for r in sorted(records, key=lambda r: r.step)}  # newest of a step
    return [
        EmbeddingEntry(r.step, r.tensor_name, r.metadata_path is not None, r.sprite_dim)
        for r in by_step.values()
    ]


def _as_stored(records: Sequence[Any], limits: Limits) -> list[Any]:
    return list(records)


#: Kind -> stored records -> what ``read_records`` serves (see ``tensorsight.data.provider``);
#: a kind not listed is served as its own frozen record type (``_as_stored``).
_SERVE: dict[str, Callable[[Sequence[Any], Limits], list[Any]]] = {
    "histograms": lambda rs, _: [_histogram(r) for r in rs],
    "images": _images,
    "text": lambda rs, _: [TextRecord(int(r.step), float(r.wall_time), _text(r)) for r in rs],
    "tensors": lambda rs, _: [_tensor(r) for r in rs],
    "audio": _audio,
    "landscapes": lambda rs, _: [
        LandscapeRecord.from_arrays(r.step, r.wall_time, r.x, r.y, r.values, r.path, r.metadata)
        for r in rs
    ],  # read-only copies
    "embeddings": _embeddings,
}


class LogdirProvider(DataProvider):
    """Serve the runs under ``logdir``; call :meth:`reload` to pick up new data.

    Args:
        logdir: Folder scanned recursively for event files.
        limits: Memory bounds (``None``: :class:`Limits` defaults, which keep every scalar).
        progress: Called with the number of files read so far during the first read.
        read: ``False`` lists the runs without reading any record: :attr:`loading` stays
            true, the run list shows the runs' names only, and the first :meth:`reload`
            reads everything (the board serves the run list while it does).

    Raises:
        InputFileError: ``logdir`` does not exist or is not a folder.

    Example:
        >>> import tempfile
        >>> provider = LogdirProvider(tempfile.mkdtemp())
        >>> provider.list_runs()
        []
    """

    @staticmethod
    def is_remote(logdir: str | Path) -> bool:
        """True when ``logdir`` is a URL that fsspec opens (``s3://...``), not a local folder.

        Example:
            >>> LogdirProvider.is_remote("s3://bucket/runs"), LogdirProvider.is_remote("file:///tmp")
            (True, False)
        """
        from tensorsight.summary._fs import is_remote

        return is_remote(str(logdir))

    def __init__(
        self,
        logdir: str | Path,
        limits: Limits | None = None,
        *,
        progress: Callable[[int], None] | None = None,
        read: bool = True,
    ) -> None:
        from tensorsight.summary.logdir import Logdir

        # a URL (s3://...) stays a string: Path would fold its "//"
        self.path: str | Path = logdir if self.is_remote(logdir) else Path(logdir)
        self._limits = limits or Limits()
        self._lock = threading.RLock()  # queries, and the reload's changes to what they read
        self._reload_lock = threading.Lock()
        self._caps = self._limits.per_kind()
        # the reader enforces the per-tag caps while ingesting (newest kept)
        self._logdir = Logdir(self.path, max_points=self._caps)
        self._loading = not read
        if read:
            self._logdir.reload(progress=progress)  # progress: files read so far
        else:
            self._logdir.scan()
        self._generation = 0
        # (run, tag) -> (records indexed, first and last of them, step -> their positions):
        # read_tensors_at's index, extended while the reader only appends
        self._at_step: dict[tuple[str, str], tuple[int, Any, Any, dict[int, list[int]]]] = {}
        self._runs: list[RunInfo] = []
        self._where: dict[tuple[str, str, str], str] = {}
        self._index()

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def loading(self) -> bool:
        return self._loading

    def start_reading(self) -> threading.Thread:
        """Run the first :meth:`reload` in a daemon thread (for ``read=False``); returned
        started. A failure is logged, and the next reload tries again."""

        def first() -> None:
            try:
                self.reload()
            except Exception:  # the board keeps serving the run list; the log says why
                logging.getLogger("tensorsight.board").exception("reading the logdir failed")

        thread = threading.Thread(target=first, name="tensorsight-first-read", daemon=True)
        thread.start()
        return thread

    def reload(self) -> bool:
        """Read what was appended since the last call; True when anything changed.

        Reads hold the lock only while the reader adds a decoded chunk and while the index
        is rebuilt, not while it lists folders and reads and decodes files: under load a
        reload of a live run waits for the GIL most of its time, and every request's read
        waited with it.
        """
        with self._reload_lock:  # one reload at a time
            publish = self._publisher() if self._loading else None
            result = self._logdir.reload(lock=self._lock, progress=publish)
            with self._lock:
                before = self._runs
                self._index()
                was_loading, self._loading = self._loading, False
            changed = bool(result.has_changes) or self._runs != before or was_loading
            store = self.__dict__.get("_comparisons")
            changed = (store is not None and store.reload()) or changed
            if changed:
                self._generation += 1
            return changed

    def _publisher(self) -> Callable[[int], None]:
        """A progress callback for the first read that shows what is read so far.

        The runs read so far get their tags and data (and :attr:`generation` grows) after
        the first file, then after 0.5 s, 1 s, 2 s, ... of reading: a 1,000-run sweep draws
        its first charts from the first runs while the rest are read (runs are read in name
        order, the run list's). The gaps double because every new generation makes the page
        ask for its charts again, which shares the GIL with the read.
        """
        clock = time.monotonic
        state = {"next": 0.0, "gap": _FIRST_PUBLISH_SECS}

        def publish(done: int) -> None:
            now = clock()
            if now < state["next"]:
                return
            state["next"] = now + state["gap"]
            state["gap"] *= 2
            with self._lock:
                self._index()
                self._generation += 1

        return publish

    def _count(self, run: str, kind: str, tag: str) -> int:
        """How many values the stored run ``run`` holds of ``tag``."""
        if kind == "scalars":
            return len(self._logdir.scalars(run, tag))
        return len(self._logdir.records(run, kind, tag))

    def _src(self, run: str, kind: str, tag: str) -> str:
        """The stored run that holds ``tag`` of a shown (possibly folded) run."""
        return self._where.get((run, kind, tag), run)

    def _index(self) -> None:
        max_tags = self._limits.max_tags_per_run
        runs = []
        # add_hparams sub-runs fold into their parent (tensorsight.data.hparams)
        # while the first read runs no tag is known yet: fold by name alone meanwhile
        folds = fold_hparams_runs(
            self._logdir.runs,
            (lambda r: True)
            if self._loading
            else (lambda r: bool(self._logdir.tags(r).get("hparams"))),
        )
        where: dict[tuple[str, str, str], str] = {}
        for run, sources in folds.items():
            merged: dict[str, list[str]] = {}
            for src in sources:
                for kind, names in self._logdir.tags(src).items():
                    have = merged.setdefault(kind, [])
                    for t in names:
                        if t not in have:
                            have.append(t)
                            if src != run:
                                where[(run, kind, t)] = src
            if CONFIG_TAG in merged.get("tensors", ()):
                # the layout travels as a string tensor; the board lists it as its own kind
                merged["tensors"].remove(CONFIG_TAG)
                merged["custom_scalars"] = [CONFIG_TAG]
                if (run, "tensors", CONFIG_TAG) in where:
                    where[(run, "custom_scalars", CONFIG_TAG)] = where[(run, "tensors", CONFIG_TAG)]
            tags: dict[str, tuple[str, ...]] = {}
            dropped: dict[str, int] = {}
            for kind, names in merged.items():
                if max_tags is not None and len(names) > max_tags:
                    dropped[f"{kind} tags over the {max_tags}-tag limit (hidden)"] = (
                        len(names) - max_tags
                    )
                    names = names[:max_tags]
                if not names:
                    continue
                tags[kind] = tuple(names)
                cap = self._caps.get(kind)
                if cap is not None:
                    full = sum(
                        1
                        for t in names
                        if self._count(where.get((run, kind, t), run), kind, t) >= cap
                    )
                    if full:
                        key = f"{kind} tags at the {cap}-value limit (older values dropped)"
                        dropped[key] = full
            infos = [self._logdir.run_info(src) for src in sources]
            firsts = [i.first_wall_time for i in infos if i.first_wall_time is not None]
            lasts = [i.last_wall_time for i in infos if i.last_wall_time is not None]
            runs.append(
                RunInfo(
                    run,
                    min(firsts) if firsts else None,
                    max(lasts) if lasts else None,
                    tags,
                    dropped,
                    is_active=any(i.is_active for i in infos),
                )
            )
        self._where = where
        self._runs = runs

    def list_runs(self) -> list[RunInfo]:
        # no lock: ``_index`` replaces the list whole, so this reads one consistent index
        # and never waits for a reload (``GET /api/runs`` calls it on the event loop)
        return list(self._runs)

    def read_scalars(self, run: str, tag: str) -> ScalarSeries:
        with self._lock:
            s = self._logdir.scalars(self._src(run, "scalars", tag), tag)
        return ScalarSeries(run, tag, s.steps, s.wall_times, s.values)

    def _stored(self, run: str, kind: str, tag: str) -> list[Any]:
        """The reader's records of a shown run's tag; KeyError when there are none."""
        from tensorsight.errors import UsageError

        with self._lock:
            try:
                return self._logdir.records(self._src(run, kind, tag), kind, tag)
            except UsageError:
                raise KeyError(tag) from None

    def read_records(self, run: str, kind: str, tag: str) -> list[Any]:
        serve = _SERVE.get(kind)
        if serve is None:
            if kind not in KINDS or kind in ("scalars", "graphs", "custom_scalars"):
                raise KeyError(kind)  # read through their own methods
            serve = _as_stored  # a kind whose own record type is what views need

        return serve(self._stored(run, kind, tag), self._limits)

    def read_tensors_at(self, run: str, tag: str, step: int) -> list[TensorValue]:
        with self._lock:
            stored = self._stored(run, "tensors", tag)
            key = (run, tag)
            entry = self._at_step.get(key)
            if entry is not None:
                count, first, last, index = entry
                # the reader appends; a purge (a restarted run) or a trim from the front
                # changes the first or the count-th record: index again
                if not (len(stored) >= count and stored[0] is first and stored[count - 1] is last):
                    entry = None
            if entry is None:
                count, index = 0, {}
            for i in range(count, len(stored)):
                index.setdefault(int(stored[i].step), []).append(i)
            if stored:
                self._at_step[key] = (len(stored), stored[0], stored[-1], index)
            found = [stored[i] for i in index.get(int(step), ())]
        return [_tensor(r) for r in found]

    def sample_histograms(
        self, run: str, tag: str, limit: int
    ) -> tuple[int, list[HistogramRecord]]:
        total, kept = self._sample_stored_histograms(run, tag, limit)
        return total, [_histogram(r) for r in kept]

    def sample_histogram_arrays(
        self, run: str, tag: str, limit: int
    ) -> tuple[int, list[HistogramArrays]]:
        total, kept = self._sample_stored_histograms(run, tag, limit)
        return total, [_histogram_arrays(r) for r in kept]

    def _sample_stored_histograms(self, run: str, tag: str, limit: int) -> tuple[int, list[Any]]:
        """How many stored records the tag has, and at most ``limit`` of them, unconverted."""
        with self._lock:
            records = list(self._logdir.histograms(self._src(run, "histograms", tag), tag))
        return len(records), [records[i] for i in evenly_spaced(len(records), limit)]

    def read_graph(self, run: str, tag: str) -> ModelGraph:
        from tensorsight.errors import UsageError

        key = (run, tag, self._generation)
        cache: dict[tuple[str, str, int], ModelGraph] = self.__dict__.setdefault("_graphs", {})
        if key in cache:
            return cache[key]
        with self._lock:
            try:
                g = self._logdir.graph(self._src(run, "graphs", tag), tag)
            except UsageError:
                raise KeyError(tag) from None
        if g is None:
            raise KeyError(tag)
        nodes = tuple(
            GraphNodeData(
                n.name,
                n.op,
                tuple(n.inputs),
                tuple(tuple(int(d) for d in s) for s in n.shapes),
                tuple(n.dtypes),
                n.module_path,
                dict(n.attrs),
                str(n.attrs.get("full_name") or n.name),
            )
            for n in g.nodes
        )
        graph = ModelGraph(run, tag, g.source, int(g.step), float(g.wall_time), nodes, g.error)
        cache.clear()  # one graph at a time: they can be large
        cache[key] = graph
        return graph

    def _embedding_record(self, run: str, tag: str, step: int) -> Any:
        found = [r for r in self._stored(run, "embeddings", tag) if r.step == step]
        if not found:
            msg = f"{tag}@{step}"
            raise KeyError(msg)
        return found[-1]

    def load_embedding(self, run: str, tag: str, step: int) -> EmbeddingData:
        from tensorsight.summary import _fs
        from tensorsight.summary.projector import load_embedding

        record = self._embedding_record(run, tag, step)
        try:
            mtime = _fs.stat(record.tensor_path).mtime
        except OSError:
            mtime = -1.0
        key = (record, mtime)
        cache: dict[Any, EmbeddingData] = self.__dict__.setdefault("_embedding_cache", {})
        with self._lock:
            hit = cache.get(key)
        if hit is not None:
            return hit
        loaded = load_embedding(record)
        if loaded.matrix is None:
            raise ValueError(" ".join(loaded.problems))
        matrix = loaded.matrix
        matrix.flags.writeable = False
        meta = loaded.metadata
        data = EmbeddingData(
            step=record.step,
            tensor_name=record.tensor_name,
            matrix=matrix,
            columns=meta.columns if meta else (),
            rows=meta.rows if meta else (),
            sprite_dim=record.sprite_dim,
            problems=loaded.problems,
        )
        with self._lock:
            while len(cache) >= 2:  # matrices can be large: keep the last two
                cache.pop(next(iter(cache)))
            cache[key] = data
        return data

    def read_embedding_sprite(self, run: str, tag: str, step: int) -> tuple[bytes, str]:
        from tensorsight.errors import InputFileError
        from tensorsight.summary.projector import read_sprite

        record = self._embedding_record(run, tag, step)
        if record.sprite_path is None:
            msg = f"{tag}@{step}"
            raise KeyError(msg)
        max_bytes = self._limits.max_blob_bytes
        try:
            return read_sprite(record, *(() if max_bytes is None else (max_bytes,)))
        except InputFileError as exc:
            raise ValueError(str(exc)) from None

    def read_scalar_layout(self, run: str) -> ScalarLayout:
        from tensorsight.errors import UsageError

        with self._lock:
            info = next((r for r in self._runs if r.name == run), None)
            if info is None or CONFIG_TAG not in info.tags.get("custom_scalars", ()):
                raise KeyError(run)
            try:
                src = self._src(run, "custom_scalars", CONFIG_TAG)
                records = self._logdir.records(src, "tensors", CONFIG_TAG)
            except UsageError:
                raise KeyError(run) from None
        for record in reversed(records):  # the newest layout that decodes
            flat = record.data.reshape(-1)
            if record.dtype != "string" or not flat.size:
                continue
            try:
                return ScalarLayout.from_decoded(decode_layout(bytes(flat[0])))
            except ValueError:
                continue
        raise KeyError(run)

    def read_hparams(self, run: str) -> RunHParams:
        from tensorsight.errors import UsageError

        with self._lock:
            info = next((r for r in self._runs if r.name == run), None)
            tags = info.tags.get("hparams", ()) if info else ()
            records = []
            try:
                for tag in tags:
                    records.extend(
                        self._logdir.records(self._src(run, "hparams", tag), "hparams", tag)
                    )
            except UsageError:
                raise KeyError(run) from None
        merged = merge_hparams(run, records)
        if merged is None:
            raise KeyError(run)
        return merged

    def comparisons(self) -> ComparisonStore:
        """The comparison results (``comparison.json`` files) below the logdir."""
        from tensorsight.data.comparisons import ComparisonStore

        with self._lock:
            store: ComparisonStore | None = self.__dict__.get("_comparisons")
            if store is None:
                # comparison results are found in local logdirs only (not yet remote ones)
                store = ComparisonStore(Path(self.path) if isinstance(self.path, Path) else None)
                self.__dict__["_comparisons"] = store
            return store
