"""Complex tensors (a TensorFlow debugger dump's ``complex64``) are compared on their real
and imaginary parts: a cast to float64 dropped the imaginary part, so two tensors that
differ only there passed with cosine 1 and max_abs_err 0."""

from __future__ import annotations

import struct
import warnings
from pathlib import Path

import google_crc32c
import numpy as np
import pytest

from tensorsight.compare import compare
from tensorsight.dumpformat._proto import tfdbg as pb


def _masked(data: bytes) -> int:
    c = google_crc32c.value(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _record(event) -> bytes:
    payload = event.SerializeToString()
    length = struct.pack("<Q", len(payload))
    return (
        length + struct.pack("<I", _masked(length)) + payload + struct.pack("<I", _masked(payload))
    )


def _dump(folder: Path, imag: float) -> Path:
    """A debugger dump of two eager ops: an FFT's complex64 output and a float32 one."""
    folder.mkdir(parents=True)
    stem = folder / "tfdbg_events.1.host"
    Path(f"{stem}.metadata").write_bytes(_record(pb.DebugEvent(wall_time=1.0)))
    fft = pb.DebugEvent(wall_time=2.0)
    fft.execution.op_type = "FFT"
    t = fft.execution.tensor_protos.add(dtype=8)  # DT_COMPLEX64
    t.tensor_shape.dim.add().size = 4
    for k in range(1, 5):
        t.scomplex_val.extend([float(k), imag * k])
    mm = pb.DebugEvent(wall_time=3.0)
    mm.execution.op_type = "MatMul"
    t = mm.execution.tensor_protos.add(dtype=1)  # DT_FLOAT
    t.tensor_shape.dim.add().size = 4
    t.float_val.extend([1.0, 2.0, 3.0, 4.0])
    Path(f"{stem}.execution").write_bytes(_record(fft) + _record(mm))
    return folder


def _rows(bench: Path, target: Path) -> dict[str, object]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning of the dropped parts
        result = compare(bench, target)
    return {r.op: r for r in result.rows}


def test_complex_tensors_that_differ_only_in_imaginary_parts_diverge(tmp_path):
    rows = _rows(_dump(tmp_path / "a", 1.0), _dump(tmp_path / "b", -5.0))
    fft = rows["FFT"]
    assert fft.dtype_bench == "complex64"
    assert fft.max_abs_err == pytest.approx(24.0)  # |1*4 - (-5)*4| on the last imaginary part
    assert fft.cosine == pytest.approx(-0.5547001962252291, rel=1e-9)
    assert fft.verdict == "error"
    assert rows["MatMul"].verdict == "pass"


def test_equal_complex_tensors_agree(tmp_path):
    rows = _rows(_dump(tmp_path / "a", 1.0), _dump(tmp_path / "b", 1.0))
    fft = rows["FFT"]
    assert fft.max_abs_err == 0.0
    assert fft.cosine == pytest.approx(1.0)
    assert fft.verdict == "pass"


def test_the_board_drill_down_reads_both_parts(tmp_path):
    """The comparison store's tensor of a complex row holds the imaginary parts too (the
    float64 cast dropped them, with numpy's ComplexWarning)."""
    from tensorsight.data import ComparisonStore

    result = compare(_dump(tmp_path / "a", 1.0), _dump(tmp_path / "b", -5.0))
    out = tmp_path / "logs" / "compare" / "fft"
    out.mkdir(parents=True)
    result.to_json(out / "comparison.json")
    store = ComparisonStore(tmp_path / "logs")
    position = next(i for i, r in enumerate(result.rows) if r.op == "FFT")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = store.tensor("compare/fft", position, "target", 1000)
    assert not isinstance(got, str), got
    arr, dtype = got
    assert dtype == "complex64"
    assert arr.dtype == np.float64
    assert arr.tolist() == [[1.0, -5.0], [2.0, -10.0], [3.0, -15.0], [4.0, -20.0]]
