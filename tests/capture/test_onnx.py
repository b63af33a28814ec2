"""dump-onnx: every intermediate of an ONNX run, lost fusions, the reference runtime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tensorsight.capture import read_dump  # noqa: E402
from tensorsight.capture.backends.onnx import DumpFromOnnxModel  # noqa: E402
from tensorsight.errors import InputFileError, UsageError  # noqa: E402
from tests.conftest import run_cli  # noqa: E402


@pytest.fixture
def model_file(tmp_path):
    """MatMul+Add+Relu (fused into FusedGemm by onnxruntime) then Reshape, Conv, Relu."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
        numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype(np.float32), "K"),
        numpy_helper.from_array(np.array([3, 1, 2, 4], dtype=np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "b"], ["add"], name="add"),
        helper.make_node("Relu", ["add"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["img"], name="reshape"),
        helper.make_node("Conv", ["img", "K"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu2"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2, 2, 4])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    return path


def test_onnxruntime_records_every_node_and_the_lost_fusions(tmp_path, model_file):
    x = np.load(tmp_path / "x.npy")
    result = DumpFromOnnxModel(model_file, {"x": x}, tmp_path / "d").run()
    assert result.op_count == 6
    assert result.lost_fusions == {
        "com.microsoft.nchwc::Conv[activation=Relu]": 1,
        "com.microsoft::FusedGemm[activation=Relu]": 1,
    }
    d = read_dump(tmp_path / "d")
    m = d.manifest()
    assert (m.framework, m.level, m.mode, m.complete) == ("onnxruntime", "onnx", "tensor", True)
    assert m.extra["lost_fusions"] == result.lost_fusions
    assert "com.microsoft::FusedGemm" in m.extra["plain_optimized_nodes"][0]
    step = d.step()
    assert [(o.op, o.module_path) for o in step.ops][:3] == [
        ("MatMul", "mm"),
        ("Add", "add"),
        ("Relu", "relu"),
    ]
    mm = step.ops[0]
    np.testing.assert_allclose(
        step.load(mm.outputs[0]), x @ step.load(mm.inputs[1]), rtol=1e-5, atol=1e-6
    )
    step.close()


def test_reference_runtime_agrees_and_loses_nothing(tmp_path, model_file):
    x = np.load(tmp_path / "x.npy")
    ort = DumpFromOnnxModel(model_file, {"x": x}, tmp_path / "a", graph_opt="disable").run()
    ref = DumpFromOnnxModel(model_file, {"x": x}, tmp_path / "b", runtime="reference").run()
    assert ort.lost_fusions == {}
    assert ref.lost_fusions == {}
    a, b = read_dump(tmp_path / "a").step(), read_dump(tmp_path / "b").step()
    assert [r.name for r in a.rows] == [r.name for r in b.rows]
    for ra, rb in zip(a.rows, b.rows, strict=True):
        np.testing.assert_allclose(a.load(ra), b.load(rb), rtol=1e-5, atol=1e-5)
    assert read_dump(tmp_path / "b").manifest().framework == "onnx.reference"


def test_bad_inputs(tmp_path, model_file):
    x = np.load(tmp_path / "x.npy")
    with pytest.raises(UsageError, match="ONNX input 'x': missing"):
        DumpFromOnnxModel(model_file, {}, tmp_path / "d").run()
    with pytest.raises(UsageError, match="'z': not an input"):
        DumpFromOnnxModel(model_file, {"x": x, "z": x}, tmp_path / "d").run()
    with pytest.raises(UsageError, match="Expected one of onnxruntime, reference"):
        DumpFromOnnxModel(model_file, {"x": x}, tmp_path / "d", runtime="tvm")
    with pytest.raises(UsageError, match="Expected one of disable, basic, extended, all"):
        DumpFromOnnxModel(model_file, {"x": x}, tmp_path / "d", graph_opt="max")
    with pytest.raises(InputFileError, match="does not exist"):
        DumpFromOnnxModel(tmp_path / "none.onnx", {"x": x}, tmp_path / "d")
    (tmp_path / "junk.onnx").write_bytes(b"\x00\xff not protobuf")
    with pytest.raises(InputFileError, match="unreadable"):
        DumpFromOnnxModel(tmp_path / "junk.onnx", {"x": x}, tmp_path / "d").run()


def test_cli_dump_onnx(tmp_path, model_file):
    out = tmp_path / "d"
    args = ["dump-onnx", str(model_file), "--input", f"x={tmp_path / 'x.npy'}", "-o", str(out)]
    proc = run_cli(*args, "--mode", "statistics")
    assert proc.returncode == 0, proc.stderr
    assert "6 nodes" in proc.stdout
    assert "com.microsoft::FusedGemm[activation=Relu] x1" in proc.stdout
    assert read_dump(out).manifest().mode == "statistics"
    again = run_cli(*args)
    assert again.returncode == 2
    assert again.stderr.startswith("error: Dump path")
    assert "--overwrite" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    assert run_cli(*args, "--overwrite", "--quiet").stdout == ""
    bad = run_cli("dump-onnx", str(model_file), "--input", "x", "-o", str(out))
    assert bad.returncode == 2
    assert "Expected NAME=FILE.npy" in bad.stderr
    missing = run_cli("dump-onnx", str(model_file), "--input", "x=nope.npy", "-o", str(out))
    assert "Input file 'nope.npy': does not exist" in missing.stderr


def test_cli_help_has_examples():
    proc = run_cli("dump-onnx", "--help")
    assert proc.returncode == 0
    assert "examples:" in proc.stdout
    assert "--graph-opt" in proc.stdout
