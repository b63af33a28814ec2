"""Apply a rule set to many files, in parallel, one :data:`~.model.FileResult` each.

Like LibCST's ``_runner.py``, the runner never raises for one file: a file that cannot be
read, decoded or parsed becomes a :class:`~.model.Failed` result with one sentence naming
the cause, and the other files go on.
"""

from __future__ import annotations

import io
import os
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import libcst as cst

from tensorsight.migrate._flow import External
from tensorsight.migrate._prescan import Prescan
from tensorsight.migrate._project import project_externals
from tensorsight.migrate._values import scan_module_classes
from tensorsight.migrate.model import Changed, Failed, FileResult, Site, Skipped, Unchanged
from tensorsight.migrate.rule import MigrationRule
from tensorsight.migrate.rulesets import RuleSet, load_ruleset
from tensorsight.migrate.selfcheck import check_introduced, compile_problem
from tensorsight.migrate.source import migrate_source

__all__ = [
    "SOURCE_SUFFIXES",
    "Job",
    "discover",
    "migrate_file",
    "project_facts",
    "project_module_classes",
    "run_jobs",
]

#: Non-Python sources that are listed for review (never rewritten).
SOURCE_SUFFIXES = {
    ".cu": "CUDA C++ source",
    ".cuh": "CUDA C++ header",
    ".cpp": "C++ source (may hold CUDA extensions)",
    ".cc": "C++ source (may hold CUDA extensions)",
    ".cxx": "C++ source (may hold CUDA extensions)",
}
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
_CHUNK = 8


@dataclass(frozen=True)
class Job:
    """One file to migrate: its absolute path and its path relative to the root."""

    path: str
    rel: str


def discover(root: Path) -> tuple[list[Job], list[Skipped]]:
    """All ``.py`` files under ``root`` (or ``root`` itself), plus listed native sources.

    Hidden folders, virtual environments and build output are skipped; folder symlinks are
    not followed (so symlink loops cannot recurse).
    """
    if root.is_file():
        return [Job(str(root), root.name)], []
    jobs: list[Job] = []
    listed: list[Skipped] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and not (Path(dirpath, d) / "pyvenv.cfg").exists()
        )
        for name in sorted(filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            suffix = path.suffix.lower()
            if suffix == ".py":
                jobs.append(Job(str(path), rel))
            elif suffix in SOURCE_SUFFIXES:
                listed.append(
                    Skipped(rel, f"{SOURCE_SUFFIXES[suffix]}: listed for review, not rewritten.")
                )
    return jobs, listed


def _decode(data: bytes) -> tuple[str, str]:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8-sig":
        encoding = "utf-8"
        data = data.removeprefix(b"\xef\xbb\xbf")
    return data.decode(encoding), encoding


@lru_cache(maxsize=8)
def _ruleset(name: str) -> RuleSet:
    return load_ruleset(name)


def _prescan(name: str) -> Prescan:
    return _prescan_of(_ruleset(name).rules)


@lru_cache(maxsize=8)
def _prescan_of(rules: tuple[type[MigrationRule], ...]) -> Prescan:
    return Prescan(rule.needs() for rule in rules)


def project_module_classes(jobs: Sequence[Job]) -> frozenset[str]:
    """The ``nn.Module`` subclasses defined anywhere in ``jobs`` (unreadable files skipped)."""
    return project_facts(jobs)[0]


def project_facts(jobs: Sequence[Job]) -> tuple[frozenset[str], dict[str, External]]:
    """What the files of a project tell each other, from one read of every file: the
    ``nn.Module`` subclasses defined anywhere (:func:`._values.scan_module_classes`) and,
    per file, the CUDA values that reach it through imports (:mod:`._project`).
    Unreadable files are skipped (:func:`migrate_file` reports them)."""
    data: dict[str, bytes] = {}
    for job in jobs:
        try:
            data[job.rel] = Path(job.path).read_bytes()
        except OSError:
            continue
    classes = scan_module_classes(data.values())
    texts = {rel: raw.decode("utf-8", "replace") for rel, raw in data.items()}
    try:
        externals = project_externals(texts)
    except Exception:  # a bug here must not stop the migration: files are then read alone
        externals = {}
    return classes, externals


def migrate_file(
    job: Job,
    target: str,
    unsafe_fixes: bool,
    module_classes: frozenset[str] = frozenset(),
    *,
    prescan: bool = True,
    external: External | None = None,
) -> FileResult:
    """Migrate one file; never raises (errors become :class:`Failed`).

    ``module_classes``: the project's ``nn.Module`` subclasses (:func:`project_module_classes`).
    ``external``: what the file learns from the rest of the project (:func:`project_facts`);
    such a file is always parsed, every rule active (the pre-scan sees one file only).
    With ``prescan`` (the default), a file whose tokens meet no rule's need
    (:mod:`._prescan`) is :class:`Unchanged` without being parsed; without it every
    non-empty file is parsed (the same results, for files that parse: a check of the
    pre-scan).
    """
    try:
        data = Path(job.path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return Failed(job.rel, f"cannot be read: {reason}.")
    try:
        code, encoding = _decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        detail = ""
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            detail = f" at byte {exc.start}"
        return Failed(
            job.rel,
            f"is not valid UTF-8 (or its declared encoding){detail}; save it as UTF-8 and retry.",
        )
    ruleset = _ruleset(target)
    if not code.strip():
        return Unchanged(job.rel)
    rules = ruleset.instantiate()
    if prescan and external is None:
        active = _prescan_of(ruleset.rules).active(code)
        if active is None:
            return Unchanged(job.rel)
        rules = [rule for rule, on in zip(rules, active, strict=True) if on]
    try:
        result = migrate_source(
            code,
            rules,
            path=job.rel,
            unsafe_fixes=unsafe_fixes,
            target=target,
            module_classes=module_classes,
            external=external,
        )
    except cst.ParserSyntaxError as exc:
        return Failed(
            job.rel,
            f"has a syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: "
            f"{exc.message.splitlines()[0]}",
        )
    except RecursionError:
        return Failed(job.rel, "is nested too deeply to parse.")
    except Exception as exc:  # a rule bug must not stop the other files
        return Failed(job.rel, f"internal error, please report it: {type(exc).__name__}: {exc}")
    if result.new_code == code:
        return Unchanged(job.rel, result.sites)
    broken = compile_problem(result.new_code, job.rel)
    if broken is not None and compile_problem(code, job.rel) is None:
        culprit = _culprit(code, job, ruleset, result.sites, unsafe_fixes, module_classes, external)
        return Failed(
            job.rel,
            f"was not written: the migrated code {broken}, produced by {culprit}; "
            "this is a tensorsight bug, please report it.",
            _not_applied(result.sites),
        )
    problems = check_introduced(
        code,
        result.new_code,
        filename=job.rel,
        allowed_imports=ruleset.side_effect_imports,
        touched=result.touched,
    )
    return Changed(job.rel, result.sites, code, result.new_code, problems, encoding)


_NOT_APPLIED = "Not applied: the file was not written (its migrated code did not compile). "


def _not_applied(sites: Sequence[Site]) -> tuple[Site, ...]:
    """The sites of a refused file: its fixes listed as ``manual``, drift rows (about
    rewrites that did not happen) dropped."""
    out: list[Site] = []
    for site in sites:
        if site.status == "kept" and site.message.startswith("Drift:"):
            continue
        if site.status == "rewritten":
            site = replace(site, status="manual", message=_NOT_APPLIED + site.message)
        out.append(site)
    return tuple(out)


def _culprit(
    code: str,
    job: Job,
    ruleset: RuleSet,
    sites: Sequence[Site],
    unsafe_fixes: bool,
    module_classes: frozenset[str],
    external: External | None,
) -> str:
    """The rule whose rewrites make ``code`` fail to compile: the file is migrated again
    without each rule that rewrote something, until the result compiles (rare, so slow is
    fine)."""
    rule_ids = sorted({s.rule_id for s in sites if s.status == "rewritten"})
    for suspect in rule_ids:
        rules = [r for r in ruleset.instantiate() if suspect != r.RULE_ID]
        try:
            again = migrate_source(
                code,
                rules,
                path=job.rel,
                unsafe_fixes=unsafe_fixes,
                target=ruleset.name,
                module_classes=module_classes,
                external=external,
            )
        except Exception:  # only a hint for the message; the file has failed anyway
            continue
        if compile_problem(again.new_code, job.rel) is None:
            return f"rule {suspect}"
    return "the rules " + ", ".join(rule_ids) if rule_ids else "the device prologue"


def _run_chunk(
    chunk: Sequence[Job],
    target: str,
    unsafe_fixes: bool,
    module_classes: frozenset[str],
    externals: Sequence[External | None],
) -> list[FileResult]:
    return [
        migrate_file(job, target, unsafe_fixes, module_classes, external=ext)
        for job, ext in zip(chunk, externals, strict=True)
    ]


def run_jobs(
    jobs: Sequence[Job],
    target: str,
    *,
    unsafe_fixes: bool = False,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
    module_classes: frozenset[str] = frozenset(),
    externals: Mapping[str, External] | None = None,
) -> list[FileResult]:
    """Migrate ``jobs``, in parallel processes when there are enough files.

    Args:
        jobs: Files to migrate.
        target: Rule-set name.
        unsafe_fixes: Apply unsafe fixes.
        workers: Processes to use; ``None`` means one per CPU, ``1`` runs in this process.
        progress: Called with the number of files just finished.
        module_classes: The project's ``nn.Module`` subclasses (their ``.cuda()`` is safe).
        externals: Per relative path, what the file learns through imports
            (:func:`project_facts`).

    Returns:
        One result per job, in the order of ``jobs``.
    """
    workers = workers or os.cpu_count() or 1
    externals = externals or {}
    if workers <= 1 or len(jobs) <= _CHUNK:
        out = []
        for job in jobs:
            ext = externals.get(job.rel)
            out.append(migrate_file(job, target, unsafe_fixes, module_classes, external=ext))
            if progress is not None:
                progress(1)
        return out
    chunks = [jobs[i : i + _CHUNK] for i in range(0, len(jobs), _CHUNK)]
    results: list[FileResult] = []
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
        for chunk_results in pool.map(
            _run_chunk,
            chunks,
            _repeat(target, len(chunks)),
            _repeat(unsafe_fixes, len(chunks)),
            _repeat(module_classes, len(chunks)),
            [[externals.get(j.rel) for j in chunk] for chunk in chunks],
        ):
            results.extend(chunk_results)
            if progress is not None:
                progress(len(chunk_results))
    return results


def _repeat(value: object, n: int) -> Iterable[object]:
    return [value] * n
