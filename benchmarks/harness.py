"""A small harness: time named cases, then print medians and ratios against an anchor.

A benchmark is a module ``benchmarks/bench_<name>.py`` with ``run(h: Harness) -> None``.
It calls :meth:`Harness.measure` for in-process callables and :meth:`Harness.measure_command`
for other programs (the anchors, run in a child process so both live in one process tree),
then :meth:`Harness.compare` to state which case is the anchor. Timing assertions do not
belong in tests; numbers printed here go into issue notes.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class Result:
    """Timings of one case (seconds) plus its peak memory when known (bytes)."""

    label: str
    seconds: list[float] = field(default_factory=list)
    peak_rss: int | None = None
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


class Harness:
    """Collects results of one benchmark and renders them as a table.

    Args:
        name: Benchmark name, printed as the table title.
        repeat: Runs per case (the median is reported).
        quick: Benchmarks shrink their data when true (used by the test suite).
    """

    def __init__(self, name: str, *, repeat: int = 3, quick: bool = False) -> None:
        self.name = name
        self.repeat = repeat
        self.quick = quick
        self.results: dict[str, Result] = {}
        self.anchor: str | None = None
        self.lines: list[str] = []

    def measure(
        self,
        label: str,
        fn: Callable[[], object],
        *,
        repeat: int | None = None,
        setup: Callable[[], object] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> Result:
        """Time ``fn()`` ``repeat`` times in this process (``setup()`` runs untimed before each).

        ``clock`` is wall time by default; single-threaded cases pass ``time.thread_time``
        (this thread's CPU time), which other processes' load on a shared machine barely moves.
        """
        result = self.results.setdefault(label, Result(label))
        for _ in range(repeat or self.repeat):
            if setup is not None:
                setup()
            start = clock()
            fn()
            result.seconds.append(clock() - start)
        return result

    def measure_command(
        self,
        label: str,
        argv: Sequence[str],
        *,
        repeat: int | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Result:
        """Time a child process and record its peak resident memory (from ``wait4``).

        The child is forked, so its figure is at least this process's resident set at the
        call (tens of MiB for the harness): compare figures well above that.
        """
        result = self.results.setdefault(label, Result(label))
        for _ in range(repeat or self.repeat):
            start = time.perf_counter()
            proc = subprocess.Popen(
                list(argv),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, **(env or {})},
                # a preexec_fn makes subprocess fork instead of vfork: with vfork the child
                # runs in this process's memory until exec, and exec carries that memory's
                # high-water mark into the child's ru_maxrss, so every child would report at
                # least this harness's own peak (the kernel benchmarks' arrays, ~300 MiB)
                preexec_fn=_fork_not_vfork,
            )
            deadline = None if timeout is None else start + timeout
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if deadline is not None and time.perf_counter() > deadline:
                    proc.kill()
                    os.wait4(proc.pid, 0)
                    raise TimeoutError(f"{label}: {argv[0]} ran past {timeout}s")
                time.sleep(0.002)
            elapsed = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            proc.returncode = code
            stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            if proc.stderr:
                proc.stderr.close()
            if code != 0:
                raise RuntimeError(f"{label}: {argv[0]} exited {code}: {stderr[-500:]}")
            result.seconds.append(elapsed)
            rss = usage.ru_maxrss * 1024  # kilobytes on Linux
            result.peak_rss = max(result.peak_rss or 0, rss)
        return result

    def set_peak_rss(self, label: str, peak_rss: int) -> None:
        """Attach a peak-memory figure measured by the benchmark itself."""
        self.results.setdefault(label, Result(label)).peak_rss = peak_rss

    def compare(self, anchor: str) -> None:
        """Declare the anchor case; ratios are ``anchor median / case median`` (x faster)."""
        self.anchor = anchor

    def note(self, text: str) -> None:
        """Add a free-form line under the table (data sizes, throughput, goals)."""
        self.lines.append(text)

    def table(self) -> str:
        """Render all results as a plain-text table."""
        anchor = self.results.get(self.anchor) if self.anchor else None
        rows = [
            ("case", "median s", "min s", "runs", "peak mem", "speed vs anchor", "mem vs anchor")
        ]
        for r in self.results.values():
            if not r.seconds:
                continue
            speed = mem = "-"
            if anchor is not None and anchor.seconds:
                speed = f"x{anchor.median / r.median:.2f}" if r.median > 0 else "inf"
                if anchor.peak_rss and r.peak_rss:
                    mem = f"{r.peak_rss / anchor.peak_rss:.2f}"
            rows.append(
                (
                    r.label,
                    f"{r.median:.4f}",
                    f"{min(r.seconds):.4f}",
                    str(len(r.seconds)),
                    _fmt_bytes(r.peak_rss),
                    speed,
                    mem,
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        out = [f"== {self.name}" + (f" (anchor: {self.anchor})" if self.anchor else "")]
        for i, row in enumerate(rows):
            out.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
            if i == 0:
                out.append("  ".join("-" * w for w in widths))
        out.extend(self.lines)
        return "\n".join(out)


def _fork_not_vfork() -> None:
    """Runs in the forked child before exec; its presence alone is what matters."""


def self_peak_rss() -> int:
    """Peak resident memory of this process so far, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def python() -> str:
    """The interpreter running the benchmarks (children use the same environment)."""
    return sys.executable
