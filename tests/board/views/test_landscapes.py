from __future__ import annotations

import json

import numpy as np
import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.board.errors import NotFound
from tensorsight.board.views.landscapes import MAX_SIDE, landscape_impl
from tensorsight.data import InMemoryProvider, LandscapeData


@pytest.fixture
def lprovider():
    p = InMemoryProvider()
    x = np.linspace(-1, 1, 5)
    y = np.linspace(-1, 1, 3)
    v = np.add.outer(y**2, x**2)
    v[0, 0] = np.nan
    path = [(0.8, 0.8, 1.3), (np.nan, 0.0, 0.5), (0.0, 0.0, 0.0)]
    p.add_landscape("run/ü", "loss", LandscapeData.from_arrays(1, 1.0, x, y, v, path, {"d": 1}))
    p.add_landscape("run/ü", "loss", LandscapeData.from_arrays(4, 2.0, x, y, v * 2))
    big = np.arange(600 * 300, dtype=np.float64).reshape(600, 300)
    p.add_landscape("run/ü", "big", LandscapeData.from_arrays(0, 1.0, range(300), range(600), big))
    return p


def test_landscape_impl_last_and_by_step(lprovider):
    last = landscape_impl(lprovider, "run/ü", "loss")
    assert last["step"] == 4
    assert last["steps"] == [1, 4]
    assert last["path"] is None
    first = landscape_impl(lprovider, "run/ü", "loss", step=1)
    assert first["values"][0][0] is None
    assert first["values"][1][2] == 0.0
    assert first["min"] == 0.0
    assert first["max"] == 2.0
    assert first["nan_count"] == 1
    assert first["path"][1] == [None, 0.0, 0.5]
    assert first["metadata"] == {"d": 1}
    assert first["shape"] == [3, 5]
    assert first["downsampled"] is False
    json.dumps(first, allow_nan=False)  # strict JSON


def test_large_grids_are_thinned(lprovider):
    r = landscape_impl(lprovider, "run/ü", "big")
    assert r["downsampled"] is True
    assert r["shape"] == [600, 300]
    assert len(r["y"]) <= MAX_SIDE
    assert len(r["x"]) <= MAX_SIDE
    assert len(r["values"]) == len(r["y"])
    assert len(r["values"][0]) == len(r["x"])


def test_missing_tag_step_and_routes(lprovider):
    with pytest.raises(NotFound, match="no landscapes tag 'x'"):
        landscape_impl(lprovider, "run/ü", "x")
    with pytest.raises(NotFound, match="no record at step 3"):
        landscape_impl(lprovider, "run/ü", "loss", step=3)
    client = TestClient(create_app(lprovider))
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["landscapes"]["enabled"] is True
    tags = client.get("/api/views/landscapes/tags", params={"run": "run/ü"}).json()["tags"]
    assert [t["tag"] for t in tags] == ["big", "loss"]
    ok = client.get(
        "/api/views/landscapes/landscape", params={"run": "run/ü", "tag": "loss", "step": "1"}
    )
    assert ok.status_code == 200
    assert ok.json()["step"] == 1
    assert client.get("/api/views/landscapes/landscape", params={"run": "run/ü"}).status_code == 400
    bad = client.get(
        "/api/views/landscapes/landscape", params={"run": "run/ü", "tag": "loss", "step": "x"}
    )
    assert bad.status_code == 400
    missing = client.get("/api/views/landscapes/landscape", params={"run": "../x", "tag": "loss"})
    assert missing.status_code == 404
