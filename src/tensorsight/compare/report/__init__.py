"""Report formats of a comparison: one registry, one module per format.

A format is a :class:`ReportFormat`: its name (what ``tensorsight compare --format`` takes),
the suffix of its file (``comparison<suffix>`` in the output folder) and a render function.
:data:`REPORT_FORMATS` maps each name to ``"tensorsight.compare.report.<module>:FORMAT"``,
imported on first use; the command line lists and writes whatever is registered, and the
``Comparison.to_*`` methods look their format up here. Built in: ``csv``, ``xlsx``
(openpyxl), ``json`` (``Comparison.to_json``, the result's own codec), ``html`` (standalone
page), ``node_data`` (Model Explorer node data) and ``summary`` (the console text,
:mod:`~tensorsight.compare.report.console`).

Third parties add formats through the entry-point group ``tensorsight.report_formats``
(name = format name, value = ``"package.module:FORMAT"``); built-in names win. A format
whose module fails to import is listed unavailable and never breaks the others.

This module imports no renderer and nothing of ``compare.result`` (``result`` imports this
module for its ``to_*`` methods; the renderers import ``result``), so the two never form an
import circle: a comparison is typed ``Any`` here.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight._registry import Registry
from tensorsight.errors import RegistryError, UsageError

__all__ = [
    "REPORT_FORMATS",
    "ReportFormat",
    "cell",
    "get_format",
    "render",
    "write",
    "write_all",
]

#: ``render(comparison, path=None, **options)``: the report's text, also written to ``path``
#: when given; a binary format returns the path it wrote (and needs one).
Renderer = Callable[..., Any]


@dataclass(frozen=True)
class ReportFormat:
    """One report format.

    Attributes:
        name: Registry key and ``--format`` value (lowercase, e.g. ``csv``).
        suffix: Appended to ``comparison`` for the file name (``.csv``, ``.node_data.json``).
        render: ``render(comparison, path=None, **options)`` returning the text (and writing
            it to ``path`` when given), or, for a binary format, writing ``path`` and returning
            it. Options are the format's own keywords (``summary``: ``top``).
        description: One line for ``--help`` and docs.
        binary: The format has no text form: ``render`` needs ``path``.
    """

    name: str
    suffix: str
    render: Renderer
    description: str = ""
    binary: bool = False


REPORT_FORMATS: Registry[ReportFormat] = Registry(
    "report format", entry_point_group="tensorsight.report_formats"
)
REPORT_FORMATS.add("csv", "tensorsight.compare.report.csv:FORMAT")
REPORT_FORMATS.add("xlsx", "tensorsight.compare.report.xlsx:FORMAT")
REPORT_FORMATS.add("json", "tensorsight.compare.report.json:FORMAT")
REPORT_FORMATS.add("html", "tensorsight.compare.report.html:FORMAT")
REPORT_FORMATS.add("node_data", "tensorsight.compare.report.node_data:FORMAT")
REPORT_FORMATS.add("summary", "tensorsight.compare.report.console:FORMAT")


def get_format(name: str) -> ReportFormat:
    """The registered format ``name``.

    Raises:
        UsageError: ``name`` is not registered (the message lists the formats), its module
            cannot be imported, or it is not a :class:`ReportFormat`.
    """
    try:
        fmt: object = REPORT_FORMATS.get(name)  # an entry point may hold anything
    except RegistryError as exc:
        raise UsageError(str(exc)) from exc
    if not isinstance(fmt, ReportFormat):
        msg = (
            f"Report format {name!r}: registered as {type(fmt).__name__}. "
            "Expected a tensorsight.compare.report.ReportFormat."
        )
        raise UsageError(msg)
    return fmt


def render(comparison: Any, name: str, path: str | Path | None = None, **options: Any) -> Any:
    """Render ``comparison`` in format ``name``; also write it to ``path`` when given.

    Returns what the format's render function returns: the text, or the path of a binary
    file. ``options`` go to the render function (``summary``: ``top``).

    Raises:
        UsageError: An unknown format, or no ``path`` for a binary format.
    """
    fmt = get_format(name)
    if fmt.binary and path is None:
        msg = f"Report format {name!r}: binary, needs a file path. Pass path='report{fmt.suffix}'."
        raise UsageError(msg)
    return fmt.render(comparison, None if path is None else Path(path), **options)


def write(comparison: Any, name: str, folder: str | Path) -> Path:
    """Write ``folder/comparison<suffix>`` in format ``name`` and return its path."""
    fmt = get_format(name)
    path = Path(folder) / f"comparison{fmt.suffix}"
    fmt.render(comparison, path)
    return path


#: The formats :func:`write_all` may write in a forked process: ours, whose renderers only
#: format text and write one file (a third party's renderer might hold threads or locks).
_FORKABLE = frozenset({"csv", "json", "html", "node_data", "summary"})


def write_all(comparison: Any, names: Sequence[str], folder: str | Path) -> list[Path]:
    """:func:`write` each format of ``names`` (in that order) and return the paths.

    Where the platform forks (Linux), the built-in text formats after the first are written
    by one child process while this one writes the others: CSV and JSON are each a tenth
    of a comparison's time, and both are CPU work under one interpreter lock, so threads
    would not overlap them. A child that fails, cannot start or outlives its grace (it
    should finish about when this process does) is stopped and leaves its formats to this
    process, so an error is raised here as :func:`write` raises it and nothing hangs.
    """
    fmts = [get_format(n) for n in names]  # every renderer imported before any fork
    paths = [Path(folder) / f"comparison{f.suffix}" for f in fmts]
    forked = [i for i, n in enumerate(names) if n in _FORKABLE][1::2]
    pid = _fork_writer(comparison, [fmts[i] for i in forked], [paths[i] for i in forked])
    start = time.monotonic()
    try:
        for i, fmt in enumerate(fmts):
            if pid is None or i not in forked:
                fmt.render(comparison, paths[i])
    finally:
        grace = CHILD_GRACE_S + 4 * (time.monotonic() - start)
        done = pid is not None and _reaped_ok(pid, grace)
    if pid is not None and not done:  # the child failed: write its formats here
        for i in forked:
            fmts[i].render(comparison, paths[i])
    return paths


#: Seconds a report child may take beyond four times the parent's own writing time before
#: it is killed and its formats are written by the parent (a child deadlocked on a lock that
#: another thread held at the fork must not hang the command).
CHILD_GRACE_S = 30.0


def _reaped_ok(pid: int, grace: float) -> bool:
    """Wait up to ``grace`` s for child ``pid`` (then kill it); whether it exited 0."""
    deadline = time.monotonic() + grace
    pause = 0.001
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status) == 0
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    except ChildProcessError:  # reaped by the system already (SIGCHLD ignored): unknown
        return False


def _fork_writer(
    comparison: Any, fmts: Sequence[ReportFormat], paths: Sequence[Path]
) -> int | None:
    """The pid of a child process rendering ``fmts`` to ``paths``, or ``None`` (not forked)."""
    if not fmts or sys.platform != "linux":
        return None
    try:
        with warnings.catch_warnings():  # 3.12+ warns of a fork with threads: the child
            warnings.simplefilter("ignore", DeprecationWarning)  # only runs our renderers
            pid = os.fork()
    except OSError:
        return None
    if pid:
        return pid
    code = 1
    try:
        for fmt, path in zip(fmts, paths, strict=True):
            fmt.render(comparison, path)
        code = 0
    finally:  # never back into the caller's code: no atexit, no stdio flush
        os._exit(code)


def cell(value: Any) -> Any:
    """One value as a report cell: shapes joined, ``None`` empty, floats kept."""
    if value is None:
        return ""
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value
