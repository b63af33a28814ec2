"""Migration throughput on a real project (default: pytorch-image-models, "timm").

Anchor: a plain ``libcst.parse_module(code).code`` round trip over every ``.py`` file of
the project, in one process. Cases: ``tensorsight.migrate`` in one worker (the public
function: discovery, pre-scan, rewrite, report) and the same files with the pre-scan off
(every file parsed), plus the pre-scan alone. Goals: at least twice the anchor's speed and
5,000 lines/s per core. The note lines give files parsed vs total, lines/s and lines per
CPU-second side by side, and whether every file's result is the same with and without the
pre-scan.

The project is not in the repository. Fetch it once::

    git clone --depth 1 https://github.com/huggingface/pytorch-image-models \\
        /tmp/pytorch-image-models

or point ``TENSORSIGHT_BENCH_PROJECT`` at any checkout (a folder of ``.py`` files).
Without it the benchmark prints one line saying so and times nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import Harness

ENV = "TENSORSIGHT_BENCH_PROJECT"
DEFAULT = "/tmp/pytorch-image-models"
FETCH = (
    f"git clone --depth 1 https://github.com/huggingface/pytorch-image-models {DEFAULT}"
    f" (or set {ENV}=<folder>)"
)

ANCHOR = "libcst parse+codegen (1 core)"
MIGRATE = "tensorsight migrate (1 worker)"
NO_SCAN = "tensorsight migrate, no pre-scan (1 worker)"
SCAN = "pre-scan alone (1 core)"


def run(h: Harness) -> None:
    import libcst

    from tensorsight.migrate import migrate
    from tensorsight.migrate.runner import _prescan, discover, migrate_file

    root = Path(os.environ.get(ENV, DEFAULT))
    jobs = discover(root)[0] if root.is_dir() else []
    if not jobs:
        h.note(f"skipped: no project at {root}; fetch it: {FETCH}")
        return
    texts = [Path(j.path).read_text(encoding="utf-8", errors="replace") for j in jobs]
    lines = sum(t.count("\n") for t in texts)
    target = "accelerator"
    scan = _prescan(target)

    def anchor() -> None:
        for text in texts:
            libcst.parse_module(text).code  # noqa: B018 - the codegen is what is timed

    unscanned: list[object] = []

    def no_scan() -> None:
        unscanned[:] = [migrate_file(j, target, False, prescan=False) for j in jobs]

    def cpu(fn: Callable[[], object]) -> float:
        start = time.process_time()
        fn()
        return time.process_time() - start

    h.measure(ANCHOR, anchor)
    h.measure(MIGRATE, lambda: migrate(root, target, workers=1))
    h.measure(SCAN, lambda: [scan.wanted(t) for t in texts])
    if h.quick:
        no_scan()
    else:
        h.measure(NO_SCAN, no_scan, repeat=1)
    h.compare(ANCHOR)

    anchor_cpu, migrate_cpu = cpu(anchor), cpu(lambda: migrate(root, target, workers=1))
    wanted = [scan.wanted(t) for t in texts]
    parsed_lines = sum(t.count("\n") for t, w in zip(texts, wanted, strict=True) if w)
    same = [migrate_file(j, target, False) for j in jobs] == unscanned
    med = {label: r.median for label, r in h.results.items()}
    h.note(
        f"project: {root} ({len(jobs)} files, {lines:,} lines); parsed with the pre-scan: "
        f"{sum(wanted)} of {len(jobs)} files ({parsed_lines:,} lines); "
        f"{sum('cuda' in t for t in texts)} files contain the text 'cuda'"
    )
    h.note(
        f"lines/s on 1 core (wall): anchor {lines / med[ANCHOR]:,.0f}, "
        f"tensorsight migrate {lines / med[MIGRATE]:,.0f} (x{med[ANCHOR] / med[MIGRATE]:.2f})"
        + (f", no pre-scan {lines / med[NO_SCAN]:,.0f}" if NO_SCAN in med else "")
        + f", pre-scan alone {lines / med[SCAN]:,.0f}"
    )
    h.note(
        f"lines per CPU-second (immune to other load): anchor {lines / anchor_cpu:,.0f}, "
        f"tensorsight migrate {lines / migrate_cpu:,.0f} (x{anchor_cpu / migrate_cpu:.2f}); "
        "goal >= x2 and >= 5,000"
    )
    h.note(f"same result for every file with and without the pre-scan: {'yes' if same else 'NO'}")
