from __future__ import annotations

import json
import math

import numpy as np

from tensorsight.board.views.histograms import series_impl as hist_impl
from tensorsight.board.views.histograms import series_json
from tensorsight.data import HistogramRecord, InMemoryProvider


def test_histogram_buckets_come_back_exactly(client):
    body = client.get(
        "/api/views/histograms/series", params={"run": "train", "tag": "weights"}
    ).json()
    assert body["total_records"] == 3
    rec = body["records"][2]
    assert rec["edges"] == [-1.0, 0.0, 1.0, "Infinity"]
    assert rec["counts"] == [1.0, 4.0, 0.0]
    assert rec["nan_count"] == 2
    assert rec["pos_inf_count"] == 0
    assert rec["neg_inf_count"] is None


def test_histogram_record_thinning_keeps_first_and_last(provider):
    body = hist_impl(provider, "train", "weights", limit=2)
    assert [r["step"] for r in body["records"]] == [0, 2]
    assert body["total_records"] == 3


def _same(a, b):
    """JSON values equal as numbers, ``-0.0`` kept apart from ``0``."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float | int) and isinstance(b, float | int):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def test_histogram_answer_holds_the_values_json_would_write():
    """The route's own encoder (from the stored arrays, each distinct number once) parses to
    series_impl's answer, across repeated and distinct values, -0.0, NaN, infinities and
    missing fields, with fewer bytes than json.dumps."""
    rng = np.random.default_rng(7)
    shared = np.cumsum(rng.random(40)) - 10.0  # one bucket set, as writers use
    p = InMemoryProvider()
    for step in range(30):
        edges = np.sort(rng.choice(shared, 12, replace=False))
        edges[0] = rng.standard_normal()  # the record's own minimum
        if step == 3:
            edges[1:3] = [-0.0, 0.0]
        if step == 5:
            edges[-1] = np.inf
        counts = rng.integers(0, 50, 11).astype(float)
        if step == 6:
            counts[[0, 4]] = [np.nan, -np.inf]
        p.add_histogram(
            "rün/ä",
            "weights",
            HistogramRecord(
                step=step,
                wall_time=1_700_000_000.123456789 + step / 7,
                edges=tuple(edges.tolist()),
                counts=tuple(counts.tolist()),
                min=None if step == 2 else float(edges[0]),
                max=float("nan") if step == 4 else float(edges[-1]),
                num=float(counts.sum()),
                sum=-float("inf") if step == 8 else 1.5,
                nan_count=step if step % 2 else None,
            ),
        )
    for limit in (2, 7, 500):
        expected = hist_impl(p, "rün/ä", "weights", limit=limit)
        got = series_json(p, "rün/ä", "weights", limit=limit)
        assert _same(json.loads(got), expected)
        dumped = json.dumps(expected, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        assert len(got) < len(dumped.encode())
    body = json.loads(series_json(p, "rün/ä", "weights"))
    assert body["records"][3]["edges"][1:3] == [-0.0, 0.0]
    assert str(body["records"][3]["edges"][1]) == "-0.0"
    assert body["records"][6]["counts"][:2] == ["NaN", int(body["records"][6]["counts"][1])]
    assert body["records"][6]["counts"][4] == "-Infinity"


def test_histograms_default_to_the_records_the_chart_shows(client):
    from tensorsight.board.views.histograms import LIMIT

    p = InMemoryProvider()
    for step in range(LIMIT * 3):
        p.add_histogram("r", "w", HistogramRecord(step, 0.0, (0.0, 1.0), (float(step),)))
    body = json.loads(series_json(p, "r", "w"))
    assert body["total_records"] == LIMIT * 3
    steps = [r["step"] for r in body["records"]]
    assert len(steps) == LIMIT
    assert (steps[0], steps[-1]) == (0, LIMIT * 3 - 1)
    assert [r["counts"] for r in body["records"][:2]] == [[0], [steps[1]]]


def test_histogram_tags(client):
    body = client.get("/api/views/histograms/tags").json()
    assert body == {"tags": [{"tag": "weights", "runs": ["train"]}]}


def test_images_list_and_bytes(client):
    body = client.get("/api/views/images/list", params={"run": "train", "tag": "samples"}).json()
    assert [im["step"] for im in body["images"]] == [0, 10, 20]
    assert body["images"][0]["width"] == 4
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": 2})
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/png"
    assert r.content.startswith(b"\x89PNG")
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": 3})
    assert r.status_code == 404
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": -1})
    assert r.status_code == 400


def test_non_image_bytes_are_not_served_as_html(client):
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "weird", "i": 0})
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_text_comes_back_as_source(client):
    body = client.get("/api/views/text/series", params={"run": "train", "tag": "notes"}).json()
    assert body["records"] == [
        {"step": 5, "wall_time": 1005.0, "text": "**bold** <script>alert(1)</script>"}
    ]
    assert client.get("/api/views/text/tags").json()["tags"][0]["tag"] == "notes"
