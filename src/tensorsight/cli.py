"""The ``tensorsight`` command: one thin layer over the parts.

Each part owns a ``cli.py`` with ``register(subparsers)``; it adds one subcommand whose
``func(args) -> int`` returns the exit code. Part ``cli`` modules must import nothing
heavy at module level, so ``tensorsight --help`` stays instant.

Exit codes: 0 ok, 1 a check failed (e.g. runs diverge), 2 usage or input error.
A :class:`~tensorsight.errors.TensorsightError` is printed as one ``error: ...`` line;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, cast

from tensorsight._registry import load_object
from tensorsight._version import __version__
from tensorsight.errors import TensorsightError

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "ArgumentParser", "build_parser", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

# "module:function" of each part's register(subparsers); order = order in --help.
SUBCOMMANDS: tuple[str, ...] = ()

EPILOG = """\
examples:
  tensorsight --version
  tensorsight <command> --help     help and an example for one command
"""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (``error: ...``) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {message} (see '{self.prog} --help')\n")


def build_parser() -> ArgumentParser:
    """The full parser with every landed subcommand registered."""
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
    if SUBCOMMANDS:
        sub = parser.add_subparsers(
            title="commands", metavar="<command>", parser_class=ArgumentParser
        )
        for spec in SUBCOMMANDS:
            register = cast(Callable[[Any], None], load_object(spec))
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(args_list)
    func = cast(Callable[[argparse.Namespace], int] | None, getattr(args, "func", None))
    if func is None:  # no subcommand given
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return func(args)
    except TensorsightError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
