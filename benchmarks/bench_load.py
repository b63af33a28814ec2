"""Load on the board: concurrent clients on 127.0.0.1 while a writer appends, vs TensorBoard.

``tensorsight board`` and ``tensorboard --load_fast=true`` serve the same logdir (3 runs x
10 scalar tags x 5,000 steps, histograms, images, text), each as its own process on a free
loopback port, reloading every second, while a child process appends scalars and histograms
to a fourth run (``live``) through tensorsight's SummaryWriter. ``CLIENTS`` threads, each
with one keep-alive connection, send a fixed count of requests each, cycling through the run
list and the heavy view routes (a full scalar series, histograms, the image list, text);
the run stops early at ``TIME_CAP_S``. The server answers every request it got: errors are
non-200 answers, failed connections and timeouts. A request on a keep-alive connection that
the server closed as it went out (uvicorn closes one idle for 5 s; a starved client thread
can take that long) is sent again once, as browsers do, and counted as resent.

Printed per tool: requests answered, req/s, p50/p99 latency, errors. The table's "speed vs
anchor" is TensorBoard's wall time over ours for the same request count. Both servers get
the same clients; the clients (Python threads in this process) share this machine's cores
with the server, so the figures are a floor of what either server does alone.
``--quick``: 4 clients x 20 requests, smaller logdir, no TensorBoard.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from benchmarks.harness import Harness, Result

CLIENTS = 16
REQUESTS_PER_CLIENT = 100
TIME_CAP_S = 120.0
REQUEST_TIMEOUT_S = 30.0

_LIVE_WRITER = """
import sys, time, numpy as np
from tensorsight import SummaryWriter
w = SummaryWriter(sys.argv[1])
rng = np.random.default_rng(0)
step = 0
while True:  # a training run logging 10 scalars and a histogram every 10 ms
    for t in range(10):
        w.add_scalar(f"scalars/tag{t:02d}", float(np.sin(step / 50 + t)), step)
    w.add_histogram("weights", rng.standard_normal(1000), step)
    step += 1
    time.sleep(0.01)
"""


@dataclass
class LoadResult:
    """What one load run saw: per-request latencies (s) and the failed requests."""

    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bodies: dict[str, int] = field(default_factory=dict)  # path -> answers seen
    wall_s: float = 0.0
    sent: int = 0
    retries: int = 0  # requests sent again after the server closed an idle connection

    @property
    def answered(self) -> int:
        return len(self.latencies)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> str:
        rate = self.answered / self.wall_s if self.wall_s else 0.0
        return (
            f"{self.answered:,}/{self.sent:,} answered in {self.wall_s:.1f} s: {rate:,.0f} req/s, "
            f"p50 {self.percentile(0.5) * 1000:.0f} ms, p99 {self.percentile(0.99) * 1000:.0f} ms, "
            f"errors {len(self.errors)}, resent after a keep-alive close {self.retries}"
        )


def hammer(
    host: str,
    port: int,
    paths: Sequence[str],
    *,
    clients: int,
    requests_per_client: int,
    time_cap_s: float,
    check: Callable[[str, bytes], None] | None = None,
) -> LoadResult:
    """``clients`` threads each send ``requests_per_client`` GETs over one keep-alive
    connection to ``host:port``, cycling through ``paths`` (client ``i`` starts at path
    ``i``), until done or ``time_cap_s`` passed. ``check(path, body)`` may raise to count an
    answer as an error (a wrong body)."""
    result = LoadResult()
    lock = threading.Lock()
    stop_at = time.monotonic() + time_cap_s

    def client(i: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
        try:
            for k in range(requests_per_client):
                if time.monotonic() > stop_at:
                    return
                path = paths[(i + k) % len(paths)]
                start = time.perf_counter()
                error, retried = None, False
                while True:
                    try:
                        conn.request("GET", path, headers={"Accept": "application/json"})
                        response = conn.getresponse()
                        body = response.read()
                        if response.status != 200:
                            error = f"{path}: HTTP {response.status} {body[:200]!r}"
                        elif check is not None:
                            check(path, body)
                    except (http.client.RemoteDisconnected, ConnectionResetError) as exc:
                        # the server closed an idle keep-alive connection as the request
                        # went out: send it again once on a new one, as browsers do
                        conn.close()
                        conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
                        if not retried and k > 0:
                            retried = True
                            continue
                        error = f"{path}: {type(exc).__name__}: {exc}"
                    except Exception as exc:  # counted, then a fresh connection
                        error = f"{path}: {type(exc).__name__}: {exc}"
                        conn.close()
                        conn = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
                    break
                elapsed = time.perf_counter() - start
                with lock:
                    result.sent += 1
                    result.retries += retried
                    if error is None:
                        result.latencies.append(elapsed)
                        result.bodies[path] = result.bodies.get(path, 0) + 1
                    else:
                        result.errors.append(error)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(time_cap_s + REQUEST_TIMEOUT_S + 10)
    result.wall_s = time.perf_counter() - start
    return result


def make_logdir(root: Path, steps: int) -> Path:
    """3 finished runs x 10 scalar tags x ``steps``, histograms, images and text."""
    from tensorsight import SummaryWriter

    rng = np.random.default_rng(0)
    for r in range(3):
        with SummaryWriter(root / f"run{r}") as w:
            for step in range(steps):
                for t in range(10):
                    w.add_scalar(f"scalars/tag{t:02d}", float(np.sin(step / 50 + t + r)), step)
                if step % max(1, steps // 100) == 0:
                    w.add_histogram("weights", rng.standard_normal(1000) * (1 + r), step)
                if step % max(1, steps // 10) == 0:
                    w.add_image("samples", rng.random((3, 32, 32)), step)
                    w.add_text("notes", f"run {r} step {step}: **ok**", step)
    return root


def _q(**params: str) -> str:
    return urllib.parse.urlencode(params)


def tensorsight_paths() -> list[str]:
    paths = ["/api/runs"]
    for run in ("run0", "run1", "live"):
        paths += [
            "/api/runs",
            f"/api/views/scalars/series?{_q(run=run, tag='scalars/tag03', width='1000')}",
            f"/api/views/histograms/series?{_q(run=run, tag='weights')}",
        ]
    paths += [
        f"/api/views/images/list?{_q(run='run2', tag='samples')}",
        f"/api/views/text/series?{_q(run='run2', tag='notes/text_summary')}",
        "/api/views",
    ]
    return paths


def tensorboard_paths() -> list[str]:
    """The same requests in TensorBoard's data API."""
    paths = ["/data/runs"]
    for run in ("run0", "run1", "live"):
        paths += [
            "/data/runs",
            f"/data/plugin/scalars/scalars?{_q(run=run, tag='scalars/tag03')}",
            f"/data/plugin/histograms/histograms?{_q(run=run, tag='weights')}",
        ]
    paths += [
        f"/data/plugin/images/images?{_q(run='run2', tag='samples')}",
        f"/data/plugin/text/text?{_q(run='run2', tag='notes/text_summary')}",
        "/data/plugins_listing",
    ]
    return paths


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, path: str, ready: Callable[[bytes], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            conn.close()
            if response.status == 200 and ready(body):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"127.0.0.1:{port}{path} was not ready within {timeout:g} s")


def _has_live_run(body: bytes) -> bool:
    data = json.loads(body)
    names = [r["name"] for r in data["runs"]] if isinstance(data, dict) else list(data)
    return {"run0", "run1", "run2", "live"} <= set(names)


def _serve_and_hammer(
    argv: list[str], port: int, ready_path: str, paths: list[str], clients: int, per: int
) -> LoadResult:
    """Start the server, wait until it lists every run and answers for the live run's
    histograms (the live run is listed as soon as its file exists, before it holds a
    record: a request for its tags then is a correct 404), then hammer it."""
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_ready(port, ready_path, _has_live_run, 300)
        live = next(p for p in paths if "histograms" in p and "run=live" in p)
        _wait_ready(port, live, lambda body: True, 60)
        return hammer(
            "127.0.0.1", port, paths, clients=clients, requests_per_client=per,
            time_cap_s=TIME_CAP_S,
        )  # fmt: skip
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stderr is not None:
            server.stderr.close()


def run(h: Harness) -> None:
    clients, per = (4, 20) if h.quick else (CLIENTS, REQUESTS_PER_CLIENT)
    tmp = Path(tempfile.mkdtemp(prefix="bench_load_"))
    try:
        logdir = make_logdir(tmp / "logdir", 500 if h.quick else 5_000)
        writer = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, str(logdir / "live")])
        try:
            routes = len(tensorsight_paths())
            h.note(
                f"{clients} clients x {per} requests, {routes} routes, a writer appending "
                "1,000 scalars/s + 100 histograms/s to run 'live'"
            )
            tensorboard = shutil.which("tensorboard", path=os.path.dirname(sys.executable))
            repeat = 1 if h.quick else h.repeat
            for _ in range(repeat):
                port = free_port()
                argv = [sys.executable, "-m", "tensorsight", "board", "--logdir", str(logdir),
                        "--port", str(port), "--reload-interval", "1", "--quiet"]  # fmt: skip
                ours = _serve_and_hammer(argv, port, "/api/runs", tensorsight_paths(), clients, per)
                label = "tensorsight board"
                h.results.setdefault(label, Result(label)).seconds.append(ours.wall_s)
                h.note(f"tensorsight board: {ours.summary()}")
                for error in ours.errors[:3]:
                    h.note(f"  error: {error}")
                if h.quick or not tensorboard:
                    continue
                port = free_port()
                argv = [tensorboard, "--logdir", str(logdir), "--port", str(port),
                        "--load_fast=true", "--reload_interval", "1"]  # fmt: skip
                anchor = _serve_and_hammer(
                    argv, port, "/data/runs", tensorboard_paths(), clients, per
                )
                label = "tensorboard --load_fast=true"
                h.results.setdefault(label, Result(label)).seconds.append(anchor.wall_s)
                h.note(f"tensorboard:       {anchor.summary()}")
                for error in anchor.errors[:3]:
                    h.note(f"  error: {error}")
            if not h.quick and tensorboard:
                h.compare("tensorboard --load_fast=true")
            elif not tensorboard:
                h.note("tensorboard not installed: no anchor (pip install tensorboard)")
        finally:
            writer.kill()
            writer.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
