"""``tensorsight.migrate(...)``: the public entry point (validates, then ``_migrate_impl``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from tensorsight._lazy import lazy_import
from tensorsight._version import __version__
from tensorsight.errors import InputFileError, MigrationError, UsageError
from tensorsight.migrate.model import Changed, FileResult, MigrationReport, VerifyResult

__all__ = ["migrate"]

REPORT_NAME = "tensorsight-migration-report"
_COPY_IGNORE = shutil.ignore_patterns(".git", "__pycache__", ".venv", "*.pyc")


def migrate(
    path: str | os.PathLike[str],
    target: str | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
    write: bool = False,
    force: bool = False,
    unsafe_fixes: bool = False,
    verify: str | None = None,
    trace: str | None = None,
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> MigrationReport:
    """Analyse CUDA-only PyTorch code and rewrite it to device-neutral code.

    By default nothing is written (a dry run: the report carries the diff). ``output``
    writes a migrated copy of the tree plus the report (Markdown and JSON); ``write`` edits
    the files in place and refuses a git tree with uncommitted changes unless ``force``.

    Args:
        path: A ``.py`` file or a project folder (every ``.py`` file below it; ``.cu`` and
            ``.cpp`` files are listed for review).
        target: Rule set: ``accelerator`` (default), ``npu``, ``xpu``, ``mps`` or a
            third-party one.
        output: Folder for the migrated copy; must not exist or be empty, and must not be
            inside ``path``.
        write: Edit files in place.
        force: With ``write``: proceed even if the git tree is dirty or absent.
        unsafe_fixes: Also apply fixes whose safety depends on unknown types.
        verify: A shell command run in the migrated tree (the ``output`` folder, the edited
            folder, or a temporary copy for a dry run); its outcome goes into the report.
        trace: ``"SCRIPT.py [ARGS]"`` to run on the CPU in the migrated tree under an ATen
            op recorder; each op it uses becomes a report row checked against the target's
            support data (see :mod:`tensorsight.migrate.trace`).
        workers: Processes to use (``None``: one per CPU).
        progress: Called as ``progress(done, total)`` while files are processed.

    Returns:
        The :class:`~tensorsight.migrate.model.MigrationReport`.

    Raises:
        InputFileError: ``path`` does not exist or cannot be read.
        UsageError: Unknown target, bad ``output``, or ``output`` and ``write`` together.
        MigrationError: ``write`` on a dirty or untracked tree without ``force``.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "train.py").write_text("import torch\\nx = torch.zeros(2).cuda()\\n")
        >>> report = migrate(d / "train.py")
        >>> report.counts()["rewritten"]
        1
    """
    root = Path(path)
    if not root.exists():
        kind = "is a broken symlink or a symlink loop" if root.is_symlink() else "does not exist"
        msg = f"Migration input {str(path)!r} {kind}. Pass an existing .py file or folder."
        raise InputFileError(msg)
    if root.is_file() and root.suffix != ".py":
        msg = f"Migration input {str(path)!r} is not a .py file. Pass a .py file or a folder."
        raise UsageError(msg)
    if output is not None and write:
        msg = "Options -o/--output and --write exclude each other: choose a copy or in-place edits."
        raise UsageError(msg)
    lazy_import("libcst", extra="migrate", needed_by="tensorsight migrate")
    from tensorsight.migrate.rulesets import load_ruleset

    ruleset = load_ruleset(target or "accelerator")
    out_dir = _check_output(root, Path(output)) if output is not None else None
    if write and not force:
        _check_git_clean(root)
    return _migrate_impl(
        root,
        ruleset.name,
        ruleset.version,
        out_dir=out_dir,
        write=write,
        unsafe_fixes=unsafe_fixes,
        verify=verify,
        trace=trace,
        workers=workers,
        progress=progress,
    )


def _check_output(root: Path, out: Path) -> Path:
    out_abs = out.resolve()
    base = root.resolve() if root.is_dir() else root.resolve().parent
    if root.is_dir() and (out_abs == base or base in out_abs.parents):
        msg = (
            f"Output folder {str(out)!r} is inside the input folder {str(root)!r}. "
            "Choose a folder outside it."
        )
        raise UsageError(msg)
    if out_abs.exists() and (not out_abs.is_dir() or any(out_abs.iterdir())):
        msg = (
            f"Output folder {str(out)!r} already exists and is not empty; nothing was written. "
            "Choose a new folder or empty it."
        )
        raise UsageError(msg)
    return out_abs


def _check_git_clean(root: Path) -> None:
    cwd = root if root.is_dir() else root.parent
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--", str(root.resolve())],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        proc = None
    if proc is None or proc.returncode != 0:
        msg = (
            f"Input {str(root)!r} is not in a git work tree, so --write could not be undone. "
            "Commit it to git first or pass --force."
        )
        raise MigrationError(msg)
    dirty = [line[3:] for line in proc.stdout.splitlines() if line.strip()]
    if dirty:
        msg = (
            f"Git tree of {str(root)!r} has uncommitted changes ({dirty[0]!r} and {len(dirty) - 1} "
            "more); --write refuses to mix its edits with yours. "
            "Commit or stash them, or pass --force."
        )
        raise MigrationError(msg)


def _migrate_impl(
    root: Path,
    target: str,
    ruleset_version: str,
    *,
    out_dir: Path | None,
    write: bool,
    unsafe_fixes: bool,
    verify: str | None,
    trace: str | None,
    workers: int | None,
    progress: Callable[[int, int], None] | None,
) -> MigrationReport:
    from tensorsight.migrate.runner import discover, project_facts, run_jobs
    from tensorsight.migrate.tensorflow import scan_tensorflow

    jobs, listed = discover(root)
    classes, externals = project_facts(jobs) if len(jobs) > 1 else (frozenset(), {})
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, len(jobs))

    results: list[FileResult] = [
        *run_jobs(
            jobs,
            target,
            unsafe_fixes=unsafe_fixes,
            workers=workers,
            progress=advance,
            module_classes=classes,
            externals=externals,
        ),
        *listed,
    ]
    results.sort(key=lambda r: r.path)
    handled = {
        (site.file, site.line)
        for result in results
        for site in getattr(result, "sites", ())
        if site.rule_id.startswith("accelerator/tf-")
    }
    extra = scan_tensorflow(jobs, handled)
    mode: Literal["dry-run", "output", "write"] = (
        "output" if out_dir is not None else "write" if write else "dry-run"
    )
    report = MigrationReport(
        root=str(root),
        target=target,
        tool_version=__version__,
        ruleset_version=ruleset_version,
        mode=mode,
        files=tuple(results),
        output_dir=str(out_dir) if out_dir is not None else None,
        unsafe_fixes=unsafe_fixes,
        extra_sites=extra,
    )
    base = root if root.is_dir() else root.parent
    verify_cwd: Path | None = None
    if out_dir is not None:
        _write_copy(root, out_dir, report)
        verify_cwd = out_dir
    elif write:
        for changed in report.changed:
            _write_text(base / changed.path, changed)
        verify_cwd = base
    if verify is not None or trace is not None:
        with tempfile.TemporaryDirectory(prefix="tensorsight-verify-") as tmp:
            if verify_cwd is None:
                verify_cwd = Path(tmp) / "project"
                _write_copy(root, verify_cwd, report)
            if verify is not None:
                report = _with_verify(report, _run_verify(verify, verify_cwd))
            if trace is not None:
                report = _with_trace(report, trace, verify_cwd)
    if out_dir is not None:
        from tensorsight.migrate.report import write_reports

        write_reports(report, out_dir / REPORT_NAME, ("md", "json"))
    return report


def _with_trace(report: MigrationReport, command: str, cwd: Path) -> MigrationReport:
    from dataclasses import replace

    from tensorsight.migrate.trace import load_support, record_ops, trace_sites

    support = load_support(report.target)
    ops = record_ops(command, cwd)
    script = command.split()[0]
    return replace(report, extra_sites=(*report.extra_sites, *trace_sites(ops, support, script)))


def _with_verify(report: MigrationReport, result: VerifyResult) -> MigrationReport:
    from dataclasses import replace

    return replace(report, verify=result)


def _write_text(path: Path, changed: Changed) -> None:
    tmp = path.with_name(f".{path.name}.tensorsight-tmp")
    tmp.write_bytes(changed.new_code.encode(changed.encoding))
    os.replace(tmp, path)


def _write_copy(root: Path, out_dir: Path, report: MigrationReport) -> None:
    if root.is_dir():
        shutil.copytree(root, out_dir, ignore=_COPY_IGNORE, symlinks=True, dirs_exist_ok=True)
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root, out_dir / root.name)
    for changed in report.changed:
        _write_text(out_dir / changed.path, changed)


def _run_verify(command: str, cwd: Path) -> VerifyResult:
    proc = subprocess.run(  # the user's own command, run like their shell would
        command, shell=True, cwd=cwd, capture_output=True, text=True, check=False
    )
    tail = (proc.stdout + proc.stderr)[-4000:]
    return VerifyResult(command, str(cwd), proc.returncode, tail)
