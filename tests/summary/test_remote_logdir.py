"""Logdirs on S3: read_logdir and the board read ``s3://`` URLs from a real S3 server (moto).

The S3 server is moto's, on 127.0.0.1; s3fs talks to it through ``AWS_ENDPOINT_URL``.
Event files are written by our SummaryWriter locally and uploaded whole, as a remote writer
does (object stores do not append): a growing run is the same object uploaded again, longer.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")

from tensorsight.summary import (  # noqa: E402
    SummaryWriter,
    _fs,
    read_logdir,
)

pytestmark = pytest.mark.integration

BUCKET = "logs"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    port = _free_port()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's per-request lines
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    yield client, env
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


def _write_run(folder: Path, steps: range) -> Path:
    with SummaryWriter(str(folder)) as w:
        for s in steps:
            w.add_scalar("loss", 1.0 / (s + 1), s)
            w.add_histogram("w", [0.1 * s, 0.2, 0.3], s)
    (event,) = folder.glob("events.out.tfevents.*")
    return event


def _upload(client, local: Path, key: str, size: int | None = None) -> None:
    data = local.read_bytes()
    client.put_object(Bucket=BUCKET, Key=key, Body=data if size is None else data[:size])


def _losses(logdir, run):
    series = logdir.scalars(run, "loss")
    pairs = zip(series.steps.tolist(), series.values.tolist(), strict=True)
    return [(int(s), round(float(v), 6)) for s, v in pairs]


def test_read_logdir_of_an_s3_prefix_equals_the_local_read(s3, tmp_path):
    client, _ = s3
    for run in ("a/train", "b"):
        event = _write_run(tmp_path / run, range(20))
        _upload(client, event, f"same/{run}/{event.name}")
    client.put_object(Bucket=BUCKET, Key="same/a/checkpoint.pt", Body=b"not a log")
    local = read_logdir(tmp_path)
    remote = read_logdir(f"s3://{BUCKET}/same")
    assert sorted(remote.runs) == sorted(local.runs) == ["a/train", "b"]
    for run in local.runs:
        assert _losses(remote, run) == _losses(local, run)
        assert len(remote.histograms(run, "w")) == 20
    assert remote.problems == []


def test_a_growing_object_is_read_from_where_the_last_poll_stopped(s3, tmp_path):
    client, _ = s3
    event = _write_run(tmp_path / "live", range(50))
    key = f"live/run/{event.name}"
    whole = event.stat().st_size
    _upload(client, event, key, size=whole // 3)  # the first upload of a live run
    logdir = read_logdir(f"s3://{BUCKET}/live")
    first = len(_losses(logdir, "run"))
    assert 0 < first < 50
    _upload(client, event, key)  # replaced by a longer object
    result = logdir.reload()
    assert result.records > 0
    assert [s for s, _ in _losses(logdir, "run")] == list(range(50))
    assert logdir.problems == []


def test_one_listing_answers_every_stat_of_a_poll(s3, tmp_path):
    client, _ = s3
    event = _write_run(tmp_path / "x", range(3))
    _upload(client, event, f"stat/x/{event.name}")
    list(_fs.walk(f"s3://{BUCKET}/stat"))
    url = f"s3://{BUCKET}/stat/x/{event.name}"
    assert _fs.stat(url).size == event.stat().st_size  # from the listing, no HEAD request
    assert _fs.read_range(url, 0, 16) == event.read_bytes()[:16]


def test_a_missing_prefix_and_a_missing_bucket_are_one_line(s3):
    from tensorsight.errors import InputFileError

    with pytest.raises(InputFileError, match="not found"):
        read_logdir(f"s3://{BUCKET}/nothing-here")
    with pytest.raises(InputFileError, match="s3://no-such-bucket-x"):
        read_logdir("s3://no-such-bucket-x/logs")


def test_an_unknown_scheme_is_one_line_naming_it():
    from tensorsight.errors import InputFileError

    with pytest.raises(InputFileError, match=r"cannot open nosuchfs:// URLs"):
        read_logdir("nosuchfs://bucket/logs")


def test_without_the_scheme_package_the_error_names_the_extra():
    from tensorsight.errors import InputFileError

    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed here")
    with pytest.raises(InputFileError, match=r"pip install 'tensorsight\[gcs\]'"):
        read_logdir("gs://bucket/logs")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_the_board_shows_a_live_run_being_written_to_s3(s3, tmp_path):
    client, env = s3
    event = _write_run(tmp_path / "board", range(40))
    key = f"board/run1/{event.name}"
    _upload(client, event, key, size=event.stat().st_size // 4)
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "tensorsight", "board", "--logdir", f"s3://{BUCKET}/board",
            "--port", str(port), "--reload-interval", "1", "--quiet",
        ],
        env={**os.environ, **env, "PYTHONWARNINGS": "ignore"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        runs = None
        while time.monotonic() < deadline and runs is None:
            try:
                runs = _get(f"{base}/api/runs")
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"board exited: {proc.stderr.read()[-2000:]}")
                time.sleep(0.3)
        assert runs is not None, "the board did not answer"
        assert "run1" in json.dumps(runs)
        series = f"{base}/api/views/scalars/series?run=run1&tag=loss"
        before = _get(series)["total_points"]
        assert 0 < before < 40
        _upload(client, event, key)  # the writer uploads the longer object
        after = before
        while time.monotonic() < deadline and after < 40:
            time.sleep(0.5)
            after = _get(series)["total_points"]
        assert after == 40
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
