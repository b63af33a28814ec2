from __future__ import annotations

from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.data import DataGraph, InMemoryProvider


def test_data_graph_route_drops_dangling_edges_and_keeps_params():
    p = InMemoryProvider()
    nodes = (
        {"id": "ds", "type": "MNIST", "label": "MNIST", "params": {"len": 60000, "x": b"\xff"}},
        {"id": "loader", "type": "DataLoader", "params": {"batch_size": 32}},
    )
    p.add_data_graph("train", "pipe", DataGraph(0, 1.0, nodes, (("ds", "loader"), ("ds", "gone"))))
    with TestClient(create_app(p)) as c:
        body = c.get("/api/views/data_graphs/graph", params={"run": "train", "tag": "pipe"}).json()
        rec = body["records"][0]
        assert rec["edges"] == [["ds", "loader"]]
        assert rec["nodes"][1]["label"] == "DataLoader"
        assert rec["nodes"][0]["params"] == {"len": 60000, "x": "\ufffd"}
        r = c.get("/api/views/data_graphs/graph", params={"run": "train", "tag": "nope"})
        assert r.status_code == 404
