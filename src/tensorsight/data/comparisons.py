"""Comparison results under a logdir, for the board: :class:`ComparisonStore`.

A *comparison* is a ``comparison.json`` file written by
:meth:`tensorsight.compare.Comparison.to_json` anywhere below the logdir (``tensorsight
demo`` writes ``<logdir>/compare/<name>/comparison.json``). Its *name* is the folder holding
it, relative to the logdir, in POSIX form (``"compare/fp32-vs-bug"``; ``"."`` for the logdir
itself). Files are parsed on first use and re-parsed when their size or mtime change; a file
that cannot be read is listed with :attr:`ComparisonInfo.error` instead of failing the board.

The store finds, caches and serves: :meth:`ComparisonStore.comparison` (the parsed
``Comparison``), :meth:`ComparisonStore.tensor` (one tensor of a row from its dump) and
:meth:`ComparisonStore.replay`. What a view derives from a comparison's rows (the comparison
view's table and side-by-side trace, ``board/views/comparison/``) is kept with the file by
:meth:`ComparisonStore.derived` and dropped when the file changes.

The dumps behind a comparison (its ``bench`` and ``target`` paths) are opened only for the
drill-down of one row, one tensor at a time, refused past the caller's element cap. Relative
dump paths are tried against the comparison's folder, then the logdir, then the working
directory.

Every type here that travels over the wire carries ``SCHEMA_VERSION``; its docstring is the
spec. Views never import :mod:`tensorsight.compare`: they read through this module, which
serves compare's own record types (``AdviceInfo`` is ``Advice``, ``ReplayInfo`` is
``ReplayResult``) and its verdict vocabulary (``VERDICTS``) rather than copies.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tensorsight.compare.result import VERDICTS, Advice, ReplayResult
from tensorsight.errors import InputFileError, TensorsightError

if TYPE_CHECKING:
    import numpy as np

    from tensorsight.compare.result import Comparison

__all__ = [
    "COMPARISON_FILE",
    "SCHEMA_VERSION",
    "VERDICTS",
    "AdviceInfo",
    "ComparisonInfo",
    "ComparisonStore",
    "ReplayInfo",
]

T = TypeVar("T")
SCHEMA_VERSION = 1
COMPARISON_FILE = "comparison.json"
MAX_FILE_BYTES = 512 * 1024 * 1024


#: One mechanism the advisor named: compare's own record type, served as it is
#: (``mechanism``, ``evidence``, ``row``).
AdviceInfo = Advice
#: The op re-run on the bench inputs (:func:`tensorsight.compare.replay.replay`'s result,
#: served as it is): relative errors ``||a - b|| / ||b||`` of the three results.
ReplayInfo = ReplayResult


@dataclass(frozen=True)
class ComparisonInfo:
    """One comparison as the board lists it.

    Attributes:
        name: Folder of the ``comparison.json``, relative to the logdir (``"."``: the logdir).
        bench: Reference dump path as recorded.
        target: Dump-under-test path as recorded.
        profile: Verdict profile (``budget`` or ``classic``).
        metrics: Metric keys computed for tensor rows, in column order.
        higher_is_better: Metric keys whose larger values mean closer agreement.
        ranks: Ranks compared.
        step: Step compared (``None``: the first of each dump).
        row_count: Number of rows.
        counts: Rows per verdict (``pass``, ``warning``, ``error``), ``one_sided`` (rows on one
            side by design, counted apart) and ``unmatched`` (the other rows without a pair).
        first_divergence: Position of the first divergence row, or ``None`` when the runs agree.
        advice: What the advisor found, most specific first.
        mtime: Modification time of the file (seconds since the epoch).
        error: Why the file could not be read (then the other fields are empty), else ``None``.
        incomplete: Why an input dump was incomplete (compared with ``--allow-incomplete``),
            or which rank pairs were not compared (``Comparison.missing_line``).
        not_comparable: Why the runs cannot be said to agree (too few tensors paired).
    """

    name: str
    bench: str
    target: str
    profile: str
    metrics: tuple[str, ...]
    higher_is_better: tuple[str, ...]
    ranks: tuple[int, ...]
    step: int | None
    row_count: int
    counts: Mapping[str, int]
    first_divergence: int | None
    advice: tuple[AdviceInfo, ...]
    mtime: float
    error: str | None = None
    incomplete: str | None = None
    not_comparable: str | None = None

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass
class _Entry:
    path: Path
    stamp: tuple[int, int]
    info: ComparisonInfo
    comparison: Any = None  # tensorsight.compare.Comparison
    derived: dict[str, Any] = field(default_factory=dict)


def _broken(name: str, mtime: float, error: str) -> ComparisonInfo:
    return ComparisonInfo(name, "", "", "", (), (), (), None, 0, {}, None, (), mtime, error)


class ComparisonStore:
    """The comparisons below ``logdir``; :meth:`reload` picks up new and changed files.

    Args:
        logdir: Folder scanned recursively (hidden folders and symlinks are skipped);
            ``None``: none (a remote logdir, whose comparisons are not read yet).

    Example:
        >>> import tempfile
        >>> ComparisonStore(tempfile.mkdtemp()).list()
        []
    """

    def __init__(self, logdir: str | Path | None) -> None:
        # None: a logdir whose comparisons are not scanned (a remote one, so far)
        self.path = Path(logdir) if logdir is not None else None
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self.reload()

    # ------------------------------------------------------------------ scanning
    def _scan(self) -> dict[str, Path]:
        found: dict[str, Path] = {}
        if self.path is None or not self.path.is_dir():
            return found
        for folder, dirs, files in os.walk(self.path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if COMPARISON_FILE in files:
                rel = Path(folder).relative_to(self.path).as_posix()
                found[rel or "."] = Path(folder) / COMPARISON_FILE
        return found

    def reload(self) -> bool:
        """Rescan the logdir; True when a comparison appeared, changed or went away."""
        changed = False
        found = self._scan()
        with self._lock:
            for name in list(self._entries):
                if name not in found:
                    del self._entries[name]
                    changed = True
            for name, path in found.items():
                try:
                    st = path.stat()
                except OSError:
                    continue
                stamp = (st.st_size, st.st_mtime_ns)
                old = self._entries.get(name)
                if old is not None and old.stamp == stamp:
                    continue
                self._entries[name] = self._load(name, path, stamp, st.st_mtime)
                changed = True
        return changed

    def _load(self, name: str, path: Path, stamp: tuple[int, int], mtime: float) -> _Entry:
        from tensorsight.compare.metrics import get_metric
        from tensorsight.compare.result import Comparison

        if stamp[0] > MAX_FILE_BYTES:
            error = (
                f"Comparison {name!r}: file is {stamp[0]} bytes. Expected at most "
                f"{MAX_FILE_BYTES}. Split the comparison by rank."
            )
            return _Entry(path, stamp, _broken(name, mtime, error))
        try:
            comp = Comparison.from_json(path)
        except (TensorsightError, OSError, RecursionError) as exc:
            # the board shows this text: name the file by its name, never by its full path
            error = str(exc).replace(str(path), f"{name}/{COMPARISON_FILE}")
            return _Entry(path, stamp, _broken(name, mtime, error))
        higher = []
        for key in comp.metrics:
            try:
                if get_metric(key).higher_is_better:
                    higher.append(key)
            except TensorsightError:  # a custom metric not registered in this process
                continue
        counts = comp.counts
        info = ComparisonInfo(
            name=name,
            bench=comp.bench,
            target=comp.target,
            profile=comp.profile,
            metrics=tuple(comp.metrics),
            higher_is_better=tuple(higher),
            ranks=tuple(comp.ranks),
            step=comp.step,
            row_count=len(comp.rows),
            counts=counts,
            first_divergence=comp.first_divergence_row,
            advice=comp.advice,
            mtime=mtime,
            # rank pairs not compared make the result incomplete too (the board's banner)
            incomplete=comp.incomplete or comp.missing_line,
            not_comparable=comp.not_comparable,
        )
        return _Entry(path, stamp, info, comp)

    # ------------------------------------------------------------------ queries
    def list(self) -> list[ComparisonInfo]:
        """Every comparison found, sorted by name (unreadable ones carry ``error``)."""
        with self._lock:
            return [self._entries[n].info for n in sorted(self._entries)]

    def _entry(self, name: str) -> _Entry:
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            raise KeyError(name)
        if entry.comparison is None:
            msg = f"Comparison {name!r}: unreadable ({entry.info.error})"
            raise InputFileError(msg)
        return entry

    def info(self, name: str) -> ComparisonInfo:
        """One comparison's :class:`ComparisonInfo`; :class:`KeyError` when unknown."""
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            raise KeyError(name)
        return entry.info

    def comparison(self, name: str) -> Comparison:
        """The :class:`~tensorsight.compare.Comparison` of ``name`` (do not modify).

        Raises:
            KeyError: Unknown comparison.
            InputFileError: Its file could not be read.
        """
        return self._entry(name).comparison  # type: ignore[no-any-return]

    def derived(self, name: str, key: str, build: Callable[[], T]) -> T:
        """What ``build()`` makes of comparison ``name``, made once and kept with the file
        (made again when the file changes); views keep their own indexes of the rows here.

        Raises:
            KeyError: Unknown comparison.
        """
        entry = self._entry(name)
        with self._lock:
            if key not in entry.derived:
                entry.derived[key] = build()
            return cast(T, entry.derived[key])

    def dump_path(self, name: str, side: str) -> Path | str | None:
        """The bench or target dump folder of ``name``, resolved, or ``None`` when missing.

        A URL (``s3://...``, a comparison of remote dumps) is returned as it was recorded,
        unchecked: the drill-down reads it where it is, and says so when it is gone.
        """
        from tensorsight.dumpformat._fs import is_remote

        entry = self._entry(name)
        recorded = entry.comparison.bench if side == "bench" else entry.comparison.target
        if is_remote(recorded):
            return str(recorded)
        raw = Path(recorded)
        if raw.is_absolute():
            candidates = [raw]
        else:
            root = [self.path / raw] if self.path is not None else []
            candidates = [entry.path.parent / raw, *root, Path.cwd() / raw]
        return next((c for c in candidates if c.is_dir()), None)

    def tensor(
        self, name: str, position: int, side: str, max_elements: int
    ) -> tuple[np.ndarray, str] | str:
        """The ``bench`` or ``target`` tensor of row ``position``, read back from its dump as
        float64, with its dtype; or one sentence saying why it cannot be had (dump not
        found, statistics only, more than ``max_elements`` elements, unreadable).

        Raises:
            KeyError: Unknown comparison or row.
        """
        entry = self._entry(name)
        rows = entry.comparison.rows
        if not 0 <= position < len(rows):
            raise KeyError(position)
        row = rows[position]
        path = self.dump_path(name, side)
        if path is None:
            return f"The {side} dump was not found; only the row is shown."
        index = row.index if side == "bench" else row.index_target
        try:
            return _load(path, row.rank, entry.comparison.step, index, row.tensor, max_elements)
        except (LookupError, TensorsightError, OSError, ValueError) as exc:
            return f"The {side} tensor could not be loaded: {exc}."

    def replay(self, name: str, position: int) -> ReplayInfo:
        """Re-run row ``position``'s op on the bench inputs in the target dtype and float64.

        Raises:
            KeyError: Unknown comparison or row.
            CompareError: The op cannot be replayed from the dumps (the message says why).
            MissingDependencyError: torch is not installed.
        """
        from tensorsight.compare.replay import replay

        entry = self._entry(name)
        rows = entry.comparison.rows
        if not 0 <= position < len(rows):
            raise KeyError(position)
        row = rows[position]
        bench, target = self.dump_path(name, "bench"), self.dump_path(name, "target")
        if bench is None or target is None:
            msg = (
                f"Replay of {row.key!r}: the {'bench' if bench is None else 'target'} dump was "
                "not found. Expected the dump folders the comparison names."
            )
            raise InputFileError(msg)
        return replay(row, bench, target, step=entry.comparison.step)


def _load(
    dump: Path | str, rank: int, step: int | None, index: Any, tensor: str, cap: int
) -> tuple[np.ndarray, str]:
    """One tensor of ``dump`` (a folder, or a URL read where it is) as float64."""
    import math

    import numpy as np

    from tensorsight.dumpformat.reader import read_dump

    st = read_dump(dump).step(rank, step)
    name = str(dump).rstrip("/").rpartition("/")[2] if isinstance(dump, str) else dump.name
    try:
        rec = next((r for r in st.rows if r.index == index and r.tensor == tensor), None)
        if rec is None:
            msg = f"no tensor {tensor!r} of op {index} in {name!r}"
            raise LookupError(msg)
        if rec.data is None:
            msg = f"{name!r} stores statistics only (dump with mode='tensor' to see elements)"
            raise LookupError(msg)
        size = math.prod(rec.shape)
        if size > cap:
            msg = f"the tensor has {size} elements, over the {cap}-element drill-down limit"
            raise LookupError(msg)
        if rec.dtype.startswith("complex"):  # its real and imaginary parts (a last axis
            arr = st.load(rec)  # of 2), as compare measured them; float64 drops the latter
            parts = np.ascontiguousarray(arr).view(arr.real.dtype).reshape(*arr.shape, 2)
            return np.array(parts, dtype=np.float64), rec.dtype
        return np.array(st.load(rec, np.float64)), rec.dtype
    finally:
        st.close()
