"""``compare(bench, target)``: pair two dumps op by op, measure, judge, advise.

Flow per rank (ranks run in parallel): open the step on both sides, pair ops
(:mod:`~tensorsight.compare.match`), pair the tensors of each op pair by name, measure each
tensor pair by what both dumps hold (full tensors -> the fused kernel; statistics ->
:func:`~tensorsight.compare.metrics.compare_stats`; fingerprints -> equality), then judge op
by op in execution order with the profile (:mod:`~tensorsight.compare.budget`) and ask the
advisor for mechanisms. Tensors are memory-mapped one pair at a time, so peak memory is
bounded by the largest tensor pair, not by the dump size.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor, Executor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tensorsight.compare import layout
from tensorsight.compare._argdiff import argument_difference, parse_args
from tensorsight.compare._unwritten import judge_written
from tensorsight.compare.advisor import advise, settings_differences
from tensorsight.compare.budget import JudgeState, Profile, get_profile
from tensorsight.compare.collectives import Hop, advice_for, follow
from tensorsight.compare.crossmatch import convert, is_cross_framework, match_across
from tensorsight.compare.flow import Origins
from tensorsight.compare.match import OpPair, load_mapping, match_ops
from tensorsight.compare.metrics import (
    BUILTIN_KEYS,
    compare_arrays,
    compare_fingerprints,
    compare_stats,
    get_metric,
)
from tensorsight.compare.metrics.kernel import value_range
from tensorsight.compare.metrics.stats import STATS_KEYS
from tensorsight.compare.reproduce import Reproducer
from tensorsight.compare.result import (
    METRIC_COLUMNS,
    MIN_MATCHED_FRACTION,
    Comparison,
    MissingPair,
    OpComparison,
    Verdict,
    new_row,
)
from tensorsight.dumpformat import _fs
from tensorsight.dumpformat.reader import Dump, DumpStep, read_dump
from tensorsight.dumpformat.schema import OpRecord, TensorRecord
from tensorsight.errors import CompareError, MissingDependencyError, UsageError

if TYPE_CHECKING:
    from tensorsight.compare.pairs import PairResult

__all__ = ["Progress", "compare"]

Progress = Callable[[int, int], None]
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Job:
    """One tensor pair to measure (either side may be missing)."""

    pair: OpPair
    role: str  # "input" or "output"
    bench: TensorRecord | None
    target: TensorRecord | None
    name: str
    layout: tuple[int, ...] | None = None  # target.transpose(layout).reshape(bench shape)
    conversion: tuple[str, float] | None = None  # a known conversion (crossmatch.convert)


def _open(d: str | os.PathLike[str] | Dump) -> Dump:
    return d if isinstance(d, Dump) else read_dump(d)


def compare(
    bench: str | os.PathLike[str] | Dump,
    target: str | os.PathLike[str] | Dump,
    *,
    metrics: Sequence[str] | None = None,
    profile: str | Profile | None = None,
    mapping: str | os.PathLike[str] | Sequence[dict[str, list[str]]] | None = None,
    rank: int | Sequence[int] | None = None,
    step: int | None = None,
    progress: Progress | None = None,
    jobs: int | None = None,
    allow_incomplete: bool | None = None,
    executor: Executor | str | None = None,
) -> Comparison:
    """Compare two dumps op by op and find the first op whose added error exceeds its budget.

    Args:
        bench: Reference dump (a folder of tensorsight's format or msprobe's, or a ``Dump``).
        target: Dump under test.
        metrics: Metric keys to report (default: every built-in metric); registered custom
            metrics are called on each tensor pair.
        profile: ``"budget"`` (default: expected error from dtypes, reduction length,
            conditioning) or ``"classic"`` (fixed thresholds).
        mapping: User op mapping (path to YAML/JSON, or the parsed list).
        rank: Rank or ranks to compare (default: every rank both dumps hold).
        step: Step to compare (default: the first step of each rank).
        progress: Called as ``progress(done, total)`` after each tensor pair of a
            single-rank comparison, after each rank pair (as it finishes) otherwise.
        jobs: Threads that measure one rank pair's tensor pairs (default: ``min(8, cpu
            count)`` when the pairs run one at a time, 1 on a pool's workers).
        allow_incomplete: Compare a dump whose manifest says incomplete (a run cut off) or
            a step without ops anyway; the result's ``incomplete`` says why and it never
            "agrees" (default: refuse with :class:`CompareError`).
        executor: Where the rank pairs run: any :class:`concurrent.futures.Executor`
            (used as it is, never shut down here) or a spec of
            :mod:`tensorsight.compare.executors` (``"serial"``, ``"threads:N"``,
            ``"local:N"``, ``"dask://host:8786"``, ``"ray"``). Default: one pair runs in
            this process; several run on :data:`DEFAULT_EXECUTOR`. A pair whose task
            fails (it is retried once), or a rank only one dump holds, is named in the
            result's ``missing``.

    Returns:
        A :class:`~tensorsight.compare.result.Comparison`.

    Raises:
        InputFileError: A dump folder is missing.
        DumpFormatError: A folder is not a dump.
        CompareError: The dumps share no rank, or a tensorsight dump and an msprobe dump
            are at levels whose calls cannot be paired (an op-level dump against msprobe),
            or a dump is incomplete (without ``allow_incomplete``).
        UsageError: Unknown metric or profile, bad mapping selector, bad executor spec.
        MissingDependencyError: ``dask``/``ray`` executor without its package.

    Example (skipped by the doctest run: it needs two dumps on disk, see
    ``docs/guide/compare.md``):
        >>> import tensorsight  # doctest: +SKIP
        >>> result = tensorsight.compare("dumps/fp32", "dumps/bf16")  # doctest: +SKIP
        >>> print(result.summary())  # doctest: +SKIP
    """
    keys = tuple(metrics) if metrics is not None else BUILTIN_KEYS
    custom = tuple(s for s in (get_metric(k) for k in keys) if not s.builtin)  # fail fast
    prof = get_profile(profile)
    maps = load_mapping(os.fspath(mapping)) if isinstance(mapping, (str, os.PathLike)) else mapping
    if jobs is not None and jobs < 1:
        msg = f"Option jobs {jobs!r}: must be at least 1. Expected a positive integer."
        raise UsageError(msg)
    bd, td = _open(bench), _open(target)
    ranks, missing = _ranks(bd, td, rank)
    gaps = [g for d in (bd, td) for g in _incomplete(d, ranks)]
    if gaps and not allow_incomplete:  # known before any tensor is read
        raise CompareError(_refusal(gaps[0]))
    results = _run_pairs(
        str(bd.path), str(td.path), ranks, missing, executor, progress, jobs,
        step=step, metrics=keys, custom=custom,
        profile=prof if not isinstance(profile, str) and profile is not None else profile,
        mapping=maps,
    )  # fmt: skip
    return _assemble(bd, td, ranks, step, keys, prof, results, missing, gaps, allow_incomplete)


def _assemble(
    bd: Dump,
    td: Dump,
    ranks: Sequence[int],
    step: int | None,
    keys: tuple[str, ...],
    prof: Profile,
    results: Sequence[PairResult],
    missing: list[MissingPair],
    gaps: list[str],
    allow_incomplete: bool | None,
) -> Comparison:
    """The one :class:`Comparison` of the rank pairs' results (``compare`` and ``--merge``):
    the first divergence across ranks (execution index, then rank), the advice, the gaps."""
    gaps += [g for res in results for g in res.gaps]
    if gaps and not allow_incomplete:
        raise CompareError(_refusal(gaps[0]))
    rows: list[OpComparison] = []
    first: int | None = None
    best: tuple[int, int] | None = None
    start: int | None = None  # the pair holding ``first``
    offsets = []
    for k, res in enumerate(results):  # in rank order; each pair knows its first divergence
        offsets.append(len(rows))
        if res.first_divergence is not None:
            row = res.rows[res.first_divergence]
            key = (row.index or 0, res.rank)
            if best is None or key < best:
                best, first, start = key, len(rows) + res.first_divergence, k
        rows.extend(res.rows)
    hops: list[Hop] = []
    if start is not None:  # a divergence that arrived by a collective: to where it began
        origin, hops = follow(results, start)
        if hops:
            first = offsets[origin] + (results[origin].first_divergence or 0)
    if not rows and not missing:  # "the runs agree" would be said of nothing at all
        which = "the first step" if step is None else f"step {step}"
        msg = (
            f"Dumps {str(bd.path)!r} and {str(td.path)!r}: {which} has no recorded ops on "
            "either side, so there is nothing to compare. Pick another step with --step "
            "(tensorsight inspect DUMP lists them)."
        )
        raise CompareError(msg)
    compared = [res.rank for res in results]
    settings = settings_differences(bd.manifest(ranks[0]), td.manifest(ranks[0]))
    advice = advise(rows, first, settings=settings)
    if hops and first is not None:
        advice = [advice_for(hops, first, rows[first]), *advice]
    for a in advice:  # the row an advice is about carries its mechanism
        if a.row is not None and rows[a.row].mechanism is None:
            rows[a.row] = rows[a.row].evolve(mechanism=a.mechanism)
    return Comparison(
        bench=str(bd.path),
        target=str(td.path),
        rows=tuple(rows),
        first_divergence_row=first,
        profile=prof.name,
        metrics=keys,
        ranks=tuple(compared),
        step=step,
        advice=tuple(advice),
        incomplete="; ".join(gaps) if gaps else None,
        not_comparable=_not_comparable(rows),
        missing=tuple(sorted(missing, key=lambda m: m.rank)),
    )


def _refusal(gap: str) -> str:
    return (
        f"{gap}, so an agreement would mean nothing. Record the run again, pick "
        "another --step, or pass --allow-incomplete (allow_incomplete=True) to compare "
        "what is there."
    )


def _run_pairs(
    bench: str,
    target: str,
    ranks: Sequence[int],
    missing: list[MissingPair],
    executor: Executor | str | None,
    progress: Progress | None,
    jobs: int | None,
    **options: Any,
) -> list[PairResult]:
    """Each rank pair's :class:`PairResult`, in rank order; failed pairs go to ``missing``.

    One pair without an executor runs here with ``jobs`` threads and per-tensor progress;
    otherwise every pair is a task on the executor (``progress`` then counts pairs). A task
    that raises is submitted once more after the others, then named in ``missing`` while
    the others go on, unless the error is the caller's (a bad option fails every pair
    alike and is raised).
    """
    # pairs.py is built on this module's per-pair functions, so it is imported here
    from tensorsight.compare.pairs import PairTask, compare_pair

    threads = jobs if jobs is not None else min(8, os.cpu_count() or 1)
    if executor is None and len(ranks) == 1:
        task = PairTask(bench, target, ranks[0], jobs=threads, **options)
        if not (_fs.is_remote(bench) or _fs.is_remote(target)):
            return [compare_pair(task, progress)]
        # an object store's read can fail once (throttled, replaced): as a pool's task would
        for final in (False, True):
            try:
                return [compare_pair(task, progress)]
            except (UsageError, MissingDependencyError):
                raise
            except Exception as exc:
                if final:
                    why = f"it failed, and again when retried ({type(exc).__name__}: {exc})"
                    missing.append(MissingPair(task.rank, why))
        return []
    # only here: the executors import multiprocessing (and with it subprocess, tempfile,
    # shutil...), a few per cent of a one-rank compare that never uses them
    from tensorsight.compare.executors import SerialExecutor, iter_completed, open_executor

    spec = DEFAULT_EXECUTOR if executor is None else executor
    one_at_a_time = spec == "serial" or isinstance(spec, SerialExecutor)
    per_pair = threads if one_at_a_time else (jobs or 1)
    tasks = [PairTask(bench, target, r, jobs=per_pair, **options) for r in ranks]
    out: dict[int, PairResult] = {}
    with contextlib.ExitStack() as stack:
        ex = (
            stack.enter_context(open_executor(spec, pairs=len(tasks)))
            if isinstance(spec, str)
            else spec
        )
        retry: list[PairTask] = []  # filled by the first round, run once it is over
        broken = False  # the first round broke the pool (a worker died)
        done = 0
        for final, batch in ((False, tasks), (True, retry)):
            if final and broken and isinstance(spec, str) and retry:
                # a pool made here is made again, so the retry does not meet the dead one;
                # a caller's executor is the caller's to replace
                ex = stack.enter_context(open_executor(spec, pairs=len(retry)))
            for task, future in iter_completed(ex, compare_pair, batch):
                try:
                    out[task.rank] = future.result()
                except (UsageError, MissingDependencyError):
                    raise  # every pair would fail the same way
                except Exception as exc:  # a pair's failure is part of the result
                    if not final:
                        broken = broken or isinstance(exc, BrokenExecutor)
                        retry.append(task)  # a worker lost, a file being replaced: once more
                        continue
                    why = f"its task failed, and again when retried ({type(exc).__name__}: {exc})"
                    missing.append(MissingPair(task.rank, why))
                done += 1
                if progress is not None:
                    progress(done, len(tasks))
    return [out[r] for r in ranks if r in out]


DEFAULT_EXECUTOR = "threads"  # multi-rank input without executor= (see benchmarks/bench_scale)


def _incomplete(d: Dump, ranks: Sequence[int]) -> list[str]:
    """Why ``d`` is incomplete on ``ranks``: its manifest says a run was cut off."""
    out = []
    for r in ranks:
        m = d.manifest(r)
        if m is not None and not m.complete:
            why = m.incomplete_reason or "the run stopped before the dump was closed"
            out.append(f"Dump {str(d.path)!r}: rank {r} is marked incomplete ({why})")
    return out


def _neutral(row: OpComparison) -> OpComparison:
    """A one-sided-by-design row (autocast cast, detach, allocation) reads as neutral."""
    if not row.one_sided:
        return row
    if row.reason.startswith("No credible counterpart"):
        # on both sides, but the data flow refused the pair: keep the evidence
        reason = (
            f"{row.reason.rstrip('.')}; one-sided by design (a cast, detach or allocation "
            "does no arithmetic)."
        )
        return row.with_verdict(Verdict("pass", reason))
    side = "bench" if row.shape_target is None else "target"
    reason = f"One-sided by design: {row.op} runs only in {side} (a cast, detach or allocation)."
    return row.with_verdict(Verdict("pass", reason))


def _not_comparable(rows: Sequence[OpComparison]) -> str | None:
    """The reason when fewer than :data:`MIN_MATCHED_FRACTION` of bench tensors paired."""
    bench = [r for r in rows if r.shape_bench is not None and not r.one_sided]
    if not bench:
        return None
    matched = sum(r.match != "unmatched" for r in bench)
    if matched >= MIN_MATCHED_FRACTION * len(bench):
        return None
    return (
        f"only {matched} of {len(bench)} bench tensors found a counterpart in the target "
        f"(below {MIN_MATCHED_FRACTION:.0%}): the dumps record different things (levels, "
        "models or frameworks); pass a --mapping or dump both runs at the same level"
    )


class _Counter:
    """Thread-safe progress over every rank: ``progress(done, total)``."""

    def __init__(self, progress: Progress | None) -> None:
        self.progress = progress
        self.lock = threading.Lock()
        self.done = 0
        self.total = 0

    def add_total(self, n: int) -> None:
        with self.lock:
            self.total += n

    def tick(self) -> None:
        with self.lock:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)


def _ranks(
    bd: Dump, td: Dump, rank: int | Sequence[int] | None
) -> tuple[list[int], list[MissingPair]]:
    """The ranks to compare and the ranks only one dump holds (when ``rank`` is ``None``)."""
    common = [r for r in bd.ranks if r in td.ranks]
    if rank is not None:
        wanted = [rank] if isinstance(rank, int) else list(rank)
        missing = [r for r in wanted if r not in common]
        if missing:
            msg = (
                f"Rank {missing[0]!r}: not in both dumps. Expected one of {common}. "
                "Pick a rank both dumps recorded."
            )
            raise UsageError(msg)
        return wanted, []
    if not common:
        msg = (
            f"Dumps {str(bd.path)!r} and {str(td.path)!r}: no rank in common. Expected "
            f"shared ranks, got {bd.ranks} and {td.ranks}."
        )
        raise CompareError(msg)
    one_sided = [
        MissingPair(r, f"only the {side} dump {str(d.path)!r} has it")
        for side, d, other in (("bench", bd, td), ("target", td, bd))
        for r in d.ranks
        if r not in other.ranks
    ]
    return common, one_sided


def _first_divergence(rows: Sequence[OpComparison]) -> int | None:
    """Earliest error row in execution order; ties go to the lowest rank.

    Execution order, not "forward first": the optimizer's ops are recorded as forward but
    run after the backward pass, so an error there must not outrank a backward op's.
    """
    best: tuple[int, int] | None = None
    pos: int | None = None
    for i, row in enumerate(rows):
        if row.verdict != "error":
            continue
        key = (row.index or 0, row.rank)
        if best is None or key < best:
            best, pos = key, i
    return pos


def _jobs_of(pair: OpPair) -> list[_Job]:
    if pair.how == "mapping":  # first op's inputs, last op's outputs, by position
        b_in, t_in = pair.bench[0].inputs, pair.target[0].inputs
        b_out, t_out = pair.bench[-1].outputs, pair.target[-1].outputs
        jobs = []
        for role, bs, ts in (("input", b_in, t_in), ("output", b_out, t_out)):
            for i in range(max(len(bs), len(ts))):
                b = bs[i] if i < len(bs) else None
                t = ts[i] if i < len(ts) else None
                jobs.append(_Job(pair, role, b, t, (b or t).tensor))  # type: ignore[union-attr]
        return jobs
    b_op = pair.bench[0] if pair.bench else None
    t_op = pair.target[0] if pair.target else None
    layouts, conversions = dict(pair.layouts), dict(pair.conversions)
    jobs = []
    for role in ("input", "output"):
        b_rows = _rows(b_op, role)
        t_rows = _rows(t_op, role)
        names = list(dict.fromkeys([*b_rows, *t_rows]))
        jobs.extend(
            _Job(pair, role, b_rows.get(n), t_rows.get(n), n, layouts.get(n), conversions.get(n))
            for n in names
        )
    return jobs


def _rows(op: OpRecord | None, role: str) -> dict[str, TensorRecord]:
    if op is None:
        return {}
    group = op.inputs if role == "input" else op.outputs
    return {t.tensor: t for t in group}


def _compare_rank(
    bs: DumpStep,
    ts: DumpStep,
    keys: tuple[str, ...],
    prof: Profile,
    maps: Sequence[dict[str, list[str]]] | None,
    pool: ThreadPoolExecutor,
    counter: _Counter,
    formats: tuple[str, str] | None = None,
    frameworks: tuple[str, str] | None = None,
) -> list[OpComparison]:
    cross = frameworks is not None and not maps and is_cross_framework(*frameworks)
    if cross:  # names do not map across frameworks: values do (compare/crossmatch.py)
        assert frameworks is not None
        pairs = match_across(
            bs.ops, ts.ops, frameworks=frameworks, load_bench=bs.load, load_target=ts.load
        )
    else:
        pairs = match_ops(bs.ops, ts.ops, maps, formats=formats)
    jobs = [j for p in pairs for j in _jobs_of(p)]
    cache: dict[tuple[str, str], dict[str, Any]] = {}
    measure = _Measure(bs, ts, keys, cache)
    counter.add_total(len(jobs))

    def judge_state() -> JudgeState:
        # the data flow and replays of both dumps; built while the pool measures (the
        # threads spend much of their time in the C kernel, without the GIL)
        if cross:  # the target's edges between its groups (renamed after the bench rows)
            grouped = tuple(p.target[0] for p in pairs if p.bench and p.target)
            return JudgeState(origin=Origins(bs.ops, grouped, _mates(pairs)))
        return JudgeState(
            origin=Origins(bs.ops, ts.ops, _mates(pairs)),
            reproduce=Reproducer(bs, ts, {op.index: op for op in bs.ops}),
            arguments=_Arguments(bs.ops, ts.ops),
        )

    measured, state = _measure_all(pool, measure, jobs, counter, judge_state)
    # judge op by op, in execution order (an optimizer's ops, recorded as forward, run after
    # the backward pass and inherit from it)
    groups: list[tuple[int, int]] = []
    i = 0
    while i < len(jobs):
        j = i
        while j < len(jobs) and jobs[j].pair is jobs[i].pair:
            j += 1
        groups.append((i, j))
        i = j
    # a target-only op runs where the op before it in pairing order ran
    when: dict[int, int] = {}
    last = -1
    for i, _ in groups:
        pair = jobs[i].pair
        last = pair.bench[0].index if pair.bench else last
        when[i] = last
    judged: dict[int, list[OpComparison]] = {}
    for i, j in sorted(groups, key=lambda g: when[g[0]]):
        pair = jobs[i].pair
        ins = [measured[k] for k in range(i, j) if jobs[k].role == "input"]
        outs = [measured[k] for k in range(i, j) if jobs[k].role == "output"]
        op = (pair.bench or pair.target)[0].op
        judged_in, judged_out = judge_written(prof, op, ins, outs, state)
        judged[i] = [*judged_in, *judged_out]
    out: list[OpComparison] = [r for i, _ in groups for r in judged[i]]
    measure.resolve_layout(out)
    if cross and len(out) == len(jobs):  # say which target tensors were read relaid
        k = 0
        for i, j in groups:
            for job in jobs[i:j]:
                if job.layout is not None and out[k].shape_target is not None:
                    note = f" Target {out[k].shape_target} read as transpose{job.layout}"
                    out[k] = out[k].evolve(reason=f"{out[k].reason}{note} in the bench's shape.")
                if job.conversion is not None:
                    note = (
                        f" Target read as 1/sqrt(var + {job.conversion[1]:g}) (a known conversion)."
                    )
                    out[k] = out[k].evolve(reason=f"{out[k].reason}{note}")
                k += 1
    return out


class _Arguments:
    """:func:`~tensorsight.compare._argdiff.argument_difference` of paired ops by index."""

    def __init__(self, bench: Sequence[OpRecord], target: Sequence[OpRecord]) -> None:
        self._bench = {op.index: op.args for op in bench if op.args}
        self._target = {op.index: op.args for op in target if op.args}

    def __call__(self, index: int, index_target: int | None) -> str | None:
        if index_target is None:
            return None
        b, t = self._bench.get(index), self._target.get(index_target)
        if b is None or t is None or b == t:
            return None
        return argument_difference(parse_args(b), parse_args(t))


def _mates(pairs: Sequence[OpPair]) -> dict[int, int]:
    """Bench index -> target index of the ops paired one to one."""
    return {
        p.bench[0].index: p.target[0].index
        for p in pairs
        if p.how != "unmatched" and len(p.bench) == len(p.target) == 1
    }


def _measure_all(
    pool: ThreadPoolExecutor,
    measure: Callable[[_Job], OpComparison],
    jobs: Sequence[_Job],
    counter: _Counter,
    meanwhile: Callable[[], _T],
) -> tuple[list[OpComparison], _T]:
    """``[measure(j) for j in jobs]`` on the pool's threads, each pulling the next job, and
    ``meanwhile()``, called in this thread while they run.

    One task per thread rather than one per job: a future per job woke the waiting thread
    once per job, and on a machine whose cores all run the kernel that wake-up took a core
    and the GIL from a worker. Job order is kept; the first error (or an interrupt while
    waiting) stops the other threads at their next job and is raised here.
    """
    out: list[OpComparison | None] = [None] * len(jobs)
    feed = iter(enumerate(jobs))
    lock = threading.Lock()
    failed = threading.Event()

    def drain() -> None:
        while not failed.is_set():
            with lock:
                item = next(feed, None)
            if item is None:
                return
            i, job = item
            try:
                out[i] = measure(job)
            except BaseException:
                failed.set()
                raise
            counter.tick()

    tasks = [pool.submit(drain) for _ in range(min(pool._max_workers, len(jobs)))]
    try:
        other = meanwhile()
        for task in tasks:
            task.result()
    except BaseException:  # an error, or Ctrl-C here: the threads stop at their next job
        failed.set()
        raise
    return [row for row in out if row is not None], other


class _Measure:
    """Turns one :class:`_Job` into an unjudged :class:`OpComparison` row."""

    def __init__(
        self,
        bs: DumpStep,
        ts: DumpStep,
        keys: tuple[str, ...],
        cache: dict[tuple[str, str], dict[str, Any]],
    ) -> None:
        self.bs, self.ts, self.keys, self.cache = bs, ts, keys, cache
        self.custom = [get_metric(k) for k in keys if k not in BUILTIN_KEYS]
        self._shown = frozenset(keys)
        # layout candidates: token -> (bench record, target record, rel. Euclidean)
        self.layout: dict[str, tuple[TensorRecord, TensorRecord, float]] = {}
        self._tokens = itertools.count()

    def __call__(self, job: _Job) -> OpComparison:
        b, t = job.bench, job.target
        b_op = job.pair.bench[0] if job.pair.bench else None
        t_op = job.pair.target[0] if job.pair.target else None
        ident = b_op or t_op
        assert ident is not None
        row: dict[str, Any] = {
            "index": ident.index,
            "op": ident.op,
            "module_path": ident.module_path,
            "direction": ident.direction,
            "tensor": job.name,
            "shape_bench": b.shape if b else None,
            "shape_target": t.shape if t else None,
            "dtype_bench": b.dtype if b else None,
            "dtype_target": t.dtype if t else None,
            "rank": self.bs.rank,
            "op_target": t_op.op if t_op else None,
            "index_target": t_op.index if t_op else None,
            "match": job.pair.how,
        }
        # one row object per pair, made once its values are known (new_row: OpComparison's
        # frozen __init__ was a fifth of the measuring threads' Python)
        if b is None or t is None:
            side = "bench" if b is None else "target"
            reason = (
                dict(job.pair.notes).get(job.name)
                or job.pair.reason
                or f"Tensor {job.name} missing on the {side} side."
            )
            row.update(match="unmatched", reason=reason, mode="none")
            return new_row(**row)
        if b.data is not None and t.data is not None:
            row["mode"] = "tensor"
            row.update(self._tensor(b, t, job.layout, job.conversion))
            return new_row(**row)
        eq = compare_fingerprints(b.fingerprint, t.fingerprint)
        if b.stats is not None and t.stats is not None:
            s = compare_stats(b.stats, t.stats)
            mode = "statistics" if eq is None else "md5"
            row.update(mode=mode, fingerprint_equal=eq)
            row.update(_known(s.values))
            return new_row(**row)
        if eq is not None:
            row.update(mode="md5", fingerprint_equal=eq)
            return new_row(**row)
        row.update(mode="none", reason="Neither tensors, statistics nor fingerprints.")
        return new_row(**row)

    def _tensor(
        self,
        b: TensorRecord,
        t: TensorRecord,
        axes: tuple[int, ...] | None = None,
        conversion: tuple[str, float] | None = None,
    ) -> dict[str, Any]:
        if b.shape != t.shape and (axes is None or math.prod(b.shape) != math.prod(t.shape)):
            return {}
        key = (f"{b.data}|{b.dtype}", f"{t.data}|{t.dtype}|{axes}|{conversion}")
        values = self.cache.get(key)
        if values is None:
            values = self._measure(b, t, axes, conversion)
            self.cache[key] = values
        return values

    def _load(
        self,
        b: TensorRecord,
        t: TensorRecord,
        axes: tuple[int, ...] | None = None,
        conversion: tuple[str, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        try:
            yb, xt = self.bs.load(b), self.ts.load(t)
        except (OSError, ValueError) as exc:
            msg = f"Tensor {b.name!r}: cannot be loaded ({exc}). Expected a readable dump."
            raise CompareError(msg) from exc
        if axes is not None:  # a transposed weight, NHWC, or [B*T, n] vs [B, T, n]
            xt = np.ascontiguousarray(np.transpose(xt, axes)).reshape(yb.shape)
        if conversion is not None:  # the target keeps another form (var for 1/std)
            xt = convert(xt, conversion).astype(xt.dtype).reshape(yb.shape)
        if yb.dtype.kind == "c" or xt.dtype.kind == "c":  # complex (a TensorFlow dump's)
            yb, xt = _components(yb), _components(xt)
        return yb, xt

    def _measure(
        self,
        b: TensorRecord,
        t: TensorRecord,
        axes: tuple[int, ...] | None = None,
        conversion: tuple[str, float] | None = None,
    ) -> dict[str, Any]:
        yb, xt = self._load(b, t, axes, conversion)
        if b.dtype in _COMPONENT or t.dtype in _COMPONENT:  # parts: a real side's stats
            rb, rt = value_range(yb), value_range(xt)  # do not hold its zero imaginary parts
        else:
            rb, rt = _range(b, yb), _range(t, xt)
        dtype = _COMPONENT.get(t.dtype, t.dtype)
        pm = compare_arrays(yb, xt, target_dtype=dtype, bench_range=rb, target_range=rt)
        shown = self._shown
        values = pm.values
        metrics = {k: v for k, v in values.items() if k in shown}
        # the budget's error measure needs rmse and the per-side moments even when hidden
        for k in ("rmse", "mean_bench", "std_bench", "mean_target", "std_target"):
            metrics[k] = values[k]
        out: dict[str, Any] = {"metrics": metrics}
        out.update(
            min_bench=rb[0],
            max_bench=rb[1],
            min_target=rt[0],
            max_target=rt[1],
            nonfinite_bench=float(pm.nonfinite_bench),
            nonfinite_target=float(pm.nonfinite_target),
        )
        if self.custom:
            out["custom"] = {s.key: float(s.func(yb, xt)) for s in self.custom}
        rel = pm.values["rel_euclidean"]
        big = rel > layout.CHECK_MIN_ERROR and yb.size <= layout.CHECK_MAX_ELEMS
        if big and layout.may_be_permuted(pm.values, rel):  # sorted later, if the op adds error
            token = f"{layout.CANDIDATE}{next(self._tokens)}"
            self.layout[token] = (b, t, rel)
            out["mechanism"] = token
        return out

    def resolve_layout(self, rows: list[OpComparison]) -> None:
        """Decide the layout candidates of :meth:`_measure`, in place.

        The sort that decides it (a copy and O(n log n) per side) runs only for ``error``
        rows, the ops that add error of their own, in execution order and at most
        :data:`.layout.CHECKS_MAX` per rank: after a real divergence nearly every later
        tensor differs with moments alike, and sorting each of them made a compare several
        times slower while only the op that introduces an error is a layout suspect.
        """
        found: dict[str, str | None] = {}  # token -> what its sort decided
        for k, row in enumerate(rows):
            token = row.mechanism
            if token is None or not token.startswith(layout.CANDIDATE):
                continue
            if token not in found and row.verdict == "error" and len(found) < layout.CHECKS_MAX:
                b, t, rel = self.layout[token]
                same = layout.sorted_equal(*self._load(b, t), rel)
                found[token] = layout.MECHANISM if same else None
            rows[k] = row.evolve(mechanism=found.get(token))
        self.layout.clear()


#: a complex dtype's parts, whose ulp ``max_ulp`` counts in
_COMPONENT = {"complex64": "float32", "complex128": "float64"}


def _components(a: np.ndarray) -> np.ndarray:
    """A complex tensor as its real and imaginary parts (a last axis of 2), so the metrics
    see both (a cast to float64 would drop the imaginary part); a real one as parts too,
    its imaginary parts 0, when the other side is complex."""
    c = a if a.dtype.kind == "c" else a.astype(np.complex128)
    return np.ascontiguousarray(c).view(c.real.dtype).reshape(*c.shape, 2)


def _range(rec: TensorRecord, arr: np.ndarray) -> tuple[float, float]:
    s = rec.stats
    if s is not None and s.min is not None and s.max is not None and not s.has_nonfinite:
        return float(s.min), float(s.max)
    return value_range(arr)


def _known(values: dict[str, float]) -> dict[str, Any]:
    """A statistics comparison's values as row fields: its metric columns under
    ``metrics``, the :data:`STATS_KEYS` columns as they are (``nan``: not known, ``None``)."""
    out: dict[str, Any] = {k: v for k, v in values.items() if k in _STATS and not math.isnan(v)}
    out["metrics"] = {k: v for k, v in values.items() if k in _METRICS and not math.isnan(v)}
    return out


_STATS = frozenset(STATS_KEYS)
_METRICS = frozenset(METRIC_COLUMNS)


def default_output_name(bench: str | Path, target: str | Path) -> str:
    """A file stem for reports, from the two dump names."""
    return f"compare_{Path(bench).name}_vs_{Path(target).name}"
