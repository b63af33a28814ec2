"""A bounded load test: concurrent clients on 127.0.0.1 while a writer appends to the logdir.

The real board (uvicorn, a LogdirProvider over event files written by SummaryWriter,
reloading every 0.2 s) serves a fixed number of requests from several keep-alive clients
over the run list and the heavy view routes while a writer thread keeps appending to one
run. Every request must be answered with a 200 and a well-formed body; the figures
(req/s, latencies) belong to ``python -m benchmarks load``, not here.
"""

from __future__ import annotations

import json
import threading
import time

from benchmarks.bench_load import hammer, make_logdir, tensorsight_paths

from tensorsight import SummaryWriter
from tensorsight.data import LogdirProvider
from tests.e2e.conftest import board_server

CLIENTS = 6
REQUESTS_PER_CLIENT = 15


def _check(path: str, body: bytes) -> None:
    data = json.loads(body)
    if path.startswith("/api/runs"):
        assert {"run0", "run1", "run2", "live"} <= {r["name"] for r in data["runs"]}
    elif path.startswith("/api/views?") or path == "/api/views":
        assert {v["name"] for v in data["views"]} >= {"scalars", "histograms"}
    elif "/scalars/series" in path:
        assert data["returned_points"] > 0
    elif "/histograms/series" in path:
        assert data["records"]
        first = data["records"][0]
        assert len(first["edges"]) == len(first["counts"]) + 1
    elif "/images/list" in path or "/text/series" in path:
        assert data


def test_concurrent_clients_are_all_answered_while_a_writer_appends(tmp_path):
    logdir = make_logdir(tmp_path, 60)
    stop = threading.Event()
    live = SummaryWriter(logdir / "live", flush_secs=0.1)
    for step in range(5):
        live.add_scalar("scalars/tag03", float(step), step)
        live.add_histogram("weights", [0.0, 1.0, float(step)], step)
    live.flush()

    def append() -> None:
        step = 5
        while not stop.wait(0.005):
            live.add_scalar("scalars/tag03", float(step), step)
            live.add_histogram("weights", [0.0, 1.0, float(step)], step)
            step += 1

    writer = threading.Thread(target=append, daemon=True)
    provider = LogdirProvider(logdir)
    provider.reload()
    writer.start()
    try:
        with board_server(provider, reload_interval_secs=0.2) as url:
            port = int(url.rsplit(":", 1)[1])
            paths = tensorsight_paths()
            result = hammer(
                "127.0.0.1", port, paths, clients=CLIENTS,
                requests_per_client=REQUESTS_PER_CLIENT, time_cap_s=120, check=_check,
            )  # fmt: skip
            # a quiet machine may answer every request before the first 0.2 s reload: the
            # reloader must still pick up the writer's records while the board serves
            deadline = time.monotonic() + 30
            while provider.generation <= 1 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        stop.set()
        writer.join(10)
        live.close()
    assert result.errors == []
    assert result.sent == result.answered == CLIENTS * REQUESTS_PER_CLIENT
    assert set(result.bodies) == set(paths)  # every route was hit and answered
    # the reloader, running beside the server (its requests may all be answered before its
    # first pass on a quiet machine), picked up the writer's records
    assert provider.generation > 1
