"""The event-file reader: framing, CRCs, resync, truncation, tail mode, C vs Python."""

from __future__ import annotations

import math

import numpy as np
import pytest
from tensorboardX import SummaryWriter as TbxWriter

from tensorsight.summary import _scan
from tensorsight.summary.reader import EventFileReader, iter_events
from tests.summary._events import (
    file_version_event,
    frame,
    scalar_event,
    tensor_scalar_event,
    write_events,
)

SCANNERS = [
    pytest.param(None, id="c"),
    pytest.param(False, id="python"),
]


def _scalars(reader: EventFileReader) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of one read(), from both the C and the protobuf path."""
    batch = reader.read()
    out: dict[str, list[tuple[int, int, float]]] = {}
    for p in batch.points:
        for s, v, q in zip(p.step, p.value, p.seq, strict=True):
            out.setdefault(batch.tag_names[p.tag], []).append((int(q), int(s), float(v)))
    for it in batch.items:
        if it.kind == "scalars":
            out.setdefault(it.tag, []).append((it.seq, it.step, it.payload))
    return {tag: [(s, v) for _, s, v in sorted(pts)] for tag, pts in out.items()}


def test_c_scanner_is_built_here():
    # gcc is present on every machine this project runs CI on; the fallback is tested below.
    assert _scan.accelerated()


@pytest.mark.parametrize("use_c", SCANNERS)
def test_tensorboardx_scalars_nan_inf_and_non_ascii_tags(tmp_path, use_c):
    with TbxWriter(str(tmp_path)) as w:
        for i, v in enumerate([1.5, math.nan, math.inf, -math.inf, -0.0]):
            w.add_scalar("损失/train_é", v, i)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    got = _scalars(EventFileReader(str(path), use_c=use_c))
    (tag,) = got
    assert tag == "损失/train_é"
    steps, values = zip(*got[tag], strict=True)
    assert steps == (0, 1, 2, 3, 4)
    assert values[0] == 1.5
    assert math.isnan(values[1])
    assert values[2] == math.inf
    assert values[3] == -math.inf
    assert math.copysign(1.0, values[4]) == -1.0


def test_c_and_python_paths_agree_on_mixed_layouts(tmp_path):
    events = [file_version_event()]
    for i in range(300):
        events.append(scalar_event("legacy", i * 0.25, i))
        events.append(tensor_scalar_event("tf2", -i * 0.5, i, metadata=i == 0))
        events.append(scalar_event("neg_step", 1.0, -5 - i))
    path = write_events(tmp_path / "events.out.tfevents.1.h", events)
    c = _scalars(EventFileReader(str(path), use_c=None))
    py = _scalars(EventFileReader(str(path), use_c=False))
    assert c == py
    assert c["tf2"][299] == (299, -149.5)
    assert c["neg_step"][0] == (-5, 1.0)


@pytest.mark.parametrize("use_c", SCANNERS)
def test_truncated_last_record_is_read_once_complete(tmp_path, use_c):
    data = frame([scalar_event("a", float(i), i) for i in range(5)])
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(data[:-7])
    reader = EventFileReader(str(path), use_c=use_c)
    assert [s for s, _ in _scalars(reader)["a"]] == [0, 1, 2, 3]
    assert reader.pending_bytes > 0
    path.write_bytes(data)  # the writer finishes the record
    assert _scalars(reader) == {"a": [(4, 4.0)]}
    assert reader.pending_bytes == 0
    assert _scalars(reader) == {}


@pytest.mark.parametrize("use_c", SCANNERS)
def test_corrupt_record_in_the_middle_is_skipped_with_a_problem(tmp_path, use_c):
    records = [frame([scalar_event("a", float(i), i)]) for i in range(6)]
    bad = bytearray(records[2])
    bad[14] ^= 0xFF  # a payload byte: the data CRC no longer matches
    records[2] = bytes(bad)
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(b"".join(records))
    reader = EventFileReader(str(path), use_c=use_c)
    batch = reader.read()
    offset = sum(len(r) for r in records[:2])
    assert len(batch.problems) == 1
    assert str(path) in batch.problems[0]
    assert f"offset {offset}" in batch.problems[0]
    reader2 = EventFileReader(str(path), use_c=use_c)
    assert [s for s, _ in _scalars(reader2)["a"]] == [0, 1, 3, 4, 5]


@pytest.mark.parametrize("use_c", SCANNERS)
def test_corrupt_length_and_garbage_between_records_resync(tmp_path, use_c):
    good = [frame([scalar_event("a", float(i), i)]) for i in range(4)]
    bad_len = bytearray(good[1])
    bad_len[3] ^= 0x40  # the length no longer matches its CRC
    garbage = b"\x00garbage\xff" * 7
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(good[0] + bytes(bad_len) + garbage + good[2] + good[3])
    reader = EventFileReader(str(path), use_c=use_c)
    got = _scalars(reader)
    assert [s for s, _ in got["a"]] == [0, 2, 3]


@pytest.mark.parametrize("use_c", SCANNERS)
def test_data_crc_check_can_be_skipped(tmp_path, use_c):
    records = [frame([scalar_event("a", float(i), i)]) for i in range(3)]
    bad = bytearray(records[1])
    bad[-1] ^= 0xFF  # only the stored payload CRC is damaged
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(records[0] + bytes(bad) + records[2])
    checked = _scalars(EventFileReader(str(path), use_c=use_c))
    unchecked = _scalars(EventFileReader(str(path), use_c=use_c, check_data_crc=False))
    assert [s for s, _ in checked["a"]] == [0, 2]
    assert [s for s, _ in unchecked["a"]] == [0, 1, 2]


@pytest.mark.parametrize("use_c", SCANNERS)
def test_non_event_file_named_like_one_gives_one_problem(tmp_path, use_c):
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(b"this is a text file, not an event file\n" * 50)
    batch = EventFileReader(str(path), use_c=use_c).read()
    assert batch.records == 0
    assert len(batch.problems) == 1
    assert "corrupt record at byte offset 0" in batch.problems[0]


@pytest.mark.parametrize("use_c", SCANNERS)
def test_empty_file_reads_nothing(tmp_path, use_c):
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(b"")
    reader = EventFileReader(str(path), use_c=use_c)
    batch = reader.read()
    assert (batch.records, batch.problems, reader.offset) == (0, [], 0)


@pytest.mark.parametrize("use_c", SCANNERS)
def test_records_larger_than_the_read_chunk(tmp_path, use_c):
    big = scalar_event("pad", 1.0, 1)
    big.source_metadata.writer = "x" * 5000  # a 5 kB record
    path = write_events(tmp_path / "events.out.tfevents.1.h", [big, scalar_event("a", 2.0, 2)])
    reader = EventFileReader(str(path), use_c=use_c, chunk_bytes=1024)
    got = _scalars(reader)
    assert got["a"] == [(2, 2.0)]
    assert reader.offset == path.stat().st_size


@pytest.mark.parametrize("use_c", SCANNERS)
def test_tail_mode_reads_a_growing_file(tmp_path, use_c):
    path = tmp_path / "events.out.tfevents.1.h"
    with open(path, "ab", buffering=0) as f:  # a writer that keeps its file open
        f.write(frame([file_version_event(), scalar_event("loss", 1.0, 0)]))
        reader = EventFileReader(str(path), use_c=use_c)
        assert _scalars(reader) == {"loss": [(0, 1.0)]}
        record = frame([scalar_event("loss", 2.0, 1)])
        f.write(record[:5])  # a record being written
        assert _scalars(reader) == {}
        f.write(record[5:] + frame([scalar_event("loss", 3.0, 2)]))
        assert _scalars(reader) == {"loss": [(1, 2.0), (2, 3.0)]}


def test_undecodable_payload_with_valid_crc_is_a_problem(tmp_path):
    from tensorsight.summary._record import encode_record

    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(encode_record(b"\xff\xff\xff") + frame([scalar_event("a", 1.0, 1)]))
    batch = EventFileReader(str(path)).read()
    assert len(batch.problems) == 1
    assert "could not be decoded" in batch.problems[0]


def test_iter_events_yields_every_message(tmp_path):
    path = write_events(
        tmp_path / "events.out.tfevents.1.h",
        [file_version_event(), scalar_event("a", 1.0, 3)],
    )
    events = list(iter_events(str(path)))
    assert [e.WhichOneof("what") for e in events] == ["file_version", "summary"]
    assert events[1].step == 3


def test_python_fallback_when_forced_by_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORSIGHT_NO_C", "1")
    monkeypatch.setattr(_scan, "_lib_tried", False)
    monkeypatch.setattr(_scan, "_lib", None)
    assert not _scan.accelerated()
    path = write_events(tmp_path / "events.out.tfevents.1.h", [scalar_event("a", 1.0, 1)])
    assert _scalars(EventFileReader(str(path))) == {"a": [(1, 1.0)]}


def test_scanner_compiles_into_a_fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORSIGHT_CACHE_DIR", str(tmp_path / "cache"))
    lib = _scan._build()
    assert lib is not None
    assert list((tmp_path / "cache").glob("_cscan-*.so"))
    payload = b"123456789"
    from tensorsight.summary._record import masked_crc32c

    assert lib.ts_masked_crc32c(payload, len(payload)) == masked_crc32c(payload)
    assert np.int32(lib.ts_hw_crc()) in (0, 1)


def test_generic_tensor_protos_decode_exactly():
    from tensorsight.summary._proto import tb
    from tensorsight.summary.kinds.tensor_decode import decode_tensor

    def shape(*dims):
        return tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=d) for d in dims])

    name, shp, arr = decode_tensor(tb.TensorProto(dtype=9, tensor_shape=shape(3),
                                                  int64_val=[1, -2, 2**50]))  # fmt: skip
    assert (name, shp, arr.tolist()) == ("int64", (3,), [1, -2, 2**50])
    half = np.array([1.5, -np.inf], np.float16).view(np.uint16).astype(np.int32)
    name, _, arr = decode_tensor(tb.TensorProto(dtype=19, tensor_shape=shape(2),
                                                half_val=half.tolist()))  # fmt: skip
    assert name == "float16"
    assert arr.tolist() == [1.5, -np.inf]
    _, _, arr = decode_tensor(tb.TensorProto(dtype=1, tensor_shape=shape(2, 2), float_val=[7.0]))
    assert arr.tolist() == [[7.0, 7.0], [7.0, 7.0]]  # TensorFlow's fill rule
    _, _, arr = decode_tensor(tb.TensorProto(dtype=8, tensor_shape=shape(1),
                                             scomplex_val=[1.0, 2.0]))  # fmt: skip
    assert arr.tolist() == [1 + 2j]
    _, _, arr = decode_tensor(tb.TensorProto(dtype=7, tensor_shape=shape(2),
                                             string_val=[b"a", "é".encode()]))  # fmt: skip
    assert arr.tolist() == [b"a", "é".encode()]
    with pytest.raises(ValueError, match="3 values for shape"):
        decode_tensor(tb.TensorProto(dtype=1, tensor_shape=shape(2), float_val=[1, 2, 3]))
    with pytest.raises(ValueError, match="unsupported tensor dtype"):
        decode_tensor(tb.TensorProto(dtype=20))
