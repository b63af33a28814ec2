"""The custom scalars view: layouts of torch's writer, tensorboardX and ours; chart data."""

from __future__ import annotations

import numpy as np
import pytest
import tensorboardX
from starlette.testclient import TestClient
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.views import custom_scalars
from tensorsight.board.views.custom_scalars import layout_impl, multiline_impl
from tensorsight.data import (
    InMemoryProvider,
    LayoutCategory,
    LayoutChart,
    LogdirProvider,
    ScalarLayout,
)

TORCH_LAYOUT = {
    "Loss": {"train and eval": ["Multiline", [r"loss/.*"]]},
    "Bands": {"value band": ["Margin", ["m/value", "m/lower", "m/upper"]]},
}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cs_logs")
    with TorchWriter(str(d / "torch")) as w:
        w.add_custom_scalars(TORCH_LAYOUT)
        for s in range(10):
            w.add_scalar("loss/train", 1.0 / (s + 1), s)
            w.add_scalar("loss/eval", 2.0 / (s + 1), s)
            w.add_scalar("m/value", float(s), s)
            w.add_scalar("m/lower", s - 1.0, s)
            if s != 4:  # one step without an upper bound
                w.add_scalar("m/upper", s + 1.0, s)
    with tensorboardX.SummaryWriter(str(d / "tbx")) as w:
        w.add_custom_scalars_multilinechart(["loss/train"], category="Loss", title="tbx only")
        for s in range(5):
            w.add_scalar("loss/train", 3.0 - s, s)
    with SummaryWriter(d / "ours") as w:
        w.add_custom_scalars({"Loss": {"train and eval": ["Multiline", ["ignored"]]}})
        w.add_scalar("loss/train", 0.5, 0)
    return d


@pytest.fixture(scope="module")
def client(logdir):
    return TestClient(create_app(LogdirProvider(logdir)))


def test_layout_is_the_union_of_the_selected_runs(client):
    body = client.get("/api/views/custom_scalars/layout").json()
    assert body["runs"] == ["ours", "tbx", "torch"]
    cats = {c["title"]: c for c in body["categories"]}
    assert list(cats) == ["Loss", "Bands"]  # first-seen order over the runs
    loss = [c["title"] for c in cats["Loss"]["charts"]]
    assert loss == ["train and eval", "tbx only"]
    # the first run's chart of a title wins ("ours" comes first by name)
    assert cats["Loss"]["charts"][0]["tags"] == ["ignored"]
    band = cats["Bands"]["charts"][0]
    assert band["kind"] == "margin"
    assert band["margins"] == [{"value": "m/value", "lower": "m/lower", "upper": "m/upper"}]
    only_torch = client.get("/api/views/custom_scalars/layout", params={"run": "torch"}).json()
    assert only_torch["runs"] == ["torch"]
    assert only_torch["categories"][0]["charts"][0]["tags"] == ["loss/.*"]
    # the layout's tensor is not listed among the tensors
    runs = {r["name"]: r for r in client.get("/api/runs").json()["runs"]}
    assert "custom_scalars" in runs["torch"]["tags"]
    assert "tensors" not in runs["torch"]["tags"]


def test_multiline_matches_regexes_in_each_selected_run(client):
    params = {"tag_regex": [r"loss/.*", "[bad"], "run": ["torch", "tbx"], "width": 100}
    body = client.get("/api/views/custom_scalars/multiline", params=params).json()
    got = [(s["run"], s["tag"]) for s in body["series"]]
    assert got == [("torch", "loss/eval"), ("torch", "loss/train"), ("tbx", "loss/train")]
    assert body["matched"] == 3
    assert body["truncated"] == 0
    assert body["invalid"][0]["pattern"] == "[bad"
    assert body["series"][2]["value"] == [3.0, 2.0, 1.0, 0.0, -1.0]


def test_margin_aligns_bounds_by_step_and_names_missing_tags(client):
    params = {"value": "m/value", "lower": "m/lower", "upper": "m/upper", "run": ["torch", "tbx"]}
    body = client.get("/api/views/custom_scalars/margin", params=params).json()
    (one,) = body["series"]
    assert one["run"] == "torch"
    assert one["step"] == list(range(10))
    assert one["lower"] == [s - 1.0 for s in range(10)]
    assert one["upper"][4] == "NaN"
    assert one["upper"][5] == 6.0
    assert body["missing"] == [{"run": "tbx", "tags": ["m/value", "m/lower", "m/upper"]}]


def test_bad_requests_are_400(client):
    base = "/api/views/custom_scalars"
    assert client.get(f"{base}/multiline", params={"run": "torch"}).status_code == 400
    assert client.get(f"{base}/multiline", params={"tag_regex": "a"}).status_code == 400
    many = {"tag_regex": ["a"] * 33, "run": "torch"}
    assert client.get(f"{base}/multiline", params=many).status_code == 400
    bad_x = {"tag_regex": "a", "run": "torch", "x": "nope"}
    assert client.get(f"{base}/multiline", params=bad_x).status_code == 400
    runs = {"tag_regex": "a", "run": [f"r{i}" for i in range(custom_scalars.MAX_RUNS + 1)]}
    assert client.get(f"{base}/multiline", params=runs).status_code == 400
    assert client.get(f"{base}/margin", params={"value": "a", "run": "torch"}).status_code == 400


def test_limits_on_series_and_charts(monkeypatch):
    p = InMemoryProvider()
    for i in range(5):
        p.add_scalars("r", f"t{i}", steps=[0, 1], values=[1.0, np.nan])
    charts = tuple(LayoutChart(f"c{i}", "multiline", tags=("t",)) for i in range(4))
    p.add_scalar_layout(
        "r", ScalarLayout((LayoutCategory("A", charts), LayoutCategory("B", charts)))
    )
    p.add_scalars("no layout", "t0", steps=[0], values=[1.0])
    monkeypatch.setattr(custom_scalars, "MAX_SERIES", 3)
    monkeypatch.setattr(custom_scalars, "MAX_CHARTS", 6)
    body = multiline_impl(p, ["t"], ["r", "unknown run"])
    assert len(body["series"]) == 3
    assert body["truncated"] == 2
    assert body["series"][0]["value"] == [1.0, "NaN"]
    layout = layout_impl(p)
    assert layout["runs"] == ["r"]
    assert [len(c["charts"]) for c in layout["categories"]] == [4, 2]
    assert layout["hidden_charts"] == 2
    assert layout_impl(p, ["no layout"]) == {"runs": [], "categories": [], "hidden_charts": 0}
