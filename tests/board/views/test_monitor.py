"""The monitor view's backend: heat map cells, bins, markers and one step's findings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.board.errors import NotFound
from tensorsight.board.views.monitor import heatmap_impl, runs_impl, step_impl
from tensorsight.data import InMemoryProvider, TensorValue


def _finding(kind, module, value, source="activation", where=None, tensor="output.0"):
    return {
        "kind": kind,
        "source": source,
        "module": module,
        "where": module if where is None else where,
        "tensor": tensor,
        "dtype": "float16",
        "stat": "amax",
        "value": value,
        "reference": None,
    }


def _record(p, run, step, findings, **extra):
    doc = {"version": 1, "step": step, "findings": findings, "truncated": 0, **extra}
    data = np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8)
    p.add_tensor(run, "monitor/findings", TensorValue.from_array(step, 1.0 + step, data, "uint8"))


@pytest.fixture
def mprovider():
    p = InMemoryProvider()
    _record(p, "r/rank0", 0, [], modules=["", "enc", "enc.fc"])
    _record(p, "r/rank0", 5, [_finding("spike", "enc.fc", 80.0)])
    _record(
        p,
        "r/rank0",
        6,
        [
            _finding("overflow", "enc.fc", "Infinity"),
            _finding("nan", "enc", "NaN"),
            _finding("nan", "enc.fc", "NaN", source="grad", where="enc.fc.weight", tensor="grad"),
            _finding("nan", None, "NaN", source="loss", where="loss", tensor="loss"),
        ],
        dump={"step": 7, "path": "/d/rank0/step7"},
    )
    p.add_scalars("r/rank0", "monitor/anomalies", steps=list(range(10)), values=[0.0] * 10)
    p.add_scalars("r/rank0", "loss/auto", steps=[0, 2, 4, 6, 8], values=[1, 0.8, 0.7, np.nan, 0.6])
    p.add_scalars("other", "loss/auto", steps=[0], values=[1.0])
    return p


def test_runs_with_findings_only(mprovider):
    assert runs_impl(mprovider) == ["r/rank0"]
    assert runs_impl(mprovider, ["other"]) == []


def test_heatmap_keeps_the_worst_finding_per_cell_and_adds_the_loss_row(mprovider):
    h = heatmap_impl(mprovider, "r/rank0")
    assert h["modules"] == ["", "enc", "enc.fc", "(loss)"]
    assert (h["first_step"], h["last_step"], h["bin"], h["columns"]) == (0, 9, 1, 10)
    assert h["checked_steps"] == 10
    cells = {(c["row"], c["col"]): c for c in h["cells"]}
    assert cells[(2, 5)]["kind"] == "spike"
    worst = cells[(2, 6)]  # overflow then a NaN gradient: the NaN is worse
    got = (worst["kind"], worst["source"], worst["count"], worst["value"])
    assert got == ("nan", "grad", 2, "NaN")
    assert cells[(3, 6)]["source"] == "loss"
    marks = [(m["step"], m["worst"], m["count"]) for m in h["markers"]]
    assert marks == [(5, "spike", 1), (6, "nan", 4)]
    assert h["markers"][0]["loss"] == 0.7  # the loss logged last before step 5
    assert h["markers"][1]["loss"] == "NaN"
    assert h["markers"][1]["dump"] == {"step": 7, "path": "/d/rank0/step7"}
    assert h["loss"]["values"][3] == "NaN"


def test_heatmap_bins_steps_past_max_columns(mprovider):
    h = heatmap_impl(mprovider, "r/rank0", max_columns=4)
    assert (h["bin"], h["columns"]) == (3, 4)
    cells = {(c["row"], c["col"]): c["kind"] for c in h["cells"]}
    assert cells[(2, 1)] == "spike"  # steps 3-5
    assert cells[(2, 2)] == "nan"  # steps 6-8


def test_step_lists_findings_in_order_with_the_dump(mprovider):
    s = step_impl(mprovider, "r/rank0", 6)
    assert [f["kind"] for f in s["findings"]] == ["overflow", "nan", "nan", "nan"]
    assert s["findings"][0]["value"] == "Infinity"
    assert s["findings"][3]["module"] == "(loss)"
    assert s["dump"]["path"] == "/d/rank0/step7"
    with pytest.raises(NotFound, match="no monitor findings at step 3"):
        step_impl(mprovider, "r/rank0", 3)
    with pytest.raises(NotFound, match="has no monitor findings"):
        heatmap_impl(mprovider, "other")


def test_routes(mprovider):
    client = TestClient(create_app(mprovider))
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["monitor"]["enabled"] is True
    assert client.get("/api/views/monitor/runs").json() == {"runs": ["r/rank0"]}
    h = client.get("/api/views/monitor/heatmap", params={"run": "r/rank0"}).json()
    assert len(h["markers"]) == 2
    s = client.get("/api/views/monitor/step", params={"run": "r/rank0", "step": 5}).json()
    assert s["findings"][0]["kind"] == "spike"
    assert client.get("/api/views/monitor/step", params={"run": "r/rank0"}).status_code == 400
    assert client.get("/api/views/monitor/heatmap", params={"run": "nope"}).status_code == 404


@pytest.mark.parametrize(
    "doc",
    [
        {"version": "v2", "findings": []},
        {"version": None, "findings": []},
        {"version": 1, "findings": ["x"]},
        {"version": 1, "findings": [{"value": {}, "kind": 3, "module": ["a"]}]},
        {"version": 1, "findings": "nan", "truncated": "many", "modules": 7, "dump": "here"},
        [1, 2, 3],
    ],
)
def test_malformed_records_are_skipped_or_made_harmless(mprovider, doc):
    data = np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8)
    mprovider.add_tensor(
        "r/rank0", "monitor/findings", TensorValue.from_array(9, 10.0, data, "uint8")
    )
    out = heatmap_impl(mprovider, "r/rank0")  # no exception: the view keeps working
    assert "enc.fc" in out["modules"]
    assert any(m["step"] == 6 for m in out["markers"])
    try:
        step = step_impl(mprovider, "r/rank0", 9)
    except NotFound:
        return  # the record was skipped whole
    assert all(isinstance(f["value"], (float, str)) for f in step["findings"])


def test_step_parses_only_that_steps_records(tmp_path, monkeypatch):
    """/step used to parse every findings record of the run to answer one step."""
    from tensorsight import SummaryWriter
    from tensorsight.board.views import monitor
    from tensorsight.data import LogdirProvider

    with SummaryWriter(str(tmp_path / "r")) as w:
        for step in range(50):
            doc = {"version": 1, "step": step, "findings": [_finding("spike", "fc", step)]}
            w.add_tensor(
                "monitor/findings", np.frombuffer(json.dumps(doc).encode(), np.uint8), step
            )
    provider = LogdirProvider(tmp_path)
    parsed = []
    real = monitor._parsed
    monkeypatch.setattr(monitor, "_parsed", lambda rec: parsed.append(rec.step) or real(rec))
    out = step_impl(provider, "r", 37)
    assert [f["value"] for f in out["findings"]] == [37.0]
    assert parsed == [37]
    with pytest.raises(NotFound, match="no monitor findings at step 50"):
        step_impl(provider, "r", 50)


def test_ranks_side_by_side_rows_per_rank_and_the_earliest_first():
    from tensorsight.board.views.monitor import rank_of, ranks_impl

    p = InMemoryProvider()
    for rank in (0, 1, 2, 10):
        _record(p, f"job/rank{rank}", 0, [], modules=["", "fc"])
    _record(p, "job/rank2", 4, [_finding("spike", "fc", 9.0), _finding("nan", "fc", "NaN")])
    _record(p, "job/rank1", 4, [_finding("overflow", "fc", "Infinity")])
    _record(p, "job/rank1", 6, [_finding("nan", None, "NaN", source="loss")])
    _record(p, "other/rank0", 2, [_finding("nan", "fc", "NaN")])  # another group
    out = ranks_impl(p, "job/rank2")
    assert out["group"] == "job"
    assert [r["rank"] for r in out["ranks"]] == [0, 1, 2, 10]  # by number, not by name
    assert [r["findings"] for r in out["ranks"]] == [0, 2, 2, 0]
    assert (out["first_step"], out["last_step"], out["columns"]) == (0, 6, 7)
    cells = {(c["row"], c["col"]): (c["kind"], c["module"], c["count"]) for c in out["cells"]}
    assert cells == {
        (1, 4): ("overflow", "fc", 1),
        (1, 6): ("nan", "(loss)", 1),
        (2, 4): ("nan", "fc", 2),  # the worst of the rank's two findings there
    }
    # the earliest finding across ranks: step 4, lowest rank first
    assert (out["first"]["rank"], out["first"]["step"], out["first"]["kind"]) == (1, 4, "overflow")
    assert out["ranks"][2]["first"]["kind"] == "spike"  # a rank's first is in the order found
    assert rank_of("rank3") == (".", 3)
    assert rank_of("a/b/rank12") == ("a/b", 12)
    assert rank_of("a/rankx") is None
    assert [r["run"] for r in ranks_impl(p, "other/rank0")["ranks"]] == ["other/rank0"]


def test_ranks_route(mprovider):
    client = TestClient(create_app(mprovider))
    body = client.get("/api/views/monitor/ranks", params={"run": "r/rank0"}).json()
    assert [r["run"] for r in body["ranks"]] == ["r/rank0"]
    assert client.get("/api/views/monitor/ranks", params={"run": "nope"}).status_code == 404


@pytest.mark.parametrize("tag", ["train/loss", "train_loss"])
def test_an_adapter_run_without_loss_auto_shows_the_loss_it_logged(tag):
    # the Trainer callback logs train/loss, Lightning's self.log("train_loss"): no loss/auto
    p = InMemoryProvider()
    _record(p, "run", 0, [], modules=["", "fc"])
    _record(p, "run", 3, [_finding("nan", "fc", "NaN")])
    p.add_scalars("run", tag, steps=[0, 2, 4], values=[1.0, 0.5, 0.25])
    p.add_scalars("run", "loss_unrelated", steps=[0], values=[9.0])
    h = heatmap_impl(p, "run")
    assert h["loss"] == {"tag": tag, "steps": [0, 2, 4], "values": [1.0, 0.5, 0.25]}
    assert h["markers"][0]["loss"] == 0.5
    assert step_impl(p, "run", 3)["loss"] == 0.5
    # loss/auto, when written, wins over the adapter's tag
    p.add_scalars("run", "loss/auto", steps=[0], values=[7.0])
    assert heatmap_impl(p, "run")["loss"]["tag"] == "loss/auto"
