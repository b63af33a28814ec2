"""Dumps on S3: compare and inspect read ``s3://`` dumps where they are (a moto S3 server).

The dumps are real (``tensorsight.dump`` of a tiny MLP, four ranks, a planted bug on one),
written locally and uploaded object by object, as a job that keeps its dumps on S3 does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")
pytest.importorskip("s3fs")
pytest.importorskip("torch")

from tensorsight.compare import compare
from tensorsight.dumpformat import _fs, read_dump
from tensorsight.errors import InputFileError
from tests._s3 import s3_server, upload_tree
from tests.compare._ranks import BUG_RANK, RANKS, make_rank_dumps
from tests.conftest import run_cli

pytestmark = pytest.mark.integration

BUCKET = "dumps"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    local = make_rank_dumps(tmp_path_factory.mktemp("remote_ranks"))
    with s3_server(BUCKET) as client:
        for name in ("bench", "target"):
            upload_tree(client, local[name], BUCKET, f"run/{name}")
        yield client, local


def _rows(result):
    return [(r.rank, r.index, r.op, r.tensor, r.verdict) for r in result.rows]


def _remote(name: str) -> str:
    return f"s3://{BUCKET}/run/{name}"


def test_an_s3_pair_compares_as_the_same_pair_read_locally(s3):
    _, local = s3
    here = compare(local["bench"], local["target"], executor="threads")
    there = compare(_remote("bench"), _remote("target"), executor="threads")
    assert there.bench == _remote("bench")
    assert _rows(there) == _rows(here)
    assert there.first_divergence is not None
    assert there.first_divergence.rank == here.first_divergence.rank == BUG_RANK
    assert there.first_divergence.op == here.first_divergence.op
    assert there.ranks == tuple(range(RANKS))
    assert there.missing == ()
    assert [r.cosine for r in there.rows] == [r.cosine for r in here.rows]


def test_a_remote_tensor_is_the_same_bits_as_the_local_one(s3):
    _, local = s3
    here, there = read_dump(local["target"]), read_dump(_remote("target"))
    assert there.format == "tensorsight"
    assert there.ranks == here.ranks
    assert there.manifest(BUG_RANK) == here.manifest(BUG_RANK)
    a, b = here.step(BUG_RANK), there.step(BUG_RANK)
    assert a.rows == b.rows
    stored = [row for row in a.rows if row.data is not None]
    assert stored
    for row in stored:
        x, y = a.load_raw(row), b.load_raw(row)
        assert x.dtype == y.dtype
        assert np.array_equal(x.bits, y.bits)
    a.close()
    b.close()


def test_one_tensor_of_a_large_shard_is_a_ranged_read(s3, tmp_path, monkeypatch):
    """A reader that needs one tensor fetches the header block and that tensor, not the object."""
    client, _ = s3
    from tensorsight.dumpformat import _safetensors

    arrays = {f"t{i}": np.full((256, 256), i, dtype=np.float32) for i in range(16)}  # 4 MiB
    shard = tmp_path / "big.safetensors"
    entries = [
        _safetensors.ShardEntry(k, "float32", v.shape, memoryview(v).cast("B"))
        for k, v in arrays.items()
    ]
    _safetensors.write_shard(shard, entries, {})
    client.put_object(Bucket=BUCKET, Key="big/s.safetensors", Body=shard.read_bytes())
    fetched: list[tuple[int, int | None]] = []
    real = _fs.read_range

    def counting(path, start, end):
        fetched.append((start, end))
        return real(path, start, end)

    monkeypatch.setattr(_fs, "READ_AHEAD", 512 << 10)  # header, t0, t1
    monkeypatch.setattr(_fs, "read_range", counting)
    f = _safetensors.ShardFile(_fs.RemotePath(f"s3://{BUCKET}/big/s.safetensors"))
    assert np.array_equal(f.get("t11"), arrays["t11"])
    assert np.array_equal(f.get("t0"), arrays["t0"])  # in the first block: no new request
    got = sum((end or 0) - start for start, end in fetched)
    assert len(fetched) == 2
    assert got < shard.stat().st_size // 4


def test_inspect_reads_an_s3_dump(s3):
    _, local = s3
    proc = run_cli("inspect", _remote("bench"), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["path"] == _remote("bench")
    assert doc["format"] == "tensorsight"
    assert sorted({s["rank"] for s in doc["steps"]}) == list(range(RANKS))
    size = sum(p.stat().st_size for p in local["bench"].rglob("*") if p.is_file())
    assert doc["size_bytes"] == size


def test_the_cli_compares_two_s3_dumps(s3, tmp_path):
    proc = run_cli("compare", _remote("bench"), _remote("target"), "-o", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr  # the planted bug
    assert f"rank {BUG_RANK}" in proc.stdout
    saved = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert saved["bench"] == _remote("bench")


def test_an_object_that_fails_once_is_read_again(s3, monkeypatch):
    """A read that fails (a throttled or replaced object) is retried with the pair."""
    _, local = s3
    real = _fs.read_range
    failed: list[str] = []

    def flaky(path, start, end):
        if path.url.endswith(".safetensors") and f"/rank{BUG_RANK}/" in path.url and not failed:
            failed.append(path.url)
            raise FileNotFoundError(path.url)
        return real(path, start, end)

    monkeypatch.setattr(_fs, "read_range", flaky)
    there = compare(_remote("bench"), _remote("target"), executor="threads")
    assert failed, "the planted failure was never reached"
    assert there.missing == ()
    assert there.first_divergence is not None
    assert there.first_divergence.rank == BUG_RANK
    here = compare(local["bench"], local["target"], executor="threads")
    assert _rows(there) == _rows(here)


def test_a_vanished_object_leaves_a_named_missing_pair_and_exit_3(s3):
    client, local = s3
    upload_tree(client, local["target"], BUCKET, "gone/target")
    keys = client.list_objects_v2(Bucket=BUCKET, Prefix="gone/target/rank1/")["Contents"]
    shard = next(k["Key"] for k in keys if k["Key"].endswith(".safetensors"))
    client.delete_object(Bucket=BUCKET, Key=shard)
    result = compare(_remote("bench"), f"s3://{BUCKET}/gone/target", executor="threads")
    assert [m.rank for m in result.missing] == [1]
    assert "retried" in result.missing[0].reason
    assert shard.rpartition("/")[2] in result.missing[0].reason
    assert result.first_divergence is not None
    assert result.first_divergence.rank == BUG_RANK
    proc = run_cli("compare", _remote("bench"), f"s3://{BUCKET}/gone/target", "-q")
    assert proc.returncode == 3, proc.stderr


def test_a_missing_remote_dump_is_one_line(s3):
    with pytest.raises(InputFileError, match="no objects below it"):
        read_dump(f"s3://{BUCKET}/nothing-here")
    proc = run_cli("compare", f"s3://{BUCKET}/nothing-here", _remote("target"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "nothing-here" in proc.stderr


def test_the_boards_drill_down_reads_the_remote_dumps(s3, tmp_path):
    """A comparison of S3 dumps, saved in a local logdir: the drill-down reads the tensors
    from S3 and shows what the same comparison of the local copies shows."""
    from tensorsight.board.views.comparison import detail
    from tensorsight.board.views.comparison.detail import DetailLimits
    from tensorsight.data.comparisons import ComparisonStore

    _, local = s3
    limits = DetailLimits(top_n=5, heatmap_cells=4)
    details = []
    for where, (bench, target) in {
        "remote": (_remote("bench"), _remote("target")),
        "local": (local["bench"], local["target"]),
    }.items():
        out = tmp_path / where / "cmp"
        out.mkdir(parents=True)
        compare(bench, target, executor="threads").to_json(out / "comparison.json")
        store = ComparisonStore(tmp_path / where)
        first = store.list()[0].first_divergence
        assert first is not None
        details.append(detail(store, "cmp", first, limits))
    there, here = details
    assert there.note is None, there.note
    assert there.bench == here.bench
    assert there.target == here.target
    assert there.worst == here.worst
    assert there.worst[0].abs_err > 0


def test_one_remote_rank_pair_is_retried_then_named_missing(s3, monkeypatch):
    """Without an executor one pair runs in-process; at a URL it is retried like a task."""
    real = _fs.read_range
    failures = {"left": 1}

    def flaky(path, start, end):
        if path.url.endswith(".safetensors") and failures["left"]:
            failures["left"] -= 1
            raise FileNotFoundError(path.url)
        return real(path, start, end)

    monkeypatch.setattr(_fs, "read_range", flaky)
    once = compare(_remote("bench"), _remote("target"), rank=[BUG_RANK])
    assert once.missing == ()
    assert once.first_divergence is not None
    failures["left"] = 10**6  # every shard read fails
    twice = compare(_remote("bench"), _remote("target"), rank=[BUG_RANK], allow_incomplete=True)
    assert [m.rank for m in twice.missing] == [BUG_RANK]
    assert "again when retried" in twice.missing[0].reason
    assert twice.rows == ()
