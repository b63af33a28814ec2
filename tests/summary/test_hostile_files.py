"""Hostile and damaged files: sizes are checked before allocating, each file is isolated.

Records are built with TensorBoard's own protobuf classes (``tensorboard.compat.proto``), so
they are what a real (or malicious) writer could put on disk; the mutation tests start from
files written by the real ``onnx`` package and by MindSpore.
"""

from __future__ import annotations

import random
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2

from tensorsight.summary import read_logdir
from tensorsight.summary._record import encode_record
from tensorsight.summary.reader import EventFileReader
from tests.summary._events import frame, scalar_event

SCANNERS = [pytest.param(None, id="c"), pytest.param(False, id="python")]
MS_DATA = Path("/work/shared/data/mindspore")


def _filled_tensor_record(dims: list[int], *, dtype: int = 1, step: int = 1) -> bytes:
    """One event record: a tensor of shape ``dims`` holding one value (the "fill" rule)."""
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims]
    )
    if dtype == 7:
        tensor = tensor_pb2.TensorProto(dtype=7, tensor_shape=shape, string_val=[b"x"])
    else:
        tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, float_val=[1.5])
    value = summary_pb2.Summary.Value(tag="t", tensor=tensor)
    event = event_pb2.Event(step=step, wall_time=1.0, summary=summary_pb2.Summary(value=[value]))
    return encode_record(event.SerializeToString())


def _event_file(tmp_path: Path, middle: bytes) -> tuple[Path, int]:
    before = frame([scalar_event("a", 1.0, 0)])
    path = tmp_path / "run" / "events.out.tfevents.1.h"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(before + middle + frame([scalar_event("a", 2.0, 2)]))
    return path, len(before)


@pytest.mark.parametrize("use_c", SCANNERS)
@pytest.mark.parametrize(
    ("dims", "dtype"),
    [([2**34], 1), ([2**29], 1), ([2**28], 7), ([2**32, 2**32], 1), ([2**62, 4], 2)],
    ids=["f32-2^34", "f32-2^29", "string-2^28", "overflowing-product", "f64-2^64"],
)
def test_a_filled_tensor_over_the_limit_is_skipped_with_a_problem(tmp_path, use_c, dims, dtype):
    record = _filled_tensor_record(dims, dtype=dtype)
    assert len(record) < 80  # a few dozen bytes on disk
    path, offset = _event_file(tmp_path, record)
    batch = EventFileReader(str(path), use_c=use_c).read()
    assert len(batch.problems) == 1
    problem = batch.problems[0]
    assert str(path) in problem
    assert f"offset {offset}" in problem
    assert "TENSORSIGHT_MAX_TENSOR_MIB" in problem or "dimension" in problem or "values" in problem
    assert not [it for it in batch.items if it.kind == "tensors"]
    # the records around it are read
    steps = sorted(int(s) for p in batch.points for s in p.step)
    steps += [it.step for it in batch.items if it.kind == "scalars"]
    assert sorted(steps) == [0, 2]


def test_the_fill_limit_names_file_offset_and_limit_and_can_be_set(tmp_path, monkeypatch):
    path, offset = _event_file(tmp_path, _filled_tensor_record([2**26 + 1]))  # > 256 MiB
    [problem] = EventFileReader(str(path)).read().problems
    assert f"offset {offset}" in problem
    assert "256 MiB" in problem
    assert "TENSORSIGHT_MAX_TENSOR_MIB" in problem
    monkeypatch.setenv("TENSORSIGHT_MAX_TENSOR_MIB", "1")
    at_limit, _ = _event_file(tmp_path / "b", _filled_tensor_record([2**18]))  # 1 MiB
    batch = EventFileReader(str(at_limit)).read()
    assert batch.problems == []
    [item] = [it for it in batch.items if it.kind == "tensors"]
    assert item.payload.data.shape == (2**18,)
    over, _ = _event_file(tmp_path / "c", _filled_tensor_record([2**18 + 1]))
    [problem] = EventFileReader(str(over)).read().problems
    assert "1 MiB" in problem


def test_a_small_filled_tensor_is_still_filled(tmp_path):
    path, _ = _event_file(tmp_path, _filled_tensor_record([3, 2]))
    batch = EventFileReader(str(path)).read()
    assert batch.problems == []
    [item] = [it for it in batch.items if it.kind == "tensors"]
    np.testing.assert_array_equal(item.payload.data, np.full((3, 2), 1.5, np.float32))


def test_read_logdir_goes_on_past_a_hostile_tensor(tmp_path):
    _event_file(tmp_path, _filled_tensor_record([2**34]))
    with pytest.warns(UserWarning, match="TENSORSIGHT_MAX_TENSOR_MIB"):
        log = read_logdir(tmp_path)
    assert log.scalars("run", "a").steps.tolist() == [0, 2]


# ------------------------------------------------------------------ file isolation
def _flip(data: bytes, rng: random.Random, flips: int) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        i = rng.randrange(len(out))
        out[i] ^= 1 << rng.randrange(8)
    return bytes(out)


def _onnx_model_bytes() -> bytes:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    nodes = [
        helper.make_node("Mul", ["x", "w"], ["m"], name="/blk/Mul"),
        helper.make_node("Relu", ["m"], ["r"], name="/blk/Relu"),
        helper.make_node("Add", ["r", "x"], ["s"], name="/Add"),
        helper.make_node("Softmax", ["s"], ["y"], name="/Softmax", axis=1),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    model = helper.make_model(graph, producer_name="test")
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def _read_mutants(tmp_path: Path, name: str, data: bytes, seed: int, count: int) -> int:
    """Read ``count`` seeded mutants of ``data`` next to a healthy event file; returns how
    many gave a problem. Nothing may raise, and the healthy run is always read."""
    rng = random.Random(seed)
    with_problems = 0
    for i in range(count):
        folder = tmp_path / f"m{i}"
        _event_file(folder, b"")
        (folder / "run" / name).write_bytes(_flip(data, rng, rng.choice([1, 2, 2, 3, 8])))
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            log = read_logdir(folder, workers=1)
        assert log.scalars("run", "a").steps.tolist() == [0, 2]
        with_problems += bool(log.problems)
        shutil.rmtree(folder)
    return with_problems


def test_flipped_bytes_in_an_onnx_file_never_stop_the_logdir(tmp_path):
    data = _onnx_model_bytes()
    log = read_logdir(_event_file(tmp_path / "healthy", b"")[0].parent.parent)
    assert log.problems == []
    (tmp_path / "healthy" / "run" / "model.onnx").write_bytes(data)
    log.reload()
    assert log.problems == []
    assert len(log.graph("run", "model.onnx").nodes) >= 3
    assert _read_mutants(tmp_path, "model.onnx", data, seed=20, count=120) > 0


@pytest.mark.skipif(not MS_DATA.is_dir(), reason="MindSpore sample files not present")
@pytest.mark.parametrize(
    "name", ["events.out.events.summary.1795966609.0.vm_MS", "ms_output_optimize.pb"]
)
def test_flipped_bytes_in_mindspore_files_never_stop_the_logdir(tmp_path, name):
    data = (MS_DATA / name).read_bytes()
    assert _read_mutants(tmp_path, name, data, seed=7, count=60) >= 0


# ------------------------------------------------------------------ lengths that are no tail
def _header(length: int) -> bytes:
    from tensorsight.summary._record import masked_crc32c

    raw = length.to_bytes(8, "little")
    return raw + masked_crc32c(raw).to_bytes(4, "little")


def _records(start: int, stop: int) -> bytes:
    return frame([scalar_event("a", float(i), i) for i in range(start, stop)])


def _steps(batch) -> list[int]:
    steps = [int(s) for p in batch.points for s in p.step]
    steps += [it.step for it in batch.items if it.kind == "scalars"]
    return sorted(steps)


@pytest.mark.parametrize("use_c", SCANNERS)
@pytest.mark.parametrize("length", [2**60, 2**40, 10_000_000], ids=["2^60", "2^40", "10MB"])
def test_a_huge_length_mid_file_is_corruption_not_a_tail(tmp_path, use_c, length):
    head = _records(0, 50)
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(head + _header(length) + b"\x00" * 20 + _records(50, 100))
    reader = EventFileReader(str(path), use_c=use_c)
    batch = reader.read()
    assert _steps(batch) == list(range(100))
    [problem] = batch.problems
    assert str(path) in problem
    assert f"offset {len(head)}" in problem
    if length > 2**31:
        assert "TENSORSIGHT_MAX_RECORD_MIB" in problem
    assert reader.pending_bytes == 0
    assert reader.read().problems == []  # reported once


@pytest.mark.parametrize("use_c", SCANNERS)
def test_a_plausible_length_is_corruption_once_valid_records_follow(tmp_path, use_c):
    """A 10 MB header in a small file may be a record being written, until records follow."""
    head = _records(0, 5)
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(head + _header(10_000_000) + b"\x01" * 30)
    reader = EventFileReader(str(path), use_c=use_c)
    batch = reader.read()
    assert _steps(batch) == list(range(5))
    assert batch.problems == []  # a tail, for now
    assert reader.pending_bytes == 42
    with path.open("ab") as f:  # the writer goes on: whole records after the "tail"
        f.write(_records(5, 9))
    batch = reader.read()
    assert _steps(batch) == [5, 6, 7, 8]
    [problem] = batch.problems
    assert f"offset {len(head)}" in problem
    assert "skipped 42 bytes" in problem


@pytest.mark.parametrize("use_c", SCANNERS)
def test_a_record_written_in_pieces_is_never_taken_for_corruption(tmp_path, use_c):
    data = _records(0, 3) + frame([scalar_event("big", 1.0, 3)]) + _records(4, 6)
    path = tmp_path / "events.out.tfevents.1.h"
    reader = EventFileReader(str(path), use_c=use_c)
    got: list[int] = []
    for cut in range(0, len(data) + 1, 7):
        path.write_bytes(data[:cut])
        batch = reader.read()
        assert batch.problems == []
        got += _steps(batch)
    path.write_bytes(data)
    got += _steps(reader.read())
    assert got == list(range(6))


def test_a_stuck_tail_does_not_keep_a_finished_run_active(tmp_path):
    import os

    path = tmp_path / "run" / "events.out.tfevents.1.h"
    path.parent.mkdir()
    path.write_bytes(_records(0, 3) + _header(10_000_000) + b"\x00" * 8)
    os.utime(path, (1_000_000.0, 1_000_000.0))  # last written long ago
    with pytest.warns(UserWarning, match="ends with an incomplete record"):
        log = read_logdir(tmp_path)
    assert log.run_info("run").is_active is False


def test_the_vectorised_header_search_agrees_with_the_c_one():
    from tensorsight.summary import _scan

    if not _scan.accelerated():
        pytest.skip("no C compiler here")
    rng = np.random.default_rng(20)
    garbage = bytearray(rng.integers(0, 256, 3 << 20, dtype=np.uint8).tobytes())
    planted = sorted(int(p) for p in rng.choice(len(garbage) - 40, 25, replace=False))
    for p in planted:
        garbage[p : p + 12] = _header(int(rng.integers(0, 1000)))
    garbage[planted[3] : planted[3] + 12] = _header(2**50)  # over the limit: not a header
    buf = bytes(garbage)
    c = _scan.Scanner(use_c=None)
    hits_c, hits_py, q = [], [], 0
    while (q := c.find_header(buf, q)) >= 0:
        hits_c.append(q)
        q += 1
    q = 0
    while (q := _scan.find_header(buf, q)) >= 0:
        hits_py.append(q)
        q += 1
    assert hits_py == hits_c
    assert set(planted) - {planted[3]} <= set(hits_c)
    assert planted[3] not in hits_c


@pytest.mark.parametrize("use_c", SCANNERS)
def test_flipped_bytes_in_an_event_file_lose_only_the_records_they_hit(tmp_path, use_c):
    """Seeded mutants of a real tensorboardX file: nothing raises, every record no flip
    touched is read, and each damaged range is a problem naming the file."""
    from tensorboardX import SummaryWriter as TbxWriter

    with TbxWriter(str(tmp_path / "src")) as w:
        for step in range(40):
            w.add_scalar("a", float(step), step)
            if step % 10 == 0:
                w.add_histogram("h", np.arange(50.0) + step, step)
                w.add_text("t", f"note {step}", step)
    [src] = (tmp_path / "src").glob("events.out.tfevents.*")
    data = src.read_bytes()
    spans, pos, steps = [], 0, []  # (start, end, step of a scalar record or None)
    from tensorsight.summary.reader import iter_events

    for event in iter_events(str(src)):
        length = len(event.SerializeToString())
        is_scalar = event.HasField("summary") and event.summary.value[0].tag == "a"
        spans.append((pos, pos + 16 + length, event.step if is_scalar else None))
        pos += 16 + length
    assert pos == len(data)
    steps = [s for _, _, s in spans if s is not None]
    assert steps == list(range(40))
    rng = random.Random(1024)
    for i in range(64):
        hits = sorted({rng.randrange(len(data)) for _ in range(rng.choice([1, 2, 3, 5]))})
        mutant = bytearray(data)
        for h in hits:
            mutant[h] ^= 1 << rng.randrange(8)
        path = tmp_path / f"m{i}" / src.name
        path.parent.mkdir()
        path.write_bytes(bytes(mutant))
        batch = EventFileReader(str(path), use_c=use_c).read()
        intact = {s for a, b, s in spans if s is not None and not any(a <= h < b for h in hits)}
        got = set(_steps(batch))
        assert intact <= got, (hits, sorted(intact - got))
        assert got <= set(steps)
        assert all(str(path) in p for p in batch.problems)


@pytest.mark.parametrize("use_c", SCANNERS)
def test_an_incomplete_record_in_a_file_that_stopped_growing_is_reported_once(tmp_path, use_c):
    import os

    data = _records(0, 4)
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(data[:-5])
    reader = EventFileReader(str(path), use_c=use_c)
    assert reader.read().problems == []  # just written: a tail being written
    os.utime(path, (1_000_000.0, 1_000_000.0))
    [problem] = reader.read().problems
    cut_at = len(_records(0, 3))
    assert f"incomplete record at byte offset {cut_at}" in problem
    assert reader.read().problems == []  # once
    path.write_bytes(data)  # it completes after all
    batch = reader.read()
    assert _steps(batch) == [3]
    assert batch.problems == []


@pytest.mark.parametrize("use_c", SCANNERS)
def test_two_stuck_headers_in_a_row_are_both_skipped(tmp_path, use_c):
    head = _records(0, 3)
    second = len(head) + 12 + 7
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(head + _header(5_000_000) + b"\x02" * 7 + _header(9_000_000) + b"\x03" * 9)
    reader = EventFileReader(str(path), use_c=use_c)
    assert reader.read().problems == []
    with path.open("ab") as f:
        f.write(_records(3, 6))
    batch = reader.read()
    assert _steps(batch) == [3, 4, 5]
    [problem] = batch.problems
    assert f"offset {len(head)}" in problem
    assert f"skipped {second + 21 - len(head)} bytes" in problem


@pytest.mark.parametrize("use_c", SCANNERS)
@pytest.mark.parametrize("tail", [True, False], ids=["records-after", "garbage-to-the-end"])
def test_garbage_over_many_read_chunks_is_one_problem(tmp_path, use_c, tail):
    head = _records(0, 3)
    garbage = np.random.default_rng(5).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    after = _records(3, 6) if tail else b""
    path = tmp_path / "events.out.tfevents.1.h"
    path.write_bytes(head + garbage + after)
    batch = EventFileReader(str(path), use_c=use_c, chunk_bytes=4096).read()
    assert _steps(batch) == list(range(6 if tail else 3))
    [problem] = batch.problems
    assert f"offset {len(head)}" in problem
    skipped = len(garbage) if tail else len(garbage) - 11  # the last 11 bytes may be a tail
    assert f"skipped {skipped} bytes" in problem
