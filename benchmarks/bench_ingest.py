"""Load a large logdir: tensorsight.read_logdir vs TensorBoard (Rust and Python) and tbparse.

Data (generated once with tensorboardX, cached under ``bench-data/``): 3 runs, each with
20 scalar tags x 100,000 steps, 10 histogram tags x 1,000 steps and 3 image tags x 100 steps
(``--quick``: 3 runs x 3 tags x 2,000 steps, 2 x 20 histograms, 1 x 3 images).

Cases, each in its own child process so peak memory is the loader's own:

* tensorsight: ``read_logdir`` keeping every point, both CRCs checked (C scanner), then
  the same with the payload CRC skipped, and the pure-Python fallback on one run;
* TensorBoard's Rust data server (``tensorboard --load_fast=true``): time until its HTTP
  API returns the scalars of every tag of every run, with default sampling (1,000 scalars
  per tag) and with ``--samples_per_plugin scalars=100000`` (every point; the anchor);
  peak memory = TensorBoard's process plus the data server's;
* TensorBoard's Python ``EventAccumulator`` (every point) and tbparse, on one run only
  (they take minutes per run at full size).

Goal (issue 3): tensorsight loads every point with both CRCs checked in no more time than
the Rust server needs for all points, with at most a quarter of its memory.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks.harness import Harness, Result, python

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"

FULL = {"runs": 3, "scalar_tags": 20, "steps": 100_000, "hist_tags": 10, "hist_steps": 1_000,
        "image_tags": 3, "image_steps": 100}  # fmt: skip
QUICK = {"runs": 3, "scalar_tags": 3, "steps": 2_000, "hist_tags": 2, "hist_steps": 20,
         "image_tags": 1, "image_steps": 3}  # fmt: skip


def _generate_run(folder: str, spec: dict[str, int], seed: int) -> None:
    import numpy as np
    from tensorboardX import SummaryWriter

    rng = np.random.default_rng(seed)
    with SummaryWriter(folder, max_queue=100_000, flush_secs=600) as w:
        hist_every = max(1, spec["steps"] // spec["hist_steps"])
        image_every = max(1, spec["steps"] // spec["image_steps"])
        noise = rng.standard_normal(spec["steps"])
        for step in range(spec["steps"]):
            for t in range(spec["scalar_tags"]):
                w.add_scalar(f"scalars/tag{t:02d}", float(noise[step]) + t, step)
            if step % hist_every == 0:
                for t in range(spec["hist_tags"]):
                    w.add_histogram(f"hist/tag{t}", rng.standard_normal(1000) + t, step)
            if step % image_every == 0:
                for t in range(spec["image_tags"]):
                    img = rng.integers(0, 255, (3, 64, 64), dtype=np.uint8)
                    w.add_image(f"images/tag{t}", img, step)


def ensure_data(quick: bool) -> tuple[Path, dict[str, int]]:
    """The cached logdir for this size, generated (in parallel) when missing."""
    spec = QUICK if quick else FULL
    folder = DATA / ("ingest-quick" if quick else "ingest")
    marker = folder / "DONE.json"
    if marker.exists() and json.loads(marker.read_text()) == spec:
        return folder, spec
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    print(f"generating {folder} with tensorboardX (once) ...", file=sys.stderr, flush=True)
    with ProcessPoolExecutor(max_workers=min(spec["runs"], os.cpu_count() or 1)) as pool:
        futures = [
            pool.submit(_generate_run, str(folder / f"run{i}"), spec, i)
            for i in range(spec["runs"])
        ]
        for f in futures:
            f.result()
    marker.write_text(json.dumps(spec))
    return folder, spec


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


_TS_LOAD = """
import sys, time
from tensorsight.summary import read_logdir
t = time.perf_counter()
log = read_logdir(sys.argv[1], check_data_crc=sys.argv[2] == "1")
n = sum(len(log.scalars(r, tag)) for r in log.runs for tag in log.tags(r)["scalars"])
assert n == int(sys.argv[3]), (n, sys.argv[3])
print(f"{time.perf_counter() - t:.3f}", file=sys.stderr)
"""

_EA_LOAD = """
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0, "histograms": 0, "images": 0})
acc.Reload()
n = sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
assert n == int(sys.argv[2]), (n, sys.argv[2])
"""

_TBPARSE_LOAD = """
import sys
from tbparse import SummaryReader
df = SummaryReader(sys.argv[1], pivot=False).scalars
assert len(df) == int(sys.argv[2]), (len(df), sys.argv[2])
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tree_hwm(pid: int) -> int:
    """Sum of peak resident memory (VmHWM) of ``pid`` and its descendants, in bytes."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def _tensorboard(logdir: Path, spec: dict[str, int], every_point: bool) -> tuple[float, int]:
    """Seconds until the Rust server returns every scalar series complete; peak memory."""
    port = _free_port()
    argv = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
            "--load_fast=true", "--port", str(port), "--host", "127.0.0.1"]  # fmt: skip
    if every_point:
        argv += ["--samples_per_plugin", f"scalars={spec['steps']}"]
    expected = spec["steps"] if every_point else min(spec["steps"], 1000)
    base = f"http://127.0.0.1:{port}/data/plugin/scalars"
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        runs = [f"run{i}" for i in range(spec["runs"])]
        tags = [f"scalars/tag{t:02d}" for t in range(spec["scalar_tags"])]

        def count(run: str, tag: str) -> int:
            q = urllib.parse.urlencode({"run": run, "tag": tag})
            return len(_get(f"{base}/scalars?{q}"))  # type: ignore[arg-type]

        while True:
            if proc.poll() is not None:
                raise RuntimeError("tensorboard exited early")
            try:
                listed: dict[str, dict[str, object]] = _get(f"{base}/tags")  # type: ignore[assignment]
                # a cheap probe first (a run's tags load together: its last tag complete),
                # then the real check: every series of every run complete
                probe = all(tags[-1] in listed.get(r, {}) for r in runs) and all(
                    count(r, tags[-1]) >= expected for r in runs
                )
                if probe and all(count(r, t) >= expected for r in runs for t in tags):
                    break
            except OSError:
                pass  # not listening yet
            time.sleep(0.2)
            if time.perf_counter() - start > 1800:
                raise TimeoutError("tensorboard did not finish loading in 30 minutes")
        elapsed = time.perf_counter() - start
        peak = _tree_hwm(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return elapsed, peak


def _record(h: Harness, label: str, seconds: float, peak: int) -> None:
    res = h.results.setdefault(label, Result(label))
    res.seconds.append(seconds)
    res.peak_rss = max(res.peak_rss or 0, peak)


def _garbage_case(h: Harness) -> None:
    """CPU seconds (min of 3) to read an event file of random bytes: the resync over garbage
    (issue 20: the pure-Python reader took over 30 s on 32 MiB, the C reader 1.9 s)."""
    import tempfile
    import warnings

    from tensorsight.summary.reader import CorruptRecordWarning, EventFileReader

    size = (4 if h.quick else 32) << 20
    data = np.random.default_rng(20).integers(0, 256, size, dtype=np.uint8).tobytes()
    with tempfile.TemporaryDirectory(prefix="bench_garbage_") as tmp:
        path = Path(tmp) / "events.out.tfevents.1.garbage"
        path.write_bytes(data)
        cpu = {}
        for name, use_c in (("C", None), ("pure-Python", False)):
            times = []
            for _ in range(3):
                start = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", CorruptRecordWarning)
                    batch = EventFileReader(str(path), use_c=use_c).read()
                times.append(time.process_time() - start)
            assert len(batch.problems) == 1
            cpu[name] = min(times)
    h.note(
        f"{size >> 20} MiB of random bytes as an event file: C reader {cpu['C']:.2f} CPU-s, "
        f"pure-Python reader {cpu['pure-Python']:.2f} CPU-s (min of 3; one problem each)"
    )


def run(h: Harness) -> None:
    _garbage_case(h)
    logdir, spec = ensure_data(h.quick)
    n_all = spec["runs"] * spec["scalar_tags"] * spec["steps"]
    n_run = spec["scalar_tags"] * spec["steps"]
    size = _size(logdir)
    one_run = str(logdir / "run0")
    slow_repeat = 1 if not h.quick else None

    h.measure_command("tensorsight read_logdir (C, both CRCs)",
                      [python(), "-c", _TS_LOAD, str(logdir), "1", str(n_all)])  # fmt: skip
    h.measure_command("tensorsight read_logdir (C, data CRC skipped)",
                      [python(), "-c", _TS_LOAD, str(logdir), "0", str(n_all)])  # fmt: skip
    h.measure_command(
        "tensorsight pure-Python fallback (1 run of 3)",
        [python(), "-c", _TS_LOAD, one_run, "1", str(n_run)],
        env={"TENSORSIGHT_NO_C": "1"}, repeat=slow_repeat,
    )  # fmt: skip
    try:
        for _ in range(0 if h.quick else h.repeat):  # --quick: only the anchor, to stay short
            _record(h, "tensorboard rust server (default sampling)",
                    *_tensorboard(logdir, spec, every_point=False))  # fmt: skip
        for _ in range(h.repeat):
            _record(h, "tensorboard rust server (all points)",
                    *_tensorboard(logdir, spec, every_point=True))  # fmt: skip
        h.compare("tensorboard rust server (all points)")
    except (RuntimeError, TimeoutError, OSError) as exc:
        h.note(f"tensorboard rust server: not measured ({exc})")
    h.measure_command(
        "tensorboard EventAccumulator (1 run of 3)",
        [python(), "-c", _EA_LOAD, one_run, str(n_run)],
        repeat=slow_repeat,
    )
    try:
        import tbparse  # noqa: F401
    except ImportError:
        h.note("tbparse: not installed (pip install tbparse)")
    else:
        h.measure_command("tbparse (1 run of 3)",
                          [python(), "-c", _TBPARSE_LOAD, one_run, str(n_run)],
                          repeat=slow_repeat)  # fmt: skip
    h.note(f"data: {logdir} ({size / 1e6:.0f} MB; {n_all:,} scalar points in "
           f"{spec['runs']} runs; {spec['hist_tags']}x{spec['hist_steps']} histograms and "
           f"{spec['image_tags']}x{spec['image_steps']} images per run)")  # fmt: skip
    h.note("'1 run of 3' cases read one third of the data: compare them with a third of the "
           "whole-logdir times.")  # fmt: skip
    h.note("goal: tensorsight (C, both CRCs) time <= rust server (all points), memory <= 0.25x")
