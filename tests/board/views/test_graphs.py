from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.board.views.graphs import graph_impl, node_impl, split_input
from tests.board.views.graphs_fixtures import graph_provider


@pytest.fixture
def gclient():
    with TestClient(create_app(graph_provider())) as c:
        yield c


def test_graph_is_compact_with_input_indices_and_control_edges():
    body = graph_impl(graph_provider(), "train", "graph")
    assert body["node_count"] == 7
    assert body["paths"][3] == "fc/aten::addmm_0"
    assert body["inputs"][3] == [0, 2]  # ":0" output suffix resolved
    assert body["inputs"][4] == [3]
    assert body["control"][4] == [1]  # "^fc/weight"
    assert body["dtypes"][3] == "bfloat16"
    assert body["shapes"][3] == [2, 3]
    # a forward graph: readable hides nothing; it was read, so no error
    assert body["auxiliary"] == []
    assert body["error"] == ""


def test_graph_route_sends_auxiliary_and_error(gclient):
    body = gclient.get("/api/views/graphs/graph", params={"run": "train", "tag": "graph"}).json()
    assert (body["auxiliary"], body["error"]) == ([], "")


def test_node_panel_has_inputs_consumers_and_safe_attrs():
    d = node_impl(graph_provider(), "train", "graph", "fc/aten::addmm_0")
    assert d["module_path"] == "fc"
    assert [i["name"] for i in d["inputs"]] == ["input/input.0", "fc/aten::_to_copy_0"]
    assert d["inputs"][1]["dtypes"] == ["bfloat16"]
    assert {o["name"] for o in d["outputs"]} == {"head/aten::gt_0", "héad/ünïcode_0"}
    d = node_impl(graph_provider(), "train", "graph", "héad/ünïcode_0")
    assert d["attrs"] == {"nan": "nan", "precision_flag": "fp16"}
    d = node_impl(graph_provider(), "train", "graph", "fc/aten::_to_copy_0")
    assert d["attrs"]["tensorsight.attr.dtype"] == "bfloat16"


def test_split_input():
    assert split_input("^a/b") == ("a/b", True)
    assert split_input("a/b:3") == ("a/b", False)
    assert split_input("a:b") == ("a:b", False)


def test_routes_and_errors(gclient):
    assert gclient.get("/api/views/graphs/tags").json() == {
        "tags": [{"tag": "graph", "runs": ["train"]}]
    }
    r = gclient.get("/api/views/graphs/graph", params={"run": "train", "tag": "graph"})
    assert r.status_code == 200
    assert r.json()["node_count"] == 7
    r = gclient.get(
        "/api/views/graphs/node", params={"run": "train", "tag": "graph", "name": "nope"}
    )
    assert r.status_code == 404
    assert "no node 'nope'" in r.json()["error"]["message"]
    r = gclient.get("/api/views/graphs/graph", params={"run": "../etc", "tag": "graph"})
    assert r.status_code == 404
    r = gclient.get("/api/views/graphs/graph", params={"run": "train"})
    assert r.status_code == 400
    views = {v["name"]: v for v in gclient.get("/api/views").json()["views"]}
    assert views["graphs"]["enabled"]
    assert views["precision"]["enabled"]


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_graphs_from_torch_and_mindspore_files(tmp_path, shared_data):
    import torch
    from torch.utils.tensorboard import SummaryWriter

    from tensorsight.board.views.precision import table_impl
    from tensorsight.data import LogdirProvider

    with SummaryWriter(str(tmp_path / "torch")) as w:
        w.add_graph(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), torch.randn(2, 4))
    p = LogdirProvider(tmp_path)
    body = graph_impl(p, "torch", "graph")
    relu = body["ops"].index("aten::relu")
    assert body["paths"][relu].startswith("Sequential/ReLU[1]/")
    assert body["shapes"][relu] == [2, 3]
    # TorchScript graphs carry no dtypes: the precision table says "unknown", never guesses
    assert table_impl(p, "torch", "graph")["by_dtype"] == {"unknown": 4}

    ms = LogdirProvider(shared_data / "mindspore")
    body = graph_impl(ms, ".", "ms_output_optimize")
    conv = body["ops"].index("Conv2D")
    # MindSpore node names are numbers: the hierarchy comes from full_name
    assert body["paths"][conv].startswith("Default/network-WithLossCell/_backbone-LeNet5/conv")
    d = node_impl(ms, ".", "ms_output_optimize", body["paths"][conv])
    assert d["attrs"]["kernel_size"] == [5, 5]
    assert d["dtypes"] == ["float32"]
    t = table_impl(ms, ".", "ms_output_optimize", query="^Conv2D$")
    assert t["rows"][0]["compute_dtype"] == "float32"
    assert not t["rows"][0]["reduced"]
