"""``tensorsight compare``: the command line over :func:`tensorsight.compare.engine.compare`.

Exit codes: 0 the runs agree (no ``error`` row), 1 a divergence was found, 2 usage or
input error (an incomplete dump included, a missing ``dask``/``ray`` package), 3 not
comparable (too few tensors paired, an incomplete dump compared with ``--allow-incomplete``,
or a rank pair not compared: in one dump only, or its task failed; 3 then wins over 1, since
the first divergence may lie in the missing pair). Imports nothing heavy at module level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "run"]

DEFAULT_FORMATS = "csv,json"

EPILOG = """\
examples:
  tensorsight compare dumps/fp32 dumps/bf16                    summary on the terminal
  tensorsight compare dumps/fp32 dumps/bf16 -o report/         + comparison.csv and .json
  tensorsight compare a/ b/ -o report/ --format csv,xlsx,json,html,node_data,summary
  tensorsight compare a/ b/ --profile classic --metrics cosine,max_abs_err,kl_div
  tensorsight compare a/ b/ -o report/ --metric-script my_metrics.py:max_log_err   + a column
  tensorsight compare a/ b/ --mapping map.yaml --rank 0 --step 3 --jobs 4
  tensorsight compare a/ b/ --executor local:8                 ranks on 8 worker processes
  tensorsight compare a/ b/ --executor dask://sched:8786       on a Dask cluster (tensorsight[dask])
  tensorsight compare a/ b/ --executor ray                     on Ray (tensorsight[ray])
  torchrun --nproc_per_node=8 -m tensorsight compare a/ b/ --spmd res/   each process its ranks
  tensorsight compare --merge res/ -o report/                  the one comparison of res/
  tensorsight compare a/ b/ --replay                           confirm the first divergent op
  tensorsight compare a/ b/ -o report/ --open                  then show it in the board

exit codes: 0 the runs agree, 1 a divergence was found, 2 usage or input error (an
incomplete dump: cut off, or a step without ops), 3 not comparable (fewer than half the
bench tensors found a counterpart, --allow-incomplete, or a rank pair not compared: in one
dump only, or its task failed; named on stderr, and 3 even when another rank diverged).
"""


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    p = subparsers.add_parser(
        "compare",
        help="compare two dumps op by op and find the first op that went wrong",
        description=(
            "Pair the ops of two dumps (bench = reference, target = run under test), measure "
            "every tensor pair, judge each op against the error its dtypes explain and report "
            "the first divergence with its likely mechanism."
        ),
        epilog=EPILOG,
        formatter_class=_HelpFormatter,
    )
    p.add_argument("bench", nargs="?", help="reference dump folder (tensorsight or msprobe format)")
    p.add_argument("target", nargs="?", help="dump folder under test")
    p.add_argument("-o", "--output", metavar="OUT", help="folder for the report files")
    p.add_argument(
        "--format",
        default=None,
        metavar="LIST",
        # {formats} is filled from the registry when the help is shown (see _HelpFormatter)
        help=f"report formats, comma-separated: {{formats}} (default: {DEFAULT_FORMATS})",
    )
    p.add_argument("--metrics", default=None, metavar="LIST", help="metric keys to report")
    p.add_argument(
        "--metric-script",
        action="append",
        default=None,
        metavar="PATH:FUNC",
        help=(
            "one more metric: FUNC(bench, target) of the Python file PATH, two numpy arrays "
            "in, a float out; a column named FUNC in every report (repeatable)"
        ),
    )
    p.add_argument("--mapping", metavar="MAP", help="YAML/JSON op mapping for N:M pairs")
    p.add_argument("--profile", choices=("budget", "classic"), default=None, help="verdict profile")
    p.add_argument("--rank", type=int, action="append", default=None, help="rank (repeatable)")
    p.add_argument("--step", type=int, default=None, help="step to compare (default: first)")
    p.add_argument(
        "--replay",
        action="store_true",
        help="re-run the first divergent op on the bench inputs in the target dtype and float64",
    )
    p.add_argument(
        "--open",
        action="store_true",
        help="after writing the reports (needs -o), serve the board on OUT (Ctrl-C stops)",
    )
    p.add_argument("--port", type=int, default=None, help="board port with --open (6006)")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="compare a dump that was cut off anyway; every report then says INCOMPLETE",
    )
    p.add_argument(
        "--executor",
        default=None,
        metavar="SPEC",
        help=(
            "where rank pairs run: serial, threads[:N], local[:N] (spawn processes), "
            "dask[:N|://HOST:PORT], ray[:N|://ADDR] (default: threads for several ranks)"
        ),
    )
    p.add_argument(
        "--spmd",
        default=None,
        metavar="RESULTS",
        help=(
            "launcher mode (torchrun, srun, mpirun): this process compares its block of "
            "ranks into RESULTS/step=S/rank=R.parquet, skipping pairs already there"
        ),
    )
    p.add_argument(
        "--merge",
        default=None,
        metavar="RESULTS",
        help="build the one comparison of a --spmd results folder (no BENCH/TARGET)",
    )
    p.add_argument("-j", "--jobs", type=int, default=None, help="threads per rank pair")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary or progress bar")
    # run() closes every file it writes, so the process may skip interpreter teardown
    p.set_defaults(func=run, fast_exit=True)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Lists the registered report formats in ``--format``'s help, only when help is shown.

    Listing them means scanning the entry points of every installed package (importing
    ``importlib.metadata`` alone is ~25 ms), which a comparison that only writes built-in
    formats never needs.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text is not None and action.dest == "format":
            text = text.replace("{formats}", ", ".join(_format_names()))
        return text


def _format_names() -> list[str]:
    from tensorsight.compare.report import REPORT_FORMATS

    return REPORT_FORMATS.names()


def _formats(value: str | None) -> tuple[str, ...]:
    from tensorsight.compare.report import REPORT_FORMATS, get_format
    from tensorsight.errors import UsageError

    chosen = tuple(f.strip().lower() for f in (value or DEFAULT_FORMATS).split(",") if f.strip())
    # `in` scans the entry points only for a name that is not built in
    bad = [f for f in chosen if f not in REPORT_FORMATS]
    if bad or not chosen:
        got = bad[0] if bad else ""
        msg = (
            f"Option --format {value!r}: unknown format {got!r}. "
            f"Expected a comma-separated list of {', '.join(_format_names())}."
        )
        raise UsageError(msg)
    for name in chosen:  # a third-party format that fails to import: say so before comparing
        get_format(name)
    return chosen


def run(args: argparse.Namespace) -> int:
    """Run the comparison, write the reports, print the summary; return the exit code."""
    from tensorsight._progress import ProgressBar
    from tensorsight.errors import UsageError

    formats = _formats(args.format)
    if args.open:
        if not args.output:
            msg = "Option --open: needs -o OUT, the folder the board will show. Add -o report/."
            raise UsageError(msg)
        formats = formats if "json" in formats else (*formats, "json")  # the board reads JSON
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    if args.metric_script and args.merge is None:  # --merge refuses it in _check_mode
        metrics = _with_scripts(metrics, args.metric_script)
    bar = ProgressBar(None, label="compare", enabled=False if args.quiet else None)
    from tensorsight import _gc

    # the per-pair Python objects made the collector ~6 % of a comparison's time: the imports'
    # objects are frozen out of full collections and the youngest generation collects every
    # 10,000 allocations instead of 700 (restored after: --open goes on to serve the board)
    with _gc.frozen(young_threshold=10_000):
        return _run(args, formats, metrics, bar)


def _with_scripts(metrics: list[str] | None, scripts: list[str]) -> list[str]:
    """The metric keys with each ``--metric-script`` function registered and appended."""
    from tensorsight.compare.metrics import BUILTIN_KEYS
    from tensorsight.compare.metrics.script import load_metric_script

    keys = list(BUILTIN_KEYS) if metrics is None else metrics
    for spec in scripts:
        key = load_metric_script(spec).key
        if key not in keys:
            keys.append(key)
    return keys


def _check_mode(args: argparse.Namespace) -> None:
    """``--merge`` takes no dumps; every other mode takes both."""
    from tensorsight.errors import UsageError

    if args.merge is not None:
        extra = [
            name
            for name, given in (
                ("BENCH/TARGET", args.bench is not None),
                ("--spmd", args.spmd is not None),
                ("--executor", args.executor is not None),
                ("--rank", args.rank is not None),
                ("--step", args.step is not None),
                ("--mapping", args.mapping is not None),
                ("--metrics", args.metrics is not None),
                ("--metric-script", args.metric_script is not None),
                ("--profile", args.profile is not None),
            )
            if given
        ]
        if extra:
            msg = (
                f"Option --merge: takes no {extra[0]} (the plan in {args.merge!r} fixes what "
                "was compared). Expected: tensorsight compare --merge RESULTS [-o OUT]."
            )
            raise UsageError(msg)
        return
    if args.bench is None or args.target is None:
        msg = (
            "compare: needs two dump folders, BENCH and TARGET (or --merge RESULTS). "
            "Expected: tensorsight compare dumps/fp32 dumps/bf16."
        )
        raise UsageError(msg)
    if args.spmd is not None and (args.executor is not None or args.rank is not None):
        which = "--executor" if args.executor is not None else "--rank"
        msg = (
            f"Option --spmd: cannot be combined with {which} (the launcher decides which "
            "process compares which ranks). Drop it."
        )
        raise UsageError(msg)
    reports = [
        f for f, on in (("-o", args.output), ("--open", args.open), ("--replay", args.replay)) if on
    ]
    if args.spmd is not None and reports:
        msg = (
            f"Option --spmd: writes result files, not reports, so {reports[0]} goes with the "
            f"merge. Expected: tensorsight compare --merge {args.spmd} {reports[0]} ..."
        )
        raise UsageError(msg)


def _run(args: argparse.Namespace, formats: tuple[str, ...], metrics: Any, bar: Any) -> int:
    from tensorsight.compare.engine import compare

    _check_mode(args)
    if args.executor is not None:  # only then: executors imports multiprocessing (~10 ms)
        from tensorsight.compare.executors import parse_executor

        parse_executor(args.executor)  # a bad spec fails before any dump is opened

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.advance(done - bar.done)

    if args.spmd is not None:
        return _run_spmd(args, metrics, bar, progress)
    with bar:
        if args.merge is not None:
            from tensorsight.compare.spmd import merge

            result = merge(args.merge)
        else:
            result = compare(
                args.bench,
                args.target,
                metrics=metrics,
                profile=args.profile,
                mapping=args.mapping,
                rank=args.rank,
                step=args.step,
                progress=progress,
                jobs=args.jobs,
                allow_incomplete=args.allow_incomplete,
                executor=args.executor,
            )
    written = _write(result, Path(args.output), formats) if args.output else []
    if not args.quiet:
        print(result.summary())
        if args.replay and result.first_divergence is not None:
            print(_replay_line(result.first_divergence, result.bench, result.target, args.step))
        for path in written:
            print(f"wrote {path}")
    if args.open:
        # the compare layer may not import the board; the top-level CLI serves it (cli.main)
        args.open_board = Path(args.output)
    if result.missing:  # the first divergence may lie in a pair that was not compared
        print(f"error: {result.missing_line}", file=sys.stderr)
        return NOT_COMPARABLE
    return {"agree": 0, "diverged": 1}.get(result.status, NOT_COMPARABLE)


NOT_COMPARABLE = 3  # exit code: the runs can be said neither to agree nor to diverge


def _run_spmd(args: argparse.Namespace, metrics: Any, bar: Any, progress: Any) -> int:
    """One launched process: compare its ranks into the results folder; 3 if a pair failed."""
    from tensorsight.compare.spmd import launcher_slot, run_spmd

    slot = launcher_slot()
    with bar:
        out = run_spmd(
            args.bench,
            args.target,
            args.spmd,
            metrics=metrics,
            profile=args.profile,
            mapping=args.mapping,
            step=args.step,
            jobs=args.jobs,
            allow_incomplete=args.allow_incomplete,
            slot=slot,
            progress=progress if slot.index == 0 else None,
        )
    if not args.quiet:
        print(
            f"process {slot.index} of {slot.count} ({slot.launcher}): {len(out.written)} rank "
            f"pairs compared, {len(out.skipped)} already done, {len(out.failed)} failed, in "
            f"{out.results}; then: tensorsight compare --merge {out.results}"
        )
    for m in out.failed:
        print(f"error: rank {m.rank} not compared: {m.reason}", file=sys.stderr)
    return NOT_COMPARABLE if out.failed else 0


def _replay_line(row: Any, bench: str, target: str, step: int | None) -> str:
    from tensorsight.compare.replay import replay
    from tensorsight.errors import TensorsightError

    try:
        r = replay(row, bench, target, step=step)
    except TensorsightError as exc:
        return f"replay: not possible: {exc}"
    verdict = (
        "the op's own rounding explains it" if r.op_explains_error else "the target op differs"
    )
    return (
        f"replay: {r.op} in {r.dtype} on the bench inputs: own error {r.replay_vs_float64:.3g}, "
        f"target vs float64 {r.target_vs_float64:.3g}, target vs replay "
        f"{r.target_vs_replay:.3g}: {verdict}."
    )


def _write(result: Any, out: Path, formats: tuple[str, ...]) -> list[Path]:
    from tensorsight.compare.report import write_all
    from tensorsight.errors import InputFileError

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        msg = f"Output folder {str(out)!r}: cannot be created ({exc}). Pick a writable folder."
        raise InputFileError(msg) from exc
    paths = write_all(result, formats, out)
    sys.stdout.flush()
    return paths
