"""Reading dumps back: layouts, cut-off and corrupt files, hostile references."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

import tensorsight
from tensorsight.capture import DumpManifest, read_dump
from tensorsight.dumpformat._safetensors import ShardEntry, ShardFile, to_float32, write_shard
from tensorsight.errors import DumpFormatError, InputFileError, SchemaVersionError


@pytest.fixture
def small_dump(tmp_path):
    with tensorsight.dump(tmp_path / "d", mode="tensor") as d:
        for _ in range(2):
            torch.relu(torch.arange(-3.0, 3.0)) * 2
            d.step()
    return tmp_path / "d"


def test_missing_and_non_dump_folders(tmp_path):
    with pytest.raises(InputFileError, match="does not exist"):
        read_dump(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputFileError, match="is not a folder"):
        read_dump(tmp_path / "f")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DumpFormatError, match="not a dump"):
        read_dump(tmp_path / "empty")


def test_layout_and_rank_folder(small_dump):
    d = read_dump(small_dump)
    assert (d.format, d.ranks, d.steps()) == ("tensorsight", [0], [0, 1])
    assert read_dump(small_dump / "rank0").steps() == [0, 1]
    with pytest.raises(DumpFormatError, match="no rank 3"):
        d.step(rank=3)
    with pytest.raises(DumpFormatError, match="has no step 7"):
        d.step(step=7)
    assert [s.step for s in d.iter_steps()] == [0, 1]


def test_a_rank_folder_opened_directly_reads_its_manifest(small_dump, tmp_path):
    """``read_dump(".../rank2").manifest(2)`` read ``rank2/rank2/manifest.json``."""
    whole = read_dump(small_dump).manifest(0)
    assert whole is not None
    moved = tmp_path / "copy" / "rank2"
    shutil.copytree(small_dump / "rank0", moved)
    d = read_dump(moved)
    assert d.ranks == [2]
    manifest = d.manifest(2)
    assert manifest == whole  # the same file, read from the rank folder itself
    assert d.manifest() == manifest
    assert d.complete
    assert [s.rank for s in d.iter_steps()] == [2, 2]
    assert d.step(2, 1).ops  # opening a step consults the manifest too
    with pytest.raises(DumpFormatError, match="no rank 0"):
        d.manifest(0)
    gone = read_dump(moved)
    (moved / "manifest.json").unlink()
    with pytest.raises(DumpFormatError, match=r"rank2/manifest.json'?: missing"):
        gone.manifest(2)


def test_cut_off_log_keeps_complete_records(small_dump):
    step_dir = small_dump / "rank0" / "step0"
    rows = read_dump(small_dump).step().rows
    (step_dir / "ops.parquet").unlink()
    lines = [json.dumps(r.to_row()) for r in rows]
    (step_dir / "ops.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:17])
    again = read_dump(small_dump).step().rows
    assert again == rows[:-1]
    (step_dir / "ops.jsonl").write_text(lines[0] + "\n{garbage\n" + lines[1] + "\n")
    with pytest.raises(DumpFormatError, match="line 2 is not JSON"):
        read_dump(small_dump).step().rows  # noqa: B018


def test_corrupt_parquet_and_missing_table(small_dump):
    step_dir = small_dump / "rank0" / "step0"
    (step_dir / "ops.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DumpFormatError, match="unreadable Parquet"):
        read_dump(small_dump).step().rows  # noqa: B018
    (step_dir / "ops.parquet").unlink()
    with pytest.raises(DumpFormatError, match="no op table"):
        read_dump(small_dump).step().rows  # noqa: B018


def test_a_step_cut_off_before_its_first_log_lines_has_no_rows(small_dump):
    """A crash within a step's first LOG_SECS leaves its folder without an op table: in a
    dump marked incomplete that step is empty, in a complete one it is an error."""
    step_dir = small_dump / "rank0" / "step1"
    (step_dir / "ops.parquet").unlink()
    with pytest.raises(DumpFormatError, match="no op table"):
        read_dump(small_dump).step(step=1).rows  # noqa: B018
    manifest = small_dump / "rank0" / "manifest.json"
    raw = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**raw, "complete": False}))
    dump = read_dump(small_dump)
    assert dump.step(step=1).rows == ()
    assert dump.step(step=0).rows  # the other step reads as before


def test_truncated_shard_and_hostile_reference(small_dump):
    step = read_dump(small_dump).step()
    row = step.rows[0]
    shard = small_dump / "rank0" / "step0" / row.data.split(":")[0]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) - 8])
    with pytest.raises(DumpFormatError, match="cut off"):
        step.load(step.rows[-1])
    step.close()
    shard.write_bytes(data[:5])
    with pytest.raises(DumpFormatError, match="truncated"):
        read_dump(small_dump).step().load(row)
    hostile = row.__class__(**{**row.__dict__, "data": "../../etc/passwd:t0"})
    with pytest.raises(DumpFormatError, match="not a shard file name"):
        read_dump(small_dump).step().load(hostile)
    no_data = row.__class__(**{**row.__dict__, "data": None})
    with pytest.raises(DumpFormatError, match="mode='tensor'"):
        read_dump(small_dump).step().load(no_data)


def test_manifest_versions(small_dump):
    path = small_dump / "rank0" / "manifest.json"
    raw = json.loads(path.read_text())
    m = DumpManifest.from_json(path.read_text())
    assert DumpManifest.from_json(m.to_json()) == m
    with pytest.raises(SchemaVersionError, match="Upgrade tensorsight"):
        DumpManifest.from_json(json.dumps({**raw, "schema_version": 99}))
    with pytest.raises(DumpFormatError, match="not a tensorsight dump manifest"):
        DumpManifest.from_json(json.dumps({"format": "other"}))
    with pytest.raises(DumpFormatError, match="not valid JSON"):
        DumpManifest.from_json("{")
    with pytest.raises(DumpFormatError, match="fields of DumpManifest"):
        DumpManifest.from_json(json.dumps({**raw, "surprise": 1}))


DTYPES = [
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn,
    torch.float8_e5m2, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
]  # fmt: skip


def test_shards_open_with_safetensors_and_round_trip_every_dtype(tmp_path):
    safe_open = pytest.importorskip("safetensors").safe_open

    from tensorsight.capture._torch_stats import dtype_name, tensor_bytes

    torch.manual_seed(0)
    tensors = {f"k{i}": (torch.randn(3, 5) * 10).to(dt) for i, dt in enumerate(DTYPES)}
    tensors["scalar"] = torch.tensor(2.5, dtype=torch.bfloat16)
    tensors["empty"] = torch.empty(0, 4)
    entries = [
        ShardEntry(k, dtype_name(t.dtype), tuple(t.shape), tensor_bytes(t))
        for k, t in tensors.items()
    ]
    path = tmp_path / "s.safetensors"
    write_shard(path, entries, {"who": "test"})
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == {"who": "test"}
        for k, t in tensors.items():
            assert torch.equal(f.get_tensor(k), t), k
    shard = ShardFile(path)
    for k, t in tensors.items():
        bits = shard.get(k)
        name = dtype_name(t.dtype)
        if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            np.testing.assert_array_equal(to_float32(bits, name), t.float().numpy())
        else:
            np.testing.assert_array_equal(bits, t.numpy())
    shard.close()


def test_raw_conversions_cover_every_bit_pattern():
    for dt, bits_dtype, width in (
        (torch.bfloat16, torch.int16, 1 << 16),
        (torch.float8_e4m3fn, torch.uint8, 256),
        (torch.float8_e5m2, torch.uint8, 256),
    ):
        codes = torch.arange(width, dtype=torch.int64).to(torch.int32)
        raw = codes.to(torch.int16 if bits_dtype == torch.int16 else torch.uint8)
        values = raw.view(dt).float().numpy()
        unsigned = raw.numpy().view(np.uint16) if bits_dtype == torch.int16 else raw.numpy()
        np.testing.assert_array_equal(to_float32(unsigned, str(dt).split(".")[1]), values)


def test_copying_a_dump_keeps_it_readable(small_dump, tmp_path):
    shutil.copytree(small_dump, tmp_path / "copy")
    a = read_dump(small_dump).step()
    b = read_dump(tmp_path / "copy").step()
    assert a.rows == b.rows
    np.testing.assert_array_equal(a.load(a.rows[-1]), b.load(b.rows[-1]))
    a.close()
    b.close()


def test_plain_header_entries_check_as_the_full_check_does(tmp_path):
    """The shard header's quick check (``_plain_entry``) gives the full check's entry for
    plain ones and declines anything unusual, which the full check then names."""
    from tensorsight.dumpformat import _safetensors

    path = tmp_path / "t.safetensors"
    arrays = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.zeros((0, 4), dtype=np.float64),
        "c": np.array(3, dtype=np.int64),
    }
    entries = [
        ShardEntry(k, str(v.dtype), v.shape, memoryview(v.tobytes())) for k, v in arrays.items()
    ]
    write_shard(path, entries, {"who": "test"})
    shard = ShardFile(path)
    room = shard._size - shard._start
    raw = json.loads(bytes(shard._buf[8 : shard._start]))
    raw.pop("__metadata__", None)
    for key, info in raw.items():
        assert _safetensors._plain_entry(info, room) == shard._entry(key, info)
    info = raw["a"]
    odd = [
        {**info, "shape": [True, 3]},
        {**info, "shape": [2.0, 3]},
        {**info, "shape": [-2, -3]},
        {**info, "data_offsets": [float(o) for o in info["data_offsets"]]},
        {**info, "data_offsets": [info["data_offsets"][0], room + 24]},
        {**info, "data_offsets": [info["data_offsets"][0], info["data_offsets"][1] - 4]},
        {**info, "dtype": "Q9"},
        {**info, "dtype": ["F32"]},
        [info],
    ]
    for bad in odd:
        assert _safetensors._plain_entry(bad, room) is None
    shard.close()


def test_op_table_reads_as_pyarrow_parquet_reads_it(small_dump):
    """The op table read without importing ``pyarrow.parquet`` is its ``ParquetFile`` read."""
    import pyarrow.parquet as pq

    from tensorsight.dumpformat import _table

    step = next(small_dump.rglob("ops.parquet"))
    assert _table._read_parquet(step).equals(pq.ParquetFile(step).read())


def test_op_table_reads_through_the_public_class_when_the_private_one_changed(
    small_dump, monkeypatch
):
    """Another pyarrow whose private reader takes other arguments (a TypeError) or is gone
    still reads the table, through ``ParquetFile``."""
    import pyarrow._parquet as private
    import pyarrow.parquet as pq

    from tensorsight.dumpformat import _table

    step = next(small_dump.rglob("ops.parquet"))
    want = pq.ParquetFile(step).read()

    class Changed:
        def open(self, source, *, required_new_argument):
            raise AssertionError("not reached")

    monkeypatch.setattr(private, "ParquetReader", Changed)
    assert _table._read_parquet(step).equals(want)
    monkeypatch.delattr(private, "ParquetReader")
    assert _table._read_parquet(step).equals(want)
