"""``tensorsight migrate``: the command line over :func:`tensorsight.migrate.migrate`.

Exit codes: 0 done; 1 a check failed (a file could not be parsed, the self-check found a
problem, ``--verify`` failed, or with ``--strict`` manual/unsupported sites remain);
2 usage or input error. Imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]

EPILOG = """\
examples:
  tensorsight migrate train.py                      dry run: print the diff and a summary
  tensorsight migrate project/ -o migrated/         write a migrated copy plus the report
  tensorsight migrate project/ --write              edit in place (needs a clean git tree)
  tensorsight migrate project/ --target npu --unsafe-fixes --report r.md --format md,sarif
  tensorsight migrate project/ -o out/ --verify "python train.py --steps 1"
  tensorsight migrate project/ --target mps --trace "train.py --steps 1" --report ops.csv

exit codes: 0 done, 1 a check failed (unparsable file, self-check, --verify, or --strict
with manual/unsupported sites left), 2 usage or input error.
"""


def register(subparsers: Any) -> None:
    """Add the ``migrate`` subcommand."""
    p = subparsers.add_parser(
        "migrate",
        help="rewrite CUDA-only PyTorch code into device-neutral code, with a report",
        description=(
            "Find CUDA-specific PyTorch APIs and rewrite them to device-neutral ones "
            "(torch.accelerator, torch.amp, ...), so the code runs on any accelerator and "
            "on the CPU. Without -o or --write this is a dry run printing a unified diff."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", help="a .py file or a project folder")
    p.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help="rule set: accelerator (default), npu, xpu, mps, or an installed one",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="OUT_DIR", help="write a migrated copy here")
    where.add_argument("--write", action="store_true", help="edit the files in place")
    p.add_argument("--force", action="store_true", help="with --write: allow a dirty git tree")
    p.add_argument("--report", metavar="FILE", help="also write the report to FILE")
    p.add_argument(
        "--format",
        default=None,
        metavar="LIST",
        help="report formats, comma-separated: md, csv, json, sarif (default: FILE's suffix)",
    )
    p.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply fixes whose safety depends on types"
    )
    p.add_argument("--verify", metavar="COMMAND", help="run COMMAND in the migrated tree")
    p.add_argument(
        "--trace",
        metavar='"SCRIPT ARGS"',
        help="run SCRIPT on the CPU under an op recorder; check its ATen ops for the target",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when manual sites remain")
    p.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: CPUs)")
    p.add_argument("-q", "--quiet", action="store_true", help="no diff, summary or progress bar")
    p.set_defaults(func=run)


def _formats(args: argparse.Namespace) -> tuple[str, ...]:
    from tensorsight.errors import UsageError
    from tensorsight.migrate.report import FORMATS

    if args.format:
        chosen = tuple(f.strip().lower() for f in args.format.split(",") if f.strip())
    else:
        suffix = Path(args.report).suffix.lstrip(".").lower() if args.report else ""
        chosen = (suffix if suffix in FORMATS else "md",)
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        msg = f"Report format {(bad or [''])[0]!r} is unknown. Choices: {', '.join(FORMATS)}."
        raise UsageError(msg)
    return chosen


def run(args: argparse.Namespace) -> int:
    """Run ``tensorsight migrate``; returns the exit code."""
    from tensorsight._progress import ProgressBar
    from tensorsight.migrate.api import migrate
    from tensorsight.migrate.report import write_reports

    formats = _formats(args) if args.report or args.format else ()
    bar = ProgressBar(None, label="migrate", enabled=False if args.quiet else None)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.advance(done - bar.done)

    with bar:
        report = migrate(
            args.path,
            args.target,
            output=args.output,
            write=args.write,
            force=args.force,
            unsafe_fixes=args.unsafe_fixes,
            verify=args.verify,
            trace=args.trace,
            workers=args.jobs,
            progress=progress,
        )
    if report.mode == "dry-run" and not args.quiet:
        sys.stdout.write(report.diff())
    written = write_reports(report, Path(args.report), formats) if args.report else []
    if not args.quiet:
        _summary(report, written)
    failed = bool(report.failed or report.check_problems)
    failed = failed or (report.verify is not None and not report.verify.ok)
    if failed or (args.strict and report.needs_attention):
        return 1
    return 0


def _summary(report: Any, written: list[Path]) -> None:
    c = report.counts()
    err = sys.stderr
    print(
        f"migrate ({report.target}): {c['files_changed']} file(s) changed, "
        f"{c['files_unchanged']} unchanged, {c['files_skipped']} listed, "
        f"{c['files_failed']} failed; "
        f"sites: {c['rewritten']} rewritten, {c['manual']} manual, "
        f"{c['unsupported']} unsupported, {c['kept']} kept",
        file=err,
    )
    for f in report.failed:
        listed = f" ({len(f.sites)} site(s) listed, not applied)" if f.sites else ""
        print(f"  failed: {f.path} {f.error}{listed}", file=err)
    for problem in report.check_problems:
        print(f"  self-check: {problem}", file=err)
    if c["manual"] and not report.unsafe_fixes:
        unsafe = sum(1 for s in report.sites if s.safety == "unsafe" and s.status == "manual")
        if unsafe:
            print(
                f"  {unsafe} unsafe fix(es) not applied: review them, then --unsafe-fixes", file=err
            )
    if report.verify is not None:
        state = (
            "passed" if report.verify.ok else f"failed with exit code {report.verify.returncode}"
        )
        print(f"  verify: {report.verify.command!r} {state}", file=err)
        if not report.verify.ok:
            print(report.verify.output_tail, file=err)
    if report.output_dir:
        print(f"  migrated copy and report: {report.output_dir}", file=err)
    for path in written:
        print(f"  report: {path}", file=err)
