from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from tensorsight.board.errors import NotFound
from tensorsight.board.views.scalars import series_impl, tags_impl
from tensorsight.data import InMemoryProvider


def test_tags_by_run(provider):
    tags = {t["tag"]: t["runs"] for t in tags_impl(provider)}
    assert tags["loss"] == ["eval", "train"]
    assert tags["lr"] == ["train"]
    only_eval = tags_impl(provider, ["eval"])
    assert [t["tag"] for t in only_eval] == ["loss"]


def test_tags_route_filters_runs(client):
    body = client.get("/api/views/scalars/tags", params={"run": ["eval"]}).json()
    assert body == {"tags": [{"tag": "loss", "runs": ["eval"]}]}


def test_series_keeps_non_finite_as_strings(client):
    body = client.get("/api/views/scalars/series", params={"run": "train", "tag": "loss"}).json()
    assert body["total_points"] == 100
    assert body["returned_points"] == 100
    assert body["downsampled"] is False
    assert body["nonfinite_points"] == 2
    assert body["value"][40] == "NaN"
    assert body["value"][60] == "Infinity"
    assert body["value"][0] == 1.0


def test_series_downsamples_for_the_pixel_width_and_zooms_at_full_resolution():
    p = InMemoryProvider()
    n = 200_000
    steps = np.arange(n)
    values = np.sin(steps / 500.0)
    values[123_456] = -np.inf
    p.add_scalars("r", "wave", steps=steps, values=values, wall_times=steps * 0.1)
    wide = series_impl(p, "r", "wave", width=300)
    assert wide["downsampled"] is True
    assert wide["returned_points"] <= 4 * 300 + 3
    assert 123_456 in wide["step"]
    assert wide["step"][-1] == n - 1
    zoomed = series_impl(p, "r", "wave", width=300, x_min=1000, x_max=1500)
    # the zoomed window holds 501 points: all come back, with their neighbours
    assert zoomed["step"][:3] == [999, 1000, 1001]
    assert zoomed["downsampled"] is True
    rel = series_impl(p, "r", "wave", x_axis="relative", width=300, x_min=100.0, x_max=150.0)
    assert rel["step"][1] == 1000
    wall = series_impl(p, "r", "wave", x_axis="wall_time", width=300)
    assert wall["x_extent"] == [0.0, pytest.approx((n - 1) * 0.1)]


def test_series_errors(client):
    r = client.get("/api/views/scalars/series", params={"run": "train"})
    assert r.status_code == 400
    assert "'tag'" in r.json()["error"]["message"]
    r = client.get("/api/views/scalars/series", params={"run": "nope", "tag": "loss"})
    assert r.status_code == 404
    assert r.json()["error"] == {"code": "not_found", "message": "Run 'nope' does not exist."}
    r = client.get("/api/views/scalars/series", params={"run": "train", "tag": "nope"})
    assert r.status_code == 404
    for bad in [{"x": "sideways"}, {"width": "0"}, {"width": "abc"}, {"xmin": "nan"}]:
        r = client.get("/api/views/scalars/series", params={"run": "train", "tag": "loss", **bad})
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_argument"


def test_not_found_impl_raises_public_error(provider):
    with pytest.raises(NotFound, match="no scalars tag"):
        series_impl(provider, "train", "weights")


def test_download_csv_and_json_full_resolution(client):
    r = client.get(
        "/api/views/scalars/download", params={"run": "train", "tag": "loss", "format": "csv"}
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    assert 'filename="train_loss.csv"' in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert len(rows) == 100
    assert rows[40]["value"] == "NaN"
    assert rows[60]["value"] == "Infinity"
    assert float(rows[3]["value"]) == 0.25
    j = client.get(
        "/api/views/scalars/download", params={"run": "train", "tag": "loss", "format": "json"}
    ).json()
    assert len(j["value"]) == 100
    assert j["value"][40] == "NaN"
    assert j["step"][-1] == 99
    bad = client.get(
        "/api/views/scalars/download", params={"run": "train", "tag": "loss", "format": "xml"}
    )
    assert bad.status_code == 400


def test_download_filename_is_sanitised(client):
    r = client.get(
        "/api/views/scalars/download",
        params={"run": "train", "tag": "héllo/ünïcode", "format": "json"},
    )
    assert r.status_code == 200
    disposition = r.headers["content-disposition"]
    assert "/" not in disposition.split("filename=")[1]
    assert json.loads(r.text)["value"] == [1.0]
    assert math.isfinite(json.loads(r.text)["wall_time"][0])


def test_multi_returns_every_run_of_a_tag(client):
    body = client.get(
        "/api/views/scalars/multi",
        params={"tag": "loss", "run": ["train", "eval"], "width": 50, "x": "relative"},
    ).json()
    assert [s["run"] for s in body["series"]] == ["train", "eval"]
    assert body["series"][1]["total_points"] == 10
    assert client.get("/api/views/scalars/multi", params={"tag": "loss"}).status_code == 400
    r = client.get("/api/views/scalars/multi", params={"tag": "loss", "run": ["train"] * 501})
    assert r.status_code == 400
    assert "at most 500 runs" in r.json()["error"]["message"]
    r = client.get("/api/views/scalars/multi", params={"tag": "loss", "run": ["nope"]})
    assert r.status_code == 404


def test_fields_select_the_arrays_sent(client):
    body = client.get(
        "/api/views/scalars/series",
        params={"run": "train", "tag": "loss", "fields": "step,value"},
    ).json()
    assert "wall_time" not in body
    assert len(body["step"]) == len(body["value"]) == 100
    r = client.get(
        "/api/views/scalars/series", params={"run": "train", "tag": "loss", "fields": "x,y"}
    )
    assert r.status_code == 400
    assert "unknown field 'x'" in r.json()["error"]["message"]
