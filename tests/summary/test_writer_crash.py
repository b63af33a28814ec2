"""A writer killed with SIGKILL leaves a file that reads back up to its last complete record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tensorsight.summary._proto import tb
from tests.summary._tb import event_files, load, read_records

_CHILD = """
import sys, numpy as np
from tensorsight import SummaryWriter
w = SummaryWriter(sys.argv[1], max_queue=50, flush_secs=0.01)
for step in range(500):
    w.add_scalar("loss", 1.0 / (step + 1), step)
w.flush()
print("ready", flush=True)
step = 500
while True:  # keep writing (scalars and bigger records) until killed
    w.add_scalar("loss", 1.0 / (step + 1), step)
    if step % 50 == 0:
        w.add_histogram("h", np.random.randn(5000), step)
    step += 1
"""

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")


def test_sigkill_leaves_a_readable_file(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.3)  # let it write (and flush) more
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    [path] = event_files(tmp_path)
    records, leftover = read_records(path)  # every complete record has valid CRCs
    events = [tb.Event.FromString(r) for r in records]
    assert events[0].file_version == "brain.Event:2"
    steps = [e.step for e in events[1:] if e.summary.value[0].tag == "loss"]
    assert steps[:500] == list(range(500))
    assert steps == list(range(len(steps)))
    assert leftover < path.stat().st_size
    points = load(tmp_path).Scalars("loss")  # TensorBoard's loader reads the same
    assert [p.step for p in points] == steps


def test_truncated_last_record_is_skipped_by_both_readers(tmp_path):
    from tensorsight import SummaryWriter

    with SummaryWriter(tmp_path / "full") as writer:
        for step in range(10):
            writer.add_scalar("x", step, step)
    [full] = event_files(tmp_path / "full")
    records, _ = read_records(full)
    data = full.read_bytes()
    cut_dir = tmp_path / "cut"
    cut_dir.mkdir()
    cut = cut_dir / full.name
    cut.write_bytes(data[: len(data) - 7])  # the last record loses its tail
    got, leftover = read_records(cut)
    assert got == records[:-1]
    assert leftover > 0
    assert [p.step for p in load(cut_dir).Scalars("x")] == list(range(9))


def test_closed_at_interpreter_exit_without_close(tmp_path: Path):
    code = (
        "import sys\nfrom tensorsight import SummaryWriter\n"
        "w = SummaryWriter(sys.argv[1], max_queue=1000, flush_secs=3600)\n"
        "for i in range(100): w.add_scalar('x', i, i)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    assert [p.step for p in load(tmp_path).Scalars("x")] == list(range(100))


def test_garbage_collected_writer_is_closed(tmp_path):
    import gc

    from tensorsight import SummaryWriter

    writer = SummaryWriter(tmp_path, max_queue=1000, flush_secs=3600)
    writer.add_scalar("x", 1.0, 0)
    del writer
    gc.collect()
    assert [p.step for p in load(tmp_path).Scalars("x")] == [0]


def test_write_failure_is_reported_naming_the_file(tmp_path):
    """A full disk (here: a file-size limit) surfaces as InputFileError on the next call."""
    code = """
import resource, signal, sys
import numpy as np
from tensorsight import SummaryWriter
from tensorsight.errors import InputFileError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
w = SummaryWriter(sys.argv[1])
try:
    for step in range(100):
        w.add_histogram("h", np.random.randn(1000), step)
    w.flush()
except InputFileError as exc:
    print("error:", exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert "error: Event file '" in out.stdout
    assert "writing failed" in out.stdout
    assert str(tmp_path) in out.stdout


_IDLE_CHILD = """
import sys, time
from tensorsight import SummaryWriter
w = SummaryWriter(sys.argv[1])  # the defaults: max_queue=10, flush_secs=120
n = int(sys.argv[2])
for step in range(n):
    w.add_scalar("loss", 1.0 / (step + 1), step)
print("returned", n, flush=True)  # every add_scalar call above has returned
time.sleep(600)  # a training step that takes long (or a hang): nothing more is written
"""


@pytest.mark.parametrize("n", [1_000, 20_003])
def test_sigkill_of_a_default_writer_loses_at_most_the_last_second(tmp_path, n):
    """Records added more than a second before SIGKILL are in the file (the writer hands
    them to the OS at least every 0.1 s, not only when 64 KiB have gathered)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _IDLE_CHILD, str(tmp_path), str(n)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == ["returned", str(n)]
        time.sleep(3.0)  # > 1 s, with room for a loaded machine
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    [path] = event_files(tmp_path)
    records, leftover = read_records(path)
    events = [tb.Event.FromString(r) for r in records[1:]]
    steps = [e.step for e in events]
    assert leftover == 0
    assert len(steps) == n  # was up to 1,851 short: a 64 KiB buffer never handed off
    assert steps == list(range(n))
