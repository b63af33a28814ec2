from __future__ import annotations

import os
import sys

import pytest
from benchmarks.__main__ import main
from benchmarks.harness import Harness


def test_measure_and_table_show_medians_and_ratios():
    h = Harness("demo", repeat=3)
    h.measure("fast", lambda: sum(range(10)))
    h.measure("slow", lambda: sum(range(200_000)))
    h.compare("slow")
    h.note("data: 200k ints")
    table = h.table()
    lines = table.splitlines()
    assert lines[0] == "== demo (anchor: slow)"
    assert lines[1].split() == [
        "case", "median", "s", "min", "s", "runs", "peak", "mem", "speed", "vs", "anchor",
        "mem", "vs", "anchor",
    ]  # fmt: skip
    fast_row = next(line for line in lines if line.startswith("fast"))
    speed = float(fast_row.split()[-2].lstrip("x"))
    assert speed > 1.0
    assert lines[-1] == "data: 200k ints"
    assert len(h.results["fast"].seconds) == 3


def test_measure_command_records_peak_memory():
    h = Harness("cmd", repeat=2)
    code = "b = bytearray(60 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096])"
    result = h.measure_command("alloc", [sys.executable, "-c", code])
    assert len(result.seconds) == 2
    assert result.peak_rss is not None
    assert result.peak_rss > 60 * 1024 * 1024


def _current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_child_peak_memory_is_not_the_harness_peak():
    """A child started after this process peaked does not report our peak (vfork would).

    A forked child starts from our current resident set, so that is its floor; 400 MiB
    allocated and freed before must not show.
    """
    big = bytearray(400 * 1024 * 1024)
    big[::4096] = b"x" * len(big[::4096])
    del big
    h = Harness("cmd", repeat=1)
    result = h.measure_command("small", [sys.executable, "-c", "pass"])
    assert result.peak_rss is not None
    assert result.peak_rss < _current_rss() + 100 * 1024 * 1024


def test_measure_command_reports_a_failing_child():
    h = Harness("cmd", repeat=1)
    with pytest.raises(RuntimeError, match="exited 3"):
        h.measure_command("bad", [sys.executable, "-c", "import sys; sys.exit(3)"])


def test_unknown_benchmark_name_is_refused(capsys):
    assert main(["no-such-benchmark"]) == 2
    assert "unknown benchmark" in capsys.readouterr().err
