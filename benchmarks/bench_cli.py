"""Start-up time of the ``tensorsight`` command: ``--version``, ``--help``, one command's help.

Anchor: a bare interpreter (``python -c pass``), the floor any Python command starts from.
Cases: ``tensorsight --version`` and ``--help`` (goal: under 0.3 s, importing neither numpy
nor any part), and ``tensorsight compare --help`` (imports the compare part's parser only).
Each case also runs once under ``-X importtime``; the note lines give how many modules it
imported, whether numpy was among them, and its slowest top-level import.
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks.harness import Harness

CASES = {
    "tensorsight --version": ["--version"],
    "tensorsight --help": ["--help"],
    "tensorsight compare --help": ["compare", "--help"],
}


def _imports(args: list[str]) -> tuple[int, bool, str]:
    """(modules imported, numpy among them, slowest top-level import) of one run."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tensorsight", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit():
            rows.append((name, int(cumulative)))
    names = {name.strip() for name, _ in rows}
    top = [(us, name.strip()) for name, us in rows if not name.startswith("  ")]
    us, slowest = max(top) if top else (0, "-")
    return len(names), "numpy" in names, f"{slowest} {us / 1000:.1f} ms"


def run(h: Harness) -> None:
    repeat = 3 if h.quick else max(h.repeat, 10)
    h.measure_command("python -c pass (anchor)", [sys.executable, "-c", "pass"], repeat=repeat)
    h.compare("python -c pass (anchor)")
    for label, args in CASES.items():
        h.measure_command(label, [sys.executable, "-m", "tensorsight", *args], repeat=repeat)
        count, numpy, slowest = _imports(args)
        h.note(
            f"{label}: {count} modules, numpy {'imported' if numpy else 'not imported'}, "
            f"slowest top-level import {slowest}"
        )
    worst = max(h.results[label].median for label in list(CASES)[:2])
    h.note(f"goal: --version and --help under 0.3 s: slower of the two {worst:.3f} s")
