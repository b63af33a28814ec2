"""The comparison of one rank pair as a pure function: :func:`compare_pair`.

A multi-rank comparison is one :class:`PairTask` per rank both dumps hold, run on any
:class:`concurrent.futures.Executor` (:mod:`tensorsight.compare.executors`), and one
:class:`PairResult` back per task; :func:`tensorsight.compare.compare` then orders the
results by rank, picks the first divergence across ranks and asks the advisor. A task holds
the dump *paths* and the options, never tensors: a worker in another process (a spawn pool,
a Dask or Ray worker) opens the rank's folder itself and memory-maps one tensor pair at a
time, and only the rows (a few hundred bytes each) travel back. Both types are frozen and
picklable; :func:`compare_pair` is top-level, so ``pickle`` sends it by name.

A single-rank comparison calls :func:`compare_pair` in-process, so there is one code path
for a pair whatever runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tensorsight.compare.budget import Profile, get_profile
from tensorsight.compare.engine import _compare_rank, _Counter, _first_divergence, _neutral
from tensorsight.compare.flow import forget_flows
from tensorsight.compare.metrics.base import METRICS, MetricSpec
from tensorsight.compare.result import VERDICTS, OpComparison
from tensorsight.dumpformat import _fs
from tensorsight.dumpformat.reader import Dump, read_dump

__all__ = ["PairResult", "PairTask", "compare_pair"]


@dataclass(frozen=True)
class PairTask:
    """One rank pair to compare: where the two dumps are and how to compare them.

    Attributes:
        bench: Path of the reference dump's root folder (as given to ``compare``).
        target: Path of the target dump's root folder.
        rank: The rank compared on both sides.
        step: Step (``None``: the rank's first step on each side).
        metrics: Metric keys to report.
        custom: The registered (non built-in) metrics among ``metrics``, carried so a worker
            process that never ran the registering code has them; their functions travel
            by reference (module and name), so they must be importable there.
        profile: Verdict profile: a name (``None``: ``budget``) or a picklable profile.
        mapping: Parsed user op mapping, or ``None``.
        jobs: Threads that measure this pair's tensor pairs (1 in pool workers).
    """

    bench: str
    target: str
    rank: int
    step: int | None = None
    metrics: tuple[str, ...] = ()
    custom: tuple[MetricSpec, ...] = ()
    profile: str | Profile | None = None
    mapping: Sequence[dict[str, list[str]]] | None = None
    jobs: int = 1


@dataclass(frozen=True)
class PairResult:
    """What one rank pair's comparison found.

    Attributes:
        rank: The rank.
        rows: Judged rows of the pair, in execution order (one-sided-by-design rows
            already neutral).
        first_divergence: Position in ``rows`` of the pair's first divergent row, or
            ``None`` when the rank agrees.
        counts: Rows per verdict (``pass``, ``warning``, ``error``).
        gaps: Why the pair is incomplete (one side recorded no op in the step); empty when
            it is not.
    """

    rank: int
    rows: tuple[OpComparison, ...]
    first_divergence: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    gaps: tuple[str, ...] = ()


def compare_pair(task: PairTask, progress: Callable[[int, int], None] | None = None) -> PairResult:
    """Compare one rank of two dumps (see the module docstring).

    Args:
        task: The pair and the options.
        progress: Called as ``progress(done, total)`` after each tensor pair (in-process
            callers only: a callback does not travel to another process).

    Returns:
        The pair's :class:`PairResult`.

    Raises:
        InputFileError: A dump folder is missing.
        DumpFormatError: A folder is not a dump, or the rank has no such step.
        CompareError: A tensor cannot be loaded; formats whose calls cannot be paired.
        UsageError: A bad mapping selector.
    """
    for spec in task.custom:  # a fresh worker process: the user's code never ran there
        if spec.key not in METRICS._entries:
            METRICS.add(spec.key, spec)
    prof = get_profile(task.profile)
    bd, td = _open_rank(task.bench, task.rank), _open_rank(task.target, task.rank)
    bs, ts = bd.step(task.rank, task.step), td.step(task.rank, task.step)
    gaps: tuple[str, ...] = ()
    if bool(bs.ops) != bool(ts.ops):  # one side recorded nothing in this step
        empty, root = (bs, task.bench) if not bs.ops else (ts, task.target)
        gaps = (f"Dump {root!r}: rank {task.rank} step {empty.step} has no ops",)
    counter = _Counter(progress)
    try:
        with ThreadPoolExecutor(max_workers=max(1, task.jobs)) as pool:
            rows = _compare_rank(
                bs, ts, task.metrics, prof, task.mapping, pool, counter,
                (bd.format, td.format), (_framework(bd, task.rank), _framework(td, task.rank)),
            )  # fmt: skip
    finally:
        bs.close()
        ts.close()
        forget_flows()
    judged = tuple(_neutral(r) for r in rows)
    counts = dict.fromkeys(VERDICTS, 0)
    for r in judged:
        counts[r.verdict] += 1
    return PairResult(task.rank, judged, _first_divergence(judged), counts, gaps)


def _framework(d: Dump, rank: int) -> str:
    """The framework that made the rank's dump (the manifest's; else the format's name)."""
    m = d.manifest(rank)
    return m.framework if m is not None else d.format


def _open_rank(root: str, rank: int) -> Dump:
    """The dump at ``root``, opened at the rank's own folder when it has one.

    Opening ``root/rank<N>`` reads one folder instead of listing every rank's, so a worker's
    cost does not grow with the number of ranks (a thousand tasks would otherwise list a
    thousand folders each). msprobe dumps keep ranks below steps and open at the root.
    """
    own = _fs.locate(root) / f"rank{rank}"
    if isinstance(own, _fs.RemotePath):  # URLs hold tensorsight dumps only: no HEAD first
        return read_dump(own)
    if _fs.exists(own / "manifest.json"):
        return read_dump(own)
    return read_dump(root)
