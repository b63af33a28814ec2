"""ONNX model files in a logdir: real torch exports, hand-built edge cases, broken files."""

from __future__ import annotations

import warnings

import pytest

from tensorsight.summary import read_logdir
from tensorsight.summary.logdir import file_format

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")
from onnx import TensorProto, helper  # noqa: E402 - after the importorskip


def _export(model, args, path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(model, args, str(path), dynamo=False)


def _encoder(half: bool = False):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    return model.half() if half else model


def test_file_names():
    assert file_format("model.onnx") == "onnx_graph"
    assert file_format("ms_output_x.pb") == "ms_graph"
    assert file_format("lenet.pb") == "ms_graph"
    assert file_format("model.onnx.data") is None  # external data is never read
    for name in ("saved_model.pb", "fingerprint.pb", "keras_metadata.pb"):
        assert file_format(name) is None  # a TensorFlow SavedModel below a logdir is no run


def test_torch_export_is_a_graph_of_the_run_holding_it(tmp_path):
    run = tmp_path / "exports" / "encoder"
    run.mkdir(parents=True)
    _export(_encoder(), (torch.randn(1, 4, 16),), run / "model.onnx")
    log = read_logdir(tmp_path)
    assert log.runs == ["exports/encoder"]
    assert log.tags("exports/encoder")["graphs"] == ["model.onnx"]
    g = log.graph("exports/encoder", "model.onnx")
    assert g.source == "onnx"
    assert g.error == ""
    by_name = {n.name: n for n in g.nodes}
    # initializers: Parameters with their module scope, shape and dtype
    bias = by_name["layers.0/self_attn/in_proj_bias"]
    assert (bias.op, bias.shapes, bias.dtypes) == ("Parameter", ((48,),), ("float32",))
    assert bias.module_path == "layers.0.self_attn.in_proj_bias"
    # nodes: op types, scopes from the exporter's names, inputs naming their producers
    ops = {n.op for n in g.nodes}
    assert {"MatMul", "Add", "Softmax", "LayerNormalization", "IO Node"} <= ops
    norm = by_name["layers.1/norm2/LayerNormalization"]
    assert norm.module_path == "layers.1.norm2"
    assert all(i in by_name for i in norm.inputs)
    # shapes of intermediate tensors come from static shape inference
    assert norm.shapes == ((1, 4, 16),)
    assert norm.dtypes == ("float32",)
    (inp,) = [n for n in g.nodes if n.name.startswith("input/")]
    assert inp.shapes == ((1, 4, 16),)
    (out,) = [n for n in g.nodes if n.name.startswith("output/")]
    assert out.inputs == ("layers.1/norm2/LayerNormalization",)


def test_fp16_export_shows_reduced_precision(tmp_path):
    from tensorsight.board.views.precision import table_impl
    from tensorsight.data import LogdirProvider

    _export(_encoder(half=True), (torch.randn(1, 4, 16).half(),), tmp_path / "fp16.onnx")
    table = table_impl(LogdirProvider(tmp_path), ".", "fp16.onnx", query="^MatMul$")
    exported = onnx.load(str(tmp_path / "fp16.onnx")).graph.node
    assert table["matched"] == sum(n.op_type == "MatMul" for n in exported) > 0
    assert all(r["compute_dtype"] == "float16" and r["reduced"] for r in table["rows"])
    # the exporter keeps a few casts in float32; nearly everything computes in float16
    assert table["by_dtype"]["float16"] > 10 * table["by_dtype"].get("float32", 0)


def _model(nodes, inputs, outputs, initializers=(), value_info=()) -> bytes:
    graph = helper.make_graph(
        nodes, "g", inputs, outputs, list(initializers), value_info=value_info
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_domains_subgraphs_multiple_outputs_and_hostile_names(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, "batch"])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, "batch"])
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["t"])], "then_branch", [],
        [helper.make_tensor_value_info("t", TensorProto.BFLOAT16, None)],
    )  # fmt: skip
    # an initializer whose data lives "outside": its location is never opened
    w = helper.make_tensor("w", TensorProto.FLOAT, [3], [0.0, 0.0, 0.0])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="../../../etc/shadow")
    nodes = [
        helper.make_node("Split", ["x"], ["a", "b"], name="../../evil/Split", axis=0),
        helper.make_node(
            "FusedMatMul",
            ["a", "b"],
            ["c"],
            name="",
            domain="com.microsoft",
            alpha=1e-5,
            scales=[0.1, 3.0],
        ),
        helper.make_node("If", ["cond"], ["y"], name="/blk/If", then_branch=then, else_branch=then),
    ]
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    data = _model(nodes, [x, cond], [y], [w])
    (tmp_path / "odd.onnx").write_bytes(data)
    g = read_logdir(tmp_path).graph(".", "odd.onnx")
    by_op = {n.op: n for n in g.nodes}
    split = by_op["Split"]
    assert split.name == "../../evil/Split"  # just a name: a scope "..", nothing opened
    assert split.attrs["axis"] == 0
    fused = by_op["com.microsoft::FusedMatMul"]
    assert fused.inputs == ("../../evil/Split", "../../evil/Split:1")
    assert fused.name == "FusedMatMul_1"
    # float attributes are float32 in the file: shown as written, not as 9.99999974e-06
    assert (fused.attrs["alpha"], fused.attrs["scales"]) == (1e-5, [0.1, 3.0])
    assert by_op["If"].attrs["then_branch"] == "graph 'then_branch' (1 nodes)"
    assert by_op["If"].module_path == "blk"
    (param,) = [n for n in g.nodes if n.op == "Parameter"]
    assert (param.shapes, param.dtypes) == (((3,),), ("float32",))
    inp = next(n for n in g.nodes if n.name == "input/x")
    assert (inp.shapes, inp.dtypes) == (((2, -1),), ("bfloat16",))
    assert next(n for n in g.nodes if n.name == "input/cond").shapes == ((),)  # a scalar


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"\xff\xff\xff\xff garbage", "not an ONNX model"),
        (b"", "no graph nodes or inputs"),
        ("truncated", "not an ONNX model"),
    ],
)
def test_broken_files_are_listed_with_the_reason(tmp_path, content, reason):
    if content == "truncated":
        _export(_encoder(), (torch.randn(1, 4, 16),), tmp_path / "whole.onnx")
        data = (tmp_path / "whole.onnx").read_bytes()
        (tmp_path / "whole.onnx").unlink()
        content = data[: len(data) // 2]
    (tmp_path / "bad.onnx").write_bytes(content)
    with pytest.warns(UserWarning, match="bad.onnx"):
        log = read_logdir(tmp_path)
    assert log.tags(".")["graphs"] == ["bad.onnx"]
    g = log.graph(".", "bad.onnx")
    assert g.nodes == ()
    assert reason in g.error


def test_missing_onnx_package_is_a_listed_reason(tmp_path, monkeypatch):
    from tensorsight.errors import MissingDependencyError
    from tensorsight.summary import onnx_graph

    def missing(module, **_):
        msg = f"Reading ONNX model files needs {module}: pip install 'tensorsight[onnx]'"
        raise MissingDependencyError(msg)

    monkeypatch.setattr(onnx_graph, "lazy_import", missing)
    (tmp_path / "m.onnx").write_bytes(b"\x08\x07")
    with pytest.warns(UserWarning, match=r"tensorsight\[onnx\]"):
        log = read_logdir(tmp_path)
    assert "pip install" in log.graph(".", "m.onnx").error


def test_board_api_serves_an_onnx_graph_and_a_broken_one(tmp_path):
    from tensorsight.board.errors import NotFound
    from tensorsight.board.views.graphs import graph_impl, node_impl
    from tensorsight.data import LogdirProvider

    _export(_encoder(), (torch.randn(1, 4, 16),), tmp_path / "model.onnx")
    (tmp_path / "broken.onnx").write_bytes(b"\x00\x01garbage")
    with pytest.warns(UserWarning, match="broken.onnx"):
        provider = LogdirProvider(tmp_path)
    body = graph_impl(provider, ".", "model.onnx")
    assert body["source"] == "onnx"
    assert body["error"] == ""
    assert body["auxiliary"] == []
    assert any(p.startswith("layers.0/self_attn/") for p in body["paths"])
    d = node_impl(provider, ".", "model.onnx", "layers.1/norm2/LayerNormalization")
    assert d["module_path"] == "layers.1.norm2"
    assert d["inputs"][0]["shapes"] == [[1, 4, 16]]
    bad = graph_impl(provider, ".", "broken.onnx")
    assert bad["node_count"] == 0
    assert "not an ONNX model" in bad["error"]
    with pytest.raises(NotFound):
        node_impl(provider, ".", "broken.onnx", "x")
