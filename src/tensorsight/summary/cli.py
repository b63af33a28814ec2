"""Command line of the read side: ``tensorsight inspect`` and ``tensorsight export``.

``inspect PATH`` shows a logdir's runs, kinds, tags, counts and step ranges; when PATH is a
dump folder instead (a ``manifest.json``, msprobe ``dump.json`` or MindSpore execution-order
file below it and no event
files) it hands over to :func:`tensorsight.dumpformat.inspect.inspect_dump`. Importing this module
loads nothing heavy.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import sys
import warnings
from typing import Any

from tensorsight._progress import ProgressBar

__all__ = ["is_dump_folder", "register", "run_export", "run_inspect"]

INSPECT_EPILOG = """\
examples:
  tensorsight inspect runs/                 runs, kinds, tags, counts and step ranges
  tensorsight inspect runs/ --json          the same as JSON
  tensorsight inspect dumps/step0           a dump folder: its ranks, steps and ops
"""

EXPORT_EPILOG = """\
examples:
  tensorsight export runs/ -o scalars.csv
  tensorsight export runs/ --format parquet -o scalars.parquet --force
"""

_DUMP_MARKERS = ("manifest.json", "dump.json")
_MINDSPORE_ORDER = "ms_execution_order_graph_"  # a MindSpore Dump's execution_order/ files


def register(subparsers: Any) -> None:
    """Add ``inspect`` and ``export`` to the ``tensorsight`` command."""
    p = subparsers.add_parser(
        "inspect",
        help="list the runs, tags and step ranges of a logdir (or summarize a dump)",
        description=(
            "Read a logdir (TensorBoard, tensorboardX, torch, tensorsight or MindSpore "
            "summaries) and list every run, kind and tag with its number of values and step "
            "range. A dump folder is summarized instead."
        ),
        epilog=INSPECT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", help="a logdir (or a dump folder)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--no-data-crc", action="store_true", help="skip the payload CRC check (faster)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar or warnings")
    p.set_defaults(func=run_inspect)

    e = subparsers.add_parser(
        "export",
        help="write every scalar point of a logdir to CSV or Parquet",
        description=(
            "Read a logdir and write all scalar points as rows (run, tag, step, wall_time, "
            "value). Refuses to overwrite an existing file unless --force is given."
        ),
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument("path", help="the logdir")
    e.add_argument("-o", "--output", required=True, help="the output file")
    e.add_argument(
        "--format", choices=("csv", "parquet"), default=None,
        help="output format (default: from the file suffix, else csv)",
    )  # fmt: skip
    e.add_argument("--force", action="store_true", help="overwrite an existing output file")
    e.add_argument("--no-data-crc", action="store_true", help="skip the payload CRC check")
    e.add_argument("--quiet", "-q", action="store_true", help="no progress bar or summary")
    e.set_defaults(func=run_export)


def is_dump_folder(path: str, *, max_depth: int = 4) -> bool:
    """True when ``path`` holds a dump (a manifest/dump.json, a MindSpore execution order,
    TensorFlow debugger files) and no event files."""
    from tensorsight.summary import _fs
    from tensorsight.summary.logdir import file_format

    found_dump = False
    if _fs.is_remote(path):  # one flat listing of the prefix
        base = path.rstrip("/").count("/")
        for folder, files in _fs.walk(path):
            if folder.count("/") - base >= max_depth:
                continue
            if any(file_format(f) for f in files):
                return False
            found_dump = found_dump or any(map(_marks_dump, files))
        return found_dump
    base = path.rstrip(os.sep).count(os.sep)
    for folder, dirs, files in os.walk(path):
        if folder.count(os.sep) - base >= max_depth:
            dirs[:] = []
        if any(file_format(f) for f in files):
            return False
        found_dump = found_dump or any(map(_marks_dump, files))
    return found_dump


def _marks_dump(name: str) -> bool:
    """A file that only a dump holds: ours, msprobe's, MindSpore's or TensorFlow debugger's."""
    return (
        name in _DUMP_MARKERS
        or name.startswith(_MINDSPORE_ORDER)
        or (name.startswith("tfdbg_events.") and name.endswith(".metadata"))
    )


def _load(path: str, *, quiet: bool, check_data_crc: bool) -> tuple[Any, list[str]]:
    from tensorsight.summary.logdir import Logdir

    logdir = Logdir(path, check_data_crc=check_data_crc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ProgressBar(None, label="reading", enabled=False if quiet else None) as bar:
            result = logdir.reload(progress=lambda n: bar.advance(n - bar.done))
    return logdir, list(result.problems)


def _emit(text: str) -> None:
    """Print to stdout; a closed pipe (``| head``) ends the output quietly."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is quiet


def _time(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for i, row in enumerate(rows):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return out


def run_inspect(args: argparse.Namespace) -> int:
    """``tensorsight inspect``: print the logdir (or dump) summary; 1 when there is no data."""
    from tensorsight.summary._fs import is_remote

    path = args.path
    if (is_remote(path) or os.path.isdir(path)) and is_dump_folder(path):
        from tensorsight.dumpformat.inspect import format_inspection, inspect_dump

        ins = inspect_dump(path)
        if args.json:
            _emit(json.dumps(dataclasses.asdict(ins), indent=2, default=str))
        else:
            _emit(format_inspection(ins))
        return 0
    logdir, problems = _load(path, quiet=args.quiet, check_data_crc=not args.no_data_crc)
    rows = logdir.describe()
    if args.json:
        doc = {
            "logdir": path,
            "runs": [
                {
                    **dataclasses.asdict(logdir.run_info(run)),
                    "tags": [
                        {k: v for k, v in dataclasses.asdict(r).items() if k != "run"}
                        for r in rows
                        if r.run == run
                    ],
                }
                for run in logdir.runs
            ],
            "problems": problems,
        }
        _emit(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0 if logdir.runs else 1
    if not args.quiet:
        for p in problems:
            print(f"warning: {p}", file=sys.stderr)
    if not logdir.runs:
        print(f"no event files found under {path!r}")
        return 1
    lines: list[str] = []
    for run in logdir.runs:
        info = logdir.run_info(run)
        state = "active" if info.is_active else "finished"
        lines.append(
            f"run {run!r}: {len(info.files)} file(s), {_time(info.first_wall_time)} .. "
            f"{_time(info.last_wall_time)} UTC, {state}"
        )
    table: list[tuple[str, ...]] = [("run", "kind", "tag", "count", "steps")]
    for r in rows:
        steps = "-" if r.first_step is None else f"{r.first_step}..{r.last_step}"
        table.append((r.run, r.kind, r.tag, str(r.count), steps))
    _emit("\n".join([*lines, "", *_table(table)]))
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``tensorsight export``: write all scalar points; prints where they went."""
    from tensorsight.errors import UsageError
    from tensorsight.summary.export import export_scalars

    if os.path.exists(args.output) and not args.force:
        msg = (
            f"Output {args.output!r}: already exists. Expected a new file name. "
            "Pass --force to overwrite it."
        )
        raise UsageError(msg)
    logdir, problems = _load(args.path, quiet=args.quiet, check_data_crc=not args.no_data_crc)
    if not args.quiet:
        for p in problems:
            print(f"warning: {p}", file=sys.stderr)
    n_series = sum(len(logdir.tags(r)["scalars"]) for r in logdir.runs)
    with ProgressBar(n_series, label="export", enabled=False if args.quiet else None) as bar:
        result = export_scalars(
            logdir, args.output, format=args.format, force=args.force,
            progress=lambda n: bar.advance(n - bar.done),
        )  # fmt: skip
    if not args.quiet:
        print(
            f"wrote {result.rows} points of {result.series} scalar series to {result.path} "
            f"({result.format})"
        )
    return 0
