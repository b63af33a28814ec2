"""The ``tensorsight`` command: one thin layer over the parts.

Each part owns a ``cli.py`` with ``register(subparsers)``; it adds one subcommand whose
``func(args) -> int`` returns the exit code. ``tensorsight <command>`` imports only that
command's part (:data:`COMMAND_SPECS`); ``tensorsight --help`` and ``--version`` import no
part at all (:data:`COMMAND_HELP`). Part ``cli`` modules must import nothing heavy at module
level, so ``tensorsight <command> --help`` stays quick too.

Exit codes: 0 ok, 1 a check failed (e.g. runs diverge), 2 usage or input error.
A :class:`~tensorsight.errors.TensorsightError` is printed as one ``error: ...`` line;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

from tensorsight._registry import load_object
from tensorsight._version import __version__
from tensorsight.errors import TensorsightError

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "ArgumentParser",
    "build_parser",
    "entry",
    "main",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SIGPIPE = 141  # what a shell reports for a program killed by SIGPIPE (128 + 13)

# "module:function" of each part's register(subparsers); order = order in --help.
SUBCOMMANDS: tuple[str, ...] = (
    "tensorsight.migrate.cli:register",
    "tensorsight.capture.cli:register",
    "tensorsight.compare.cli:register",
    "tensorsight.board.cli:register",
    "tensorsight.summary.cli:register",
    "tensorsight.cli:register_demo",
)

# The SUBCOMMANDS entry that registers each command: `tensorsight <command> ...` imports only
# that part (every part's cli and package imports cost ~0.1 s of a short command's start).
# Commands missing here register every entry.
COMMAND_SPECS: dict[str, str] = {
    "migrate": "tensorsight.migrate.cli:register",
    "dump": "tensorsight.capture.cli:register",
    "dump-onnx": "tensorsight.capture.cli:register",
    "inspect": "tensorsight.summary.cli:register",
    "compare": "tensorsight.compare.cli:register",
    "board": "tensorsight.board.cli:register",
    "export": "tensorsight.summary.cli:register",
    "demo": "tensorsight.cli:register_demo",
}

# Each command's line in `tensorsight --help`, in SUBCOMMANDS order: `--help`, `--version` and
# a bare `tensorsight` list these without importing any part (or numpy), so they start in
# tens of milliseconds. A test checks they match what each part's register() adds.
COMMAND_HELP: dict[str, str] = {
    "migrate": "rewrite CUDA-only PyTorch code into device-neutral code, with a report",
    "dump": "record every op of a PyTorch run without changing its code",
    "dump-onnx": "record every intermediate tensor of one ONNX run",
    "compare": "compare two dumps op by op and find the first op that went wrong",
    "board": "serve the training board (scalars, histograms, images, text) for a logdir",
    "inspect": "list the runs, tags and step ranges of a logdir (or summarize a dump)",
    "export": "write every scalar point of a logdir to CSV or Parquet",
    "demo": "train, dump and compare a small model on the CPU, then serve the board",
}

EPILOG = """\
examples:
  tensorsight --version
  tensorsight <command> --help     help and an example for one command
"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


def build_parser(command: str | None = None) -> ArgumentParser:
    """The full parser with every landed subcommand registered.

    Args:
        command: The subcommand about to run: when :data:`COMMAND_SPECS` names the entry
            that registers it, only that entry is imported and registered.
    """
    parser, sub = _top_parser()
    only = COMMAND_SPECS.get(command) if command is not None else None
    specs = (only,) if only is not None and only in SUBCOMMANDS else SUBCOMMANDS
    for spec in specs:
        register = cast(Callable[[Any], None], load_object(spec))
        register(sub)
    return parser


def _help_parser() -> ArgumentParser:
    """The top-level parser for a command line without a command (``--help``, ``--version``).

    Each command is listed from :data:`COMMAND_HELP` with an empty parser: nothing of any
    part is imported.
    """
    parser, sub = _top_parser()
    for name, line in COMMAND_HELP.items():
        sub.add_parser(name, help=line, add_help=False)
    return parser


def _top_parser() -> tuple[ArgumentParser, Any]:
    parser = ArgumentParser(
        prog="tensorsight",
        description=(
            "Check whether two deep-learning runs agree and find the operator that went "
            "wrong first: migrate, dump, compare, board."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tensorsight {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show full tracebacks instead of one-line errors"
    )
    sub = parser.add_subparsers(title="commands", metavar="<command>", parser_class=ArgumentParser)
    return parser, sub


def entry() -> NoReturn:
    """The program's entry point (``tensorsight`` and ``python -m tensorsight``).

    A command whose parser sets ``fast_exit=True`` has closed everything it opened when it
    returns, so the process ends with :func:`os._exit` after flushing stdout and stderr:
    tearing down the interpreter (every module, the comparison's objects, idle worker
    threads) was ~25 ms, 4-5 % of a ``compare`` of 1.7 GB. Other commands, errors and
    interrupts exit normally.
    """
    code = main()
    if _fast_exit:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError):  # a pipe whose reader has gone (`| head`)
                stream.flush()
        os._exit(code)
    raise SystemExit(code)


_fast_exit = False  # set by main() when the command that ran allows it (see entry())


def _show_notices() -> None:
    """The library's one-time progress lines (a kernel build) go to stderr, as bare lines.

    Imported here, not at the top, so ``tensorsight --help`` stays free of :mod:`logging`.
    """
    from tensorsight._notices import show_on_stderr

    show_on_stderr()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    global _fast_exit
    _fast_exit = False
    args_list = list(sys.argv[1:] if argv is None else argv)
    # the top-level options are flags, so the first other word is the command
    command = next((a for a in args_list if not a.startswith("-")), None)
    parser = _help_parser() if command is None else build_parser(command)
    args = parser.parse_args(args_list)
    func = cast(Callable[[argparse.Namespace], int] | None, getattr(args, "func", None))
    if func is None:  # no subcommand given
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        _show_notices()
        code = func(args)
        board_dir = getattr(args, "open_board", None)
        if board_dir is not None:  # a subcommand asked to show its result (compare --open)
            serve_board(
                board_dir, port=getattr(args, "port", None), quiet=getattr(args, "quiet", False)
            )
        else:
            _fast_exit = bool(getattr(args, "fast_exit", False))
        return code
    except TensorsightError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout's reader has gone (`| head`): stop quietly, as on SIGPIPE
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SIGPIPE


DEMO_EPILOG = """\
examples:
  tensorsight demo                          train, dump, compare, then open the board
  tensorsight demo --logdir /tmp/ts --force --no-serve
"""


def register_demo(subparsers: Any) -> None:
    """Add the ``demo`` subcommand (the whole story on a small model, on the CPU)."""
    parser = subparsers.add_parser(
        "demo",
        help="train, dump and compare a small model on the CPU, then serve the board",
        description=(
            "Train a small CNN on noisy shapes in fp32 and bf16 with SummaryWriter, dump one "
            "step of fp32, bf16 and a planted-bug run, compare them, and serve the board on "
            "the result."
        ),
        epilog=DEMO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--logdir", default="tensorsight-demo", help="output folder")
    parser.add_argument("--steps", type=int, default=None, help="training steps per run (300)")
    parser.add_argument("--force", action="store_true", help="replace a non-empty --logdir")
    parser.add_argument("--no-serve", action="store_true", help="stop before serving the board")
    parser.add_argument("--port", type=int, default=None, help="board port (default 6006)")
    parser.add_argument("--quiet", action="store_true", help="print nothing but errors")
    parser.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    from tensorsight.demo import run_demo

    if not args.no_serve:  # say so now, not after a minute of training
        from tensorsight.board.app import require_front_end

        require_front_end()

    def say(line: str) -> None:
        if not args.quiet:
            print(line, flush=True)

    result = run_demo(args.logdir, steps=args.steps, force=args.force, say=say)
    say("")
    say("fp32 vs bf16 autocast:")
    say(result.healthy)
    say("")
    say(f"fp32 vs the planted bug ({result.planted_bug}):")
    say(result.bug)
    say("")
    say(f"reports: {result.logdir / 'compare'}")
    if args.no_serve:
        say(f"board:   tensorsight board --logdir {result.logdir}")
        return EXIT_OK
    serve_board(result.logdir, port=args.port, quiet=args.quiet)
    return EXIT_OK


def serve_board(logdir: Any, *, port: int | None = None, quiet: bool = False) -> None:
    """Serve the board on ``logdir`` at 127.0.0.1 until Ctrl-C (for demo and --open)."""
    from tensorsight.board.app import require_front_end
    from tensorsight.board.server import serve
    from tensorsight.data import LogdirProvider

    require_front_end()  # before the logdir is read and the URL printed
    provider = LogdirProvider(logdir)
    if not quiet:
        print(f"serving the board on http://127.0.0.1:{port or 6006}/ (Ctrl-C stops)", flush=True)
    serve(provider, port=port)
