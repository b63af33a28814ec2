"""An S3 server on 127.0.0.1 for the remote-dump tests: moto's ``ThreadedMotoServer``.

s3fs and boto3 reach it through ``AWS_ENDPOINT_URL``; the variables are set while the
server runs and restored after. Spawned workers inherit them.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def s3_server(*buckets: str) -> Iterator[Any]:
    """Start the server, create ``buckets``, yield a boto3 client."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = _free_port()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's per-request lines
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    _forget_clients()
    try:
        client = boto3.client("s3")
        for b in buckets:
            client.create_bucket(Bucket=b)
        yield client
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _forget_clients()
        server.stop()


def _forget_clients() -> None:
    """Drop s3fs's cached file systems: one made for another server keeps that endpoint."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def upload_tree(client: Any, local: Path, bucket: str, prefix: str) -> int:
    """Upload every file below ``local`` to ``s3://bucket/prefix/...``; the count."""
    n = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            client.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
            n += 1
    return n
