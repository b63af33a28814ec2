"""The PR curves view on logs of torch's writer, tensorboardX and ours: steps, runs, limits."""

from __future__ import annotations

import numpy as np
import pytest
import tensorboardX
from starlette.testclient import TestClient
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.views import pr_curves
from tensorsight.board.views.pr_curves import curves_impl
from tensorsight.data import InMemoryProvider, LogdirProvider, PrCurveData

LABELS = np.array([1, 0, 1, 1, 0, 0, 1, 0])
SCORES = np.array([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1])


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("pr_logs")
    with TorchWriter(str(d / "torch")) as w:
        for step in (0, 10, 20):
            w.add_pr_curve("pr/cls", LABELS, np.clip(SCORES + step / 100, 0, 1), step)
    with tensorboardX.SummaryWriter(str(d / "tbx")) as w:
        w.add_pr_curve("pr/cls", LABELS, SCORES, 5, num_thresholds=11)
    with SummaryWriter(d / "ours") as w:
        w.add_pr_curve("pr/cls", LABELS, SCORES, 3, num_thresholds=5)
        w.add_pr_curve("pr/other", LABELS, SCORES, 3)
    return d


@pytest.fixture(scope="module")
def client(logdir):
    return TestClient(create_app(LogdirProvider(logdir)))


def test_tags_list_every_writer(client):
    tags = client.get("/api/views/pr_curves/tags").json()["tags"]
    assert tags == [
        {"tag": "pr/cls", "runs": ["ours", "tbx", "torch"]},
        {"tag": "pr/other", "runs": ["ours"]},
    ]
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["pr_curves"]["has_data"]


def test_curves_at_a_step_follow_the_newest_step_at_or_before_it(client):
    params = {"tag": "pr/cls", "run": ["torch", "tbx", "ours", "nope"], "step": 15}
    body = client.get("/api/views/pr_curves/curves", params=params).json()
    curves = {c["run"]: c for c in body["curves"]}
    assert body["missing"] == ["nope"]
    assert curves["torch"]["step"] == 10
    assert curves["torch"]["steps"] == [0, 10, 20]
    assert curves["tbx"]["step"] == 5
    assert curves["tbx"]["num_thresholds"] == 11
    assert curves["ours"]["num_thresholds"] == 5
    ours = curves["ours"]
    assert ours["thresholds"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    # at threshold 0 every prediction is positive: recall 1, precision = share of positives
    assert ours["recall"][0] == pytest.approx(1.0)
    assert ours["precision"][0] == pytest.approx(0.5)
    assert ours["true_positives"][0] == 4
    assert ours["false_positives"][0] == 4
    # at 0.5: scores 0.9 0.8 0.7 0.6 are positive: tp 3 (0.9 0.7 0.6), fp 1 (0.8)
    assert ours["true_positives"][2] == 3
    assert ours["false_positives"][2] == 1
    assert ours["precision"][2] == pytest.approx(0.75, rel=1e-6)
    assert ours["recall"][2] == pytest.approx(0.75, rel=1e-6)
    # no step: the last record; a step before the first: the first record
    last = client.get("/api/views/pr_curves/curves", params={"tag": "pr/cls", "run": "torch"})
    assert last.json()["curves"][0]["step"] == 20
    early = {"tag": "pr/cls", "run": "torch", "step": -1}
    assert client.get("/api/views/pr_curves/curves", params=early).json()["curves"][0]["step"] == 0


def test_bad_requests_are_400(client):
    url = "/api/views/pr_curves/curves"
    assert client.get(url, params={"tag": "pr/cls"}).status_code == 400
    many = {"tag": "pr/cls", "run": [f"r{i}" for i in range(pr_curves.MAX_RUNS + 1)]}
    r = client.get(url, params=many)
    assert r.status_code == 400
    assert "at most" in r.json()["error"]["message"]
    assert client.get(url, params={"tag": "pr/cls", "run": "torch", "step": "x"}).status_code == 400
    assert client.get(url, params={"run": "torch"}).status_code == 400


def test_long_curves_are_thinned_and_nonfinite_values_encoded(monkeypatch):
    n = 3000
    t = np.linspace(0, 1, n)
    precision = np.linspace(0.5, 1, n)
    precision[7] = np.nan
    counts = np.arange(n, dtype=np.float64)
    p = InMemoryProvider()
    p.add_pr_curve(
        "r", "big", PrCurveData(1, 10.0, t, counts, counts, counts, counts, precision, 1 - t)
    )
    body = curves_impl(p, "big", ["r"])
    curve = body["curves"][0]
    assert curve["downsampled"] is True
    assert curve["num_thresholds"] == n
    assert len(curve["thresholds"]) <= pr_curves.MAX_THRESHOLDS + 1
    assert curve["thresholds"][-1] == 1.0  # the last threshold is kept
    monkeypatch.setattr(pr_curves, "MAX_THRESHOLDS", n)
    full = curves_impl(p, "big", ["r"])["curves"][0]
    assert full["downsampled"] is False
    assert full["precision"][7] == "NaN"


def test_provider_limits_bound_the_records_kept(tmp_path):
    from tensorsight.data import Limits

    with SummaryWriter(tmp_path / "run") as w:
        for step in range(5):
            w.add_pr_curve("pr", LABELS, SCORES, step, num_thresholds=3)
    provider = LogdirProvider(tmp_path, Limits(max_records_per_pr_curve=2))
    assert [c.step for c in provider.read_pr_curves("run", "pr")] == [3, 4]
    info = provider.run_info("run")
    assert info.dropped == {"pr_curves tags at the 2-value limit (older values dropped)": 1}
    with pytest.raises(KeyError):
        provider.read_pr_curves("run", "absent")
