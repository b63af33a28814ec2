"""remote: read a logdir from an S3 server on loopback vs the same logdir on the local disk.

Data: 8 runs of SummaryWriter output (4 scalar tags x 5,000 steps and 2 histogram tags x
200 steps each, ~10 MB in all; ``--quick``: 4 runs x 1,000 steps), written locally once and
uploaded to moto's S3 server on 127.0.0.1 (started here). Cases, each a whole
``read_logdir`` that keeps every point:

- ``local`` (anchor): the folder on disk;
- ``s3 (moto)``: ``s3://bench/logs`` through s3fs: one recursive listing, one ranged GET per
  file (the poll a board makes on a remote logdir);
- ``s3 poll, unchanged``: ``Logdir.reload()`` of the S3 logdir when nothing changed (the
  cost of every later poll: one LIST).

Goal (issue 23): a remote ingest within 2x of the local one through the server on loopback.
Needs ``s3fs`` and ``moto[server]`` (requirements/dev.txt); skipped with a note otherwise.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path

from benchmarks.harness import Harness


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write(root: Path, runs: int, steps: int) -> int:
    from tensorsight.summary import SummaryWriter

    for r in range(runs):
        with SummaryWriter(str(root / f"run{r}")) as w:
            for s in range(steps):
                for t in range(4):
                    w.add_scalar(f"loss/{t}", 1.0 / (s + 1 + t), s)
                if s % (steps // 200 or 1) == 0:
                    for t in range(2):
                        w.add_histogram(f"w/{t}", [0.01 * s, 0.2, 0.3, float(t)], s)
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def run(h: Harness) -> None:
    try:
        import boto3
        import s3fs  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        h.note(f"remote: skipped ({exc}; pip install s3fs 'moto[server]')")
        return
    from tensorsight.summary import read_logdir

    runs, steps = (4, 1_000) if h.quick else (8, 5_000)
    tmp = Path(tempfile.mkdtemp(prefix="ts-bench-remote-"))
    port = _free_port()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's per-request lines
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        size = _write(tmp / "logs", runs, steps)
        client = boto3.client("s3")
        client.create_bucket(Bucket="bench")
        for f in sorted((tmp / "logs").rglob("*")):
            if f.is_file():
                client.upload_file(str(f), "bench", f"logs/{f.relative_to(tmp / 'logs')}")
        counts: dict[str, int] = {}

        def local() -> None:
            d = read_logdir(tmp / "logs")
            counts["local"] = sum(len(d.scalars(r, "loss/0")) for r in d.runs)

        def remote() -> None:
            d = read_logdir("s3://bench/logs")
            counts["s3"] = sum(len(d.scalars(r, "loss/0")) for r in d.runs)

        h.measure("local", local)
        h.measure("s3 (moto)", remote)
        polled = read_logdir("s3://bench/logs")
        h.measure("s3 poll, unchanged", polled.reload)
        h.compare("local")
        h.note(
            f"{runs} runs, {size / 1e6:.1f} MB of event files; points of loss/0 read: local "
            f"{counts['local']}, s3 {counts['s3']} "
            f"({'same' if counts['local'] == counts['s3'] else 'DIFFERENT'})"
        )
        h.note("goal: s3 (moto) within 2x of local (speed vs anchor >= x0.50)")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
