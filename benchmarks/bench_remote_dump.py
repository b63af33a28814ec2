"""remote_dump: compare two dumps read from an S3 server on loopback vs the same dumps on disk.

Data: two ``tensorsight.dump(mode="tensor")`` runs of an 8-layer MLP (width 256, batch 64;
the target with one weight scaled by 1.02), copied to 4 ranks each (``--quick``: 2 ranks;
~34 MB a rank), written locally and uploaded object by object to moto's S3 server on 127.0.0.1
(started here, in its own process, as a real server would be). Cases, each a whole
``compare`` with the default executor for several ranks (threads):

- ``local`` (anchor): the folders on disk (memory-mapped shards);
- ``s3 (moto)``: ``s3://bench/...`` through s3fs: one listing per rank folder, one GET per
  manifest and op table, ranged GETs of the shards (32 MiB read-ahead);
- ``s3 GET only``: every object of both dumps fetched whole by s3fs (``cat``, concurrent),
  nothing compared: the transport's floor on this machine.

Both must give the same rows and first divergence. Wall time is the table; the notes add
this process's CPU time and, for ``s3``, the server process's (from ``/proc``).
Goal (issue 23): the remote compare within 2x of the local one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import Harness


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    msg = "moto's S3 server did not start within 120 s"
    raise RuntimeError(msg)


def _make_dumps(root: Path, width: int, ranks: int) -> tuple[Path, Path]:
    import torch

    import tensorsight

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[m for _ in range(8) for m in (torch.nn.Linear(width, width), torch.nn.GELU())]
    )
    x = torch.randn(64, width)

    def capture(path: Path) -> Path:
        with tensorsight.dump(path, mode="tensor", steps=[0], overwrite=True):
            model(x).sum().backward()
        return path / "rank0"

    ok = capture(root / "ok")
    with torch.no_grad():
        model[6].weight.mul_(1.02)
    bug = capture(root / "bug")
    bench, target = root / "bench", root / "target"
    for r in range(ranks):
        shutil.copytree(ok, bench / f"rank{r}")
        shutil.copytree(bug if r == ranks - 1 else ok, target / f"rank{r}")
    return bench, target


def client_keys(client: Any) -> list[str]:
    """Every key of the bench bucket."""
    pages = client.get_paginator("list_objects_v2").paginate(Bucket="bench")
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def _where(result: Any) -> tuple[Any, ...]:
    f = result.first_divergence
    first = None if f is None else (f.rank, f.index, f.op, f.tensor)
    return (first, len(result.rows), tuple(r.cosine for r in result.rows))


def run(h: Harness) -> None:
    try:
        import boto3
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        h.note(f"remote_dump: skipped ({exc}; pip install s3fs 'moto[server]' torch)")
        return
    from tensorsight.compare import compare

    width, ranks = (256, 2) if h.quick else (256, 4)
    tmp = Path(tempfile.mkdtemp(prefix="ts-bench-remote-dump-"))
    port = _free_port()
    server = _start_server(port)
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        bench, target = _make_dumps(tmp, width, ranks)
        client = boto3.client("s3")
        client.create_bucket(Bucket="bench")
        size = 0
        for name, folder in (("bench", bench), ("target", target)):
            for f in sorted(folder.rglob("*")):
                if f.is_file():
                    client.upload_file(str(f), "bench", f"{name}/{f.relative_to(folder)}")
                    size += f.stat().st_size
        found: dict[str, tuple[Any, ...]] = {}
        cpu: dict[str, list[float]] = {}
        served: list[float] = []

        def case(label: str, b: Any, t: Any) -> None:
            def fn() -> None:
                start, on_server = time.process_time(), _server_cpu(server.pid)
                found[label] = _where(compare(b, t))
                cpu.setdefault(label, []).append(time.process_time() - start)
                if label != "local":
                    served.append(_server_cpu(server.pid) - on_server)

            h.measure(label, fn)

        case("local", bench, target)
        case("s3 (moto)", "s3://bench/bench", "s3://bench/target")
        import fsspec  # type: ignore[import-untyped]

        fs = fsspec.filesystem("s3")
        keys = [f"bench/{k}" for k in client_keys(client)]
        h.measure("s3 GET only", lambda: fs.cat(keys))
        h.compare("local")
        med = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
        same = found["local"] == found["s3 (moto)"]
        h.note(
            f"{ranks} rank pairs, {size / 1e6:.1f} MB of dumps; first divergence "
            f"{found['local'][0]}; same rows and first divergence: {'yes' if same else 'NO'}"
        )
        h.note(
            f"CPU of this process (median): local {med['local']:.2f} s, s3 "
            f"{med['s3 (moto)']:.2f} s (x{med['s3 (moto)'] / med['local']:.2f}); the S3 "
            f"server's process: {sorted(served)[len(served) // 2]:.2f} s per compare"
        )
        h.note("goal: s3 (moto) within 2x of local (speed vs anchor >= x0.50)")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
