"""TensorFlow debugger v2 dumps, read from their protobufs without TensorFlow (issue 25).

``data/tensorflow/*`` are real TensorFlow 2.21 dumps (``FULL_TENSOR``) of one training step
each, written by ``data/make_tensorflow_dump.py`` through ``tensorsight.tensorflow.dump``.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from tensorsight.dumpformat import read_dump
from tensorsight.dumpformat._proto import tfdbg as pb
from tensorsight.dumpformat.tfdbg import decode_tensor, read_records, scope_of
from tensorsight.errors import DumpFormatError

DATA = Path(__file__).parent / "data" / "tensorflow"
MLP = DATA / "mlp"


def _file(folder: Path, kind: str) -> Path:
    return next(folder.glob(f"tfdbg_events.*.{kind}"))


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "mlp"
    shutil.copytree(MLP, dst)
    return dst


def _ops(folder: Path = MLP) -> dict[str, object]:
    return {op.op: op for op in read_dump(folder).step().ops}


def test_layout_format_and_one_step() -> None:
    d = read_dump(MLP)
    assert (d.format, d.ranks, d.steps(), d.manifest()) == ("tfdbg", [0], [0], None)


def test_names_types_scopes_and_directions() -> None:
    ops = _ops()
    mm = ops["MLP_1/fc1_1/MatMul"]
    assert (mm.direction, mm.module_path) == ("forward", "MLP.fc1")
    assert json.loads(mm.args) == {"type": "MatMul"}
    grad = ops["gradient_tape/MLP_1/fc2_1/MatMul/MatMul_1"]
    assert (grad.direction, grad.module_path) == ("backward", "MLP.fc2.MatMul")
    assert [t.shape for t in grad.outputs] == [(8, 8)]
    gelu = [op for op in ops.values() if op.module_path.startswith("MLP.act")]
    assert {json.loads(op.args)["type"] for op in gelu} >= {"Erfc", "Mul"}
    order = [op.index for op in read_dump(MLP).step().ops]
    assert order == sorted(order)


def test_inputs_hold_the_producers_tensors() -> None:
    ops = _ops()
    bias = ops["MLP_1/fc1_1/BiasAdd"]
    mm = ops["MLP_1/fc1_1/MatMul"]
    (inp, b) = bias.inputs
    assert inp.data == mm.outputs[0].data
    assert inp.stats == mm.outputs[0].stats
    assert b.shape == (8,)


def test_values_and_statistics() -> None:
    from tensorsight.dumpformat._stats_native import load  # noqa: F401  (kernel built once)

    step = read_dump(MLP).step()
    kernel = next(op for op in step.ops if op.op == "MLP_1/fc1_1/Cast/ReadVariableOp")
    (row,) = kernel.outputs
    value = step.load(row)
    assert (value.shape, value.dtype, row.dtype) == ((4, 8), np.float32, "float32")
    assert row.stats is not None
    assert row.stats.max == pytest.approx(float(value.max()))
    assert row.stats.norm == pytest.approx(float(np.linalg.norm(value)), rel=1e-6)


def test_variables_after_the_step_are_eager_reads() -> None:
    """``tensorsight.tensorflow.dump`` reads the variables after the step (eager ops)."""
    step = read_dump(MLP).step()
    eager = [
        op for op in step.ops if op.module_path == "" and op.op in ("Identity", "ReadVariableOp")
    ]
    assert len(eager) >= 6
    assert all(op.index > 0 for op in eager)


def test_scope_of() -> None:
    assert scope_of("gradient_tape/Transformer_1/blocks.0_1/attn_1/q_1/MatMul") == (
        "backward",
        "Transformer.blocks.0.attn.q",
    )
    assert scope_of("sgd_1/Mul") == ("forward", "sgd")


def test_decode_tensor_fill_and_limits(monkeypatch) -> None:
    t = pb.TensorProto(dtype=1, float_val=[1.0, 2.0])
    t.tensor_shape.dim.add().size = 4
    assert decode_tensor(t, "t").bits.tolist() == [1.0, 2.0, 2.0, 2.0]
    huge = pb.TensorProto(dtype=1, float_val=[1.0])
    for _ in range(3):
        huge.tensor_shape.dim.add().size = 1 << 20
    with pytest.raises(DumpFormatError, match="TENSORSIGHT_MAX_TENSOR_MIB"):
        decode_tensor(huge, "t")
    short = pb.TensorProto(dtype=1, tensor_content=b"\0" * 12)
    short.tensor_shape.dim.add().size = 4
    with pytest.raises(DumpFormatError, match=r"holds 12 bytes\. Expected 16"):
        decode_tensor(short, "t")
    neg = pb.TensorProto(dtype=1)
    neg.tensor_shape.dim.add().size = -3
    with pytest.raises(DumpFormatError, match="is not a shape"):
        decode_tensor(neg, "t")
    assert decode_tensor(pb.TensorProto(dtype=20), "t") is None  # a resource handle
    bf = pb.TensorProto(dtype=14, half_val=[0x3F80])  # bfloat16 1.0
    assert decode_tensor(bf, "t").dtype == "bfloat16"


# ---------------------------------------------------------------- malformed files


def _read_all(path: Path) -> int:
    step = read_dump(path).step()
    try:
        for row in step.rows:
            step.load(row)
        return len(step.rows)
    finally:
        step.close()


def _one_line_error(path: Path, match: str) -> str:
    with pytest.raises(DumpFormatError, match=match) as info:
        _read_all(path)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_truncated_file(copy: Path) -> None:
    f = _file(copy, "graph_execution_traces")
    data = f.read_bytes()
    f.write_bytes(data[:-5])
    assert f.name in _one_line_error(copy, "past the end of the file")
    f.write_bytes(data[:7])
    _one_line_error(copy, "cut off at byte 0")


def test_corrupt_crcs(copy: Path) -> None:
    f = _file(copy, "graphs")
    data = bytearray(f.read_bytes())
    data[20] ^= 0xFF  # inside the first payload
    f.write_bytes(bytes(data))
    _one_line_error(copy, r"corrupt record at byte 0 \(payload CRC")
    data[20] ^= 0xFF
    data[2] ^= 0x01  # the length
    f.write_bytes(bytes(data))
    _one_line_error(copy, "length CRC mismatch")


def test_huge_length_allocates_nothing(copy: Path) -> None:
    import google_crc32c

    def masked(b: bytes) -> int:
        c = google_crc32c.value(b)
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    f = _file(copy, "execution")
    length = struct.pack("<Q", 1 << 60)
    f.write_bytes(length + struct.pack("<I", masked(length)) + b"\0" * 16)
    _one_line_error(copy, r"claims 1152921504606846976 bytes")


def test_not_a_debug_event(copy: Path) -> None:
    import google_crc32c

    def masked(b: bytes) -> int:
        c = google_crc32c.value(b)
        return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    payload = b"\xff\xff\xff\xff"  # an invalid tag
    length = struct.pack("<Q", len(payload))
    record = length + struct.pack("<I", masked(length)) + payload
    record += struct.pack("<I", masked(payload))
    f = _file(copy, "graph_execution_traces")
    f.write_bytes(record)
    _one_line_error(copy, "is not a DebugEvent")


def test_records_of_every_file_decode() -> None:
    for kind in ("metadata", "graphs", "execution", "graph_execution_traces"):
        events = [ev for _, ev in read_records(_file(MLP, kind))]
        assert events, kind
    meta = next(ev for _, ev in read_records(_file(MLP, "metadata")))
    assert meta.debug_metadata.tensorflow_version == "2.21.0"


def test_not_a_dump(tmp_path: Path) -> None:
    (tmp_path / "tfdbg_events.1.host.graphs").write_bytes(b"")  # no .metadata
    with pytest.raises(DumpFormatError, match=r"tfdbg_events\.\*\.metadata"):
        read_dump(tmp_path)


def test_inspect_and_dump_folder() -> None:
    from tensorsight.dumpformat.inspect import inspect_dump
    from tensorsight.summary.cli import is_dump_folder

    assert is_dump_folder(str(MLP))
    ins = inspect_dump(MLP)
    assert ins.format == "tfdbg"
    (s,) = ins.steps
    assert s.op_count == len(read_dump(MLP).step().ops)
    assert s.backward_ops > 0


def _masked(b: bytes) -> int:
    import google_crc32c

    c = google_crc32c.value(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_mutated_payloads_with_valid_crcs(tmp_path: Path) -> None:
    """Random bytes changed inside records whose CRCs are made valid again: every read
    either succeeds or raises one one-line DumpFormatError (never another exception)."""
    import random

    rng = random.Random(25)
    for trial in range(40):
        d = tmp_path / str(trial)
        shutil.copytree(MLP, d)
        f = rng.choice(sorted(p for p in d.iterdir() if p.name.startswith("tfdbg")))
        data, recs, pos = f.read_bytes(), [], 0
        while pos < len(data):
            (n,) = struct.unpack_from("<Q", data, pos)
            recs.append(bytearray(data[pos + 12 : pos + 12 + n]))
            pos += 16 + n
        rec = recs[rng.randrange(len(recs))]
        for _ in range(rng.randint(1, 4)):
            if rec:
                rec[rng.randrange(len(rec))] = rng.randrange(256)
        out = bytearray()
        for p in recs:
            length = struct.pack("<Q", len(p))
            out += length + struct.pack("<I", _masked(length)) + p
            out += struct.pack("<I", _masked(bytes(p)))
        f.write_bytes(bytes(out))
        try:
            _read_all(d)
        except DumpFormatError as exc:
            message = str(exc)
        else:
            message = ""
        assert "\n" not in message


def test_two_tensorflow_dumps_pair_by_name() -> None:
    from tensorsight.compare import compare

    same = compare(MLP, MLP)
    assert same.first_divergence is None
    assert all(r.match != "unmatched" for r in same.rows)
    bad = compare(MLP, DATA / "mlp_eps")
    first = bad.first_divergence
    assert first is not None
    # the epsilon constant itself: MLP_1/ln_1/add/y, the add's scope inside MLP.ln
    assert (first.op, first.module_path, first.direction) == (
        "MLP_1/ln_1/add/y",
        "MLP.ln.add",
        "forward",
    )


def test_compare_against_another_format_is_refused() -> None:
    from tensorsight.compare import compare
    from tensorsight.errors import CompareError

    msprobe = Path(__file__).parent / "data" / "msprobe" / "md5_L0"
    with pytest.raises(CompareError, match="TensorFlow debugger dump pairs only with another"):
        compare(MLP, msprobe)


def test_a_tensorflow_dump_at_a_url_is_named_as_one_not_read_as_a_logdir():
    """`inspect URL` takes a TF debugger dump for a dump (not a logdir), and reading it
    says in one line that such dumps are read from local folders."""
    fsspec = pytest.importorskip("fsspec")
    from tensorsight.dumpformat.reader import read_dump
    from tensorsight.summary.cli import is_dump_folder

    fs = fsspec.filesystem("memory")
    fs.pipe("/tfurl/run/tfdbg_events.1.vm.metadata", b"\x00")
    try:
        assert is_dump_folder("memory://tfurl/run")
        with pytest.raises(DumpFormatError, match="TensorFlow debugger dumps are read from local"):
            read_dump("memory://tfurl/run")
    finally:
        fs.rm("/tfurl", recursive=True)
