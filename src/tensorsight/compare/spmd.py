"""Launcher mode: every process of ``torchrun``/``srun``/``mpirun`` compares its share of ranks.

``tensorsight compare BENCH TARGET --spmd RESULTS`` started by a launcher reads which
process it is from the launcher's environment (:func:`launcher_slot`), takes a contiguous
block of the ranks both dumps hold (:func:`share`), compares each rank pair with
:func:`~tensorsight.compare.pairs.compare_pair` and writes one result file per pair::

    RESULTS/plan.json                    what is compared (dumps, step, options, ranks)
    RESULTS/step=S/rank=R.parquet        one rank pair's rows (the comparison's columns,
                                         plus ``row_json``, the row exactly as the JSON
                                         report writes it; the pair's first divergence,
                                         counts and gaps in the file's key-value metadata)
    RESULTS/failed/rank=R.json           a pair whose task failed twice, with the reason

Every process must see both dumps whole and the results folder (a shared file system):
the plan, and so each process's share, comes from the ranks the dumps hold. A pair whose
result file exists is skipped, so a job restarted after a failure only does
what is left; files are written under a temporary name and renamed, so a process killed
mid-write leaves no half file. ``tensorsight compare --merge RESULTS`` (:func:`merge`) then
builds the one :class:`~tensorsight.compare.result.Comparison` the reports and the board
read, exactly as ``compare`` would have in one process: first divergence across ranks by
execution index then rank, advice, and the pairs without a result named in ``missing``.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight._lazy import lazy_import
from tensorsight.compare.budget import get_profile
from tensorsight.compare.engine import _assemble, _incomplete, _ranks, _refusal
from tensorsight.compare.match import load_mapping
from tensorsight.compare.metrics import BUILTIN_KEYS, get_metric
from tensorsight.compare.pairs import PairResult, PairTask, compare_pair
from tensorsight.compare.result import (
    COLUMNS,
    VERDICTS,
    Comparison,
    MissingPair,
    OpComparison,
    _row_text,
)
from tensorsight.dumpformat import _fs
from tensorsight.dumpformat.reader import read_dump
from tensorsight.errors import CompareError, InputFileError, MissingDependencyError, UsageError

__all__ = ["Slot", "SpmdOutcome", "launcher_slot", "merge", "run_spmd", "share"]

PLAN_FORMAT = "tensorsight-spmd-plan"
SCHEMA_VERSION = 1
_META_KEY = b"tensorsight.pair"

# (process index, process count, launcher): torchrun, Open MPI, MPICH/Intel MPI, Slurm's srun.
# MPI before Slurm: mpirun inside a Slurm allocation leaves its daemons' SLURM_PROCID (the
# node's index) in every process it starts, so all processes of a node would read one slot.
_LAUNCHERS = (
    ("RANK", "WORLD_SIZE", "torchrun"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "mpirun"),
    ("PMI_RANK", "PMI_SIZE", "mpirun"),
    ("SLURM_PROCID", "SLURM_NTASKS", "srun"),
)


@dataclass(frozen=True)
class Slot:
    """Which process of the launched job this is: ``index`` of ``count``, and who said so."""

    index: int = 0
    count: int = 1
    launcher: str = "none"


def launcher_slot(environ: Mapping[str, str] | None = None) -> Slot:
    """This process's :class:`Slot`, read from the launcher's variables (none: 0 of 1).

    Raises:
        UsageError: The variables are not integers with ``0 <= index < count``.

    Example:
        >>> launcher_slot({"RANK": "1", "WORLD_SIZE": "4"})
        Slot(index=1, count=4, launcher='torchrun')
        >>> launcher_slot({})
        Slot(index=0, count=1, launcher='none')
    """
    env = os.environ if environ is None else environ
    for index_var, count_var, launcher in _LAUNCHERS:
        if index_var in env and count_var in env:
            try:
                index, count = int(env[index_var]), int(env[count_var])
            except ValueError:
                index, count = -1, 0
            if not 0 <= index < count:
                msg = (
                    f"Option --spmd: {index_var}={env[index_var]!r} and {count_var}="
                    f"{env[count_var]!r} from {launcher} are not a process index and count. "
                    "Expected integers with 0 <= index < count."
                )
                raise UsageError(msg)
            return Slot(index, count, launcher)
    return Slot()


def share(ranks: Sequence[int], index: int, count: int) -> list[int]:
    """Process ``index`` of ``count``'s contiguous block of ``ranks`` (sizes differ by <= 1).

    Example:
        >>> [share(range(10), i, 4) for i in range(4)]
        [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    """
    size, extra = divmod(len(ranks), count)
    start = index * size + min(index, extra)
    return list(ranks[start : start + size + (index < extra)])


@dataclass(frozen=True)
class SpmdOutcome:
    """What one process of the launched job did.

    Attributes:
        slot: The process.
        results: The results folder.
        written: Ranks whose result file this process wrote.
        skipped: Ranks whose result file was already there (a restart).
        failed: Ranks whose task failed twice, with the reason (also in ``failed/``).
    """

    slot: Slot
    results: Path
    written: tuple[int, ...]
    skipped: tuple[int, ...]
    failed: tuple[MissingPair, ...]


def run_spmd(
    bench: str | os.PathLike[str],
    target: str | os.PathLike[str],
    results: str | os.PathLike[str],
    *,
    metrics: Sequence[str] | None = None,
    profile: str | None = None,
    mapping: str | os.PathLike[str] | None = None,
    step: int | None = None,
    jobs: int | None = None,
    allow_incomplete: bool | None = None,
    slot: Slot | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SpmdOutcome:
    """Compare this process's share of rank pairs and write one result file per pair.

    Args:
        bench: Reference dump folder.
        target: Dump folder under test.
        results: Folder for ``plan.json`` and the result files (created).
        metrics: Metric keys (default: every built-in metric).
        profile: Verdict profile name (default: ``budget``).
        mapping: User op mapping file (YAML/JSON), as for ``compare``.
        step: Step to compare (default: each rank's first step).
        jobs: Threads that measure one pair's tensor pairs (default: ``min(8, cpus /
            LOCAL_WORLD_SIZE)``, the launcher's processes on this node sharing its cores).
        allow_incomplete: As for :func:`~tensorsight.compare.compare`.
        slot: This process (default: :func:`launcher_slot`).
        progress: Called as ``progress(done, total)`` after each of this process's pairs.

    Raises:
        CompareError: The folder holds another comparison's plan, or a dump is incomplete.
        UsageError: Unknown metric or profile, bad launcher variables.
    """
    me = slot if slot is not None else launcher_slot()
    keys = tuple(metrics) if metrics is not None else BUILTIN_KEYS
    custom = tuple(s for s in (get_metric(k) for k in keys) if not s.builtin)
    prof = get_profile(profile)
    maps = load_mapping(os.fspath(mapping)) if mapping is not None else None
    bd, td = read_dump(bench), read_dump(target)
    ranks, missing = _ranks(bd, td, None)
    gaps = [g for d in (bd, td) for g in _incomplete(d, ranks)]
    if gaps and not allow_incomplete:
        raise CompareError(_refusal(gaps[0]))
    root = Path(results)
    bench_path, target_path = _where(bd.path), _where(td.path)
    plan: dict[str, Any] = {
        "format": PLAN_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "bench": bench_path,
        "target": target_path,
        "step": step,
        "metrics": list(keys),
        "profile": prof.name,
        "allow_incomplete": bool(allow_incomplete),
        "mapping": maps,
        "ranks": ranks,
        "missing": [{"rank": m.rank, "reason": m.reason} for m in missing],
    }
    _write_plan(root, plan)
    mine = share(ranks, me.index, me.count)
    # the launcher starts LOCAL_WORLD_SIZE processes per node: share its cores among them
    local = _positive(os.environ.get("LOCAL_WORLD_SIZE"))
    threads = jobs if jobs is not None else max(1, min(8, (os.cpu_count() or 1) // local))
    written: list[int] = []
    skipped: list[int] = []
    failed: list[MissingPair] = []
    for done, r in enumerate(mine, 1):
        recorded = bd.steps(r)
        s = step if step is not None else (min(recorded) if recorded else None)
        out = root / f"step={s}" / f"rank={r}.parquet"
        if s is not None and out.exists():
            skipped.append(r)
        else:
            task = PairTask(
                bench_path, target_path, r, step=step, metrics=keys, custom=custom,
                profile=prof.name, mapping=maps, jobs=threads,
            )  # fmt: skip
            res = _attempt(task, failed)  # a rank without steps fails here, named
            if res is not None and s is not None:
                _write_result(out, res, s)
                _remove(root / "failed" / f"rank={r}.json")
                written.append(r)
            else:
                _write_text(root / "failed" / f"rank={r}.json", json.dumps(failed[-1].__dict__))
        if progress is not None:
            progress(done, len(mine))
    return SpmdOutcome(me, root, tuple(written), tuple(skipped), tuple(failed))


def _where(path: _fs.AnyPath) -> str:
    """A dump's place as every process of the launch names it (a URL stays as given)."""
    return str(path) if isinstance(path, _fs.RemotePath) else str(path.resolve())


def _positive(text: str | None) -> int:
    """``int(text)`` when it is a positive integer, else 1."""
    try:
        return max(1, int(text or 1))
    except ValueError:
        return 1


def _attempt(task: PairTask, failed: list[MissingPair]) -> PairResult | None:
    """``compare_pair(task)``, retried once; a second failure goes to ``failed``."""
    for attempt in (1, 2):
        try:
            return compare_pair(task)
        except (UsageError, MissingDependencyError):
            raise  # every pair would fail the same way
        except Exception as exc:  # a pair's failure is part of the result
            if attempt == 2:
                why = f"its task failed, and again when retried ({type(exc).__name__}: {exc})"
                failed.append(MissingPair(task.rank, why))
    return None


def merge(results: str | os.PathLike[str]) -> Comparison:
    """The one comparison of a ``--spmd`` results folder (see the module docstring).

    Raises:
        InputFileError: No plan in the folder, or a result file that cannot be read.
        CompareError: A dump is incomplete (unless the plan allowed it).
    """
    root = Path(results)
    plan = _read_plan(root)
    bd, td = read_dump(plan["bench"]), read_dump(plan["target"])
    ranks: list[int] = plan["ranks"]
    missing = [MissingPair(int(m["rank"]), str(m["reason"])) for m in plan["missing"]]
    step = plan["step"]
    pattern = f"step={step}" if step is not None else "step=*"
    pairs: list[PairResult] = []
    for r in ranks:
        found = sorted(root.glob(f"{pattern}/rank={r}.parquet"))
        if found:
            pairs.append(_read_result(found[0], r))
            continue
        failure = root / "failed" / f"rank={r}.json"
        if failure.exists():
            reason = str(_load_json(failure, "a failed pair's record").get("reason", ""))
        else:
            reason = (
                "no result file (the process that took it did not finish); run the same "
                "--spmd job again to compare what is left"
            )
        missing.append(MissingPair(r, reason))
    gaps = [g for d in (bd, td) for g in _incomplete(d, ranks)]
    keys = tuple(str(k) for k in plan["metrics"])
    prof = get_profile(plan["profile"])
    compared = [p.rank for p in pairs] or ranks
    return _assemble(
        bd, td, compared, step, keys, prof, pairs, missing, gaps, plan["allow_incomplete"]
    )


def _write_plan(root: Path, plan: dict[str, Any]) -> None:
    """Write ``plan.json``; an existing plan must be this comparison's (a restart)."""
    file = root / "plan.json"
    if file.exists():
        old = _load_json(file, "a --spmd plan")
        if {k: old.get(k) for k in plan} != plan:
            msg = (
                f"Results folder {str(root)!r}: holds the results of another comparison "
                f"(its plan.json names {old.get('bench')!r} vs {old.get('target')!r}, step "
                f"{old.get('step')!r}, other options or ranks). Pick an empty folder."
            )
            raise CompareError(msg)
        return
    _write_text(file, json.dumps(plan, indent=1))


def _read_plan(root: Path) -> dict[str, Any]:
    file = root / "plan.json"
    if not file.exists():
        msg = (
            f"Results folder {str(root)!r}: no plan.json. Expected the folder a "
            "`tensorsight compare BENCH TARGET --spmd RESULTS` job wrote."
        )
        raise InputFileError(msg)
    plan = _load_json(file, "a --spmd plan")
    want = {
        "bench": str, "target": str, "metrics": list, "profile": str, "ranks": list,
        "missing": list, "allow_incomplete": bool,
    }  # fmt: skip
    bad = [k for k, t in want.items() if not isinstance(plan.get(k), t)]
    if plan.get("step") is not None and not isinstance(plan.get("step"), int):
        bad.append("step")
    ranks = plan.get("ranks")
    if isinstance(ranks, list) and not all(isinstance(r, int) for r in ranks):
        bad.append("ranks")
    raw_missing = plan.get("missing")
    missing: list[Any] = raw_missing if isinstance(raw_missing, list) else []
    if not all(
        isinstance(m, dict) and isinstance(m.get("rank"), int) and isinstance(m.get("reason"), str)
        for m in missing
    ):
        bad.append("missing")
    if plan.get("format") != PLAN_FORMAT or bad:
        msg = (
            f"Plan {str(file)!r}: not a --spmd plan (field {(bad or ['format'])[0]!r}). "
            "Expected the plan.json a --spmd job wrote."
        )
        raise InputFileError(msg)
    if not isinstance(plan.get("schema_version"), int) or plan["schema_version"] > SCHEMA_VERSION:
        msg = f"Plan {str(file)!r}: written by a newer tensorsight. Upgrade tensorsight."
        raise InputFileError(msg)
    return plan


def _load_json(file: Path, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        msg = f"File {str(file)!r}: cannot be read as JSON ({exc}). Expected {what}."
        raise InputFileError(msg) from exc
    if not isinstance(doc, dict):
        msg = f"File {str(file)!r}: not a JSON object. Expected {what}."
        raise InputFileError(msg)
    return doc


def _temporary(file: Path) -> Path:
    """A unique temporary name beside ``file``: processes on several hosts may share one pid,
    so a random part names it. Not ``mkstemp``: its file is mode 0600, and the renamed
    result would be unreadable to the others who share the results folder."""
    file.parent.mkdir(parents=True, exist_ok=True)
    return file.with_name(f".{file.name}.{uuid.uuid4().hex}.tmp")


def _write_text(file: Path, text: str) -> None:
    tmp = _temporary(file)
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, file)


def _remove(file: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        file.unlink()


def _arrow() -> tuple[Any, Any]:
    pa = lazy_import("pyarrow", extra="parquet", needed_by="compare --spmd result files")
    pq = lazy_import("pyarrow.parquet", extra="parquet", needed_by="compare --spmd result files")
    return pa, pq


def _write_result(file: Path, res: PairResult, step: int) -> None:
    """One pair's rows as Parquet: the report columns to query, ``row_json`` to merge."""
    pa, pq = _arrow()
    dicts = [r.to_dict() for r in res.rows]
    columns: dict[str, Any] = {}
    for c in COLUMNS:
        values = [d[c] for d in dicts]
        try:
            columns[c] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # mixed types: as text
            columns[c] = pa.array([None if v is None else str(v) for v in values])
    enc = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode
    columns["row_json"] = pa.array([_row_text(r, enc) for r in res.rows], type=pa.string())
    meta = {
        "schema_version": SCHEMA_VERSION,
        "rank": res.rank,
        "step": step,
        "first_divergence": res.first_divergence,
        "counts": res.counts,
        "gaps": list(res.gaps),
    }
    table = pa.table(columns).replace_schema_metadata({_META_KEY: json.dumps(meta)})
    tmp = _temporary(file)
    pq.write_table(table, tmp)
    os.replace(tmp, file)


def _read_result(file: Path, rank: int) -> PairResult:
    """The :class:`PairResult` a result file holds (checked: a bad file is one line)."""
    _, pq = _arrow()
    try:
        table = pq.read_table(file, columns=["row_json"])
        meta = json.loads((table.schema.metadata or {})[_META_KEY])
        rows = tuple(OpComparison.from_dict(json.loads(t)) for t in table["row_json"].to_pylist())
        first = meta["first_divergence"]
        counts = {v: int(meta["counts"].get(v, 0)) for v in VERDICTS}
        gaps = tuple(str(g) for g in meta["gaps"])
        if meta["rank"] != rank or not (first is None or 0 <= first < len(rows)):
            why = "its rank or first divergence does not fit its rows"
            raise ValueError(why)
    except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        msg = (
            f"Result file {str(file)!r}: cannot be read ({type(exc).__name__}: {exc}). "
            "Expected a --spmd result; delete it and run the job again to redo that pair."
        )
        raise InputFileError(msg) from exc
    return PairResult(rank, rows, first, counts, gaps)
