"""kill -9 losses: summaries of SummaryWriter vs tensorboardX vs torch, and a dump's steps.

Each trial starts a child that writes with a writer's *defaults* (``max_queue=10``,
``flush_secs=120``), SIGKILLs it at a seeded random moment, and counts what its event file
holds against what the child had handed to the writer. The child counts the calls that
returned in a shared memory-mapped file, which survives the kill. Cases per writer:

* ``paced``: a training loop logging 10 scalars every 10 ms (1,000 records/s), killed 1.5-4 s
  in. Besides records, it prints the seconds lost: kill time minus the wall time of the last
  record in the file (goal: at most 1 s).
* ``burst``: 20,003 scalars as fast as possible, then a long step (the child sleeps), killed
  1-2 s after the last call returned (goal: nothing lost; issue 20 measured up to 1,851).

The dump case runs ``tensorsight.dump`` (statistics) over a small MLP, one step per
iteration, and counts the steps the child had ended (``d.step()`` returned) that do not read
back with all their ops (goal: 0; ``.step()`` returns once the writer has written the
ended step), those the manifest does not list as complete yet (it is rewritten at most once
a second), the rows of the running step that survived, and the steps whose
``DumpStep.complete`` is wrong (goal: 0; the running step must read as cut off).

The figures are counts, not timings; ``--quick`` runs 2 trials instead of ``--repeat`` x 4.
"""

from __future__ import annotations

import mmap
import os
import random
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Harness

PACED_RATE = 1000  # records a second in the paced case
BURST = 20_003

_WRITER_CHILD = """
import mmap, os, struct, sys, time
kind, logdir, counter, mode = sys.argv[1:5]
if kind == "tensorsight":
    from tensorsight import SummaryWriter
elif kind == "tensorboardX":
    from tensorboardX import SummaryWriter
else:
    from torch.utils.tensorboard import SummaryWriter
w = SummaryWriter(logdir)  # the defaults: max_queue=10, flush_secs=120
fd = os.open(counter, os.O_RDWR)
shared = mmap.mmap(fd, 8)
print("ready", flush=True)
n = 0
if mode == "paced":  # a training step of 10 ms logging 10 tags
    due = time.perf_counter()
    while True:
        for tag in range(10):
            w.add_scalar(f"tag{tag}", 1.0 / (n + 1), n // 10)
            n += 1
        struct.pack_into("<q", shared, 0, n)
        due += 0.01
        time.sleep(max(0.0, due - time.perf_counter()))
else:
    for n in range(1, int(mode) + 1):
        w.add_scalar("loss", 1.0 / n, n)
    struct.pack_into("<q", shared, 0, n)
    print("returned", flush=True)
    time.sleep(600)  # a long step (or a hang): nothing more is written
"""

_DUMP_CHILD = """
import mmap, os, struct, sys, torch, tensorsight
out, counter = sys.argv[1:3]
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
fd = os.open(counter, os.O_RDWR)
shared = mmap.mmap(fd, 8)
d = tensorsight.dump(out).start()
print("ready", flush=True)
n = 0
while True:
    model(torch.randn(32, 64)).square().mean().backward()
    opt.step()
    opt.zero_grad()
    d.step()
    n += 1
    struct.pack_into("<q", shared, 0, n)
"""


def _counter_file(folder: Path) -> Path:
    path = folder / "counter"
    path.write_bytes(b"\0" * 8)
    return path


def _read_counter(path: Path) -> int:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 8, access=mmap.ACCESS_READ) as m:
        return int(struct.unpack_from("<q", m, 0)[0])


def _kill_child(argv: list[str], wait_for: str, after: float) -> float:
    """Start ``argv``, wait for the line ``wait_for``, SIGKILL it ``after`` s later."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip() == wait_for:
                break
        time.sleep(after)
        killed_at = time.time()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()
    return killed_at


def _scalar_events(logdir: Path) -> tuple[int, float | None]:
    """Scalar records in every event file of ``logdir`` and the last one's wall time."""
    from tensorsight.summary.reader import iter_events

    count, last = 0, None
    for path in sorted(logdir.glob("events.out.tfevents.*")):
        for event in iter_events(str(path)):
            if event.HasField("summary") and event.summary.value:
                count += len(event.summary.value)
                last = event.wall_time if last is None else max(last, event.wall_time)
    return count, last


def _writer_trial(kind: str, mode: str, rng: random.Random) -> tuple[int, float | None]:
    """Records lost by one SIGKILL (and, paced, the seconds lost)."""
    with tempfile.TemporaryDirectory(prefix="bench_kill9_") as tmp:
        folder = Path(tmp)
        counter = _counter_file(folder)
        argv = [sys.executable, "-c", _WRITER_CHILD, kind, str(folder / "run"), str(counter)]
        if mode == "paced":
            killed_at = _kill_child([*argv, "paced"], "ready", rng.uniform(1.5, 4.0))
        else:
            killed_at = _kill_child([*argv, str(BURST)], "returned", rng.uniform(1.0, 2.0))
        handed = _read_counter(counter)
        written, last = _scalar_events(folder / "run")
        seconds = None
        if mode == "paced":
            seconds = killed_at - last if last is not None else float("inf")
        return handed - written, seconds


def _dump_trial(rng: random.Random) -> tuple[int, int, int, int, int]:
    """(ended steps, of them without their full op table, of them not yet marked complete
    in the manifest, rows of the running step recovered, steps whose ``DumpStep.complete``
    is wrong: an ended one read as cut off, or a later one read as complete)."""
    import tensorsight

    with tempfile.TemporaryDirectory(prefix="bench_kill9_dump_") as tmp:
        folder = Path(tmp)
        counter = _counter_file(folder)
        out = folder / "dump"
        argv = [sys.executable, "-c", _DUMP_CHILD, str(out), str(counter)]
        _kill_child(argv, "ready", rng.uniform(1.5, 4.0))
        ended = _read_counter(counter)
        dump = tensorsight.read_dump(out)
        on_disk = set(dump.steps())
        ops = {s: len(dump.step(step=s).ops) for s in range(ended) if s in on_disk}
        full = max(ops.values(), default=0)
        short = sum(1 for s in range(ended) if ops.get(s, 0) < full)
        manifest = dump.manifest()
        marked = {s.step for s in manifest.steps if s.complete} if manifest else set()
        unmarked = sum(1 for s in range(ended) if s not in marked)
        running = dump.step(step=ended).rows if ended in on_disk else ()
        # step ``ended`` may have ended between .step() returning and the counter's update
        wrong = sum(dump.step(step=s).complete != (s < ended) for s in on_disk if s != ended)
        return ended, short, unmarked, len(running), wrong


def _available(kind: str) -> bool:
    module = {"tensorsight": "tensorsight", "tensorboardX": "tensorboardX"}.get(
        kind, "torch.utils.tensorboard"
    )
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def run(h: Harness) -> None:
    trials = 2 if h.quick else 4 * h.repeat
    rng = random.Random(20)
    h.note(f"{trials} SIGKILLs per case; records lost = calls returned - records in the file")
    for mode in ("paced", "burst"):
        for kind in ("tensorsight", "tensorboardX", "torch"):
            if not _available(kind):
                h.note(f"{kind}: not installed, skipped")
                continue
            lost, secs = [], []
            for _ in range(trials):
                n, s = _writer_trial(kind, mode, rng)
                lost.append(n)
                if s is not None:
                    secs.append(s)
            line = (
                f"{mode:5} {kind:12} records lost: max {max(lost):,}, "
                f"mean {statistics.mean(lost):,.0f}"
            )
            if secs:
                line += f"; seconds lost: max {max(secs):.2f}, mean {statistics.mean(secs):.2f}"
            h.note(line)
    h.note(
        f"paced = {PACED_RATE:,} records/s, killed 1.5-4 s in (goal: <= 1 s lost); "
        f"burst = {BURST:,} records then idle, killed 1-2 s later (goal: 0 lost)"
    )
    results = [_dump_trial(rng) for _ in range(trials)]
    ended = [r[0] for r in results]
    h.note(
        f"dump (statistics, 8-layer MLP, {min(ended)}-{max(ended)} steps ended before the "
        f"kill): ended steps without their full op table: max {max(r[1] for r in results)}; "
        f"not yet marked complete in the manifest (rewritten at most once a second): max "
        f"{max(r[2] for r in results)}, mean {statistics.mean(r[2] for r in results):.1f}; "
        f"rows of the running step recovered: {', '.join(str(r[3]) for r in results)}; "
        f"steps read with the wrong DumpStep.complete: max {max(r[4] for r in results)} "
        "(goal 0)"
    )
