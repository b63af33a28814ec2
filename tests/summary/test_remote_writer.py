"""``SummaryWriter("s3://...")``: event files on S3 written in parts, read back remotely."""

from __future__ import annotations

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")
pytest.importorskip("s3fs")

from tensorsight.errors import InputFileError
from tensorsight.summary import SummaryWriter, _event_file, read_logdir
from tests._s3 import s3_server

pytestmark = pytest.mark.integration

BUCKET = "events"


@pytest.fixture(scope="module")
def s3():
    with s3_server(BUCKET) as client:
        yield client


def _keys(client, prefix):
    return sorted(
        o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    )


def test_a_run_written_to_s3_reads_back_whole_and_uploads_linearly(s3, monkeypatch):
    monkeypatch.setattr(_event_file, "PART_BYTES", 16 << 10)
    monkeypatch.setattr(_event_file, "UPLOAD_SECS", 0.0)  # every hand-off uploads: worst case
    steps = 10_000
    with SummaryWriter(f"s3://{BUCKET}/runs/a", flush_secs=1) as w:
        for s in range(steps):
            w.add_scalar("loss", 1.0 / (s + 1), s)
        remote = w._main._state.file
        assert isinstance(remote, _event_file.RemoteEventFile)
    keys = _keys(s3, "runs/a/")
    assert len(keys) >= 3  # the run went on in parts
    assert keys[1] == keys[0] + ".part00001"
    sizes = [s3.head_object(Bucket=BUCKET, Key=k)["ContentLength"] for k in keys]
    written = sum(sizes)
    # each upload replaces one part, and a part ends once it holds PART_BYTES (plus the one
    # hand-off that filled it): the bytes sent grow with the uploads times a part's size,
    # not with the run's size times the uploads
    assert max(sizes) < written / 2
    assert remote.uploaded_bytes <= remote.uploads * max(sizes)
    assert remote.uploaded_bytes >= written
    logdir = read_logdir(f"s3://{BUCKET}/runs")
    series = logdir.scalars("a", "loss")
    assert series.steps.tolist() == list(range(steps))
    assert logdir.problems == []


def test_one_large_hand_off_is_split_between_records(s3, monkeypatch):
    """A lagging writer thread hands off many records at once: the part still closes before
    the record that would take it past PART_BYTES, so no upload depends on the batching."""
    from tensorsight.summary._record import encode_record

    monkeypatch.setattr(_event_file, "PART_BYTES", 16 << 10)
    records = [encode_record(bytes([i % 251]) * 1000) for i in range(100)]  # ~100 KB
    f = _event_file.RemoteEventFile(f"s3://{BUCKET}/split/events.out.tfevents.1.x")
    f.write(b"".join(records))  # one hand-off
    f.close()
    keys = _keys(s3, "split/")
    assert len(keys) == 7  # 16 records of 1,016 bytes a part
    bodies = [s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys]
    assert all(len(b) <= 16 << 10 for b in bodies)
    assert b"".join(bodies) == b"".join(records)  # in order, none split
    assert f.uploaded_bytes == sum(map(len, bodies))


def test_a_live_run_is_visible_before_close(s3, monkeypatch):
    monkeypatch.setattr(_event_file, "UPLOAD_SECS", 0.0)
    w = SummaryWriter(f"s3://{BUCKET}/runs/live")
    for s in range(10):
        w.add_scalar("loss", float(s), s)
    w.flush()
    assert read_logdir(f"s3://{BUCKET}/runs/live").scalars(".", "loss").steps.tolist() == list(
        range(10)
    )
    w.close()


def test_a_bucket_that_does_not_exist_fails_at_creation(s3):
    with pytest.raises(InputFileError, match="upload failed"):
        SummaryWriter("s3://no-such-bucket-here/runs/a")
