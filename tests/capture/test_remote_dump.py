"""``dump("s3://...")``: staged locally, each file uploaded once, read back where it is."""

from __future__ import annotations

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")
pytest.importorskip("s3fs")
torch = pytest.importorskip("torch")

from tensorsight.capture import dump  # noqa: E402
from tensorsight.compare import compare  # noqa: E402
from tensorsight.dumpformat import read_dump  # noqa: E402
from tensorsight.errors import UsageError  # noqa: E402
from tests._s3 import s3_server  # noqa: E402

pytestmark = pytest.mark.integration

BUCKET = "written"


@pytest.fixture(scope="module")
def s3():
    with s3_server(BUCKET) as client:
        yield client


def _run(path, monkeypatch=None, **options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    x = torch.randn(4, 8)
    with dump(path, mode="tensor", **options) as d:
        for _ in range(2):
            model(x).sum().backward()
            d.step()
    return d


def test_a_dump_to_s3_uploads_each_file_once_and_reads_back_as_the_local_one(
    s3, tmp_path, monkeypatch
):
    import s3fs

    puts: list[str] = []
    real = s3fs.S3FileSystem.put_file

    def counting(self, lpath, rpath, *args, **kwargs):
        puts.append(rpath.partition("/run/a/")[2])
        return real(self, lpath, rpath, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "put_file", counting)
    url = f"s3://{BUCKET}/run/a"
    session = _run(url)
    assert session.url == url
    assert not session.path.exists()  # the staging folder is gone once uploaded
    _run(tmp_path / "local")
    local = sorted(
        p.relative_to(tmp_path / "local").as_posix()
        for p in (tmp_path / "local").rglob("*")
        if p.is_file()
    )
    keys = sorted(
        o["Key"].removeprefix("run/a/")
        for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="run/a/")["Contents"]
    )
    assert keys == local
    assert sorted(puts) == local  # one upload per file
    assert puts[-1] == "rank0/manifest.json"  # last: a reader that finds it finds the rest
    remote = read_dump(url)
    assert remote.complete
    assert remote.steps() == [0, 1]
    result = compare(url, tmp_path / "local")
    assert result.first_divergence is None
    assert result.rows
    assert all(r.verdict == "pass" for r in result.rows)


def test_an_existing_remote_rank_is_refused_unless_overwrite(s3):
    url = f"s3://{BUCKET}/run/b"
    _run(url, steps=[0, 1])
    with pytest.raises(UsageError, match="rank0"):
        _run(url)
    _run(url, steps=[0], overwrite=True)
    assert read_dump(url).steps() == [0]  # the older step 1 is gone with the overwrite
