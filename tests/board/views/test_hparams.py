"""The HParams view: rows from a provider, metric cells, the route, folded sub-runs."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.views.hparams import table_impl
from tensorsight.data import InMemoryProvider, LogdirProvider, RunHParams


@pytest.fixture
def hp_provider():
    p = InMemoryProvider()
    p.add_scalars("a", "hparam/loss", steps=[0], values=[0.5])
    p.add_scalars("a", "loss", steps=[0, 1, 2], values=[3.0, 2.0, float("nan")])
    p.add_hparams(RunHParams("a", {"lr": 0.1, "opt": "sgd"}, ("hparam/loss",), {}, 10.0))
    p.add_hparams(RunHParams("b", {"lr": 0.3, "amp": True}, ("hparam/loss",)))
    p.add_scalars("c", "loss", steps=[0], values=[1.0])  # no hparams: no row
    return p


def test_table_rows_columns_and_final_values(hp_provider):
    body = table_impl(hp_provider, None, ["loss"])
    assert [r["run"] for r in body["runs"]] == ["a", "b"]
    cols = {c["name"]: c for c in body["hparams"]}
    assert cols["lr"] == {"name": "lr", "type": "number", "values": [0.1, 0.3]}
    assert cols["opt"]["type"] == "string"
    assert cols["amp"]["type"] == "bool"
    assert body["metrics"] == [
        {"tag": "hparam/loss", "declared": True},
        {"tag": "loss", "declared": False},
    ]
    a, b = body["runs"]
    assert a["metrics"]["hparam/loss"] == {"value": 0.5, "step": 0, "wall_time": 0.0}
    assert a["metrics"]["loss"]["value"] == "NaN"  # the last point, as JSON allows
    assert a["metrics"]["loss"]["step"] == 2
    assert b["metrics"] == {"hparam/loss": None, "loss": None}
    assert a["hparams"] == {"lr": 0.1, "opt": "sgd"}


def test_table_follows_the_run_selection(hp_provider):
    assert [r["run"] for r in table_impl(hp_provider, ["b", "c"])["runs"]] == ["b"]
    assert table_impl(hp_provider, [])["runs"] == []


def test_route_and_bad_parameter(hp_provider):
    client = TestClient(create_app(hp_provider))
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["hparams"]["enabled"] is True
    body = client.get("/api/views/hparams/table", params={"run": ["a"], "metric": "loss"}).json()
    assert [r["run"] for r in body["runs"]] == ["a"]
    many = client.get("/api/views/hparams/table", params={"metric": [f"m{i}" for i in range(51)]})
    assert many.status_code == 400
    assert "at most 50" in many.json()["error"]["message"]


def test_logdir_folds_one_add_hparams_subrun_and_keeps_a_sweep(tmp_path):
    with SummaryWriter(tmp_path / "train") as w:
        for s in range(3):
            w.add_scalar("loss", 1.0 / (s + 1), s)
        w.add_hparams({"lr": 0.1, "opt": "adam"}, {"hparam/final": 0.25})
    with SummaryWriter(tmp_path / "sweep") as w:
        for i in range(2):
            w.add_hparams({"lr": 0.1 * i}, {"hparam/final": float(i)})
    provider = LogdirProvider(tmp_path)
    names = [r.name for r in provider.list_runs()]
    assert "train" in names
    assert not any(n.startswith("train/") for n in names)
    assert sum(n.startswith("sweep/") for n in names) == 2
    train = provider.run_info("train")
    assert set(train.tags["scalars"]) == {"loss", "hparam/final"}
    assert provider.read_scalars("train", "hparam/final").values.tolist() == [0.25]
    assert provider.read_scalars("train", "loss").steps.tolist() == [0, 1, 2]
    hp = provider.read_hparams("train")
    assert dict(hp.hparams) == {"lr": 0.1, "opt": "adam"}
    assert hp.metrics == ("hparam/final",)
    rows = {r["run"]: r for r in table_impl(provider)["runs"]}
    assert rows["train"]["metrics"]["hparam/final"]["value"] == 0.25
    assert len(rows) == 3


def test_non_finite_hparams_go_out_as_json_allows(tmp_path):
    """Review finding: one inf hparam (clipping turned off) made the table a 500."""
    p = InMemoryProvider()
    p.add_hparams(RunHParams("a", {"lr": 0.1, "clip": float("inf"), "m": float("nan")}, ()))
    client = TestClient(create_app(p))
    r = client.get("/api/views/hparams/table")
    assert r.status_code == 200, r.text
    row = r.json()["runs"][0]
    assert row["hparams"] == {"lr": 0.1, "clip": "Infinity", "m": "NaN"}
    cols = {c["name"]: c["values"] for c in r.json()["hparams"]}
    assert cols["clip"] == ["Infinity"]
