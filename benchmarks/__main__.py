"""``python -m benchmarks [NAME ...] [--repeat N] [--quick]``: run benchmarks, print tables.

Each NAME is a module ``benchmarks/bench_NAME.py``; with no NAME every benchmark runs.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import benchmarks
from benchmarks.harness import Harness


def available() -> list[str]:
    """Names of all benchmark modules."""
    return sorted(
        m.name.removeprefix("bench_")
        for m in pkgutil.iter_modules(benchmarks.__path__)
        if m.name.startswith("bench_")
    )


def _compile_bytecode() -> None:
    """Write tensorsight's ``.pyc`` files before anything is timed, as ``pip install`` does.

    A source checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (set on some machines) would
    otherwise compile every module from source in each timed process, while the anchors,
    installed by pip, load theirs from bytecode: 25-30 ms of a 0.6 s ``tensorsight compare``.
    """
    import compileall
    import os

    import tensorsight

    folder = os.path.dirname(tensorsight.__file__)
    if os.access(folder, os.W_OK):
        compileall.compile_dir(folder, quiet=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {available()})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median reported)")
    parser.add_argument("--quick", action="store_true", help="small data, for smoke tests")
    args = parser.parse_args(argv)
    names = args.names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(f"error: unknown benchmark {unknown[0]!r}; choices: {available()}", file=sys.stderr)
        return 2
    _compile_bytecode()
    for name in names:
        module = importlib.import_module(f"benchmarks.bench_{name}")
        harness = Harness(name, repeat=args.repeat, quick=args.quick)
        module.run(harness)
        print(harness.table(), flush=True)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
